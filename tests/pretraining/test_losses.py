"""Losses and metrics of each objective on tiny hand-computed cases (`run_pretraining.py:PretrainingModel._get_masked_lm_output`–7.7)."""

import math

import numpy as np
import tensorflow as tf

from electra_tf.pretraining import losses
from electra_tf.pretraining import metrics as pretraining_metrics


def _log_softmax(x):
  x = np.asarray(x, np.float64)
  return (
    x
    - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))
    - x.max(-1, keepdims=True)
  )


def test_mlm_softmax_output_by_hand():
  logits = np.array([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [5.0, 5.0, 5.0]]], np.float32)
  targets = np.array([[0, 2, 1]])
  weights = np.array([[1.0, 1.0, 0.0]])
  out = losses.softmax_output(logits, targets, weights)
  nll = np.array(
    [
      -(2 - math.log(math.exp(2) + 2)),
      -(0 - math.log(math.e + 2)),
      math.log(3),
    ]
  )
  np.testing.assert_allclose(out["per_example_loss"].numpy()[0], nll, rtol=1e-6)
  np.testing.assert_allclose(float(out["loss"]), (nll[0] + nll[1]) / (2 + 1e-6), rtol=1e-6)
  np.testing.assert_array_equal(out["preds"].numpy(), [[0, 1, 0]])


def test_duplicate_slots_count_twice():
  logits = np.zeros([1, 3, 4], np.float32)
  logits[0, :2, 1] = 3.0  # slots 0 and 1 are the same position drawn twice
  out = losses.softmax_output(logits, [[1, 1, 2]], [[1.0, 1.0, 1.0]])
  nll_a = -(3 - math.log(math.exp(3) + 3))
  np.testing.assert_allclose(float(out["loss"]), (2 * nll_a + math.log(4)) / 3, rtol=1e-5)


def test_uniform_generator_loss_is_log_vocab():
  out = losses.softmax_output(
    np.zeros([2, 3, 50], np.float32), np.ones([2, 3], np.int32), np.ones([2, 3])
  )
  np.testing.assert_allclose(float(out["loss"]), math.log(50), rtol=1e-5)


def test_discriminator_loss_averages_over_real_tokens_of_the_batch():
  logits = np.array([[1.0, -2.0, 0.0, 3.0], [0.5, 0.0, 0.0, 0.0]], np.float32)
  labels = np.array([[1, 0, 1, 0], [0, 1, 0, 0]])
  input_mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]])
  out = losses.discriminator_output(logits, labels, input_mask)
  sig = lambda z: 1 / (1 + np.exp(-z))
  xent = -(labels * np.log(sig(logits)) + (1 - labels) * np.log(1 - sig(logits)))
  np.testing.assert_allclose(float(out["loss"]), (xent * input_mask).sum() / (6 + 1e-6), rtol=1e-5)
  np.testing.assert_allclose(
    out["per_example_loss"].numpy(), [xent[0].mean(), xent[1, :2].mean()], rtol=1e-5
  )
  # pred is 1 iff logit > 0: a logit of exactly 0 is "real"
  np.testing.assert_array_equal(out["preds"].numpy(), [[1, 0, 0, 1], [1, 0, 0, 0]])
  np.testing.assert_allclose(out["probs"].numpy(), sig(logits), rtol=1e-6)


def test_electric_adjustment_by_hand():
  cloze_logits = np.array([[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]], np.float32)
  fake_ids = np.array([[2, 1]])
  adj = losses.electric_logit_adjustment(cloze_logits, fake_ids, 0.15).numpy()
  lp = _log_softmax(cloze_logits)
  log_odds = math.log(0.15 / 0.85)
  np.testing.assert_allclose(adj, [[lp[0, 0, 2] + log_odds, lp[0, 1, 1] + log_odds]], rtol=1e-5)
  variable = tf.Variable(cloze_logits)
  with tf.GradientTape() as tape:
    y = tf.reduce_sum(losses.electric_logit_adjustment(variable, fake_ids, 0.15))
  assert tape.gradient(y, variable) is None  # stop-gradient, as in the original


def test_cloze_loss_over_candidates():
  cloze_logits = np.array([[[0.0, 1.0], [2.0, 0.0], [0.0, 0.0]]], np.float32)
  ids = np.array([[1, 0, 1]])
  candidates = np.array([[False, True, True]])
  out = losses.cloze_output(cloze_logits, ids, candidates)
  lp = _log_softmax(cloze_logits)
  np.testing.assert_allclose(
    float(out["loss"]), -(lp[0, 1, 0] + lp[0, 2, 1]) / (2 + 1e-6), rtol=1e-5
  )


