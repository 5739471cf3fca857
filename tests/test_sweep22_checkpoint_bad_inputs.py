"""Newcomer sweep 22: `PretrainingCheckpoint` on a model dir whose training is finished."""

import os

import tensorflow as tf

from electra_tf.checkpoints import checkpointing
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.training import pretraining_run
from tests.helpers.pretraining_data import latest_step
from tests.helpers.pretraining_data import make_data_dir
from tests.helpers.pretraining_data import self_made_hparams


def _fit(config):
  """docs/keras.md's script: a fresh pretrainer and manager, one `fit`."""
  model = pretraining_run.build_pretrainer(config, tf.distribute.get_strategy())
  manager = checkpointing.TrainingCheckpointManager(model, config.model_dir, chief=True)
  callback = checkpointing.PretrainingCheckpoint(
    manager, config.save_checkpoints_steps, config.num_train_steps, handle_sigterm=False
  )
  model.fit(
    pretraining_run.make_dataset(config, True),
    epochs=1,
    steps_per_epoch=config.num_train_steps,
    verbose=0,
    shuffle=False,
    callbacks=[callback],
  )
  return model


def test_a_finished_run_re_run_trains_and_saves_nothing(tmp_path, capsys):
  """The Keras script re-run on a finished model dir (checkpoint at
  num_train_steps) trained one more step and saved `model.ckpt-<N+1>` silently."""
  make_data_dir(tmp_path)
  hparams = self_made_hparams(num_train_steps=2, save_checkpoints_steps=2)
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  assert checkpointing.global_step(_fit(config)) == 2
  files = sorted(os.listdir(config.model_dir))
  capsys.readouterr()
  model = _fit(config)
  assert checkpointing.global_step(model) == 2
  assert latest_step(config.model_dir) == 2
  assert sorted(os.listdir(config.model_dir)) == files
  assert capsys.readouterr().out.splitlines() == [
    f"Global step 2 >= num_train_steps=2 in {config.model_dir}: nothing to train."
  ]
  # The model's own train function is back: a further `fit` trains.
  model.fit(pretraining_run.make_dataset(config, True), steps_per_epoch=1, verbose=0, shuffle=False)
  assert checkpointing.global_step(model) == 3
