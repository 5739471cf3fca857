"""README Quickstart command (1)'s main job, end to end with a reduced step count."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from electra_tf import demo
from electra_tf.training import held_out_evaluation
from electra_tf.training.callbacks import TrainingSummaries
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
      "200",
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
  assert (model_dir / "model.ckpt-200.index").exists()
  results = (model_dir / "results" / "unsup_results.txt").read_text()
  assert "disc_auc = " in results and "masked_lm_accuracy = " in results
  measured = json.loads((model_dir / "results" / "demo_vs_baselines.json").read_text())
  assert 0.0 <= measured["disc_auc_real_tokens"] <= 1.0
  assert 0.0 < measured["unigram_masked_lm_accuracy"] < 1.0
  # The discriminator learns visibly even in this short run on a tenth of the
  # corpus (AUC about 0.82; the full demo reaches about 0.9).
  assert measured["disc_auc_real_tokens"] >= 0.75
  assert (
    held_out_evaluation.verdict(
      measured["disc_auc_real_tokens_margin"], measured["disc_auc_real_tokens_margin_se"]
    )
    == "above"
  )
  assert measured["disc_prob_std_real_tokens"] > 0.05  # no collapse to one score
  # the report's verdicts follow the margins and their noise
  for key, _, name, _ in held_out_evaluation.METRIC_ROWS:
    margin, se = measured[f"{key}_margin"], measured[f"{key}_margin_se"]
    assert se >= 0.0
    line = next(line for line in stdout.splitlines() if line.strip().startswith(name))
    assert f"{margin:+.3f} ± {2 * se:.3f} -> {held_out_evaluation.verdict(margin, se)}" in line
  assert "NOT above" not in stdout and "above baseline" not in stdout
  history = json.loads((model_dir / "demo_eval_history.json").read_text())
  assert [h["step"] for h in history] == [0, 33, 66, 99, 132, 165, 198]
  # the held-out history holds the real-token metrics the PNG plots
  assert all(0.0 <= h["disc_auc_real_tokens"] <= 1.0 for h in history)
  assert all(h["real_tokens"] > 0 and "all_original_accuracy" in h for h in history)
  assert (out / "training_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert (out / "export" / "1" / "saved_model.pb").exists()
  assert (out / "export" / "1" / "assets" / "vocab.txt").exists()
  # the scored example and the closing directions
  assert "corrupted 'return the color of items" in stdout
  assert "most suspicious words" in stdout
  assert "baseline" in stdout and "Next steps" in stdout


def _fake_training_run(out, steps=200):
  """TensorBoard losses and a held-out history in the demo's model dir."""
  paths = demo._paths(str(out))
  rng = np.random.default_rng(0)
  summaries = TrainingSummaries(paths["model_dir"])
  for step in range(0, steps, 10):
    losses = {
      "disc_loss": 0.6 * np.exp(-step / 80) + 0.05 * rng.random(),
      "generator_loss": 9.0 - step / 40 + 0.3 * rng.random(),
    }
    summaries.write(step, losses, learning_rate=False)
  history = []
  for step in range(0, steps + 1, steps // 4):
    entry = {"step": step, "all_original_accuracy": 0.86, "unigram_masked_lm_accuracy": 0.06}
    for key, _, _, _ in held_out_evaluation.METRIC_ROWS:
      entry[key] = 0.5 + 0.4 * step / steps
    history.append(entry)
  (out / "models" / "demo" / "demo_eval_history.json").write_text(json.dumps(history))
  return paths


def test_training_curves_show_smoothed_losses_and_metrics_against_baselines(tmp_path):
  paths = _fake_training_run(tmp_path)
  figure = demo._write_curves(paths)
  assert (tmp_path / "training_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  titles = [axes.get_title() for axes in figure.axes]
  assert titles[:2] == ["Generator MLM loss", "Discriminator loss"]
  assert titles[2:] == [f"Held-out {name}" for _, _, name, _ in held_out_evaluation.METRIC_ROWS]
  loss = {line.get_label(): line for line in figure.axes[1].get_lines()}
  assert set(loss) == {"training batches (raw)", "training batches (EMA 0.9)"}
  assert list(loss["training batches (raw)"].get_xdata()) == list(range(0, 200, 10))
  baselines = {}
  for axes, (key, _, _, how) in zip(figure.axes[2:], held_out_evaluation.METRIC_ROWS):
    lines = {line.get_label(): line for line in axes.get_lines()}
    held_out = lines["held-out data, real tokens"]
    assert list(held_out.get_xdata()) == [0, 50, 100, 150, 200]  # from step 0
    (label,) = [name for name in lines if name.startswith(f"baseline: {how}")]
    baselines[key] = lines[label].get_ydata()[0]
  assert baselines == {
    "masked_lm_accuracy": 0.06,
    "disc_auc_real_tokens": 0.5,
    "disc_accuracy_real_tokens": 0.86,
    "disc_recall_real_tokens": 0.0,
  }


def test_stage_table_runs_in_order_and_names_each_input_writer():
  names = list(demo.STAGES)
  assert names == ["corpus", "vocab", "data", "pretrain", "eval", "export", "score"]
  paths = demo._paths("/out")
  for index, (name, (run_stage, reads, writer)) in enumerate(demo.STAGES.items()):
    assert run_stage is getattr(demo, f"stage_{name}")
    if reads is not None:
      assert reads in paths and names.index(writer) < index


def test_help_lists_the_stages(capsys):
  with pytest.raises(SystemExit) as exit_info:
    demo.main(["--help"])
  assert exit_info.value.code == 0
  assert "corpus,vocab,data,pretrain,eval,export,score" in capsys.readouterr().out


def test_a_stage_without_its_input_names_the_stage_to_run_first(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    demo.main(["--output-dir", str(tmp_path), "--stages", "score"])
  assert exit_info.value.code == 2
  err = capsys.readouterr().err
  assert f"--stages score: {tmp_path / 'export'} does not exist; run the export stage first" in err
  # Each stage names the one before it in the chain.
  (tmp_path / "corpus").mkdir()
  with pytest.raises(SystemExit):
    demo.main(["--output-dir", str(tmp_path), "--stages", "data"])
  assert "run the vocab stage first" in capsys.readouterr().err
