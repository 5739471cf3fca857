"""Gathering from and scattering into `[B, L, ...]` sequences at per-row
positions (`pretrain/pretrain_helpers.py`)."""

import tensorflow as tf


def gather_positions(sequence, positions):
  """`sequence[b, positions[b, k]]` (`pretrain/pretrain_helpers.py:gather_positions`).

  Args:
    sequence: `[B, L]` or `[B, L, D]` tensor.
    positions: int `[B, K]`.

  Returns:
    `[B, K]` or `[B, K, D]` tensor of `sequence`'s dtype.

  Example:
  >>> gather_positions(tf.constant([[5, 6, 7]]), tf.constant([[2, 0]])).numpy()
  array([[7, 5]], dtype=int32)
  """
  return tf.gather(sequence, tf.cast(positions, tf.int32), batch_dims=1)


def scatter_update(sequence, updates, positions):
  """Writes `updates` at `positions` the way the original does (`pretrain/pretrain_helpers.py:scatter_update`).

  Updates aimed at position 0 are ignored (unused slots point there).
  Duplicate positions average their updates (int tensors floor-divide), as
  in the original.

  Args:
    sequence: `[B, L]` (int) or `[B, L, D]` (float).
    updates: `[B, K]` or `[B, K, D]`, same dtype as `sequence`.
    positions: int `[B, K]`.

  Returns:
    `(updated_sequence, updates_mask)`; `updates_mask` is int32 `[B, L]` in
    {0, 1}, 1 where some update landed.

  Example:
  >>> seq, m = scatter_update(tf.zeros([1, 4], tf.int32),
  ...                         tf.constant([[100, 200]]), tf.constant([[2, 2]]))
  >>> seq.numpy(), m.numpy()
  (array([[  0,   0, 150,   0]], dtype=int32), array([[0, 0, 1, 0]], dtype=int32))
  """
  positions = tf.cast(positions, tf.int32)
  updates = tf.cast(updates, sequence.dtype)
  batch_size = tf.shape(sequence)[0]
  length = tf.shape(sequence)[1]
  num_updates = tf.shape(positions)[1]
  rows = tf.tile(tf.range(batch_size)[:, None], [1, num_updates])
  indices = tf.stack([rows, positions], axis=-1)  # [B, K, 2]
  counts = tf.scatter_nd(
    indices, tf.ones([batch_size, num_updates], tf.int32), [batch_size, length]
  )
  # Position 0 never takes an update: unused slots aim there.
  counts *= tf.cast(tf.range(length) > 0, tf.int32)[None, :]
  updates_mask = tf.minimum(counts, 1)
  summed = tf.scatter_nd(indices, updates, tf.shape(sequence))
  safe_counts = tf.maximum(counts, 1)
  if sequence.shape.rank == 3:
    safe_counts = safe_counts[:, :, None]
    mask = updates_mask[:, :, None]
  else:
    mask = updates_mask
  if sequence.dtype.is_integer:
    averaged = tf.math.floordiv(summed, tf.cast(safe_counts, sequence.dtype))
  else:
    averaged = summed / tf.cast(safe_counts, sequence.dtype)
  mask = tf.cast(mask, sequence.dtype)
  updated = (1 - mask) * sequence + mask * averaged
  return updated, updates_mask
