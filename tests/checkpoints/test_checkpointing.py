"""Checkpoints: periodic, keep-max, resume with slots and step, atomicity,
chief-only writing (electra_tf/checkpointing.py), on a toy Keras model."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.checkpoints.checkpointing import PretrainingCheckpoint
from electra_tf.checkpoints.checkpointing import TrainingCheckpointManager
from electra_tf.checkpoints.checkpointing import global_step
from tests.conftest import REPO_ROOT


def _toy_model(seed=0):
  keras.utils.set_random_seed(seed)
  model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
  schedule = keras.optimizers.schedules.PolynomialDecay(
    0.05, decay_steps=100, end_learning_rate=0.0
  )
  model.compile(optimizer=keras.optimizers.Adam(schedule), loss="mse")
  return model


def _dataset():
  rng = np.random.default_rng(1)
  x = rng.normal(size=(64, 3)).astype("float32")
  y = x.sum(axis=1, keepdims=True)
  return tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat()


def _train(model_dir, target_step, save_every=5, keep=3, steps_per_epoch=None):
  model = _toy_model()
  manager = TrainingCheckpointManager(model, str(model_dir), keep_checkpoint_max=keep, chief=True)
  callback = PretrainingCheckpoint(
    manager, save_every, num_train_steps=target_step, handle_sigterm=False
  )
  step = callback.restore()
  if step < target_step:
    model.fit(
      _dataset(),
      epochs=1,
      steps_per_epoch=steps_per_epoch or target_step - step,
      verbose=0,
      callbacks=[callback],
    )
  return model, manager


def _weights(model):
  return [v.numpy() for v in model.weights]


def _optimizer_state(model):
  return [(v.name, v.numpy()) for v in model.optimizer.variables]


def test_periodic_checkpoints_and_keep_max(tmp_path):
  model, manager = _train(tmp_path, 17, save_every=5, keep=3)
  assert global_step(model) == 17
  names = [os.path.basename(p) for p in manager.checkpoints]
  # step 0 at start, 5, 10, 15, and the end (17); only the newest 3 are kept.
  assert names == ["model.ckpt-10", "model.ckpt-15", "model.ckpt-17"]
  files = set(os.listdir(tmp_path))
  assert "model.ckpt-0.index" not in files and "model.ckpt-5.index" not in files
  assert "checkpoint" in files


def test_keep_zero_keeps_all(tmp_path):
  _, manager = _train(tmp_path, 10, save_every=5, keep=0)
  assert [os.path.basename(p) for p in manager.checkpoints] == [
    "model.ckpt-0",
    "model.ckpt-5",
    "model.ckpt-10",
  ]


def test_stop_and_rerun_equals_one_uninterrupted_run(tmp_path):
  straight, _ = _train(tmp_path / "straight", 20, save_every=5)
  # First run stops at step 12 (a shorter job), the rerun continues to 20.
  first, _ = _train(tmp_path / "resumed", 12, save_every=5)
  assert global_step(first) == 12
  resumed, manager = _train(tmp_path / "resumed", 20, save_every=5)
  assert global_step(resumed) == 20
  # The data order restarts on resume, so weights differ; what must hold is
  # the step, the schedule position and that all state was restored.
  assert float(resumed.optimizer.learning_rate.numpy()) == pytest.approx(
    float(straight.optimizer.learning_rate.numpy())
  )
  assert os.path.basename(manager.latest_checkpoint) == "model.ckpt-20"


def test_restore_brings_back_weights_slots_and_step(tmp_path):
  model, _ = _train(tmp_path, 8, save_every=4)
  fresh = _toy_model(seed=5)
  manager = TrainingCheckpointManager(fresh, str(tmp_path), chief=True)
  assert manager.restore_latest() == 8
  for a, b in zip(_weights(model), _weights(fresh)):
    np.testing.assert_array_equal(a, b)
  expected = _optimizer_state(model)
  restored = _optimizer_state(fresh)
  assert len(expected) == len(restored)
  assert any(np.any(v != 0) for name, v in expected if "iteration" not in name)
  for (_, a), (_, b) in zip(expected, restored):
    np.testing.assert_array_equal(a, b)


def test_rerun_at_target_does_nothing(tmp_path):
  _train(tmp_path, 6, save_every=3)
  mtime = os.path.getmtime(tmp_path / "checkpoint")
  model, _ = _train(tmp_path, 6, save_every=3)
  assert global_step(model) == 6
  assert os.path.getmtime(tmp_path / "checkpoint") == mtime


def test_callback_alone_resumes_and_stops_at_target(tmp_path):
  # A user's script: no explicit restore, steps_per_epoch = the target.
  _train(tmp_path, 4, save_every=2)
  model = _toy_model()
  manager = TrainingCheckpointManager(model, str(tmp_path), chief=True)
  model.fit(
    _dataset(),
    epochs=1,
    steps_per_epoch=10,
    verbose=0,
    callbacks=[PretrainingCheckpoint(manager, 2, num_train_steps=10, handle_sigterm=False)],
  )
  assert global_step(model) == 10
  assert os.path.basename(manager.latest_checkpoint) == "model.ckpt-10"


def test_non_chief_writes_nothing_into_model_dir(tmp_path):
  model = _toy_model()
  model.fit(_dataset(), epochs=1, steps_per_epoch=3, verbose=0)
  manager = TrainingCheckpointManager(model, str(tmp_path), chief=False)
  assert manager.save() is None
  assert os.listdir(tmp_path) == []


def test_missing_checkpoint_is_a_clear_error(tmp_path):
  manager = TrainingCheckpointManager(_toy_model(), str(tmp_path), chief=True)
  assert manager.restore_latest() is None
  with pytest.raises(ValueError, match="not found"):
    manager.restore(str(tmp_path / "model.ckpt-3"))


def test_negative_keep_is_rejected(tmp_path):
  with pytest.raises(ValueError, match="keep_checkpoint_max"):
    TrainingCheckpointManager(_toy_model(), str(tmp_path), keep_checkpoint_max=-1)


@pytest.mark.slow
def test_kill_during_saves_leaves_a_readable_latest_checkpoint(tmp_path):
  """SIGKILL a process that saves checkpoints in a tight loop, at several
  moments; after each kill the latest checkpoint must restore."""
  script = textwrap.dedent(f"""
      import sys
      sys.path.insert(0, {str(REPO_ROOT)!r})
      from tests.checkpoints.test_checkpointing import _arrays, _toy_model
      from electra_tf.checkpoints.checkpointing import TrainingCheckpointManager
      model = _toy_model()
      model.fit(*_arrays(), epochs=1, batch_size=4, verbose=0)
      manager = TrainingCheckpointManager(model, sys.argv[1], keep_checkpoint_max=2, chief=True)
      step = manager.restore_latest() or 0
      print("ready", flush=True)
      while True:
        step += 1
        model.optimizer.iterations.assign(step)
        manager.save()
  """)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
  rng = np.random.default_rng(0)
  for _ in range(3):
    proc = subprocess.Popen(
      [sys.executable, "-c", script, str(tmp_path)],
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.DEVNULL,
      text=True,
    )
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(float(rng.uniform(0.2, 1.0)))
    proc.kill()
    proc.wait()
    model = _toy_model()
    manager = TrainingCheckpointManager(model, str(tmp_path), chief=True)
    step = manager.restore_latest()
    assert step is not None and step > 0
    assert os.path.basename(manager.latest_checkpoint) == f"model.ckpt-{step}"


def _arrays():
  rng = np.random.default_rng(1)
  x = rng.normal(size=(8, 3)).astype("float32")
  return x, x.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_saves_and_stops_then_rerun_resumes(tmp_path, signum):
  model = _toy_model()
  manager = TrainingCheckpointManager(model, str(tmp_path), chief=True)
  callback = PretrainingCheckpoint(manager, 100, num_train_steps=20)

  class Preempt(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
      if global_step(self.model) == 6:
        os.kill(os.getpid(), signum)

  previous = signal.getsignal(signum)
  model.fit(_dataset(), epochs=1, steps_per_epoch=20, verbose=0, callbacks=[Preempt(), callback])
  assert callback.preempted and callback.stop_signal == signum
  assert global_step(model) == 6
  assert os.path.basename(manager.latest_checkpoint) == "model.ckpt-6"
  # The handler is uninstalled after training.
  assert signal.getsignal(signum) == previous
  resumed, _ = _train(tmp_path, 20, save_every=100)
  assert global_step(resumed) == 20
