"""XLA-fused elementwise kernels with hand-written gradients, for training.

Why: on CPU, TensorFlow runs the transformer's elementwise chains (bias,
exact GELU, dropout, residual sum, LayerNorm, scaled masked softmax) one
kernel per op, each a full pass over memory forward and again backward, and
draws dropout masks with Philox at several ns per element. Here each chain
is one XLA-compiled function forward and one backward, while the matmuls
between them stay TensorFlow's oneDNN kernels (compiling the whole step with
XLA is slower on CPU: its matmuls are slower).

The math is the original's (`model/modeling.py:transformer_model`): exact erf GELU, inverted dropout,
LayerNorm over the last axis with population variance, softmax of
`scores·scale + adder`. Dropout masks come from a counter-based hash of
(seed, element index), so the backward pass regenerates the mask instead of
storing it; the seed is drawn from the Keras `Dropout` layer's
`SeedGenerator`, one per call, as `keras.random.dropout` draws it.

Only the layers' training path calls these (`fused_training_ops()`);
inference graphs (evaluation, export, serving) keep plain TensorFlow ops, so
a SavedModel needs no XLA at serving time. `unfused()` turns them off, e.g.
to compare against plain ops or to debug.
"""

import contextlib
import math

import tensorflow as tf

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_enabled = True


def fused_training_ops():
  """Whether the layers' training path uses these kernels (default True)."""
  return _enabled


@contextlib.contextmanager
def unfused():
  """Within this block, layers traced for training use plain TF ops."""
  global _enabled
  previous = _enabled
  _enabled = False
  try:
    yield
  finally:
    _enabled = previous


# ---------------------------------------------------------------------------
# Dropout masks from a counter-based hash.
# ---------------------------------------------------------------------------


def _uint32(value):
  return tf.constant(value, tf.uint32)


def _fmix32(x):
  """MurmurHash3's 32-bit finalizer: every input bit flips each output bit
  with probability ~1/2."""
  x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _uint32(16)))
  x = x * _uint32(0x85EBCA6B)
  x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _uint32(13)))
  x = x * _uint32(0xC2B2AE35)
  return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _uint32(16)))


def _keep_mask(shape, seed, rate):
  """Boolean `shape` mask, each element kept with probability 1 − rate.

  Element i's bits are fmix32(i·φ + key), φ the 32-bit golden ratio and key
  a hash of the two seed words (a SplitMix-style counter hash). The keep
  threshold is rate·2³², so the rate is exact to 2⁻³².
  """
  seed = tf.cast(seed, tf.uint32)
  key = _fmix32(tf.bitwise.bitwise_xor(seed[0], _fmix32(seed[1] + _uint32(0x7F4A7C15))))
  count = tf.reduce_prod(shape)
  index = tf.bitcast(tf.range(count, dtype=tf.int32), tf.uint32)
  bits = _fmix32(index * _uint32(0x9E3779B9) + key)
  threshold = _uint32(min(int(round(rate * 2.0**32)), 2**32 - 1))
  return tf.reshape(bits >= threshold, shape)


def _apply_dropout(x, seed, rate):
  if rate == 0.0:
    return x
  keep = _keep_mask(tf.shape(x), seed, rate)
  return tf.where(keep, x * (1.0 / (1.0 - rate)), tf.zeros_like(x))


def _column_sums(x):
  """Sum over all but the last axis, as a matmul by a row of ones: XLA's CPU
  column reductions take several times as long as the elementwise kernel
  around them."""
  rows = tf.reshape(x, [-1, tf.shape(x)[-1]])
  return tf.matmul(tf.ones([1, tf.shape(rows)[0]], rows.dtype), rows)[0]


@tf.function(jit_compile=True, autograph=False)
def _compiled_keep_mask(shape, seed, rate):
  return _keep_mask(shape, seed, rate)


def dropout_keep_mask(shape, seed, rate):
  """The keep mask the fused kernels use for `seed` (exposed for tests).

  Args:
    shape: 1-D int32 shape.
    seed: int `[2]` seed (as a Keras `SeedGenerator` yields).
    rate: drop probability in [0, 1).

  Example:
  >>> mask = dropout_keep_mask([1000], [1, 2], 0.1)
  >>> 850 < int(tf.reduce_sum(tf.cast(mask, tf.int32))) < 950
  True
  """
  return _compiled_keep_mask(tf.constant(shape, tf.int32), tf.constant(seed, tf.int64), float(rate))


# ---------------------------------------------------------------------------
# Bias + split into heads (the query/key/value projections, as one matmul).
# ---------------------------------------------------------------------------


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

    def grad(dq, dk, dv):
      return _bias_split_heads_backward(dq, dk, dv)

    return _bias_split_heads_forward(z, bias, num_heads), grad

  return fused(z, tf.cast(bias, tf.float32))


