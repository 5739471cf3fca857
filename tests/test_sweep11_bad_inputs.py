"""Newcomer sweep 11's bad cases (bench/reports/newcomer_sweep_11.md), one
test per class: an empty export path that replaced the working directory,
records normalised otherwise than the run reads text, another format's file
read as CoNLL, the demo's NaN and empty flags, the seed's range, empty path
hparams, a named pipe as a data file, and a None among texts."""

import json
import os

import pytest

import electra_tf
from electra_tf import demo
from electra_tf import run_pretraining
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.data import records_info
from electra_tf.finetune import preprocessing
from electra_tf.finetune.classification.tasks import read_tsv
from electra_tf.finetune.tagging.tasks import read_conll
from electra_tf.finetune.text_preprocessor import as_strings
from electra_tf.serving import export as export_lib
from electra_tf.text.vocab import Vocab
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line
from tests.helpers.pretraining_data import TINY
from tests.helpers.pretraining_data import make_data_dir


def test_an_empty_export_path_is_refused_and_the_working_directory_kept(tmp_path, monkeypatch):
  """`export("")` replaced the working directory by the SavedModel (its
  files were deleted): `os.path.abspath("")` is the working directory."""
  monkeypatch.chdir(tmp_path)
  (tmp_path / "keep.txt").write_text("mine")
  model = electra_tf.ElectraClassifier(TINY_ENCODER, num_classes=2)
  with pytest.raises(ValueError, match=r"ElectraClassifier.export: filepath is empty"):
    model.export("")
  for path in ("", ".", str(tmp_path), os.path.dirname(str(tmp_path))):
    with pytest.raises(ValueError, match=r"is the working directory or one above it"):
      export_lib.save_module_at(object(), path, overwrite=True)
  assert sorted(os.listdir(tmp_path)) == ["keep.txt"]


def test_records_normalised_otherwise_than_the_run_reads_text_are_refused(tmp_path, capsys):
  make_data_dir(tmp_path)
  shards = str(tmp_path / "pretrain_tfrecords")
  vocab = Vocab.read(str(tmp_path / "vocab.txt"))
  records_info.write_records_info(shards, vocab, {"do_lower_case": False, "strip_accents": False})
  hparams = dict(TINY, num_train_steps=2, vocab_size=60)  # do_lower_case: true by default
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_pretraining.main(argv) == 2
  err = one_line(capsys)
  assert (
    "were made with do_lower_case=False, strip_accents=False, but this run reads text with "
    "do_lower_case=True, strip_accents=True"
  ) in err and "rebuild the records" in err
  hparams.update(do_lower_case=False, strip_accents=False)
  argv[-1] = json.dumps(hparams)
  assert run_pretraining.main(argv) == 0, capsys.readouterr().err  # matching: trains


def test_another_format_s_rows_are_not_read_as_one_conll_sentence(tmp_path):
  path = tmp_path / "train.txt"
  path.write_text("sentence\tlabel\nthe cat sat on the mat\t1\na dog ran\t0\n")
  with pytest.raises(ValueError) as e:
    read_conll(str(path))
  assert str(e.value).startswith(f"{path}, line 2: 7 columns, but line 1 has 2; a CoNLL file")
  path.write_text("the DT B-NP\ncat NN I-NP\n\nran VBD B-VP\n")  # a real one, no final blank line
  assert read_conll(str(path)) == [(["the", "cat"], ["B-NP", "I-NP"]), (["ran"], ["B-VP"])]


@pytest.mark.parametrize(
  "flags, message",
  [
    (["--corpus-mb", "nan"], "--corpus-mb nan: expected a positive number"),
    (["--vocab-size", "inf"], "argument --vocab-size: invalid int value: 'inf'"),
    (["--output-dir", ""], "--output-dir is empty (an unset shell variable?)"),
  ],
)
def test_demo_flags_that_name_no_amount_or_no_folder_are_refused(
  tmp_path, monkeypatch, capsys, flags, message
):
  monkeypatch.chdir(tmp_path)
  with pytest.raises(SystemExit) as e:
    demo.main(["--output-dir", "demo", *flags])
  assert e.value.code == 2
  assert message in capsys.readouterr().err
  assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("config_class", [PretrainingConfig, FinetuningConfig])
def test_the_seed_s_range_and_empty_result_paths_are_checked(tmp_path, config_class):
  extra = {"task_names": ["sst"]} if config_class is FinetuningConfig else {}
  for seed in (-1, 2**32):
    with pytest.raises(
      ValueError, match=rf"hparam seed={seed}; expected an integer in \[0, 2\*\*32\)"
    ):
      config_class("m", str(tmp_path), seed=seed, **extra)
  config_class("m", str(tmp_path), seed=2**32 - 1, **extra)
  with pytest.raises(ValueError, match=r"hparam results_txt=''; expected a path, or null for none"):
    config_class("m", str(tmp_path), results_txt="", **extra)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_as_a_data_file_is_named_not_read(tmp_path):
  """Reading a pipe nobody writes to blocked run_finetuning forever."""
  pipe = tmp_path / "train.tsv"
  os.mkfifo(pipe)
  expected = rf"data file '{pipe}' is not a regular file \(a named pipe, socket or device\)"
  with pytest.raises(ValueError, match=expected):
    read_tsv(str(pipe))
  with pytest.raises(ValueError, match=expected):
    preprocessing.file_identity(str(pipe))
  with pytest.raises(ValueError, match=expected):
    read_conll(str(pipe))


def test_a_none_among_texts_is_named():
  with pytest.raises(ValueError, match=r"expected texts \(str\); got a NoneType \(None\)"):
    as_strings(["who sat ?", None])
