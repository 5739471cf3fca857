"""XLA-fused elementwise kernels with hand-written gradients, for training.

On CPU, TensorFlow runs the transformer's elementwise chains (bias, exact
GELU, dropout, residual sum, LayerNorm, scaled masked softmax) one kernel per
op; here each chain is one XLA-compiled function forward and one backward,
while the matmuls stay TensorFlow's (whole-step XLA is slower on CPU).

The math is the original's (`model/modeling.py:transformer_model`). Dropout
masks come from a counter-based hash of (seed, element index in the GLOBAL
batch), so the backward pass regenerates the mask instead of storing it and
one device draws the same masks as N replicas. Only the layers' training path
calls these (`fused_training_kernels`); inference graphs keep plain ops, so a
SavedModel needs no XLA. `dropout` is the same dropout in plain ops.
"""

import math

import numpy as np
import tensorflow as tf

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# 2³²/φ, odd. A NumPy scalar, not a tf.constant: an eager tensor at import
# would start TensorFlow's context before a multi-worker strategy can be made.
_GOLDEN_RATIO = np.uint32(0x9E3779B9)


# Dropout masks from a counter-based hash.


def _uint32(value):
  return tf.constant(value, tf.uint32)


def _mix32(x):
  """A 32-bit integer finalizer (xorshift-multiply, constants of Wellons'
  "lowbias32"): a bijection in which every input bit flips each output bit
  with probability close to 1/2."""
  x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _uint32(16)))
  x = x * _uint32(0x7FEB352D)
  x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _uint32(15)))
  x = x * _uint32(0x846CA68B)
  return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _uint32(16)))


def _low_high_words(value):
  """uint32 low and high words of an int64 tensor."""
  value = tf.cast(value, tf.int64)
  low = tf.cast(tf.bitwise.bitwise_and(value, tf.constant(0xFFFFFFFF, tf.int64)), tf.uint32)
  high = tf.cast(tf.bitwise.right_shift(value, tf.constant(32, tf.int64)), tf.uint32)
  return low, high


def _seed_keys(seed):
  """Two 32-bit keys, each hashed from all 128 bits of the int64 `[2]` seed
  along a different chain, so two seeds share both keys with chance ~2⁻⁶⁴."""
  words = [*_low_high_words(seed[0]), *_low_high_words(seed[1])]
  first = _mix32(words[0] + _uint32(0x243F6A88))
  second = _mix32(words[3] + _uint32(0x85A308D3))
  for word in words[1:]:
    first = _mix32(tf.bitwise.bitwise_xor(first, word))
  for word in reversed(words[:3]):
    second = _mix32(tf.bitwise.bitwise_xor(second, word))
  return first, second


def _counter_words(count, static_count, offset, second_key):
  """The low word of each 64-bit counter `offset + i` (i < count), and its
  second-round key `second_key + high word·φ`. With a static count below 2³¹
  (layer-sized tensors in XLA) the per-element work is 32-bit only (the high
  word is the offset's, plus one past a carry); otherwise a 64-bit iota."""
  offset_low, offset_high = _low_high_words(offset)
  if static_count is not None and static_count < 2**31:
    low = tf.bitcast(tf.range(static_count, dtype=tf.int32), tf.uint32) + offset_low
    block_key = second_key + offset_high * _GOLDEN_RATIO
    return low, tf.where(low < offset_low, block_key + _GOLDEN_RATIO, block_key)
  low, high = _low_high_words(tf.range(tf.cast(count, tf.int64), dtype=tf.int64) + offset)
  return low, second_key + high * _GOLDEN_RATIO