# ---------------------------------------------------------------------------
# Bias + GELU (the FFN's intermediate dense).
# ---------------------------------------------------------------------------


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

    def grad(dy):
      return _bias_gelu_backward(z, bias, dy)

    return _bias_gelu_forward(z, bias), grad

  return fused(z, tf.cast(bias, tf.float32))


# ---------------------------------------------------------------------------
# Bias + dropout + residual sum + LayerNorm (attention output and FFN output).
# ---------------------------------------------------------------------------


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_forward(z, bias, residual, gamma, beta, seed, rate, epsilon):
  x = _apply_dropout(tf.cast(z, tf.float32) + bias, seed, rate)
  x = x + tf.cast(residual, tf.float32)
  mean = tf.reduce_mean(x, axis=-1, keepdims=True)
  centered = x - mean
  variance = tf.reduce_mean(centered * centered, axis=-1, keepdims=True)
  inv_std = tf.math.rsqrt(variance + epsilon)
  normalized = centered * inv_std
  return normalized * gamma + beta, normalized, inv_std


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_backward(dy, normalized, inv_std, gamma, seed, rate, z_dtype, residual_dtype):
  d_normalized = dy * gamma
  dx = inv_std * (
    d_normalized
    - tf.reduce_mean(d_normalized, axis=-1, keepdims=True)
    - normalized * tf.reduce_mean(d_normalized * normalized, axis=-1, keepdims=True)
  )
  dz = _apply_dropout(dx, seed, rate)  # the same mask, regenerated, and scale
  return (
    tf.cast(dz, z_dtype),
    _column_sums(dz),
    tf.cast(dx, residual_dtype),
    _column_sums(dy * normalized),
    _column_sums(dy),
  )


def bias_dropout_residual_layer_norm(z, bias, residual, gamma, beta, *, seed, rate, epsilon):
  """`LayerNorm(dropout(z + bias) + residual)` over the last axis, in float32.

  Args:
    z: `[..., H]` matmul output without its bias (any float dtype).
    bias: `[H]` bias.
    residual: `[..., H]` the block's input (any float dtype).
    gamma, beta: `[H]` LayerNorm scale and offset.
    seed: int `[2]` dropout seed (e.g. `Dropout.seed_generator.next()`).
    rate: Python float drop probability; 0 means no dropout.
    epsilon: Python float variance epsilon (the original's 1e-12).

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

  @tf.custom_gradient
  def fused(z, bias, residual, gamma, beta):
    y, normalized, inv_std = _layer_norm_forward(
      z, bias, residual, gamma, beta, seed, rate, epsilon
    )

    def grad(dy):
      return _layer_norm_backward(
        dy, normalized, inv_std, gamma, seed, rate, z.dtype, residual.dtype
      )

    return y, grad

  as_float = lambda v: tf.cast(v, tf.float32)
  return fused(z, as_float(bias), residual, as_float(gamma), as_float(beta))


# ---------------------------------------------------------------------------
# Scaled, masked softmax + dropout (attention probabilities).
# ---------------------------------------------------------------------------


@tf.function(jit_compile=True, autograph=False)
def _softmax_forward(scores, adder, scale, seed, rate, out_dtype):
  probs = tf.nn.softmax(tf.cast(scores, tf.float32) * scale + adder, axis=-1)
  return tf.cast(_apply_dropout(probs, seed, rate), out_dtype), probs


@tf.function(jit_compile=True, autograph=False)
def _softmax_backward(probs, d_out, scale, seed, rate, scores_dtype):
  d_probs = _apply_dropout(tf.cast(d_out, tf.float32), seed, rate)
  d_logits = probs * (d_probs - tf.reduce_sum(d_probs * probs, axis=-1, keepdims=True))
  return tf.cast(d_logits * scale, scores_dtype)


def attention_softmax_dropout(scores, adder, *, scale, seed, rate, dtype):
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

  Example:
  >>> attention_softmax_dropout(tf.zeros([1, 1, 2, 2]), tf.zeros([1, 1, 1, 2]), scale=1.0,
  ...                           seed=[0, 0], rate=0.0, dtype="float32").numpy()[0, 0, 0]
  array([0.5, 0.5], dtype=float32)
  """
  scale, rate = float(scale), float(rate)
  seed = tf.cast(seed, tf.int64)
  adder = tf.stop_gradient(tf.cast(adder, tf.float32))
  dtype = tf.as_dtype(dtype)

  @tf.custom_gradient
  def fused(scores):
    out, probs = _softmax_forward(scores, adder, scale, seed, rate, dtype)

    def grad(d_out):
      return _softmax_backward(probs, d_out, scale, seed, rate, scores.dtype)

    return out, grad

  return fused(scores)
