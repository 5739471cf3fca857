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
