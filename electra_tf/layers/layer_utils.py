"""Small helpers shared by the layers: the original's initializers, LayerNorm,
activations and attention-mask construction."""

import math

import keras
from keras import ops
import tensorflow as tf

# The original adds this to the scores of masked keys (spec §14.44).
ATTENTION_MASK_ADDER = -10000.0
LAYER_NORM_EPSILON = 1e-12
ATTENTION_DIRECTIONS = ("bidirectional", "ltr", "rtl")


def truncated_normal(stddev):
  """TF1's `truncated_normal_initializer` (cut at 2σ), as `create_initializer`."""
  return keras.initializers.TruncatedNormal(stddev=stddev)


def make_layer_norm(name):
  """`tf.contrib.layers.layer_norm`: last axis, ε=1e-12, always float32."""
  return keras.layers.LayerNormalization(
      axis=-1, epsilon=LAYER_NORM_EPSILON, dtype="float32", name=name)


def get_activation(name):
  """The original's `get_activation` (spec §5.1); "gelu" is the exact erf form."""
  if not isinstance(name, str):
    return name
  key = name.lower()
  if key in ("", "linear"):
    return None
  if key == "gelu":
    # Keras' gelu defaults to approximate=False: the exact erf form.
    return keras.activations.gelu
  if key == "relu":
    return keras.activations.relu
  if key == "tanh":
    return keras.activations.tanh
  raise ValueError(f"Unsupported activation {name!r}; expected gelu, relu, tanh or linear")


_SQRT_HALF = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@tf.function(jit_compile=True)
def _fused_gelu_forward(x):
  x32 = tf.cast(x, tf.float32)
  return tf.cast(x32 * 0.5 * (1.0 + tf.math.erf(x32 * _SQRT_HALF)), x.dtype)


@tf.function(jit_compile=True)
def _fused_gelu_backward(x, dy):
  x32 = tf.cast(x, tf.float32)
  cdf = 0.5 * (1.0 + tf.math.erf(x32 * _SQRT_HALF))
  pdf = tf.exp(-0.5 * x32 * x32) * _INV_SQRT_2PI
  return tf.cast(tf.cast(dy, tf.float32) * (cdf + x32 * pdf), dy.dtype)


@tf.custom_gradient
def fused_gelu(x):
  """Exact (erf) GELU with its forward and backward each one XLA-fused
  kernel. On CPU the unfused ops are memory-bound and were the largest cost
  of the training step after the matmuls; the values equal
  `keras.activations.gelu` up to float rounding."""
  return _fused_gelu_forward(x), lambda dy: _fused_gelu_backward(x, dy)


@tf.function(jit_compile=True)
def _fused_attention_probs_forward(scores, adder, scale):
  return tf.nn.softmax(tf.cast(scores, tf.float32) * scale + adder, axis=-1)


@tf.function(jit_compile=True)
def _fused_attention_probs_backward(probs, d_probs, scale):
  d_logits = probs * (d_probs - tf.reduce_sum(d_probs * probs, axis=-1, keepdims=True))
  return d_logits * scale


def fused_attention_probs(scores, adder, scale):
  """`softmax(scores * scale + adder)` in float32, forward and backward each
  one XLA-fused kernel (the unfused ops pass over [B, A, S, S] several
  times). `adder` is the float32 mask adder, broadcastable to `scores`."""
  adder = tf.cast(adder, tf.float32)

  @tf.custom_gradient
  def _probs(scores):
    probs = _fused_attention_probs_forward(scores, adder, scale)

    def grad(d_probs):
      return tf.cast(_fused_attention_probs_backward(probs, d_probs, scale), scores.dtype)
    return probs, grad

  return _probs(scores)


def apply_activation(x, hidden_act, training=None):
  """`get_activation(hidden_act)(x)`; when training, GELU runs fused.

  Inference keeps plain TensorFlow ops, so exported SavedModels need no XLA.
  """
  if training is True and isinstance(hidden_act, str) and hidden_act.lower() == "gelu":
    return fused_gelu(x)
  activation = get_activation(hidden_act)
  return x if activation is None else activation(x)


def attention_mask_adder(input_mask, attention_direction="bidirectional"):
  """Float32 `[B, 1, S, S]` adder: 0 where attention is allowed, −10000 else.

  Only keys are masked (by `input_mask`); "ltr" also hides keys j > i and
  "rtl" keys j < i (Electric's towers, spec §5.2).
  """
  if attention_direction not in ATTENTION_DIRECTIONS:
    raise ValueError(
        f"attention_direction={attention_direction!r}; expected one of {ATTENTION_DIRECTIONS}")
  mask = ops.cast(input_mask, "float32")[:, None, None, :]  # [B, 1, 1, S]
  if attention_direction != "bidirectional":
    seq_length = ops.shape(input_mask)[1]
    rows = ops.arange(seq_length)[:, None]
    cols = ops.arange(seq_length)[None, :]
    allowed = cols <= rows if attention_direction == "ltr" else cols >= rows
    mask = mask * ops.cast(allowed, "float32")[None, None, :, :]
  return (1.0 - mask) * ATTENTION_MASK_ADDER


def add_list_children(children, save_type, **lists):
  """Names the items of sublayer lists as checkpoint children.

  Keras 3 (3.15, TF backend) leaves its tracked lists out of
  `_trackable_children` for `tf.train.Checkpoint`, so the layers in a list
  attribute would be missing from object-based checkpoints. A layer holding
  such a list calls this from its `_trackable_children` override.
  """
  if save_type == "checkpoint":
    for name, items in lists.items():
      for index, item in enumerate(items):
        children[f"{name}_{index}"] = item
  return children
