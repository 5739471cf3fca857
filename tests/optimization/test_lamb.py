"""Lamb against a NumPy version of NVIDIA's / Model Garden's LAMB update."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.configs.hparams import OPTIMIZER_NAMES
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.optimization import factory
from electra_tf.optimization.adam_weight_decay import AdamWeightDecay
from electra_tf.optimization.lamb import Lamb


def _reference(params, grads_per_step, lr, wd, decayed, adapted, multipliers, clip=1.0):
  """Clip by global norm, bias-corrected moments, decay, trust ratio."""
  b1, b2, eps = 0.9, 0.999, 1e-6
  params = [p.astype(np.float64).copy() for p in params]
  m = [np.zeros_like(p) for p in params]
  v = [np.zeros_like(p) for p in params]
  for t, grads in enumerate(grads_per_step, start=1):
    norm = np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads))
    scale = clip / max(norm, clip)
    for i, g in enumerate(grads):
      g = g * scale
      m[i] = b1 * m[i] + (1 - b1) * g
      v[i] = b2 * v[i] + (1 - b2) * g * g
      update = (m[i] / (1 - b1**t)) / (np.sqrt(v[i] / (1 - b2**t)) + eps)
      if decayed[i]:
        update += wd * params[i]
      ratio = 1.0
      if adapted[i]:
        w_norm, u_norm = np.linalg.norm(params[i]), np.linalg.norm(update)
        ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
      params[i] -= lr * multipliers[i] * ratio * update
  return params


def test_updates_match_the_reference_with_exclusions_multipliers_and_clipping():
  rng = np.random.RandomState(0)
  init = [
    rng.randn(3, 2).astype(np.float32),
    rng.randn(2).astype(np.float32),
    rng.randn(2).astype(np.float32),
    np.zeros((2, 2), np.float32),  # a zero weight: ratio 1
  ]
  names = [
    "electra/encoder/layer_1/output/dense/kernel",
    "electra/encoder/layer_1/output/dense/bias",
    "electra/encoder/layer_1/output/LayerNorm/gamma",
    "electra/encoder/layer_0/output/dense/kernel",
  ]
  # Unique Keras paths: the optimizer maps paths to official names.
  variables = [keras.Variable(x, name=f"v{i}") for i, x in enumerate(init)]
  multipliers = [1.0, 0.5, 0.8, 0.25]
  opt = Lamb(
    learning_rate=0.05,
    weight_decay_rate=0.1,
    variable_names={v.path: n for v, n in zip(variables, names)},
    learning_rate_multipliers=dict(zip(names, multipliers)),
  )
  steps = [[rng.randn(*x.shape).astype(np.float32) * s for x in init] for s in (0.1, 3.0, 0.2)]
  for grads in steps:  # the second step's norm is > 1: clipped
    opt.apply([tf.constant(g) for g in grads], variables)
  want = _reference(
    init,
    steps,
    0.05,
    0.1,
    decayed=[True, False, False, True],
    adapted=[True, False, False, True],
    multipliers=multipliers,
  )
  for var, w in zip(variables, want):
    np.testing.assert_allclose(var.numpy(), w, rtol=2e-5, atol=1e-6)
  # The trust ratio changes the step: Adam with bias correction would not give these weights.
  assert not np.allclose(variables[0].numpy(), init[0] - 0.05 * 3 * np.sign(steps[0][0]))


def test_layer_adaptation_exclusions_can_differ_from_weight_decay_ones():
  var = keras.Variable(np.array([3.0, 4.0], np.float32), name="bias")
  Lamb(learning_rate=0.1, exclude_from_layer_adaptation=()).apply([tf.constant([0.1, -0.2])], [var])
  # Not decayed (a bias), but adapted: the step is ‖w‖ / ‖update‖ = 5 / √2 times larger.
  update = np.array([1.0, -1.0])
  np.testing.assert_allclose(var.numpy(), [3.0, 4.0] - 0.1 * 5 / np.sqrt(2) * update, rtol=1e-4)


def test_config_round_trip_and_factory_names():
  opt = Lamb(learning_rate=0.01, weight_decay_rate=0.01, exclude_from_layer_adaptation=["bias"])
  clone = Lamb.from_config(opt.get_config())
  assert clone.exclude_from_layer_adaptation == ("bias",)
  assert clone.weight_decay_rate == 0.01
  kernel = keras.Variable([[1.0]], name="kernel")
  adam = factory.pretraining_optimizer({"electra/x/kernel": kernel})
  lamb = factory.pretraining_optimizer({"electra/x/kernel": kernel}, optimizer="lamb")
  assert type(adam) is AdamWeightDecay and type(lamb) is Lamb
  assert lamb.variable_names == adam.variable_names
  with pytest.raises(ValueError, match="optimizer='sgd'; expected one of"):
    factory.pretraining_optimizer({"electra/x/kernel": kernel}, optimizer="sgd")


def test_the_hparam_s_optimizer_names_are_the_ones_the_factory_builds():
  """configs/ checks the `optimizer` hparam by name without importing the
  optimizers; every name it accepts builds, and only those."""
  assert sorted(OPTIMIZER_NAMES) == sorted(factory.OPTIMIZERS)
  with pytest.raises(
    ValueError, match=r"^hparam optimizer='sgd'; expected one of \['adam', 'lamb'\]$"
  ):
    PretrainingConfig("m", "/nonexistent", optimizer="sgd")
