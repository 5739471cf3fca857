"""Helpers for tests that start the package's command lines in child processes."""

import json
import os
import re
import socket
import subprocess
import sys

from tests.conftest import REPO_ROOT

# Lines TensorFlow's C++ start-up prints on a machine without a GPU (CUDA
# probes, oneDNN notices, absl's pre-initialisation banner).
TF_START_UP_LINE = re.compile(r"cuda|cuInit|oneDNN|absl::InitializeLog|port\.cc", re.IGNORECASE)


def free_ports(n):
  """`n` distinct free TCP ports on 127.0.0.1 (for local multi-worker clusters)."""
  sockets = [socket.socket() for _ in range(n)]
  for s in sockets:
    s.bind(("127.0.0.1", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def quiet_env(**extra):
  """This process's environment with TF logging silenced and no GPU, plus `extra`."""
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="", **extra)


def run_python(args, cwd=REPO_ROOT, env=None, timeout=600):
  """Runs `python *args` in `cwd` and returns the finished process, its output
  captured as text. `env` defaults to this process's environment with TF
  logging silenced."""
  if env is None:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
  return subprocess.run(
    [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
  )


def tool_user_env(**extra):
  """The environment of a user who has not set TF's log level (the tools quiet
  TensorFlow's start-up themselves), plus `extra`."""
  env = {
    k: v
    for k, v in os.environ.items()
    if k not in ("TF_CPP_MIN_LOG_LEVEL", "ELECTRA_TF_QUIET_TF_START_UP")
  }
  return dict(env, **extra)


def run_pretraining_command(data_dir, model_name, hparams):
  """The argv of `python -m electra_tf.run_pretraining` on `data_dir` with `hparams` (a dict)."""
  return [
    sys.executable,
    "-m",
    "electra_tf.run_pretraining",
    "--data-dir",
    str(data_dir),
    "--model-name",
    model_name,
    "--hparams",
    json.dumps(hparams),
  ]


def build_dataset_flags(corpus_dir, vocab_file, output_dir, **flags):
  """The argv of `build_pretraining_dataset` (and of the Beam runner): the
  three paths, then `--name value` per keyword (`max_seq_length=24` gives
  `--max-seq-length 24`)."""
  argv = ["--corpus-dir", str(corpus_dir), "--vocab-file", str(vocab_file)]
  argv += ["--output-dir", str(output_dir)]
  for name, value in flags.items():
    argv += ["--" + name.replace("_", "-"), str(value)]
  return argv


def local_worker_tf_configs(num_workers):
  """One TF_CONFIG (JSON) per worker of a cluster on free 127.0.0.1 ports."""
  workers = [f"127.0.0.1:{port}" for port in free_ports(num_workers)]
  return [
    json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})
    for index in range(num_workers)
  ]


# Runs a `python -m` entry point (argv[2:]) that SIGKILLs itself in the save
# of the checkpoint of global step argv[1]: after the checkpoint's files are
# written, before the `checkpoint` state file names it (both managers:
# TensorFlow's `CheckpointManager` of pre-training, `name_based` of
# fine-tuning). A timed kill cannot be sure to land inside a save.
_KILLED_IN_SAVE = """
import os, runpy, signal, sys
from tensorflow.python.checkpoint import checkpoint_management
from electra_tf.checkpoints import name_based

step = sys.argv.pop(1)

def kill_if_saving(path):
  if str(path).endswith("-" + step):
    os.kill(os.getpid(), signal.SIGKILL)

update_state = checkpoint_management.update_checkpoint_state_internal
def update_state_hooked(save_dir, model_checkpoint_path, *args, **kwargs):
  kill_if_saving(model_checkpoint_path)
  return update_state(save_dir, model_checkpoint_path, *args, **kwargs)
checkpoint_management.update_checkpoint_state_internal = update_state_hooked

write_state = name_based._write_state_file
def write_state_hooked(model_dir, latest, paths):
  kill_if_saving(latest)
  return write_state(model_dir, latest, paths)
name_based._write_state_file = write_state_hooked

module = sys.argv.pop(1)
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def killed_in_save_command(command, step):
  """`command` (the argv of `python -m <module> ...`) changed so that the
  process kills itself with SIGKILL while saving the checkpoint of `step`."""
  if command[1] != "-m":
    raise ValueError(f"expected a `python -m` command, got {command[:3]}")
  return [command[0], "-c", _KILLED_IN_SAVE, str(step), *command[2:]]
