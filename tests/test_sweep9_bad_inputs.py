"""Newcomer sweep 9's bad cases (bench/reports/newcomer_sweep_9.md), one
test per class: stop signals to the corpus tools, hparams that contradict a
flag or each other, held-out records that are training records, records of
another length given to `get_dataset`, an export beside another kind's
versions, and task-model arguments of the wrong kind."""

import json
import os
import signal

import pytest

import electra_tf
from electra_tf import run_finetuning
from electra_tf import run_pretraining
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.data import pretraining_dataset
from electra_tf.serving import export as export_lib
from electra_tf.serving import loading as serving_loading
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.pretraining_data import TINY
from tests.helpers.pretraining_data import make_data_dir
from tfrecords_tools import glue_sentences_corpus
from tfrecords_tools import python_docs_corpus

# --- kind 1: stop signals (sweep 9: 04, 05) ------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_sigterm_and_sighup_stop_the_corpus_tools_in_one_line(
  tmp_path, monkeypatch, capsys, signum
):
  """Both corpus tools stop as on Ctrl-C: one line naming the signal, exit
  128 + the signal, no hidden temporary or half corpus left (before: the
  process died without a word, python_docs_corpus leaving its .tmp files)."""
  name = signal.Signals(signum).name
  out = tmp_path / "docs"
  real_documents = python_docs_corpus.iter_docstring_documents

  def stopped_after_one(roots):
    for paragraphs in real_documents(roots):
      yield paragraphs
      os.kill(os.getpid(), signum)

  monkeypatch.setattr(python_docs_corpus, "iter_docstring_documents", stopped_after_one)
  assert python_docs_corpus.main(["--output-dir", str(out), "--num-files", "3"]) == 128 + signum
  assert one_line(capsys) == f"python_docs_corpus: stopped ({name}); nothing written"
  assert not out.exists()

  glue = tmp_path / "glue"
  sst = glue / "SST-2"
  sst.mkdir(parents=True)
  (sst / "train.tsv").write_text(
    "sentence\tlabel\n" + "".join(f"film {i} .\t1\n" for i in range(9))
  )
  real_write_atomic = glue_sentences_corpus.write_atomic
  calls = []

  def stopped_on_the_second_file(path, text):
    calls.append(path)
    if len(calls) == 2:
      os.kill(os.getpid(), signum)
    return real_write_atomic(path, text)

  monkeypatch.setattr(glue_sentences_corpus, "write_atomic", stopped_on_the_second_file)
  argv = ["--glue-dir", str(glue), "--output-dir", str(tmp_path / "tapt"), "--tasks", "SST-2"]
  assert glue_sentences_corpus.main(argv + ["--num-files", "3"]) == 128 + signum
  err = one_line(capsys)
  assert err.startswith(f"glue_sentences_corpus: stopped ({name}); removed the "), err
  assert not (tmp_path / "tapt" / "corpus").exists()  # written whole or not at all


def test_python_docs_corpus_refuses_more_files_than_it_can_hold_open(tmp_path, capsys):
  out = tmp_path / "docs"
  assert python_docs_corpus.main(["--output-dir", str(out), "--num-files", "100000"]) == 2
  assert one_line(capsys).startswith(
    f"error: --num-files 100000: expected at most {python_docs_corpus.MAX_FILES}"
  )
  assert not out.exists()


# --- kind 2: parts that do not belong together (19, 20, 21, 22, 24, 27, 35) ------


@pytest.mark.parametrize("config_class", [PretrainingConfig, FinetuningConfig])
@pytest.mark.parametrize("hparam", ["init_checkpoint", "vocab_file"])
def test_an_empty_path_hparam_is_refused_not_read_as_none(tmp_path, config_class, hparam):
  """`"init_checkpoint": ""` trained from random weights without a word."""
  extra = {"task_names": ["sst"]} if config_class is FinetuningConfig else {}
  with pytest.raises(ValueError) as e:
    config_class("m", str(tmp_path), **{hparam: "", **extra})
  assert str(e.value) == f"hparam {hparam}=''; expected a path, or null for none"


@pytest.mark.parametrize("command", [run_pretraining, run_finetuning])
@pytest.mark.parametrize("key, flag", [("model_name", "--model-name"), ("data_dir", "--data-dir")])
def test_hparams_that_set_a_flag_s_value_are_refused_in_one_line(
  tmp_path, capsys, command, key, flag
):
  """A traceback (`got multiple values for argument 'model_name'`) before."""
  hparams = json.dumps(
    {key: "other", "task_names": ["sst"]} if command is run_finetuning else {key: "other"}
  )
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", hparams]
  assert command.main(argv) == 2
  assert one_line(capsys).endswith(
    f"--hparams sets {key}='other', which is the command's {flag} flag; give it there only"
  )
  assert not (tmp_path / "models").exists()


