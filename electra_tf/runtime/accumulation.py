"""Gradient accumulation: one optimizer step over k micro-batches.

Each replica's batch is cut into k consecutive micro-batches whose gradients
are summed and applied once. The losses divide by the global step's
denominators and the random draws are keyed by global row (dropout seeds
reset per micro-batch), so the sum is the undivided step's gradient. The
loop is a `tf.while_loop`: k micro-batches trace once.
"""

import tensorflow as tf

from electra_tf.runtime import replicas


def split_micro_batches(features, steps):
  """Each `[B, ...]` tensor of `features` as `[steps, B / steps, ...]`."""

  def split(x):
    x = tf.convert_to_tensor(x)
    shape = tf.shape(x)
    tf.debugging.assert_equal(
      shape[0] % steps,
      0,
      message=f"a replica's batch must divide into gradient_accumulation_steps={steps} micro-batches",
    )
    return tf.reshape(x, tf.concat([[steps, shape[0] // steps], shape[1:]], 0))

  return tf.nest.map_structure(split, features)


def accumulate_gradients(
  loss_fn, variables, features, steps, optimizer, seed_states=(), value_names=()
):
  """Sums each micro-batch's gradient of `optimizer.scale_loss(loss)`.

  Args:
    loss_fn: `micro_features -> (loss, values)`: the micro-batch's share of
      this replica's loss (to differentiate) and a dict of float scalars to
      sum over the micro-batches (e.g. the shares of the logged losses).
    variables: the trainable variables.
    features: this replica's batch (a nest of `[B, ...]` tensors).
    steps: k, the number of micro-batches (a Python int ≥ 1).
    optimizer: its `scale_loss` scales each micro-batch's loss (the loss
      scale of `mixed_float16`; the identity otherwise), so the sum is the
      scaled gradient that `LossScaleOptimizer.apply` unscales, or skips.
    seed_states: the dropout `SeedGenerator` state variables, reset to their
      values at the start of the step before each micro-batch.
    value_names: the keys of the `values` that `loss_fn` returns.

  Returns:
    `(grads, values)`: float32 dense gradients (None where the loss does not
    depend on the variable) and the summed `values`.
  """
  micro_batches = split_micro_batches(features, steps)
  start = [tf.identity(tf.convert_to_tensor(state)) for state in seed_states]
  no_gradient = []

  def micro_step(index):
    micro = tf.nest.map_structure(lambda x: tf.gather(x, index), micro_batches)
    for state, value in zip(seed_states, start):
      state.assign(value)
    with replicas.micro_batch(index, steps):
      with tf.GradientTape() as tape:
        loss, values = loss_fn(micro)
        scaled_loss = optimizer.scale_loss(loss)
      grads = tape.gradient(scaled_loss, variables)
    no_gradient[:] = [g is None for g in grads]
    grads = [
      tf.zeros(v.shape, tf.float32) if g is None else tf.cast(tf.convert_to_tensor(g), tf.float32)
      for g, v in zip(grads, variables)
    ]
    return grads, {k: tf.cast(values[k], tf.float32) for k in value_names}

  def body(index, sums, value_sums):
    grads, values = micro_step(index)
    sums = [s + g for s, g in zip(sums, grads)]
    value_sums = {k: value_sums[k] + values[k] for k in value_sums}
    return index + 1, sums, value_sums

  zeros = [tf.zeros(v.shape, tf.float32) for v in variables]
  _, grads, values = tf.while_loop(
    lambda index, *_: index < steps,
    body,
    (tf.constant(0), zeros, {k: tf.constant(0.0) for k in value_names}),
    # No copies of the accumulators kept for a backward pass (there is none).
    parallel_iterations=1,
  )
  grads = [None if none else g for g, none in zip(grads, no_gradient)]
  return grads, values
