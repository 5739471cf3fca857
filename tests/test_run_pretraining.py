"""`python -m electra_tf.run_pretraining`: bad input gives one clear error
line before anything is trained; the command trains, resumes (also after
kill -9), continues from the original's checkpoint and evaluates on the
original's data. The library under it is tested in
tests/training/test_pretraining_run.py."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from electra_tf import run_pretraining
from tests.conftest import REPO_ROOT
from tests.helpers.pretraining_data import ETA_LINE
from tests.helpers.pretraining_data import EVAL_NAMES
from tests.helpers.pretraining_data import SPECIAL
from tests.helpers.pretraining_data import eta_steps
from tests.helpers.pretraining_data import latest_step
from tests.helpers.pretraining_data import make_data_dir
from tests.helpers.pretraining_data import original_hparams
from tests.helpers.pretraining_data import self_made_hparams


def run_cli(data_dir, model_name, hparams, timeout=600):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
  return subprocess.run(
    [
      sys.executable,
      "-m",
      "electra_tf.run_pretraining",
      "--data-dir",
      str(data_dir),
      "--model-name",
      model_name,
      "--hparams",
      json.dumps(hparams),
    ],
    cwd=REPO_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=timeout,
  )


# ----------------------------------------------------------------------------
# Bad input: one clear error each, before anything is trained
# ----------------------------------------------------------------------------


def _bad_input(capsys, data_dir, hparams, expected):
  code = run_pretraining.main(
    ["--data-dir", str(data_dir), "--model-name", "m", "--hparams", json.dumps(hparams)]
  )
  err = capsys.readouterr().err
  assert code == 2
  assert re.search(expected, err), err
  assert latest_step(data_dir / "models" / "m") is None
  return err


def test_no_tfrecords(tmp_path, capsys):
  (tmp_path / "vocab.txt").write_text("\n".join(SPECIAL) + "\n")
  _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(),
    r"No pre-training TFRecords found for hparam pretrain_tfrecords",
  )


def test_records_of_another_max_seq_length(tmp_path, capsys):
  make_data_dir(tmp_path, max_seq_length=32)
  err = _bad_input(capsys, tmp_path, self_made_hparams(max_seq_length=64), r"max_seq_length")
  assert "pretrain_data.tfrecord" in err


def test_vocab_smaller_than_ids(tmp_path, capsys):
  make_data_dir(tmp_path, vocab_size=60, max_id=99)
  _bad_input(capsys, tmp_path, self_made_hparams(vocab_size=60), r"(?i)vocab_size")


def test_unknown_hparam(tmp_path, capsys):
  make_data_dir(tmp_path)
  _bad_input(
    capsys, tmp_path, self_made_hparams(num_train_step=5), r"Unknown hparam 'num_train_step'"
  )


def test_train_and_eval_both_set(tmp_path, capsys):
  make_data_dir(tmp_path)
  _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(do_train=True, do_eval=True),
    r"Exactly one of `do_train` or `do_eval` must be True",
  )


def test_missing_init_checkpoint(tmp_path, capsys):
  make_data_dir(tmp_path)
  _bad_input(
    capsys,
    tmp_path,
    self_made_hparams(init_checkpoint=str(tmp_path / "nope")),
    r"hparam init_checkpoint=.*nope",
  )


@pytest.mark.slow
def test_cli_stop_rerun_eval_on_original_data(tmp_path, original_fixtures):
  model_dir = tmp_path / "models" / "tiny"
  first = run_cli(
    tmp_path,
    "tiny",
    original_hparams(original_fixtures, num_train_steps=4, save_checkpoints_steps=2),
  )
  assert first.returncode == 0, first.stderr
  assert eta_steps(first.stdout) == [1, 2, 3, 4, 4]
  assert latest_step(model_dir) == 4
  second = run_cli(
    tmp_path,
    "tiny",
    original_hparams(original_fixtures, num_train_steps=6, save_checkpoints_steps=2),
  )
  assert second.returncode == 0, second.stderr
  assert "model.ckpt-4" in second.stdout
  assert eta_steps(second.stdout) == [5, 6, 6]
  evaluation = run_cli(
    tmp_path,
    "tiny",
    original_hparams(
      original_fixtures, do_train=False, do_eval=True, num_eval_steps=2, eval_batch_size=4
    ),
  )
  assert evaluation.returncode == 0, evaluation.stderr
  written = dict(
    line.split(" = ")
    for line in (model_dir / "results" / "unsup_results.txt").read_text().splitlines()
  )
  assert set(written) == EVAL_NAMES and written["global_step"] == "6"
  assert json.loads((model_dir / "results" / "unsup_results.json").read_text())["global_step"] == 6


@pytest.mark.slow
def test_cli_continue_from_the_original_checkpoint(tmp_path, original_fixtures):
  result = run_cli(
    tmp_path,
    "cont",
    original_hparams(
      original_fixtures,
      init_checkpoint=str(original_fixtures / "models" / "tiny"),
      num_train_steps=52,
    ),
  )
  assert result.returncode == 0, result.stderr
  assert "global_step=50" in result.stdout
  assert eta_steps(result.stdout) == [51, 52, 52]
  assert latest_step(tmp_path / "models" / "cont") == 52


@pytest.mark.slow
def test_kill_9_then_rerun_resumes_and_finishes(tmp_path, original_fixtures):
  hparams = original_hparams(
    original_fixtures, num_train_steps=30, save_checkpoints_steps=4, keep_checkpoint_max=2
  )
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
  proc = subprocess.Popen(
    [
      sys.executable,
      "-m",
      "electra_tf.run_pretraining",
      "--data-dir",
      str(tmp_path),
      "--model-name",
      "tiny",
      "--hparams",
      json.dumps(hparams),
    ],
    cwd=REPO_ROOT,
    env=env,
    stdout=subprocess.PIPE,
    stderr=subprocess.DEVNULL,
    text=True,
  )
  killed_after = None
  deadline = time.time() + 300
  for line in proc.stdout:
    match = ETA_LINE.match(line)
    if match and int(match.group(1)) >= 10:
      killed_after = int(match.group(1))
      os.kill(proc.pid, signal.SIGKILL)
      break
    assert time.time() < deadline
  proc.wait()
  assert killed_after is not None and killed_after < 30
  model_dir = tmp_path / "models" / "tiny"
  resumed_from = latest_step(model_dir)
  assert resumed_from is not None and 8 <= resumed_from <= killed_after
  result = run_cli(tmp_path, "tiny", hparams)
  assert result.returncode == 0, result.stderr
  assert f"model.ckpt-{resumed_from}" in result.stdout
  steps = eta_steps(result.stdout)
  assert steps[0] == resumed_from + 1 and steps[-1] == 30
  assert latest_step(model_dir) == 30