def keep_mask(shape, seed, rate, first_example=0):
  """Boolean `shape` mask, each element kept with probability 1 − rate.

  Element i (row-major 64-bit counter from `first_example`'s first element,
  words c₀, c₁) keeps iff `mix(mix(c₀ ⊕ k₁) ⊕ (k₂ + c₁·φ)) ≥ rate·2³²`, with
  k₁, k₂ hashed from all 128 seed bits (the key enters both rounds, so seeds
  give unrelated sequences). Plain TF ops: usable inside and outside XLA.

  Args:
    shape: 1-D int shape; `shape[0]` is the batch axis.
    seed: int `[2]` seed (as a Keras `SeedGenerator` yields).
    rate: Python float drop probability in [0, 1).
    first_example: int scalar, global batch row of `shape`'s row 0 (the
      replica's offset in the global batch); 0 on one device.

  Returns:
    bool tensor of `shape`.

  Example:
  >>> mask = keep_mask([10, 100], [1, 2], 0.1)
  >>> 850 < int(tf.reduce_sum(tf.cast(mask, tf.int32))) < 950
  True
  """
  static_shape = tf.get_static_value(shape)
  static_count = None if static_shape is None else math.prod(int(n) for n in static_shape)
  shape = tf.cast(shape, tf.int64)
  count = tf.reduce_prod(shape)
  per_example = count // tf.maximum(shape[0], 1)
  offset = tf.cast(first_example, tf.int64) * per_example
  first_key, second_key = _seed_keys(tf.cast(seed, tf.int64))
  low, round_key = _counter_words(count, static_count, offset, second_key)
  bits = _mix32(tf.bitwise.bitwise_xor(low, first_key))
  bits = _mix32(tf.bitwise.bitwise_xor(bits, round_key))
  threshold = _uint32(min(int(round(rate * 2.0**32)), 2**32 - 1))
  return tf.reshape(bits >= threshold, shape)


def _apply_dropout(x, seed, rate, first_example):
  if rate == 0.0:
    return x
  keep = keep_mask(tf.shape(x), seed, rate, first_example)
  return tf.where(keep, x * (1.0 / (1.0 - rate)), tf.zeros_like(x))


def dropout(x, *, seed, rate, first_example=0):
  """Inverted dropout of `x` with the fused kernels' mask, in plain TF ops.

  The same draws as the fused kernels for the same seed, shape and
  `first_example`; the gradient is TensorFlow's (the mask is kept).

  Args:
    x: float tensor whose first axis is the batch.
    seed: int `[2]` seed.
    rate: Python float drop probability; 0 returns `x`.
    first_example: int scalar, global batch row of `x[0]`.

  Example:
  >>> y = dropout(tf.ones([4, 8]), seed=[1, 2], rate=0.5)
  >>> sorted(set(y.numpy().ravel().tolist())) in ([0.0, 2.0], [2.0], [0.0])
  True
  """
  return _apply_dropout(x, seed, float(rate), first_example)


def _column_sums(x):
  """Sum over all but the last axis, as a matmul by a row of ones: XLA's CPU
  column reductions take several times as long as the elementwise kernel
  around them."""
  rows = tf.reshape(x, [-1, tf.shape(x)[-1]])
  return tf.matmul(tf.ones([1, tf.shape(rows)[0]], rows.dtype), rows)[0]


@tf.function(jit_compile=True, autograph=False)
def _compiled_keep_mask(shape, seed, rate, first_example):
  return keep_mask(shape, seed, rate, first_example)


def dropout_keep_mask(shape, seed, rate, first_example=0):
  """`keep_mask` compiled with XLA, as the fused kernels run it (for tests).

  Args:
    shape: 1-D int shape (a Python list: it is static in the kernel).
    seed: int `[2]` seed (as a Keras `SeedGenerator` yields).
    rate: drop probability in [0, 1).
    first_example: global batch row of row 0.

  Example:
  >>> mask = dropout_keep_mask([1000], [1, 2], 0.1)
  >>> 850 < int(tf.reduce_sum(tf.cast(mask, tf.int32))) < 950
  True
  """
  return _compiled_keep_mask(
    tf.constant(shape, tf.int64),
    tf.constant(seed, tf.int64),
    float(rate),
    tf.constant(first_example, tf.int64),
  )


# Bias + split into heads (the query/key/value projections, as one matmul).


@tf.function(jit_compile=True, autograph=False)
def _bias_split_heads_forward(z, bias, num_heads):
  shape = tf.shape(z)
  x = tf.cast(z, tf.float32) + bias
  x = tf.reshape(x, [shape[0], shape[1], 3, num_heads, -1])
  x = tf.cast(tf.transpose(x, [2, 0, 3, 1, 4]), z.dtype)  # [3, B, A, S, d]
  return x[0], x[1], x[2]


