"""The XLA-fused training kernels against the same math in plain TF ops:
values and gradients, the dropout masks' statistics, and the transformer
layer's fused training path against its plain one."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.layers import ElectraEncoder
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


def _max_cross_correlation(a, b):
  """Largest |Pearson correlation| of ±1 sequences a and b over all circular
  shifts, by FFT."""
  a = a.astype(np.float64) * 2 - 1
  b = b.astype(np.float64) * 2 - 1
  a -= a.mean()
  b -= b.mean()
  correlation = np.fft.irfft(np.fft.rfft(a) * np.conj(np.fft.rfft(b)), n=len(a))
  return np.abs(correlation).max() / (np.linalg.norm(a) * np.linalg.norm(b))


@pytest.mark.parametrize(
  "seed_a,seed_b",
  [
    ([3, 99], [7, 11]),  # formerly one sequence shifted by 2,914,433,185
    ([7, 11], [7, 12]),  # consecutive draws of one SeedGenerator
    ([5, 1], [5 + 2**32, 1]),  # differ in the high word only (lost by a 32-bit cast)
    ([0, 0], [0, 2**32]),
  ],
)
def test_masks_of_different_seeds_are_uncorrelated_at_every_shift(seed_a, seed_b):
  n = 1 << 22  # 4 M elements: all 4 M circular shifts checked at once
  rate = 0.5
  a = fused_ops.dropout_keep_mask([n], seed_a, rate).numpy()
  b = fused_ops.dropout_keep_mask([n], seed_b, rate).numpy()
  # For independent masks each shift's correlation is ~N(0, 1/n); the maximum
  # over n shifts stays below ~sqrt(2 ln n / n) (5.5 sigma here): 7 sigma.
  assert _max_cross_correlation(a, b) < 7 / math.sqrt(n)
  # ... and a mask against itself: a shifted copy would show here too.
  a_shifted_auto = _max_cross_correlation(a, np.roll(a, 12345))
  assert a_shifted_auto > 0.99  # the check can find a shift


def test_former_shift_relation_between_seeds_is_gone():
  """With the old hash, seed (3, 99)'s mask was seed (7, 11)'s shifted by
  2,914,433,185 elements; compare the two at exactly that shift, both ways."""
  n, shift = 1 << 20, 2_914_433_185
  base = {
    seed: fused_ops.dropout_keep_mask([n, 1], seed, 0.5).numpy() for seed in ((3, 99), (7, 11))
  }
  for seed, other in (((3, 99), (7, 11)), ((7, 11), (3, 99))):
    shifted = fused_ops.dropout_keep_mask([n, 1], other, 0.5, first_example=shift).numpy()
    assert abs((base[seed] == shifted).mean() - 0.5) < 5 * 0.5 / math.sqrt(n)


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_keep_rate_is_within_five_sigma(rate):
  n = 1 << 22
  kept = fused_ops.dropout_keep_mask([n], [11, 13], rate).numpy().mean()
  sigma = math.sqrt(rate * (1 - rate) / n)
  assert abs(kept - (1 - rate)) < 5 * sigma


def test_counters_are_64_bit_and_first_example_indexes_the_global_batch():
  rate = 0.5
  global_mask = fused_ops.dropout_keep_mask([6, 50], SEED, rate).numpy()
  for first in range(6):
    np.testing.assert_array_equal(
      fused_ops.dropout_keep_mask([6 - first, 50], SEED, rate, first_example=first).numpy(),
      global_mask[first:],
    )
  # Past 2**32 elements the counter carries into the high word: the mask at
  # counter 2**32 + i is not the mask at i (a 32-bit counter wraps to it),
  # in the 32-bit path (static count) and in plain ops alike.
  rows = 2**26  # 64-element rows: row 2**26 starts at element 2**32
  low = fused_ops.dropout_keep_mask([4, 64], SEED, rate).numpy()
  high = fused_ops.dropout_keep_mask([4, 64], SEED, rate, first_example=rows).numpy()
  assert (low != high).mean() > 0.3
  plain = fused_ops.keep_mask(tf.constant([4, 64]), SEED, rate, first_example=rows).numpy()
  np.testing.assert_array_equal(plain, high)
  # The carry: a block straddling 2**32 equals its two halves.
  straddle = fused_ops.dropout_keep_mask([4, 64], SEED, rate, first_example=rows - 2).numpy()
  np.testing.assert_array_equal(straddle[2:], high[:2])
  # A shape unknown when traced takes the 64-bit-iota path: the same bits.
  unknown_shape = tf.function(
    lambda shape: fused_ops.keep_mask(shape, SEED, rate, first_example=rows - 2),
    input_signature=[tf.TensorSpec([2], tf.int32)],
  )
  np.testing.assert_array_equal(unknown_shape(tf.constant([4, 64])).numpy(), straddle)


def test_plain_dropout_matches_the_fused_mask_and_keeps_dtype():
  x = tf.ones([3, 40], tf.bfloat16)
  y = fused_ops.dropout(x, seed=SEED, rate=0.25, first_example=2)
  assert y.dtype == tf.bfloat16
  keep = fused_ops.dropout_keep_mask([3, 40], SEED, 0.25, first_example=2).numpy()
  np.testing.assert_allclose(y.numpy().astype(np.float32), np.where(keep, 1 / 0.75, 0.0), rtol=1e-2)


def _layer(rate, dtype=None, fused=True):
  layer = ElectraTransformerLayer(
    16,
    2,
    32,
    hidden_dropout_prob=rate,
    attention_probs_dropout_prob=rate,
    fused_training_kernels=fused,
    dtype=dtype,
  )
  layer.build((None, None, 16))
  rng = np.random.default_rng(3)
  for variable in layer.weights:
    variable.assign(rng.normal(scale=0.3, size=variable.shape).astype(np.float32))
  return layer


def _layer_value_and_grads(layer, x, adder):
  @tf.function
  def run(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = layer(x, adder, training=True)
      loss = tf.reduce_sum(tf.cast(y, tf.float32) * tf.range(16, dtype=tf.float32))
    return y, tape.gradient(loss, [x] + layer.trainable_variables)

  return run(x)


def _seed_states(layer):
  dropouts = (layer.attention_probs_dropout, layer.attention_output_dropout, layer.output_dropout)
  return [d.seed_generator.state for d in dropouts if d.rate > 0]


@pytest.mark.parametrize(
  "policy,rate,tolerance",
  [("float32", 0.0, 2e-5), ("float32", 0.2, 2e-5), ("mixed_bfloat16", 0.0, 5e-2)],
)
def test_transformer_layer_fused_training_path_equals_plain_path(policy, rate, tolerance):
  x = tf.constant(RNG.normal(size=(2, 5, 16)).astype(np.float32))
  adder = tf.constant(
    np.array([[0.0] * 5, [0.0] * 3 + [-10000.0] * 2], np.float32)[:, None, None, :]
  )
  layer = _layer(rate, dtype=policy)
  plain_layer = _layer(rate, dtype=policy, fused=False)
  # Same seeds: dropout draws the same masks on both paths.
  for state, plain_state in zip(_seed_states(layer), _seed_states(plain_layer)):
    plain_state.assign(state)
  x = tf.cast(x, layer.compute_dtype)
  fused = _layer_value_and_grads(layer, x, adder)
  plain = _layer_value_and_grads(plain_layer, x, adder)
  assert fused[0].dtype == plain[0].dtype
  _assert_same(fused, plain, rtol=tolerance, atol=tolerance)


def test_transformer_layer_fused_dropout_draws_a_new_mask_per_call():
  layer = _layer(0.3)
  x = tf.constant(RNG.normal(size=(2, 5, 16)).astype(np.float32))
  first = layer(x, None, training=True)
  second = layer(x, None, training=True)
  assert not np.allclose(first, second)
  np.testing.assert_allclose(layer(x, None, training=False), layer(x, None, training=False))


def _copy_state(source, target):
  for variable, value in zip(target.weights, source.weights):
    variable.assign(value)
  for state, value in zip(_seed_states(target), _seed_states(source)):
    state.assign(value)


@pytest.mark.parametrize("fused", [True, False])
def test_replicas_draw_different_masks_and_match_one_device(two_replica_strategy, fused):
  """Under MirroredStrategy each replica's examples get their own dropout
  masks (Keras' Dropout gives both replicas one mask), and the replicas
  together draw exactly the masks one device draws for the global batch."""
  strategy = two_replica_strategy
  with strategy.scope():
    mirrored = _layer(0.5, fused=fused)
  single = _layer(0.5, fused=fused)
  _copy_state(mirrored, single)
  local = tf.constant(RNG.normal(size=(2, 5, 16)).astype(np.float32))

  @tf.function
  def replica_step():
    return strategy.run(lambda: mirrored(local, None, training=True))

  outputs = [t.numpy() for t in strategy.experimental_local_results(replica_step())]
  # Same inputs on both replicas: only the dropout masks can differ.
  assert not np.allclose(outputs[0], outputs[1])
  expected = tf.function(lambda x: single(x, None, training=True))(tf.concat([local, local], 0))
  np.testing.assert_allclose(np.concatenate(outputs), expected, rtol=1e-5, atol=1e-5)


def test_fused_training_kernels_is_saved_in_the_config():
  layer = ElectraTransformerLayer(16, 2, 32, fused_training_kernels=False)
  assert ElectraTransformerLayer.from_config(layer.get_config()).fused_training_kernels is False
  encoder = ElectraEncoder(16, 2, 2, 32, fused_training_kernels=False)
  restored = ElectraEncoder.from_config(encoder.get_config())
  assert [l.fused_training_kernels for l in restored.transformer_layers] == [False, False]
