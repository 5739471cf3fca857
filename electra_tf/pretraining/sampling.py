"""The generator's replacement tokens, by the Gumbel-max trick
(`pretrain/pretrain_helpers.py:sample_from_softmax`), and the discriminator's
input built from them; the noise comes from `random_streams`."""

import tensorflow as tf

from electra_tf.pretraining import random_streams
from electra_tf.pretraining.positions import scatter_update


def sample_ids_from_softmax(logits, disallow_ids=None, row_seeds=None):
  """Categorical samples from `softmax(logits)` by Gumbel-max, as ids.

  Always in float32; no softmax is formed (it does not change the argmax).

  Args:
    logits: `[B, N, V]` logits (already divided by the temperature).
    disallow_ids: optional int `[B, N]`; each slot's id gets `-1000` added to
      its logit, as the original's `disallow` one-hot does.
    row_seeds: optional int32 `[B, 2]` per-example seeds (row-keyed noise).

  Returns:
    int32 `[B, N]` sampled ids.

  Example:
  >>> ids = sample_ids_from_softmax(tf.zeros([2, 3, 10]))
  >>> ids.shape
  TensorShape([2, 3])
  """
  logits = tf.cast(logits, tf.float32)
  vocab_size = tf.shape(logits)[-1]
  if disallow_ids is not None:
    logits -= 1000.0 * tf.one_hot(disallow_ids, vocab_size, dtype=tf.float32)
  uniform = random_streams.row_uniform(
    row_seeds, tf.shape(logits)[1:], batch_size=tf.shape(logits)[0]
  )
  return tf.argmax(logits + random_streams.gumbel_noise(uniform), axis=-1, output_type=tf.int32)


def sample_from_softmax(logits, disallow=None, row_seeds=None):
  """The original's API: a one-hot `[B, N, V]` sample (`pretrain/pretrain_helpers.py:sample_from_softmax`).

  Args:
    logits: `[B, N, V]` logits.
    disallow: optional `[B, N, V]` 0/1 tensor; `1000 * disallow` is subtracted.
    row_seeds: optional int32 `[B, 2]` per-example seeds.
  """
  logits = tf.cast(logits, tf.float32)
  if disallow is not None:
    logits -= 1000.0 * tf.cast(disallow, tf.float32)
  ids = sample_ids_from_softmax(logits, row_seeds=row_seeds)
  return tf.one_hot(ids, tf.shape(logits)[-1], dtype=tf.float32)


def get_fake_data(
  input_ids,
  masked_lm_positions,
  masked_lm_ids,
  mlm_logits,
  temperature=1.0,
  disallow_correct=False,
  electric_labels=False,
  row_seeds=None,
):
  """The discriminator's input: generator samples at every selected slot (`run_pretraining.py:PretrainingModel._get_fake_data`).

  Args:
    input_ids: int `[B, S]` ORIGINAL (unmasked) ids.
    masked_lm_positions, masked_lm_ids: int `[B, N]` from `masking.mask`.
    mlm_logits: `[B, N, V]` generator logits at the selected positions.
    temperature: logits are divided by it before the disallow penalty.
    disallow_correct: forbid sampling the original id of each slot.
    electric_labels: label every sampled position as fake (Electric), even
      a sample equal to the original.
    row_seeds: optional int32 `[B, 2]` per-example seeds.

  Returns:
    Dict with `input_ids` (int32 `[B, S]`, corrupted), `is_fake_tokens`
    (int32 `[B, S]`) and `sampled_tokens` (int32 `[B, N]`).
  """
  input_ids = tf.cast(input_ids, tf.int32)
  logits = tf.stop_gradient(tf.cast(mlm_logits, tf.float32) / temperature)
  sampled_ids = sample_ids_from_softmax(
    logits, disallow_ids=masked_lm_ids if disallow_correct else None, row_seeds=row_seeds
  )
  sampled_ids = tf.stop_gradient(sampled_ids)
  updated_ids, masked = scatter_update(input_ids, sampled_ids, masked_lm_positions)
  if electric_labels:
    is_fake = masked
  else:
    is_fake = masked * tf.cast(tf.not_equal(updated_ids, input_ids), tf.int32)
  return {"input_ids": updated_ids, "is_fake_tokens": is_fake, "sampled_tokens": sampled_ids}
