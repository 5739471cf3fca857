"""Newcomer sweep 16's bad cases (bench/reports/newcomer_sweep_16.md), one
test per class: hparams that train nothing or are not used, a flag that does
not apply, the first of two stop signals, and the Python API's arguments
(empty export dir, uncompiled model, a path for a vocab, a run kind, the
dataset's and the summaries' counts)."""

import signal

import keras
import pytest

from electra_tf import convert_checkpoint
from electra_tf.checkpoints import checkpointing
from electra_tf.checkpoints import model_dir
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.data import pretraining_dataset
from electra_tf.pretraining.objective import PretrainingObjective
from electra_tf.serving import export as export_lib
from electra_tf.training import pretraining_run
from electra_tf.training.callbacks import TrainingSummaries
from tests.helpers import pretraining_data
from tests.helpers.bad_inputs import one_line


def test_weights_that_train_nothing_are_refused(tmp_path):
  with pytest.raises(ValueError, match=r"^hparams gen_weight=0 and disc_weight=0: the loss is 0"):
    PretrainingConfig("m", str(tmp_path), gen_weight=0, disc_weight=0)
  PretrainingConfig("m", str(tmp_path), gen_weight=0, disc_weight=0, do_train=False, do_eval=True)


@pytest.mark.parametrize(
  "hparams, line",
  [
    (
      {"electra_objective": False, "disc_weight": 100},
      "warning: electra_objective is false: no discriminator; disc_weight=100 not used",
    ),
    (
      {"uniform_generator": True, "generator_hidden_size": 0.5},
      "warning: uniform_generator=true samples replacements uniformly: there is no generator; "
      "generator_hidden_size=0.5 not used",
    ),
  ],
)
def test_hparams_the_objective_does_not_use_are_said(tmp_path, capsys, hparams, line):
  pretraining_data.make_data_dir(tmp_path)
  config = PretrainingConfig("m", str(tmp_path), **pretraining_data.self_made_hparams(**hparams))
  pretraining_run.validate_config(config)
  assert line in capsys.readouterr().err.splitlines()


def test_a_vocab_file_for_a_plain_conversion_is_refused(tmp_path, capsys):
  argv = ["--input", str(tmp_path / "m"), "--output", str(tmp_path / "o.keras")]
  assert convert_checkpoint.main(argv + ["--vocab-file", str(tmp_path / "v.txt")]) == 2
  assert one_line(capsys).endswith(
    "--vocab-file applies to --to (publishing); a conversion writes no vocab"
  )


def test_the_first_of_two_stop_signals_is_the_one_reported():
  """SIGTERM then Ctrl-C while saving reported Ctrl-C (130), not the SIGTERM (143)."""
  callback = checkpointing.PretrainingCheckpoint.__new__(checkpointing.PretrainingCheckpoint)
  callback.preempted, callback.stop_signal = False, None
  previous = signal.getsignal(signal.SIGINT)
  try:
    callback._on_signal(signal.SIGTERM, None)  # pylint: disable=protected-access
    callback._on_signal(signal.SIGINT, None)  # pylint: disable=protected-access
  finally:
    signal.signal(signal.SIGINT, previous)
  assert callback.preempted and callback.stop_signal == signal.SIGTERM


def test_the_python_api_names_its_arguments(tmp_path):
  with pytest.raises(ValueError, match=r"^export_dir is empty; expected the export directory"):
    export_lib.save_module(None, "")
  model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
  with pytest.raises(ValueError, match=r"must be compiled \(with its optimizer\)"):
    checkpointing.TrainingCheckpointManager(model, str(tmp_path / "ck"))
  config = PretrainingConfig("m", str(tmp_path))
  with pytest.raises(ValueError, match=r"vocab='v.txt' is a path; expected the vocab's tokens"):
    PretrainingObjective.from_config(config, "v.txt")
  with pytest.raises(ValueError, match=r"^run config kind='finetune'; expected 'pretraining' or"):
    model_dir.write_run_config(config, str(tmp_path / "run"), kind="finetune")
  assert not (tmp_path / "run").exists()
  with pytest.raises(ValueError, match=r"every_n_steps=-1; expected >= 0"):
    TrainingSummaries(str(tmp_path), every_n_steps=-1)


@pytest.mark.parametrize(
  "argument, expected",
  [({"cycle_length": 0}, "a positive integer"), ({"start_batch": -3}, "an integer >= 0")],
)
def test_get_dataset_names_its_counts(tmp_path, argument, expected):
  pretraining_data.make_data_dir(tmp_path, num_files=2)
  pattern = str(tmp_path / "pretrain_tfrecords" / "*")
  ((name, value),) = argument.items()
  with pytest.raises(ValueError, match=rf"^get_dataset: {name}={value}; expected {expected}$"):
    pretraining_dataset.get_dataset(pattern, 32, 4, True, seed=0, **argument)
