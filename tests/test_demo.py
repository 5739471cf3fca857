"""README command (1)'s main job, end to end with a reduced step count."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.slow
def test_demo_runs_every_stage(tmp_path):
  out = tmp_path / "demo"
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  proc = subprocess.run(
    [
      sys.executable,
      "-m",
      "electra_tf.demo",
      "--output-dir",
      str(out),
      "--train-steps",
      "40",
      "--corpus-mb",
      "0.6",
      "--vocab-size",
      "3000",
    ],
    cwd=REPO_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=1500,
  )
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  stdout = proc.stdout
  # every stage left its output
  assert len(list((out / "corpus").glob("*.txt"))) == 8
  assert (out / "vocab.txt").read_text().splitlines()[100:104] == [
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
  ]
  assert len(list((out / "pretrain_tfrecords").glob("pretrain_data.tfrecord-*-of-8"))) == 8
  model_dir = out / "models" / "demo"
  assert (model_dir / "model.ckpt-40.index").exists()
  results = (model_dir / "results" / "unsup_results.txt").read_text()
  assert "disc_auc = " in results and "masked_lm_accuracy = " in results
  measured = json.loads((model_dir / "results" / "demo_vs_baselines.json").read_text())
  assert 0.0 <= measured["disc_auc_real_tokens"] <= 1.0
  assert 0.0 < measured["unigram_masked_lm_accuracy"] < 1.0
  history = json.loads((model_dir / "demo_eval_history.json").read_text())
  assert [h["step"] for h in history] == [6, 12, 18, 24, 30, 36]
  assert (out / "training_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert (out / "export" / "1" / "saved_model.pb").exists()
  assert (out / "export" / "1" / "assets" / "vocab.txt").exists()
  # the scored example and the closing directions
  assert "corrupted 'return the color of items" in stdout
  assert "most suspicious words" in stdout
  assert "baseline" in stdout and "Next steps" in stdout
