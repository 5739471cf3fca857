"""Random draws of a pre-training step: row-keyed noise and generator sampling.

The original samples the generator's replacement tokens with the Gumbel-max
trick (spec §6.6) and builds the discriminator's input from them (spec §7.3).

Random numbers here are either stateful (`row_seeds=None`, handy in eager
code and tests) or *row-keyed*: every example gets its own stateless seed
`[stream_key, global_row]`, so the draws for an example depend only on the
seed, the step and the example's row in the GLOBAL batch — not on how the
batch is split over replicas. One device and N replicas therefore mask and
sample identically for the same global batch and seed.
"""

import tensorflow as tf

# Offsets that separate the independent random streams of one step.
STREAM_MASK_POSITIONS = 0
STREAM_MASK_REPLACE = 1
STREAM_GENERATOR_SAMPLE = 2
_NUM_STREAMS = 3


def step_row_seeds(seed, step, first_row, batch_size):
  """Per-example stateless seeds for every random stream of one step.

  Args:
    seed: int scalar, the run's seed.
    step: int scalar tensor, the optimizer step (so each step draws anew).
    first_row: int scalar, global-batch row of this replica's first example.
    batch_size: int scalar, this replica's batch size.

  Returns:
    A list with one int32 `[batch_size, 2]` tensor per stream
    (`STREAM_*` indexes it).

  Example:
  >>> seeds = step_row_seeds(0, tf.constant(3), 0, 4)
  >>> seeds[STREAM_MASK_POSITIONS].shape
  TensorShape([4, 2])
  """
  step_seed = tf.stack([tf.cast(seed, tf.int32), tf.cast(step, tf.int32)])
  keys = tf.random.stateless_uniform(
      [_NUM_STREAMS], seed=step_seed, minval=None, maxval=None, dtype=tf.int32,
      alg="philox")
  rows = tf.range(batch_size, dtype=tf.int32) + tf.cast(first_row, tf.int32)
  return [tf.stack([tf.fill(tf.shape(rows), keys[k]), rows], axis=1)
          for k in range(_NUM_STREAMS)]


def row_uniform(row_seeds, row_shape, batch_size=None):
  """U[0, 1) float32 noise of shape `[B] + row_shape`.

  Args:
    row_seeds: int32 `[B, 2]` per-example seeds, or None for stateful noise.
    row_shape: shape of one example's noise (list of ints/scalar tensors).
    batch_size: B; needed only when `row_seeds` is None.
  """
  if row_seeds is None:
    return tf.random.uniform(tf.concat([[batch_size], row_shape], 0), dtype=tf.float32)
  # One stateless draw per example, so each row's stream does not depend on
  # the batch it is in. (A plain loop: pfor cannot vectorise per-row seeds.)
  return tf.map_fn(
      lambda s: tf.random.stateless_uniform(row_shape, seed=s, dtype=tf.float32, alg="philox"),
      row_seeds, fn_output_signature=tf.float32, parallel_iterations=16)


def gumbel_noise(uniform):
  """The original's Gumbel noise `-log(-log(u + 1e-9) + 1e-9)` (spec §6.6)."""
  return -tf.math.log(-tf.math.log(uniform + 1e-9) + 1e-9)


def sample_ids_from_softmax(logits, disallow_ids=None, row_seeds=None):
  """Categorical samples from `softmax(logits)` by Gumbel-max, as ids.

  Always computed in float32 (also under mixed precision). `argmax` of
  `softmax(logits + g)` equals `argmax(logits + g)`, so no softmax is formed.

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
  uniform = row_uniform(row_seeds, tf.shape(logits)[1:], batch_size=tf.shape(logits)[0])
  return tf.argmax(logits + gumbel_noise(uniform), axis=-1, output_type=tf.int32)


def sample_from_softmax(logits, disallow=None, row_seeds=None):
  """The original's API: a one-hot `[B, N, V]` sample (spec §6.6).

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


def get_fake_data(input_ids, masked_lm_positions, masked_lm_ids, mlm_logits,
                  temperature=1.0, disallow_correct=False, electric_labels=False,
                  row_seeds=None):
  """The discriminator's input: generator samples at every selected slot (§7.3).

  Args:
    input_ids: int `[B, S]` ORIGINAL (unmasked) ids; equal to the original's
      `unmask(masked).input_ids`.
    masked_lm_positions, masked_lm_ids: int `[B, N]` from `masking.mask`.
    mlm_logits: `[B, N, V]` generator logits at the selected positions.
    temperature: logits are divided by it before the disallow penalty.
    disallow_correct: forbid sampling the original id of each slot.
    electric_labels: Electric labels every sampled position as fake, even
      when the sample equals the original; otherwise a sample equal to the
      original is real.
    row_seeds: optional int32 `[B, 2]` per-example seeds.

  Returns:
    Dict with `input_ids` (int32 `[B, S]`, corrupted), `is_fake_tokens`
    (int32 `[B, S]`) and `sampled_tokens` (int32 `[B, N]`).
  """
  # Imported here: masking imports this module for its noise.
  from electra_tf import masking  # pylint: disable=g-import-not-at-top
  input_ids = tf.cast(input_ids, tf.int32)
  logits = tf.stop_gradient(tf.cast(mlm_logits, tf.float32) / temperature)
  sampled_ids = sample_ids_from_softmax(
      logits, disallow_ids=masked_lm_ids if disallow_correct else None,
      row_seeds=row_seeds)
  sampled_ids = tf.stop_gradient(sampled_ids)
  updated_ids, masked = masking.scatter_update(input_ids, sampled_ids, masked_lm_positions)
  if electric_labels:
    is_fake = masked
  else:
    is_fake = masked * tf.cast(tf.not_equal(updated_ids, input_ids), tf.int32)
  return {"input_ids": updated_ids, "is_fake_tokens": is_fake, "sampled_tokens": sampled_ids}
