"""`run_finetuning` refuses in one line, exit status 2, before reading any
data: a model name with no pre-trained model, and a non-positive
`num_train_epochs` (both were tracebacks after the data was featurised)."""

import json

from electra_tf import run_finetuning
from tests.helpers import finetuning_testdata as testdata


def _run(data_dir, model_name, hparams, capsys):
  argv = ["--data-dir", data_dir, "--model-name", model_name, "--hparams", json.dumps(hparams)]
  code = run_finetuning.main(argv)
  return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def _data_dir(tmp_path):
  data_dir, vocab_size = testdata.make_data_dir(tmp_path)
  rows = [("sentence", "label")] + [("the a", 1), ("a the", 0)] * 4
  testdata.write_task_file(data_dir, "sst", "train.tsv", testdata.tsv(rows))
  testdata.write_task_file(data_dir, "sst", "dev.tsv", testdata.tsv(rows))
  return data_dir, testdata.tiny_hparams(vocab_size, task_names=["sst"])


def test_a_model_name_with_no_model_is_one_line(tmp_path, capsys):
  data_dir, hparams = _data_dir(tmp_path)
  code, err = _run(data_dir, "nothing", hparams, capsys)
  assert code == 2 and len(err) == 1, err
  assert err[0].startswith("run_finetuning: error: hparam init_checkpoint (the model to fine-tune")
  assert "models/nothing" in err[0]


def test_non_positive_epochs_are_one_line(tmp_path, capsys):
  data_dir, hparams = _data_dir(tmp_path)
  for epochs in (-1, 0):
    code, err = _run(data_dir, "m", dict(hparams, num_train_epochs=epochs), capsys)
    assert code == 2 and len(err) == 1, err
    assert f"hparam num_train_epochs={epochs}; expected > 0" in err[0]


def test_a_split_without_examples_met_during_the_run_is_one_line(tmp_path, capsys):
  # An empty TFDS split reaches the feature builder without a file to check
  # beforehand; a split whose rows all vanish there behaves the same.
  import pytest

  from electra_tf.finetune import preprocessing
  from electra_tf.finetune import task_builder
  from electra_tf.text import wordpiece
  from electra_tf.training import run_status
  from tests.helpers.finetuning_testdata import finetuning_config

  data_dir, hparams = _data_dir(tmp_path)
  config = finetuning_config("m", data_dir, **hparams)
  tokenizer = wordpiece.FullTokenizer(config.vocab_file, do_lower_case=True)
  tasks = task_builder.get_tasks(config, tokenizer)
  tasks[0].get_examples = lambda split: []
  preprocessor = preprocessing.Preprocessor(config, tasks)
  with pytest.raises(preprocessing.NoExamplesError, match="no train examples for task"):
    preprocessor.serialize(tasks, True, "train")

  def run():
    preprocessor.serialize(tasks, True, "train")

  assert run_status.run_to_exit_status("run_finetuning", run) == 2
  err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
  assert len(err) == 1 and err[0].startswith("run_finetuning: error: no train examples"), err
