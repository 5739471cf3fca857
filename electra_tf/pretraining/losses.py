"""Pre-training losses and head outputs on tensors (`run_pretraining.py:PretrainingModel`).

Every loss is a weighted mean `sum(w * x) / (sum(w) + 1e-6)`; with
`cross_replica_sum` (or a given global `denominator`) it is this replica's
(or micro-batch's) share of the global loss, as summed gradients need.
"""

import math

import tensorflow as tf


def weighted_mean(values, weights, cross_replica_sum=None, denominator=None):
  """`sum(w * v) / (1e-6 + sum(w))`, the denominator summed over replicas,
  or `denominator` (the global `sum(w)`) when given."""
  values = tf.cast(values, tf.float32)
  weights = tf.cast(weights, tf.float32)
  if denominator is not None:
    denominator = tf.cast(denominator, tf.float32)
  else:
    denominator = tf.reduce_sum(weights)
    if cross_replica_sum is not None:
      denominator = cross_replica_sum(denominator)
  return tf.reduce_sum(values * weights) / (1e-6 + denominator)


def softmax_output(logits, targets, weights, cross_replica_sum=None, denominator=None):
  """The original's `get_softmax_output` without the `[.., V]` probabilities.

  Args:
    logits: `[..., V]` logits (cast to float32).
    targets: int `[...]` target ids.
    weights: `[...]` weights (0 for unused slots; duplicates count twice).
    cross_replica_sum: optional function summing a scalar over replicas.
    denominator: optional global `sum(weights)` (see `weighted_mean`).

  Returns:
    Dict: `logits`, `preds` (int32 argmax), `per_example_loss` (the NLL per
    slot, not per example, as in the original), `loss` (weighted mean NLL)
    and `weights`.

  Example:
  >>> out = softmax_output(tf.zeros([1, 2, 4]), tf.constant([[1, 2]]),
  ...                      tf.constant([[1.0, 0.0]]))
  >>> round(float(out["loss"]), 4)  # log(4)
  1.3863
  """
  logits = tf.cast(logits, tf.float32)
  targets = tf.cast(targets, tf.int32)
  nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)
  return {
    "logits": logits,
    "preds": tf.argmax(logits, axis=-1, output_type=tf.int32),
    "per_example_loss": nll,
    "loss": weighted_mean(nll, weights, cross_replica_sum, denominator),
    "weights": tf.cast(weights, tf.float32),
  }


def electric_logit_adjustment(cloze_logits, fake_input_ids, mask_prob):
  """What Electric adds to the discriminator's logits (`run_pretraining.py:PretrainingModel._get_discriminator_output`):
  `stop_gradient(log_softmax(cloze_logits)[fake_input_ids]) + log(mask_prob / (1 - mask_prob))`.

  Args:
    cloze_logits: `[B, S, V]` logits of the two-tower cloze head.
    fake_input_ids: int `[B, S]` ids of the corrupted sequence.
    mask_prob: the masking probability.

  Returns:
    float32 `[B, S]`.
  """
  log_probs = tf.nn.log_softmax(tf.cast(cloze_logits, tf.float32), axis=-1)
  token_log_probs = tf.gather(log_probs, tf.cast(fake_input_ids, tf.int32), batch_dims=2)
  return tf.stop_gradient(token_log_probs) + math.log(mask_prob / (1.0 - mask_prob))


def discriminator_output(
  logits, is_fake_tokens, input_mask, cross_replica_sum=None, denominator=None
):
  """Replaced-token-detection loss and outputs (`run_pretraining.py:PretrainingModel._get_discriminator_output`).

  Args:
    logits: `[B, S]` discriminator logits (already Electric-adjusted if needed).
    is_fake_tokens: int `[B, S]` labels.
    input_mask: `[B, S]`, 1 for real tokens ([CLS] and [SEP] included).
    cross_replica_sum: optional function summing a scalar over replicas.
    denominator: optional global `sum(input_mask)` (see `weighted_mean`).

  Returns:
    Dict: `loss`, `per_example_loss` (per-sequence mean), `probs`, `preds`
    (int32, 1 iff logit > 0), `labels`, `logits`.

  Example:
  >>> out = discriminator_output(tf.zeros([1, 3]), tf.constant([[0, 1, 0]]),
  ...                            tf.constant([[1, 1, 0]]))
  >>> round(float(out["loss"]), 4)  # log(2)
  0.6931
  """
  logits = tf.cast(logits, tf.float32)
  weights = tf.cast(input_mask, tf.float32)
  labels = tf.cast(is_fake_tokens, tf.float32)
  xent = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
  per_example_loss = tf.reduce_sum(xent * weights, axis=-1) / (
    1e-6 + tf.reduce_sum(weights, axis=-1)
  )
  return {
    "loss": weighted_mean(xent, weights, cross_replica_sum, denominator),
    "per_example_loss": per_example_loss,
    "probs": tf.sigmoid(logits),
    # round((sign + 1) / 2): 1 iff logit > 0 (0 rounds half to even -> 0).
    "preds": tf.cast(tf.round((tf.sign(logits) + 1.0) / 2.0), tf.int32),
    "labels": tf.cast(is_fake_tokens, tf.int32),
    "logits": logits,
  }


def cloze_output(
  cloze_logits, input_ids, candidates_mask, cross_replica_sum=None, denominator=None
):
  """Electric's generator loss: the cloze NLL over all candidate positions."""
  return softmax_output(
    cloze_logits, input_ids, tf.cast(candidates_mask, tf.float32), cross_replica_sum, denominator
  )


def total_loss(gen_loss, disc_loss=None, gen_weight=1.0, disc_weight=50.0):
  """`gen_weight * L_gen (+ disc_weight * L_disc)` (`run_pretraining.py:PretrainingModel`)."""
  loss = gen_weight * gen_loss
  if disc_loss is not None:
    loss += disc_weight * disc_loss
  return loss