def test_electric_with_two_tower_generator_false_is_refused(tmp_path):
  """Electric sets two_tower_generator; a user's false overrode it, the
  config recorded false while the model was built with two towers."""
  with pytest.raises(ValueError, match=r"electric_objective=True needs two_tower_generator=True"):
    PretrainingConfig("m", str(tmp_path), electric_objective=True, two_tower_generator=False)
  assert PretrainingConfig("m", str(tmp_path), electric_objective=True).two_tower_generator


@pytest.mark.parametrize("pattern", ["same_glob", "one_shard"])
def test_held_out_records_that_are_training_records_are_refused(tmp_path, capsys, pattern):
  make_data_dir(tmp_path)
  shards = tmp_path / "pretrain_tfrecords"
  held_out = (
    str(shards / "pretrain_data.tfrecord*")
    if pattern == "same_glob"
    else str(shards / "pretrain_data.tfrecord-1-of-3")
  )
  hparams = dict(TINY, num_train_steps=2, vocab_size=60, held_out_tfrecords=held_out)
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_pretraining.main(argv) == 2
  err = one_line(capsys)
  assert "of the training files (pretrain_tfrecords)" in err and "held-out records must be" in err
  assert not (tmp_path / "models").exists()  # refused before the model dir is made


def test_tfds_data_dir_without_the_tfds_source_is_refused(tmp_path):
  with pytest.raises(ValueError) as e:
    finetuning_config("m", str(tmp_path), task_names=["sst"], tfds_data_dir="tfds")
  assert str(e.value).startswith("hparam tfds_data_dir='tfds' is read only with data_source")


def test_an_export_dir_of_another_kind_is_refused(tmp_path):
  """A discriminator written as version 2 beside a classifier's version 1
  would be what TF Serving serves under the classifier's name."""
  export_dir = tmp_path / "sst"
  (export_dir / "1" / "assets").mkdir(parents=True)
  (export_dir / "1" / "assets" / "README.txt").write_text(serving_loading.export_readme("task", 32))
  with pytest.raises(ValueError) as e:
    export_lib.check_export_dir_kind(str(export_dir), "discriminator")
  assert str(e.value).startswith(
    f"--export-dir {str(export_dir)!r} holds version 1, a task export; a discriminator export"
  )
  export_lib.check_export_dir_kind(str(export_dir), "task")  # a new version of the same kind
  # Of the same kind but another task: an RTE head would answer for SST.
  readme = serving_loading.export_readme("task", 32, task="sst")
  (export_dir / "1" / "assets" / "README.txt").write_text(readme)
  with pytest.raises(ValueError) as e:
    export_lib.check_export_dir_kind(str(export_dir), "task", "rte")
  assert str(e.value).startswith(
    f"--export-dir {str(export_dir)!r} holds version 1, task sst's export; task rte's there"
  )
  export_lib.check_export_dir_kind(str(export_dir), "task", "sst")
  export_lib.check_export_dir_kind(str(export_dir), "task")  # the task not known yet
  export_lib.check_export_dir_kind(str(tmp_path / "new"), "discriminator")


# --- kind 3 and 4: input of the wrong kind, errors that named no cause (40-50) ----


def test_get_dataset_names_records_of_another_length(tmp_path):
  """The docs' `fit` script with max_seq_length 64 on records built at 32
  failed inside `fit` ("Can't parse serialized Example")."""
  make_data_dir(tmp_path, max_seq_length=32)
  pattern = str(tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord*")
  with pytest.raises(ValueError, match=r"has length 32, expected max_seq_length=64"):
    pretraining_dataset.get_dataset(pattern, 64, 4, True, seed=0)
  assert pretraining_dataset.get_dataset(pattern, 32, 4, True, seed=0).element_spec


def test_task_model_arguments_of_the_wrong_kind_are_named(tmp_path):
  model = electra_tf.ElectraClassifier(TINY_ENCODER, num_classes=2)
  with pytest.raises(ValueError, match=r"predict batch_size=2.5; expected a positive integer"):
    model.predict(["a b"], batch_size=2.5)
  with pytest.raises(
    ValueError, match=r"predict takes texts \(str\); got a int in the batch \(1\)"
  ):
    model.predict([1, 2])
  with pytest.raises(ValueError, match=r"compile num_train_steps=2.5; expected a positive integer"):
    model.compile(num_train_steps=2.5)
  with pytest.raises(ValueError, match=r"^num_tags=0; expected a positive integer$"):
    electra_tf.ElectraTokenTagger(TINY_ENCODER, num_tags=0)
  with pytest.raises(ValueError, match=r"save_to_preset: preset_dir is empty"):
    model.save_to_preset("")
  with pytest.raises(ValueError, match=r"load: the path is empty"):
    electra_tf.serving.load("")
