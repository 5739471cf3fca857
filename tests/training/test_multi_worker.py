"""`multi_worker_mirrored` with two local worker processes (TF_CONFIG on
127.0.0.1 ports): both train, only the chief writes checkpoints, and the
chief's checkpoint restores."""

import os
import subprocess

import pytest
import tensorflow as tf

from electra_tf.checkpoints import checkpointing
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.training import pretraining_run
from tests.conftest import REPO_ROOT
from tests.helpers.pretraining_data import eta_steps
from tests.helpers.pretraining_data import make_data_dir
from tests.helpers.pretraining_data import self_made_hparams
from tests.helpers.subprocesses import local_worker_tf_configs
from tests.helpers.subprocesses import quiet_env
from tests.helpers.subprocesses import run_pretraining_command


@pytest.mark.slow
def test_two_local_workers_train_and_the_chief_checkpoint_restores(tmp_path):
  make_data_dir(tmp_path, num_examples=32)
  hparams = self_made_hparams(
    num_train_steps=4,
    save_checkpoints_steps=2,
    seed=5,
    distribution_strategy="multi_worker_mirrored",
  )
  procs = [
    subprocess.Popen(
      run_pretraining_command(tmp_path, "mw", hparams),
      cwd=REPO_ROOT,
      env=quiet_env(TF_CONFIG=tf_config),
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
    )
    for tf_config in local_worker_tf_configs(2)
  ]
  outputs = []
  try:
    for proc in procs:
      out, err = proc.communicate(timeout=600)
      outputs.append(out)
      assert proc.returncode == 0, err[-3000:]
  finally:
    for proc in procs:
      if proc.poll() is None:
        proc.kill()
  for out in outputs:
    assert eta_steps(out)[-1] == 4
  model_dir = tmp_path / "models" / "mw"
  # Only the chief's files: checkpoints, the state file, event files, the run config.
  names = sorted(os.listdir(model_dir))
  assert {"model.ckpt-2.index", "model.ckpt-4.index", "checkpoint"} <= set(names), names
  assert all(
    n.startswith(("model.ckpt-", "checkpoint", "events.out.tfevents", "config.json")) for n in names
  )

  # The chief's checkpoint restores into a single-process model.
  config = PretrainingConfig("mw", str(tmp_path), **hparams)
  config.distribution_strategy = "default"
  model = pretraining_run.build_pretrainer(config, tf.distribute.get_strategy())
  manager = checkpointing.TrainingCheckpointManager(model, config.model_dir, chief=True)
  assert manager.restore_latest() == 4
