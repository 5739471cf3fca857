"""Newcomer sweep 26's bad file cases (bench/reports/newcomer_sweep_26.md,
rows 09, 11, 46, 48), one test per class: the hidden partial files a killed
writer leaves (removed by the next write of the same target, refused as
corpus text), a broken symbolic link where a file is read, and one as a
records shard."""

import json
import os
import types

import pytest

from electra_tf import build_pretraining_dataset
from electra_tf import run_finetuning
from electra_tf.training import pretraining_run
from electra_tf.utils import file_io
from tests.helpers.bad_inputs import one_line
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import tiny_hparams
from tfrecords_tools import build_vocab

DEAD = 99999999  # above any pid_max: no process has it


def test_a_killed_writers_partial_entries_go_with_the_next_write(tmp_path):
  """Row 11 (and 09's re-run): a SIGKILLed `atomic_path` left `.kh.<pid>.tmp/`
  beside the published preset, and every later run left it there."""
  (tmp_path / f".kh.{DEAD}.tmp").mkdir()
  (tmp_path / f".kh.{DEAD}.tmp" / "model.weights.h5").write_bytes(b"partial")
  (tmp_path / f".m.keras.{DEAD}.tmp.keras").write_bytes(b"partial")
  (tmp_path / f".a.txt.{DEAD}.tmp").write_bytes(b"partial")
  live = tmp_path / f".a.txt.{os.getppid()}.tmp"  # a writer still running: kept
  live.write_bytes(b"being written")
  with file_io.atomic_path(str(tmp_path / "kh")) as tmp:
    os.mkdir(tmp)
  with file_io.atomic_path(str(tmp_path / "m.keras"), suffix=".keras") as tmp:
    open(tmp, "wb").close()
  file_io.write_atomic(str(tmp_path / "a.txt"), "text\n")
  assert sorted(os.listdir(tmp_path)) == [live.name, "a.txt", "kh", "m.keras"]


def test_a_killed_writers_partial_file_is_not_read_as_corpus_text(tmp_path, capsys):
  """Row 09: `.python_docs_0.txt.<pid>.tmp` of a killed corpus build was
  counted by build_vocab (and the builders) beside the finished files."""
  corpus = tmp_path / "out"
  corpus.mkdir()
  (corpus / "python_docs_0.txt").write_text("the cat sat on the mat\n" * 20)
  (corpus / f".python_docs_1.txt.{DEAD}.tmp").write_text("the half of a file\n")
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "120", "--output"]
  assert build_vocab.main(argv + [str(tmp_path / "vocab.txt")]) == 2
  assert one_line(capsys) == (
    f"error: --corpus-dir '{corpus}': '.python_docs_1.txt.{DEAD}.tmp' is not text but the "
    f"partial file of a write that was stopped (process {DEAD} is gone); run the command that "
    "wrote it again (that removes it) or delete it"
  )
  assert sorted(os.listdir(tmp_path)) == ["out"]
  assert file_io.unfinished_write(f".a.txt.{os.getpid()}.tmp").startswith(
    f"the partial file of a write still running (process {os.getpid()}); wait"
  )
  assert file_io.unfinished_write(".bashrc") is None


def test_a_broken_link_as_a_file_to_read_is_named(tmp_path, capsys):
  """Row 46: a data file and a --vocab-file that are links to a moved disk
  were said not to exist, where `ls` lists them."""
  data_dir, vocab_size = make_data_dir(tmp_path)
  os.makedirs(os.path.join(data_dir, "finetuning_data", "sst"))
  gone = str(tmp_path / "olddisk" / "train.tsv")
  link = os.path.join(data_dir, "finetuning_data", "sst", "train.tsv")
  os.symlink(gone, link)
  hparams = tiny_hparams(vocab_size, task_names=["sst"], init_checkpoint=None)
  argv = ["--data-dir", data_dir, "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_finetuning.main(argv) == 2
  assert one_line(capsys).endswith(
    f"error: data file {link!r} is a broken symbolic link (to {gone!r}, which does not exist)"
  )
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("the cat sat\n")
  vocab = str(tmp_path / "vocab.txt")
  os.symlink(gone, vocab)
  argv = ["--corpus-dir", str(corpus), "--vocab-file", vocab, "--output-dir", str(tmp_path / "o")]
  assert build_pretraining_dataset.main(argv + ["--max-seq-length", "32"]) == 2
  assert one_line(capsys) == (
    f"error: --vocab-file {vocab!r} is a broken symbolic link (to {gone!r}, which does not exist)"
  )
  assert not os.path.exists(tmp_path / "o")
  assert file_io.not_there(str(tmp_path / "none")) == "does not exist"


def test_a_broken_link_as_a_records_shard_is_named(tmp_path):
  """Row 48: a shard moved to another disk, its link left: a NotFoundError
  traceback (exit 1)."""
  folder = tmp_path / "pretrain_tfrecords"
  folder.mkdir()
  (folder / "pretrain_data.tfrecord-0-of-2").write_bytes(b"")
  gone = str(tmp_path / "olddisk" / "shard")
  shard = str(folder / "pretrain_data.tfrecord-1-of-2")
  os.symlink(gone, shard)
  pattern = str(folder / "pretrain_data.tfrecord*")
  config = types.SimpleNamespace(data_dir=str(tmp_path), pretrain_tfrecords=pattern)
  with pytest.raises(ValueError) as error:  # run_pretraining: one line, exit 2
    pretraining_run.find_pretraining_files(config)
  assert str(error.value) == (
    f"hparam pretrain_tfrecords: pre-training file {shard!r} (of {[pattern]!r}) is a broken "
    f"symbolic link (to {gone!r}, which does not exist)"
  )
