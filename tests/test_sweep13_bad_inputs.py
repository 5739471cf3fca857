"""Newcomer sweep 13's bad cases (bench/reports/newcomer_sweep_13.md), one
test per class: a stop signal after the import, hparams that turn the run's
output off or cannot be written at its end, texts and labels that do not
pair up, an export dir given for its version, and records of another vocab
in a Keras script."""

import os
import signal

import numpy as np
import pytest

import electra_tf
from electra_tf import hparams_reference
from electra_tf import serving
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.configs.reference import END
from electra_tf.configs.reference import START
from electra_tf.data import pretraining_dataset
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.text.tokenizer import ElectraTokenizer
from electra_tf.training import finetuning_run
from electra_tf.training.callbacks import TrainingSummaries
from electra_tf.utils.events import scalar_events
from tests.helpers import finetuning_testdata
from tests.helpers import pretraining_data
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line
from tests.helpers.finetuning_testdata import finetuning_config


def test_a_stop_signal_after_the_import_is_one_line(tmp_path, monkeypatch, capsys):
  """SIGTERM and SIGHUP while hparams_reference built its page (after the
  import) died without a word."""
  page = tmp_path / "hparams.md"
  page.write_text(f"{START}\nold\n{END}\n")
  before = page.read_text()
  for signum, status in ((signal.SIGTERM, 143), (signal.SIGHUP, 129)):

    def stopped_while_building(signum=signum):
      os.kill(os.getpid(), signum)
      return "never written"

    monkeypatch.setattr(hparams_reference, "reference_markdown", stopped_while_building)
    assert hparams_reference.main(["--write", str(page)]) == status
    assert one_line(capsys) == f"hparams_reference: stopped ({signal.Signals(signum).name})"
    assert page.read_text() == before


def test_save_summary_steps_zero_writes_no_training_scalars(tmp_path):
  """0 was taken as "every step"; it is the Estimator's "none"."""
  import keras  # pylint: disable=import-outside-toplevel

  model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
  model.compile(optimizer="sgd", loss="mse")
  x, y = np.ones((8, 2), np.float32), np.ones((8, 1), np.float32)
  model.fit(x, y, batch_size=2, verbose=0, callbacks=[TrainingSummaries(str(tmp_path / "0"), 0)])
  assert scalar_events(str(tmp_path / "0")) == {}
  model.fit(x, y, batch_size=2, verbose=0, callbacks=[TrainingSummaries(str(tmp_path / "1"), 1)])
  assert len(scalar_events(str(tmp_path / "1"))["loss"]) == 4
  for config_class, extra in ((PretrainingConfig, {}), (FinetuningConfig, {"task_names": ["sst"]})):
    with pytest.raises(ValueError, match=r"hparam save_summary_steps=-1; expected an integer >= 0"):
      config_class("m", str(tmp_path), save_summary_steps=-1, **extra)


@pytest.mark.parametrize(
  "hparams, message",
  [
    # No trial would write the test predictions asked for.
    (
      {"write_test_outputs": True, "n_writes_test": 0},
      r"hparam n_writes_test=0 with write_test_outputs true: no trial would write test",
    ),
    # Joint QA prediction with no candidates answered "empty" for every question.
    ({"beam_size": 0}, r"hparam beam_size=0; expected a positive integer"),
    ({"answerable_weight": -1}, r"hparam answerable_weight=-1; expected >= 0"),
  ],
)
def test_finetuning_hparams_that_leave_no_output_are_refused(tmp_path, hparams, message):
  with pytest.raises(ValueError, match=message):
    finetuning_config("m", str(tmp_path), task_names=["sst"], **hparams)


@pytest.mark.parametrize("hparam", ["results_txt", "results_json"])
def test_a_finetuning_results_path_that_is_a_directory_is_refused_before_training(tmp_path, hparam):
  """It failed with IsADirectoryError after the whole training and evaluation."""
  data_dir, vocab_size = finetuning_testdata.make_data_dir(tmp_path)
  results = tmp_path / "results"
  results.mkdir()
  hparams = finetuning_testdata.tiny_hparams(vocab_size, task_names=["sst"])
  config = finetuning_config("m", data_dir, **dict(hparams, **{hparam: str(results)}))
  with pytest.raises(ValueError) as e:
    finetuning_run.validate_inputs(finetuning_run.inputs_for(config))
  assert str(e.value) == f"hparam {hparam}={str(results)!r} is a directory; expected a file path"
  assert not os.path.exists(config.model_dir)


def _classifier():
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran"]
  preprocessor = ElectraTextPreprocessor(ElectraTokenizer(vocabulary=vocab), max_seq_length=8)
  return electra_tf.ElectraClassifier(
    dict(TINY_ENCODER, vocab_size=len(vocab)), 2, preprocessor=preprocessor
  )


def test_texts_and_labels_must_pair_up_and_predict_needs_texts():
  model = _classifier()
  model.compile(num_train_steps=1)
  for call in (model.fit, model.evaluate):
    with pytest.raises(ValueError, match=r"^2 texts but 1 labels \(y\); expected one label per"):
      call(["the cat sat", "the dog ran"], [1], verbose=0)
  with pytest.raises(ValueError, match=r"^2 texts but 3 labels"):
    model.evaluate((["the cat", "a dog"], ["sat", "ran"]), np.array([1, 0, 1]), verbose=0)
  with pytest.raises(
    ValueError, match=r"^ElectraClassifier.predict takes a batch of texts; got None"
  ):
    model.predict(None)


def test_an_export_dir_given_for_its_version_names_the_version(tmp_path):
  """TensorFlow said only "SavedModel file does not exist" (the user gave the
  --export-dir, whose versions are its sub-directories)."""
  for version in ("1", "3"):
    (tmp_path / "sst" / version).mkdir(parents=True)
  expected = (
    f"load: {str(tmp_path / 'sst')!r} is an export directory holding version(s) [1, 3]; load "
    f"one version, e.g. {str(tmp_path / 'sst' / '3')!r}"
  )
  with pytest.raises(ValueError) as e:
    serving.load(str(tmp_path / "sst"))
  assert str(e.value).startswith(expected)


def test_records_of_another_vocab_are_named_by_get_dataset(tmp_path):
  """The docs' Keras recipe failed inside fit with TensorFlow's "indices[0,0] =
  101 is not in [0, 50)", naming no file or hparam."""
  pretraining_data.make_data_dir(tmp_path, vocab_size=60, max_id=59, num_files=1)
  pattern = str(tmp_path / "pretrain_tfrecords" / "*")
  with pytest.raises(
    ValueError, match=r"holds id 59, outside the vocab of size 50 \(records built"
  ):
    pretraining_dataset.get_dataset(pattern, 32, 4, is_training=True, vocab_size=50)
  dataset = pretraining_dataset.get_dataset(pattern, 32, 4, is_training=True, vocab_size=60)
  assert dataset.element_spec["input_ids"].shape == (4, 32)