@tf.function(jit_compile=True, autograph=False)
def _bias_split_heads_backward(dq, dk, dv):
  d = tf.cast(tf.stack([dq, dk, dv]), tf.float32)  # [3, B, A, S, d]
  shape = tf.shape(d)
  dz = tf.reshape(tf.transpose(d, [1, 3, 0, 2, 4]), [shape[1], shape[3], -1])
  return tf.cast(dz, dq.dtype), _column_sums(dz)


def bias_split_heads(z, bias, num_heads):
  """Query, key and value heads from one `[B, S, 3H]` projection.

  Args:
    z: `[B, S, 3H]` matmul output of the concatenated query/key/value
      kernels, without bias (any float dtype).
    bias: `[3H]` the concatenated biases.
    num_heads: A.

  Returns:
    `(q, k, v)`, each `[B, A, S, H/A]` in z's dtype.

  Example:
  >>> q, k, v = bias_split_heads(tf.zeros([2, 5, 12]), tf.range(12.0), 2)
  >>> q.shape, float(v[0, 1, 0, 1])
  (TensorShape([2, 2, 5, 2]), 11.0)
  """

  @tf.custom_gradient
  def fused(z, bias):
    return _bias_split_heads_forward(z, bias, num_heads), _bias_split_heads_backward

  return fused(z, tf.cast(bias, tf.float32))


# Bias + GELU (the FFN's intermediate dense).


@tf.function(jit_compile=True, autograph=False)
def _bias_gelu_forward(z, bias):
  x = tf.cast(z, tf.float32) + bias
  return tf.cast(x * (0.5 * (1.0 + tf.math.erf(x * _INV_SQRT2))), z.dtype)


@tf.function(jit_compile=True, autograph=False)
def _bias_gelu_backward(z, bias, dy):
  x = tf.cast(z, tf.float32) + bias
  cdf = 0.5 * (1.0 + tf.math.erf(x * _INV_SQRT2))
  pdf = tf.exp(-0.5 * x * x) * _INV_SQRT_2PI
  dz = tf.cast(dy, tf.float32) * (cdf + x * pdf)
  return tf.cast(dz, z.dtype), _column_sums(dz)


def bias_gelu(z, bias):
  """Exact GELU `x·Φ(x)` of `x = z + bias`, in z's dtype (math in float32).

  Args:
    z: `[..., N]` matmul output without its bias.
    bias: `[N]` bias (variable or tensor, float32).

  Returns:
    `gelu(z + bias)` with z's shape and dtype.

  Example:
  >>> round(float(bias_gelu(tf.constant([0.5]), tf.constant([0.5]))[0]), 4)
  0.8413
  """

  @tf.custom_gradient
  def fused(z, bias):
    return _bias_gelu_forward(z, bias), lambda dy: _bias_gelu_backward(z, bias, dy)

  return fused(z, tf.cast(bias, tf.float32))


# Bias + dropout + residual sum + LayerNorm (attention output and FFN output).


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_forward(z, bias, residual, gamma, beta, seed, rate, epsilon, first_example):
  x = _apply_dropout(tf.cast(z, tf.float32) + bias, seed, rate, first_example)
  x = x + tf.cast(residual, tf.float32)
  mean = tf.reduce_mean(x, axis=-1, keepdims=True)
  centered = x - mean
  variance = tf.reduce_mean(centered * centered, axis=-1, keepdims=True)
  inv_std = tf.math.rsqrt(variance + epsilon)
  normalized = centered * inv_std
  return normalized * gamma + beta, normalized, inv_std


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_backward(
  dy, normalized, inv_std, gamma, seed, rate, first_example, z_dtype, residual_dtype
):
  d_normalized = dy * gamma
  dx = inv_std * (
    d_normalized
    - tf.reduce_mean(d_normalized, axis=-1, keepdims=True)
    - normalized * tf.reduce_mean(d_normalized * normalized, axis=-1, keepdims=True)
  )
  dz = _apply_dropout(dx, seed, rate, first_example)  # the same mask, regenerated, and scale
  return (
    tf.cast(dz, z_dtype),
    _column_sums(dz),
    tf.cast(dx, residual_dtype),
    _column_sums(dy * normalized),
    _column_sums(dy),
  )


