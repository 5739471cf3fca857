"""Newcomer sweep 24's bad corpus and path cases (bench/reports/newcomer_sweep_24.md),
one test per class: a file name that is not UTF-8, glob characters in a
data dir's path, JSON-lines and CSV exports taken for prose, and
OpenWebText's outer archive in place of its contents."""

import os

import pytest

from electra_tf import build_pretraining_dataset
from tests.helpers.bad_inputs import one_line
from tests.helpers.pretraining_data import SPECIAL
from tfrecords_tools import build_vocab
from tfrecords_tools import openwebtext


def _vocab(tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(SPECIAL + ["the", "cat", "sat", "on", "mat"]) + "\n")
  return str(vocab)


def test_a_corpus_file_name_that_is_not_utf8_is_named(tmp_path, capsys):
  """A Latin-1 file name (unzip of a Windows archive): both corpus commands
  said only "'utf-8' codec can't decode byte 0xe9 in position 1"."""
  corpus = tmp_path / "c"
  corpus.mkdir()
  with open(os.path.join(os.fsencode(corpus), b"r\xe9sum\xe9.txt"), "w") as f:
    f.write("the cat sat on the mat\n" * 5)
  expected = (
    f"--corpus-dir '{corpus}' holds a file whose name is not UTF-8 ('r\\xe9sum\\xe9.txt'): "
    f"rename it (e.g. convmv -f latin1 -t utf8 --notest {corpus}/*)"
  )
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "120", "--output", str(tmp_path / "v.txt")]
  assert build_vocab.main(argv) == 2
  assert one_line(capsys).endswith(expected)
  argv = ["--corpus-dir", str(corpus), "--vocab-file", _vocab(tmp_path)]
  argv += ["--output-dir", str(tmp_path / "out"), "--num-processes", "1"]
  assert build_pretraining_dataset.main(argv) == 2
  assert one_line(capsys).endswith(expected)
  assert not (tmp_path / "out").exists()
  # The OpenWebText builder lists its archive folder the same way.
  with pytest.raises(ValueError, match=r"holds a file whose name is not UTF-8 \('r\\xe9sum"):
    openwebtext.list_archives(str(corpus))
