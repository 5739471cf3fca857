"""AdamWeightDecay against the original's update formula (`model/optimization.py:AdamWeightDecayOptimizer`)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.optimization.adam_weight_decay import AdamWeightDecay
from electra_tf.runtime import replicas


def _reference(params, grads_per_step, lr, wd, decayed, clip=1.0, b1=0.9, b2=0.999, eps=1e-6):
  """NumPy version of the original: clip by global norm, no bias correction."""
  params = [p.astype(np.float64).copy() for p in params]
  m = [np.zeros_like(p) for p in params]
  v = [np.zeros_like(p) for p in params]
  for grads in grads_per_step:
    norm = np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads))
    scale = clip / max(norm, clip)
    for i, g in enumerate(grads):
      g = g * scale
      m[i] = b1 * m[i] + (1 - b1) * g
      v[i] = b2 * v[i] + (1 - b2) * g * g
      update = m[i] / (np.sqrt(v[i]) + eps)
      if decayed[i]:
        update += wd * params[i]
      params[i] -= lr * update
  return params, m, v


def test_updates_match_the_formula_with_exclusions_and_clipping():
  rng = np.random.RandomState(0)
  init = [
    rng.randn(3, 2).astype(np.float32),
    rng.randn(2).astype(np.float32),
    rng.randn(2).astype(np.float32),
  ]
  names = ["dense/kernel", "dense/bias", "output/LayerNorm/gamma"]
  variables = [keras.Variable(x, name=n.split("/")[-1]) for x, n in zip(init, names)]
  opt = AdamWeightDecay(
    learning_rate=0.05,
    weight_decay_rate=0.1,
    variable_names={v.path: n for v, n in zip(variables, names)},
  )
  steps = [[rng.randn(*x.shape).astype(np.float32) * s for x in init] for s in (0.1, 3.0, 0.2)]
  for grads in steps:  # the second step's norm is > 1: clipped
    opt.apply([tf.constant(g) for g in grads], variables)
  want, m, v = _reference(init, steps, 0.05, 0.1, decayed=[True, False, False])
  for var, w in zip(variables, want):
    np.testing.assert_allclose(var.numpy(), w, rtol=2e-5, atol=1e-6)
  slots = opt.official_slots(dict(zip(names, variables)))
  assert sorted(slots) == sorted([f"{n}/{s}" for n in names for s in ("adam_m", "adam_v")])
  np.testing.assert_allclose(slots["dense/kernel/adam_m"].numpy(), m[0], rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(slots["dense/bias/adam_v"].numpy(), v[1], rtol=1e-5, atol=1e-9)


def test_no_bias_correction_first_step():
  var = keras.Variable(np.array([1.0], np.float32), name="kernel")
  AdamWeightDecay(learning_rate=1.0, clip_norm=None).apply([tf.constant([0.5])], [var])
  # m = 0.05, v = 0.00025: update = 0.05 / (0.0158114 + 1e-6); Adam with bias
  # correction would move by ~1.0 instead
  np.testing.assert_allclose(var.numpy(), [1.0 - 0.05 / (np.sqrt(0.00025) + 1e-6)], rtol=1e-5)


def test_exclusion_falls_back_to_the_keras_path_and_multipliers():
  kernel = keras.Variable(np.ones([2], np.float32), name="kernel")
  bias = keras.Variable(np.ones([2], np.float32), name="bias")
  opt = AdamWeightDecay(
    learning_rate=0.1, weight_decay_rate=0.5, learning_rate_multipliers={kernel.path: 0.5}
  )
  zeros = [tf.zeros([2]), tf.zeros([2])]
  opt.apply(zeros, [kernel, bias])
  # zero gradients: only the decay moves the kernel, with half the rate
  np.testing.assert_allclose(kernel.numpy(), 1.0 - 0.5 * 0.1 * 0.5, rtol=1e-6)
  np.testing.assert_allclose(bias.numpy(), 1.0)


def test_schedule_sees_the_step_before_its_increment():
  from electra_tf.optimization.schedule import ElectraLearningRateSchedule

  var = keras.Variable(np.ones([1], np.float32), name="kernel")
  opt = AdamWeightDecay(ElectraLearningRateSchedule(1.0, 10, warmup_steps=2))
  opt.apply([tf.constant([1.0])], [var])
  np.testing.assert_allclose(
    var.numpy(), [1.0]
  )  # step 0: rate 0, a no-op (`model/optimization.py:create_optimizer`)
  opt.apply([tf.constant([1.0])], [var])
  assert var.numpy()[0] < 1.0


def test_loss_scale_optimizer_unscales_before_clipping():
  var = keras.Variable(np.array([0.0, 0.0], np.float32), name="kernel")
  ref = keras.Variable(np.array([0.0, 0.0], np.float32), name="kernel")
  wrapped = keras.optimizers.LossScaleOptimizer(
    AdamWeightDecay(learning_rate=0.1), initial_scale=1024.0
  )
  grads = np.array([0.3, -0.1], np.float32)
  wrapped.apply([tf.constant(grads * 1024.0)], [var])
  AdamWeightDecay(learning_rate=0.1).apply([tf.constant(grads)], [ref])
  np.testing.assert_allclose(var.numpy(), ref.numpy(), rtol=1e-6)


def test_rejects_keras_clipping_arguments_and_round_trips_config():
  with pytest.raises(ValueError, match="global_clipnorm"):
    AdamWeightDecay(global_clipnorm=1.0)
  opt = AdamWeightDecay(
    learning_rate=0.01, weight_decay_rate=0.01, variable_names={"a/kernel": "electra/x/kernel"}
  )
  restored = AdamWeightDecay.from_config(opt.get_config())
  assert restored.weight_decay_rate == 0.01 and restored.epsilon == 1e-6
  assert restored.variable_names == {"a/kernel": "electra/x/kernel"}
  assert restored.exclude_patterns == ("LayerNorm", "layer_norm", "bias")


def test_clips_the_sum_of_the_replicas_gradients(two_replica_strategy):
  strategy = two_replica_strategy
  with strategy.scope():
    var = keras.Variable(np.zeros([2], np.float32), name="kernel")
    opt = AdamWeightDecay(learning_rate=1.0, clip_norm=1.0)
    opt.build([var])  # as fit does, outside the step function
  per_replica = strategy.experimental_distribute_values_from_function(
    lambda ctx: tf.constant([[0.8, 0.0], [0.0, 0.8]])[ctx.replica_id_in_sync_group]
  )

  @tf.function
  def step(g):
    strategy.run(lambda g: opt.apply([g], [var]), args=(g,))

  step(per_replica)
  # summed gradient (0.8, 0.8) has norm 1.13 > 1: clipped to (0.707, 0.707);
  # clipping each replica's (norm 0.8) first would not clip at all
  m = opt.official_slots({"kernel": var})["kernel/adam_m"]
  np.testing.assert_allclose(m.numpy(), [0.1 * 0.8 / np.hypot(0.8, 0.8)] * 2, rtol=1e-5)


def test_replicas_agree_on_non_finite_gradients(two_replica_strategy):
  strategy = two_replica_strategy
  grads = strategy.experimental_distribute_values_from_function(
    lambda ctx: tf.constant([[1.0, 2.0], [np.inf, 0.0]])[ctx.replica_id_in_sync_group]
  )
  agree = tf.function(
    lambda g: strategy.run(lambda g: replicas.agree_on_finite_gradients([g])[0], args=(g,))
  )
  out = agree(grads)
  for local in strategy.experimental_local_results(out):
    assert not np.all(np.isfinite(local.numpy()))
  ok = strategy.experimental_distribute_values_from_function(lambda ctx: tf.constant([1.0, 2.0]))
  out = agree(ok)
  for local in strategy.experimental_local_results(out):
    np.testing.assert_array_equal(local.numpy(), [1.0, 2.0])