def test_total_loss_weights_and_mlm_only():
  assert float(losses.total_loss(2.0, 0.5, gen_weight=1.0, disc_weight=50.0)) == 27.0
  assert float(losses.total_loss(2.0, None, gen_weight=3.0)) == 6.0


def test_cross_replica_denominator_gives_the_global_mean():
  values = np.array([1.0, 2.0, 3.0, 4.0])
  weights = np.array([1.0, 0.0, 1.0, 1.0])
  total = float(losses.weighted_mean(values, weights))
  # two "replicas" each dividing by the summed weight add up to the global mean
  global_weight = lambda _: tf.constant(3.0)
  halves = [
    float(losses.weighted_mean(values[i : i + 2], weights[i : i + 2], global_weight))
    for i in (0, 2)
  ]
  np.testing.assert_allclose(sum(halves), total, rtol=1e-6)


def test_streaming_metrics_match_the_original_definitions():
  metrics = pretraining_metrics.make_pretraining_metrics(True, 50.0)
  assert sorted(metrics) == [
    "disc_accuracy",
    "disc_auc",
    "disc_loss",
    "disc_precision",
    "disc_recall",
    "masked_lm_accuracy",
    "masked_lm_loss",
    "sampled_masked_lm_accuracy",
  ]
  rng = np.random.RandomState(0)
  batches = []
  for _ in range(3):
    batches.append(
      {
        "masked_lm_ids": rng.randint(0, 4, [2, 3]),
        "masked_lm_preds": rng.randint(0, 4, [2, 3]),
        "sampled_tokens": rng.randint(0, 4, [2, 3]),
        "masked_lm_weights": rng.randint(0, 2, [2, 3]).astype(np.float32),
        "mlm_per_slot_loss": rng.rand(2, 3).astype(np.float32),
        "disc_labels": rng.randint(0, 2, [2, 5]),
        "disc_preds": rng.randint(0, 2, [2, 5]),
        "disc_probs": rng.rand(2, 5).astype(np.float32),
        "disc_per_example_loss": rng.rand(2).astype(np.float32),
        "input_mask": np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]]),
      }
    )
    pretraining_metrics.update_pretraining_metrics(metrics, batches[-1])
  cat = lambda k: np.concatenate([b[k].ravel() for b in batches]).astype(np.float64)
  w = cat("masked_lm_weights")
  np.testing.assert_allclose(
    float(metrics["masked_lm_accuracy"].result()),
    (w * (cat("masked_lm_ids") == cat("masked_lm_preds"))).sum() / w.sum(),
    rtol=1e-6,
  )
  np.testing.assert_allclose(
    float(metrics["masked_lm_loss"].result()),
    (w * cat("mlm_per_slot_loss")).sum() / w.sum(),
    rtol=1e-6,
  )
  np.testing.assert_allclose(
    float(metrics["disc_loss"].result()), cat("disc_per_example_loss").mean(), rtol=1e-6
  )
  labels, preds, mask = cat("disc_labels"), cat("disc_preds"), cat("input_mask")
  correct = labels == preds
  np.testing.assert_allclose(
    float(metrics["disc_accuracy"].result()), (correct * mask).sum() / mask.sum(), rtol=1e-6
  )
  np.testing.assert_allclose(
    float(metrics["disc_precision"].result()),
    (correct * preds * mask).sum() / (preds * mask).sum(),
    rtol=1e-6,
  )
  np.testing.assert_allclose(
    float(metrics["disc_recall"].result()),
    (correct * labels * mask).sum() / (labels * mask).sum(),
    rtol=1e-6,
  )
  # AUC over every position (padding: label 0, score 0), close to the exact ROC AUC
  y, s = labels * mask, cat("disc_probs") * mask
  pos, neg = s[y == 1], s[y == 0]
  exact = ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (
    len(pos) * len(neg)
  )
  np.testing.assert_allclose(float(metrics["disc_auc"].result()), exact, atol=0.03)
  for m in metrics.values():
    m.reset_state()
  assert float(metrics["disc_accuracy"].result()) == 0.0


def test_mlm_only_metrics():
  assert sorted(pretraining_metrics.make_pretraining_metrics(False)) == [
    "masked_lm_accuracy",
    "masked_lm_loss",
  ]
  assert "disc_auc" not in pretraining_metrics.make_pretraining_metrics(True, 0.0)
