"""The bf16-vs-fp32 learning report judges differences against run-to-run
noise and writes its table and curves (on made-up runs: no training)."""

import json

import pytest

from bench import precision_learning
from electra_tf.demo import METRIC_ROWS


def _run(precision, seed, auc, se=0.01, steps=60):
  final = {"global_step": steps, "all_original_accuracy": 0.86, "unigram_masked_lm_accuracy": 0.06}
  for key, _, _, _ in METRIC_ROWS:
    final[key] = auc if key == "disc_auc_real_tokens" else 0.5
    final[f"{key}_margin_se"] = se
  history = [{"step": s, **final} for s in (10, 20, 60)]
  losses = {
    tag: [(s, 1.0 / s) for s in range(1, steps + 1)]
    for tag in ("disc_loss", "generator_loss", "loss")
  }
  return {
    "precision": precision,
    "seed": seed,
    "train_seconds": 30.0,
    "history": history,
    "final": final,
    "losses": losses,
  }


def _auc_row(runs):
  return next(r for r in precision_learning.compare(runs) if r["metric"] == "discriminator AUC")


def test_a_difference_inside_the_seed_spread_is_within_noise():
  runs = [
    _run("float32", 0, 0.80),
    _run("float32", 1, 0.86),
    _run("mixed_bfloat16", 0, 0.84),
    _run("mixed_bfloat16", 1, 0.85),
  ]
  row = _auc_row(runs)
  assert row["bf16_minus_fp32"] == pytest.approx(0.845 - 0.83)
  assert row["seed_spread"] == pytest.approx(0.06)
  assert row["verdict"] == "within noise"


def test_a_difference_beyond_seeds_and_batch_noise_is_reported():
  runs = [
    _run("float32", 0, 0.90),
    _run("float32", 1, 0.91),
    _run("mixed_bfloat16", 0, 0.70),
    _run("mixed_bfloat16", 1, 0.71),
  ]
  row = _auc_row(runs)
  assert row["two_batch_se"] == pytest.approx(0.02)
  assert row["verdict"] == "outside noise"


def test_batch_noise_counts_when_the_seeds_agree():
  runs = [
    _run(p, s, auc, se=0.05)
    for p, auc in (("float32", 0.9), ("mixed_bfloat16", 0.86))
    for s in (0, 1)
  ]
  row = _auc_row(runs)
  assert row["seed_spread"] == 0.0
  assert row["verdict"] == "within noise"  # |-0.04| <= 2 * 0.05


def test_writes_a_table_and_curves(tmp_path):
  runs = [_run(p, s, 0.8 + 0.01 * s) for s in (0, 1) for p in precision_learning.PRECISIONS]
  text = precision_learning._markdown(runs, precision_learning.compare(runs), "# header")
  assert text.count("| float32 |") == 2 and text.count("| mixed_bfloat16 |") == 2
  assert "| discriminator AUC |" in text
  png = tmp_path / "curves.png"
  precision_learning._curves(runs, str(png))
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  json.dumps(runs)  # the report's JSON holds the runs as they are
