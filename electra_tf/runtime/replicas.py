"""Where this replica (and micro-batch) sits in the global batch, and sums
over replicas: random draws keyed by global row and losses over global
denominators make one device and N replicas compute the same step (`fit`
gives replica i the i-th consecutive slice of each global batch).

Example:
  >>> num_replicas()
  1
  >>> int(replica_first_example(8))
  0
  >>> with micro_batch(2, 4):
  ...   int(replica_first_example(8))
  16
"""

import contextlib
import threading

import tensorflow as tf

# The micro-batch being computed, per thread: MirroredStrategy runs each
# replica's step in its own thread.
_micro_batch = threading.local()


def num_replicas():
  """Replicas in sync in the current replica context (1 outside one)."""
  ctx = tf.distribute.get_replica_context()
  return 1 if ctx is None else ctx.num_replicas_in_sync


def cross_replica_sum(value):
  """Sum of a tensor over the replicas in sync (identity on one replica)."""
  ctx = tf.distribute.get_replica_context()
  if ctx is None or ctx.num_replicas_in_sync == 1:
    return value
  return ctx.all_reduce(tf.distribute.ReduceOp.SUM, value)


@contextlib.contextmanager
def micro_batch(index, count):
  """Inside it, batches are micro-batch `index` (an int or scalar tensor,
  e.g. a `tf.while_loop` counter) of `count` equal ones cut from this
  replica's batch, in order."""
  previous = getattr(_micro_batch, "value", None)
  _micro_batch.value = (index, count)
  try:
    yield
  finally:
    _micro_batch.value = previous


def replica_first_example(local_batch_size):
  """Global-batch row of this replica's first example, as int64 (0 on one
  device): `replica_id * local_batch_size`, or inside `micro_batch(index,
  count)` (`local_batch_size` then being the micro-batch's)
  `replica_id * local_batch_size * count + index * local_batch_size`."""
  local_batch_size = tf.cast(local_batch_size, tf.int64)
  ctx = tf.distribute.get_replica_context()
  distributed = ctx is not None and ctx.num_replicas_in_sync > 1
  micro = getattr(_micro_batch, "value", None)
  if micro is None:
    if not distributed:
      return tf.constant(0, tf.int64)
    return tf.cast(ctx.replica_id_in_sync_group, tf.int64) * local_batch_size
  index, count = micro
  first = tf.cast(index, tf.int64) * local_batch_size
  if distributed:
    replica_id = tf.cast(ctx.replica_id_in_sync_group, tf.int64)
    first += replica_id * local_batch_size * tf.cast(count, tf.int64)
  return first


def replica_first_row(local_batch_size):
  """`replica_first_example` as int32 (the row the random streams key on)."""
  return tf.cast(replica_first_example(local_batch_size), tf.int32)


def agree_on_finite_gradients(grads):
  """Makes every replica see non-finite gradients if any replica has them.

  `LossScaleOptimizer` decides per replica (or from replica 0) whether to
  skip a step, before this package's optimizer sums the gradients; replicas
  disagreeing would apply an inf/NaN sum or stall. Returns dense gradients.
  """
  dense = [None if g is None else tf.convert_to_tensor(g) for g in grads]
  if num_replicas() == 1:
    return dense
  local_ok = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in dense if g is not None])
  num_bad = cross_replica_sum(1.0 - tf.cast(local_ok, tf.float32))
  poison = tf.where(num_bad > 0, float("nan"), 0.0)
  return [None if g is None else g + tf.cast(poison, g.dtype) for g in dense]
