"""The XLA-fused training kernels against the same math in plain TF ops:
values and gradients, the dropout masks' statistics, and the transformer
layer's fused training path against its plain one."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.layers import ElectraTransformerLayer
from electra_tf.layers import fused_ops

RNG = np.random.default_rng(0)
SEED = tf.constant([7, 11], tf.int64)


def _value_and_grads(fn, args, upstream):
  args = [tf.constant(a) for a in args]
  with tf.GradientTape() as tape:
    tape.watch(args)
    out = fn(*args)
  return out, tape.gradient(out, args, output_gradients=upstream)


def _assert_same(fused, plain, rtol=1e-5, atol=1e-5):
  for f, p in zip(tf.nest.flatten(fused), tf.nest.flatten(plain)):
    np.testing.assert_allclose(
      np.asarray(f, np.float64), np.asarray(p, np.float64), rtol=rtol, atol=atol
    )


def _mask(shape, rate):
  return fused_ops.dropout_keep_mask(shape, SEED, rate)


def _plain_dropout(x, shape, rate):
  if rate == 0.0:
    return x
  return tf.where(_mask(shape, rate), x / (1.0 - rate), 0.0)


def test_bias_gelu_matches_exact_gelu_and_its_gradient():
  z = RNG.normal(size=(3, 4, 6)).astype(np.float32) * 3
  bias = RNG.normal(size=6).astype(np.float32)
  upstream = tf.constant(RNG.normal(size=z.shape).astype(np.float32))
  fused = _value_and_grads(fused_ops.bias_gelu, [z, bias], upstream)
  plain = _value_and_grads(
    lambda z, b: keras.activations.gelu(z + b, approximate=False), [z, bias], upstream
  )
  _assert_same(fused, plain)
  x = 0.5
  assert float(fused_ops.bias_gelu(tf.constant([x]), tf.constant([0.0]))[0]) == pytest.approx(
    x * 0.5 * (1 + math.erf(x / math.sqrt(2))), rel=1e-6
  )


@pytest.mark.parametrize("rate", [0.0, 0.25])
def test_bias_dropout_residual_layer_norm_matches_plain_ops(rate):
  shape = (2, 5, 8)
  z, residual = (RNG.normal(size=shape).astype(np.float32) for _ in range(2))
  bias, gamma, beta = (RNG.normal(size=8).astype(np.float32) for _ in range(3))
  upstream = tf.constant(RNG.normal(size=shape).astype(np.float32))

  def fused(z, bias, residual, gamma, beta):
    return fused_ops.bias_dropout_residual_layer_norm(
      z, bias, residual, gamma, beta, seed=SEED, rate=rate, epsilon=1e-12
    )

  def plain(z, bias, residual, gamma, beta):
    x = _plain_dropout(z + bias, shape, rate) + residual
    mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(var + 1e-12) * gamma + beta

  args = [z, bias, residual, gamma, beta]
  _assert_same(
    _value_and_grads(fused, args, upstream),
    _value_and_grads(plain, args, upstream),
    rtol=1e-4,
    atol=1e-5,
  )


@pytest.mark.parametrize("rate", [0.0, 0.1])
def test_attention_softmax_dropout_matches_plain_ops(rate):
  shape = (2, 3, 4, 4)
  scores = RNG.normal(size=shape).astype(np.float32) * 4
  adder = np.array([0.0, 0.0, -10000.0, 0.0], np.float32).reshape(1, 1, 1, 4)
  upstream = tf.constant(RNG.normal(size=shape).astype(np.float32))

  def fused(scores):
    return fused_ops.attention_softmax_dropout(
      scores, adder, scale=0.5, seed=SEED, rate=rate, dtype="float32"
    )

  def plain(scores):
    return _plain_dropout(tf.nn.softmax(scores * 0.5 + adder), shape, rate)

  _assert_same(
    _value_and_grads(fused, [scores], upstream),
    _value_and_grads(plain, [scores], upstream),
    rtol=1e-5,
    atol=1e-6,
  )


def test_bias_split_heads_is_bias_reshape_transpose():
  b, s, a, d = 2, 3, 2, 4
  z = RNG.normal(size=(b, s, 3 * a * d)).astype(np.float32)
  bias = RNG.normal(size=3 * a * d).astype(np.float32)
  upstream = [tf.constant(RNG.normal(size=(b, a, s, d)).astype(np.float32)) for _ in range(3)]

  def plain(z, bias):
    x = z + bias
    return tuple(
      tf.transpose(tf.reshape(part, [b, s, a, d]), [0, 2, 1, 3]) for part in tf.split(x, 3, axis=-1)
    )

  fused = lambda z, bias: fused_ops.bias_split_heads(z, bias, a)  # noqa: E731
  _assert_same(
    _value_and_grads(fused, [z, bias], upstream), _value_and_grads(plain, [z, bias], upstream)
  )


def test_kernels_keep_the_input_dtype_under_mixed_precision():
  z = tf.constant(RNG.normal(size=(2, 3, 8)), tf.bfloat16)
  assert fused_ops.bias_gelu(z, tf.zeros([8])).dtype == tf.bfloat16
  q, _, _ = fused_ops.bias_split_heads(tf.concat([z, z, z], -1), tf.zeros([24]), 2)
  assert q.dtype == tf.bfloat16
  y = fused_ops.bias_dropout_residual_layer_norm(
    z, tf.zeros([8]), z, tf.ones([8]), tf.zeros([8]), seed=SEED, rate=0.1, epsilon=1e-12
  )
  assert y.dtype == tf.float32
  with tf.GradientTape() as tape:
    tape.watch(z)
    probs = fused_ops.attention_softmax_dropout(
      tf.reshape(tf.cast(z, tf.float16), [2, 1, 3, 8])[..., :3],
      0.0,
      scale=1.0,
      seed=SEED,
      rate=0.1,
      dtype="float16",
    )
  assert probs.dtype == tf.float16


def test_dropout_mask_rate_independence_and_determinism():
  n = 1_000_000
  rate = 0.1
  mask = _mask([n], rate).numpy()
  kept = mask.mean()
  sigma = math.sqrt(rate * (1 - rate) / n)
  assert abs(kept - (1 - rate)) < 5 * sigma
  # Neighbours and a mask of the next seed behave as independent draws.
  both = (mask[1:] & mask[:-1]).mean()
  assert abs(both - (1 - rate) ** 2) < 0.002
  other = fused_ops.dropout_keep_mask([n], [7, 12], rate).numpy()
  assert abs((mask & other).mean() - (1 - rate) ** 2) < 0.002
  np.testing.assert_array_equal(mask, _mask([n], rate).numpy())
  # Rows of a [rows, width] mask are not shifted copies of each other.
  grid = _mask([1000, 128], 0.5).numpy()
  assert abs((grid[1:] == grid[:-1]).mean() - 0.5) < 0.01
  assert _mask([1000], 0.0).numpy().all()


def _layer(rate, dtype=None):
  layer = ElectraTransformerLayer(
    16, 2, 32, hidden_dropout_prob=rate, attention_probs_dropout_prob=rate, dtype=dtype
  )
  layer.build((None, None, 16))
  rng = np.random.default_rng(3)
  for variable in layer.weights:
    variable.assign(rng.normal(scale=0.3, size=variable.shape).astype(np.float32))
  return layer


def _layer_value_and_grads(layer, x, adder, fused):
  @tf.function
  def run(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = layer(x, adder, training=True)
      loss = tf.reduce_sum(tf.cast(y, tf.float32) * tf.range(16, dtype=tf.float32))
    return y, tape.gradient(loss, [x] + layer.trainable_variables)

  if fused:
    return run(x)
  with fused_ops.unfused():
    return run(x)


@pytest.mark.parametrize("policy,tolerance", [("float32", 2e-5), ("mixed_bfloat16", 5e-2)])
def test_transformer_layer_fused_training_path_equals_plain_path(policy, tolerance):
  x = tf.constant(RNG.normal(size=(2, 5, 16)).astype(np.float32))
  adder = tf.constant(
    np.array([[0.0] * 5, [0.0] * 3 + [-10000.0] * 2], np.float32)[:, None, None, :]
  )
  layer = _layer(0.0, dtype=policy)
  x = tf.cast(x, layer.compute_dtype)
  fused = _layer_value_and_grads(layer, x, adder, fused=True)
  plain = _layer_value_and_grads(layer, x, adder, fused=False)
  assert fused[0].dtype == plain[0].dtype
  _assert_same(fused, plain, rtol=tolerance, atol=tolerance)


def test_transformer_layer_fused_dropout_draws_a_new_mask_per_call():
  layer = _layer(0.3)
  x = tf.constant(RNG.normal(size=(2, 5, 16)).astype(np.float32))
  first = layer(x, None, training=True)
  second = layer(x, None, training=True)
  assert not np.allclose(first, second)
  np.testing.assert_allclose(layer(x, None, training=False), layer(x, None, training=False))
