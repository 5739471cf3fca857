"""The bf16-vs-fp32 learning report judges differences against run-to-run
noise and writes its table and curves (on made-up runs: no training)."""

import json

import pytest

from bench import precision_learning
from electra_tf.training.held_out_evaluation import METRIC_ROWS


def _run(precision, seed, auc, se=0.01, steps=60):
  final = {"global_step": steps, "all_original_accuracy": 0.86, "unigram_masked_lm_accuracy": 0.06}
  for key, _, _, _ in METRIC_ROWS:
    final[key] = auc if key == "disc_auc_real_tokens" else 0.5
    final[f"{key}_margin_se"] = se
  history = [{"step": s, **final} for s in (0, 10, 20, 60)]
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


def _auc_row(aucs, se):
  """The AUC comparison of runs whose final AUCs are `aucs`:
  `{precision: (seed 0, seed 1)}`."""
  runs = [_run(p, seed, auc, se=se) for p, pair in aucs.items() for seed, auc in enumerate(pair)]
  return next(r for r in precision_learning.compare(runs) if r["metric"] == "discriminator AUC")


@pytest.mark.parametrize(
  "aucs, se, difference, seed_spread, verdict",
  [
    # inside the seeds' spread
    ({"float32": (0.80, 0.86), "mixed_bfloat16": (0.84, 0.85)}, 0.01, 0.015, 0.06, "within noise"),
    # beyond the seeds' spread and twice the batches' standard error
    ({"float32": (0.90, 0.91), "mixed_bfloat16": (0.70, 0.71)}, 0.01, -0.2, 0.01, "outside noise"),
    # the seeds agree, but |-0.04| <= 2 × the batches' standard error 0.05
    ({"float32": (0.90, 0.90), "mixed_bfloat16": (0.86, 0.86)}, 0.05, -0.04, 0.0, "within noise"),
  ],
)
def test_bf16_minus_fp32_is_judged_against_seed_and_batch_noise(
  aucs, se, difference, seed_spread, verdict
):
  row = _auc_row(aucs, se)
  assert row["bf16_minus_fp32"] == pytest.approx(difference)
  assert row["seed_spread"] == pytest.approx(seed_spread)
  assert row["two_batch_se"] == pytest.approx(2 * se)
  assert row["verdict"] == verdict


def test_writes_a_table_and_curves(tmp_path):
  runs = [_run(p, s, 0.8 + 0.01 * s) for s in (0, 1) for p in precision_learning.PRECISIONS]
  text = precision_learning._markdown(runs, precision_learning.compare(runs), "# header")
  assert text.count("| float32 |") == 2 and text.count("| mixed_bfloat16 |") == 2
  assert "| discriminator AUC |" in text
  png = tmp_path / "curves.png"
  figure = precision_learning._curves(runs, str(png))
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  loss, auc, accuracy = figure.axes
  names = [f"{p} seed {s}" for p in precision_learning.PRECISIONS for s in (0, 1)]
  assert [line.get_label() for line in loss.get_lines()] == [
    f"{name} ({kind})" for name in names for kind in ("raw", "EMA 0.9")
  ]
  for axes, baseline in ((auc, "random scores (0.500)"), (accuracy, "(0.060)")):
    labels = [line.get_label() for line in axes.get_lines()]
    assert labels[:4] == names and labels[4].endswith(baseline)
    assert all(list(line.get_xdata()) == [0, 10, 20, 60] for line in axes.get_lines()[:4])
  json.dumps(runs)  # the report's JSON holds the runs as they are
