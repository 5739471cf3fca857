"""Random streams of a pre-training step: row-keyed uniform and Gumbel noise.

Draws are stateful (`row_seeds=None`) or row-keyed: each example's stateless
seed `[stream_key, global_row]` makes its draws depend only on the seed, the
step and its row in the GLOBAL batch, however the batch is split over replicas.
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
    [_NUM_STREAMS], seed=step_seed, minval=None, maxval=None, dtype=tf.int32, alg="philox"
  )
  rows = tf.range(batch_size, dtype=tf.int32) + tf.cast(first_row, tf.int32)
  return [tf.stack([tf.fill(tf.shape(rows), keys[k]), rows], axis=1) for k in range(_NUM_STREAMS)]


def row_uniform(row_seeds, row_shape, batch_size=None):
  """U[0, 1) float32 noise of shape `[B] + row_shape`.

  Args:
    row_seeds: int32 `[B, 2]` per-example seeds, or None for stateful noise.
    row_shape: shape of one example's noise (list of ints/scalar tensors).
    batch_size: B; needed only when `row_seeds` is None.
  """
  if row_seeds is None:
    return tf.random.uniform(tf.concat([[batch_size], row_shape], 0), dtype=tf.float32)
  # One stateless draw per example (a plain loop: pfor cannot vectorise per-row seeds).
  return tf.map_fn(
    lambda s: tf.random.stateless_uniform(row_shape, seed=s, dtype=tf.float32, alg="philox"),
    row_seeds,
    fn_output_signature=tf.float32,
    parallel_iterations=16,
  )


def gumbel_noise(uniform):
  """The original's Gumbel noise `-log(-log(u + 1e-9) + 1e-9)` (`pretrain/pretrain_helpers.py:sample_from_softmax`)."""
  return -tf.math.log(-tf.math.log(uniform + 1e-9) + 1e-9)
