"""Newcomer sweep 25's bad input cases (bench/reports/newcomer_sweep_25.md,
rows 22, 26, 46, 47, 49, 54), one test per class: a vocab file name of the
other model type, a second text for a one-text task (documented), a non-ASCII
character where --hparams' JSON fails, a non-ASCII letter in an unknown
hparam, a records folder as pretrain_tfrecords, and a broken symbolic link
where a data directory is expected."""

import json
import os
import pathlib
import types

import pytest

from electra_tf import run_finetuning
from electra_tf import run_pretraining
from electra_tf.hparams_input import load_hparams
from electra_tf.training import pretraining_run
from electra_tf.utils import file_io
from tests.helpers.bad_inputs import one_line
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import tiny_hparams
from tfrecords_tools import build_vocab


def test_a_vocab_name_of_the_other_model_type_is_refused(tmp_path, capsys):
  """Row 22: `--output sp.model` with the WordPiece default wrote a WordPiece
  text file under a SentencePiece name (and a `.txt` for unigram the reverse)."""
  corpus = tmp_path / "c"
  corpus.mkdir()
  (corpus / "a.txt").write_text("the cat sat on the mat\n" * 20)
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "120"]
  out = tmp_path / "sp.model"
  assert build_vocab.main(argv + ["--output", str(out)]) == 2
  assert one_line(capsys) == (
    f"error: --output '{out}' is a SentencePiece file's name but --model-type is wordpiece: "
    "pass --model-type unigram or bpe, or name it vocab.txt"
  )
  out = tmp_path / "vocab.txt"
  assert build_vocab.main(argv + ["--output", str(out), "--model-type", "unigram"]) == 2
  assert one_line(capsys) == (
    f"error: --output '{out}' is a WordPiece file's name but --model-type is unigram: "
    "pass --model-type wordpiece, or name it *.model"
  )
  assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_a_second_text_for_a_one_text_task_is_documented():
  """Row 26: a non-empty `text_b` is packed as segment B for any task; the
  serving doc says so and tells to send "" for a one-text task."""
  doc = (pathlib.Path(__file__).parents[1] / "docs" / "serve.md").read_text()
  assert "the export of\na one-text task (`cola`, `sst`) takes it without a word" in doc


def _pretraining_error(tmp_path, capsys, hparams_text):
  hp = tmp_path / "hp.json"
  hp.write_text(hparams_text, encoding="utf-8")
  argv = ["--data-dir", str(tmp_path), "--model-name", "n", "--hparams", str(hp)]
  assert run_pretraining.main(argv) == 2
  assert not (tmp_path / "models").exists()
  return one_line(capsys)


def test_a_non_ascii_character_where_the_hparams_json_fails_is_named(tmp_path, capsys):
  """Row 46: a no-break space pasted after a colon; the error named only a
  column, where every editor shows a space."""
  err = _pretraining_error(tmp_path, capsys, '{"num_train_steps":\xa03}')
  assert err.endswith(
    "is not valid JSON: Expecting value: line 1 column 20 (char 19): the character there is "
    "U+00A0 NO-BREAK SPACE, not ASCII: replace it with a plain space"
  )
  # The same in an inline JSON object; an ASCII mistake reads as before.
  with pytest.raises(
    ValueError, match=r"U\+201C LEFT DOUBLE QUOTATION MARK, not ASCII: replace it "
  ):
    load_hparams("{\u201cseed\u201d: 1}")
  with pytest.raises(ValueError, match=r"Expecting value: line 1 column 9 \(char 8\)$"):
    load_hparams('{"seed":}')


def test_a_non_ascii_letter_in_an_unknown_hparam_is_shown(tmp_path, capsys):
  """Row 47: a Cyrillic 'а' in "learning_rate": the unknown key and the
  suggestion were the same word on the screen."""
  err = _pretraining_error(tmp_path, capsys, '{"le\u0430rning_rate": 0.1}')
  assert (
    "Unknown hparam 'le\\u0430rning_rate' (its '\u0430' is U+0430 CYRILLIC SMALL LETTER A, "
    "not ASCII) — did you mean 'learning_rate'?"
  ) in err
  assert "Unknown hparam 'lerning_rate' — did you mean" in _pretraining_error(
    tmp_path, capsys, '{"lerning_rate": 0.1}'
  )


def test_a_records_folder_as_pretrain_tfrecords_names_the_pattern(tmp_path):
  """Row 49: the records folder matched only itself; the error said no records
  were found and to build them again."""
  folder = tmp_path / "pretrain_tfrecords"
  folder.mkdir()
  (folder / "pretrain_data.tfrecord-0-of-1").write_bytes(b"")
  (folder / "records_info.json").write_text(json.dumps({}))
  config = types.SimpleNamespace(data_dir=str(tmp_path), pretrain_tfrecords=str(folder))
  pattern = os.path.join(str(folder), "pretrain_data.tfrecord*")
  with pytest.raises(ValueError) as error:
    pretraining_run.find_pretraining_files(config)
  assert str(error.value).startswith("hparam pretrain_tfrecords: pre-training file pattern")
  assert str(error.value).endswith(f"give a pattern of its record files, such as {pattern!r}")
  config.pretrain_tfrecords = pattern
  assert len(pretraining_run.find_pretraining_files(config)) == 1


def test_a_broken_symbolic_link_as_a_data_dir_is_named(tmp_path, capsys):
  """Row 54: `finetuning_data/sst` a link to a moved disk: "no data directory"
  named a path `ls` lists; the link and its missing target are named now."""
  data_dir, vocab_size = make_data_dir(tmp_path)
  gone = str(tmp_path / "olddisk" / "sst")
  link = os.path.join(data_dir, "finetuning_data", "sst")
  os.symlink(gone, link)
  hparams = tiny_hparams(vocab_size, task_names=["sst"], init_checkpoint=None)
  argv = ["--data-dir", data_dir, "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_finetuning.main(argv) == 2
  assert one_line(capsys).endswith(
    f"hparam task_names: no data directory {link} for task 'sst': it is a broken symbolic link "
    f"(to {gone!r}, which does not exist)"
  )
  assert not os.path.exists(os.path.join(data_dir, "models"))
  # --data-dir itself (the check every run makes first).
  os.symlink(gone, tmp_path / "d")
  with pytest.raises(ValueError, match=r"does not exist: it is a broken symbolic link \(to '"):
    file_io.check_data_dir(str(tmp_path / "d"))