def bias_dropout_residual_layer_norm(
  z, bias, residual, gamma, beta, *, seed, rate, epsilon, first_example=0
):
  """`LayerNorm(dropout(z + bias) + residual)` over the last axis, in float32.

  Args:
    z: `[..., H]` matmul output without its bias (any float dtype).
    bias: `[H]` bias.
    residual: `[..., H]` the block's input (any float dtype).
    gamma, beta: `[H]` LayerNorm scale and offset.
    seed: int `[2]` dropout seed (e.g. `Dropout.seed_generator.next()`).
    rate: Python float drop probability; 0 means no dropout.
    epsilon: Python float variance epsilon (the original's 1e-12).
    first_example: int scalar, global batch row of `z[0]` (see `keep_mask`).

  Returns:
    float32 tensor of z's shape.

  Example:
  >>> y = bias_dropout_residual_layer_norm(
  ...     tf.ones([2, 4]), tf.zeros([4]), tf.range(4.0)[None] * tf.ones([2, 1]),
  ...     tf.ones([4]), tf.zeros([4]), seed=[0, 0], rate=0.0, epsilon=1e-12)
  >>> y.shape
  TensorShape([2, 4])
  """
  rate, epsilon = float(rate), float(epsilon)
  seed = tf.cast(seed, tf.int64)
  first_example = tf.cast(first_example, tf.int64)

  @tf.custom_gradient
  def fused(z, bias, residual, gamma, beta):
    y, normalized, inv_std = _layer_norm_forward(
      z, bias, residual, gamma, beta, seed, rate, epsilon, first_example
    )

    def grad(dy):
      return _layer_norm_backward(
        dy, normalized, inv_std, gamma, seed, rate, first_example, z.dtype, residual.dtype
      )

    return y, grad

  as_float = lambda v: tf.cast(v, tf.float32)
  return fused(z, as_float(bias), residual, as_float(gamma), as_float(beta))


# Scaled, masked softmax + dropout (attention probabilities).


@tf.function(jit_compile=True, autograph=False)
def _softmax_forward(scores, adder, scale, seed, rate, first_example, out_dtype):
  probs = tf.nn.softmax(tf.cast(scores, tf.float32) * scale + adder, axis=-1)
  return tf.cast(_apply_dropout(probs, seed, rate, first_example), out_dtype), probs


@tf.function(jit_compile=True, autograph=False)
def _softmax_backward(probs, d_out, scale, seed, rate, first_example, scores_dtype):
  d_probs = _apply_dropout(tf.cast(d_out, tf.float32), seed, rate, first_example)
  d_logits = probs * (d_probs - tf.reduce_sum(d_probs * probs, axis=-1, keepdims=True))
  return tf.cast(d_logits * scale, scores_dtype)


def attention_softmax_dropout(scores, adder, *, scale, seed, rate, dtype, first_example=0):
  """`dropout(softmax(scores·scale + adder))` over the last axis.

  The softmax is computed in float32 (as the layers' plain path does).

  Args:
    scores: `[B, A, S, S]` raw attention scores (any float dtype).
    adder: float32 tensor broadcastable to `scores` (0 or −10000); no
      gradient flows into it.
    scale: Python float, `1/√head_size`.
    seed: int `[2]` dropout seed.
    rate: Python float drop probability; 0 means no dropout.
    dtype: dtype of the returned probabilities (the layer's compute dtype).
    first_example: int scalar, global batch row of `scores[0]` (see
      `keep_mask`).

  Example:
  >>> attention_softmax_dropout(tf.zeros([1, 1, 2, 2]), tf.zeros([1, 1, 1, 2]), scale=1.0,
  ...                           seed=[0, 0], rate=0.0, dtype="float32").numpy()[0, 0, 0]
  array([0.5, 0.5], dtype=float32)
  """
  scale, rate = float(scale), float(rate)
  seed = tf.cast(seed, tf.int64)
  first_example = tf.cast(first_example, tf.int64)
  adder = tf.stop_gradient(tf.cast(adder, tf.float32))
  dtype = tf.as_dtype(dtype)

  @tf.custom_gradient
  def fused(scores):
    out, probs = _softmax_forward(scores, adder, scale, seed, rate, first_example, dtype)

    def grad(d_out):
      return _softmax_backward(probs, d_out, scale, seed, rate, first_example, scores.dtype)

    return out, grad

  return fused(scores)
