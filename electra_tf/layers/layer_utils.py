"""Helpers shared by the layers: initializers, LayerNorm, activations, the
attention mask and replica-aware dropout."""

import contextlib
import contextvars

import keras
from keras import ops
import tensorflow as tf

from electra_tf.layers import fused_ops
from electra_tf.runtime import replicas
from electra_tf.utils import keras_compat

# The original adds this to the scores of masked keys (a quirk of the original, see docs/differences.md).
ATTENTION_MASK_ADDER = -10000.0
LAYER_NORM_EPSILON = 1e-12
ATTENTION_DIRECTIONS = ("bidirectional", "ltr", "rtl")

_SEPARATE_QKV_PROJECTIONS = contextvars.ContextVar("separate_qkv_projections", default=False)


@contextlib.contextmanager
def separate_qkv_projections():
  """Attention layers traced inside it for inference project query, key and
  value with three matmuls instead of one on their joined kernels: in an XLA
  cluster the join (a copy of the variables on every call) sits on a short
  request's critical path. The serving modules trace their XLA network here.

  Example:
  >>> with separate_qkv_projections():
  ...   print(qkv_projections_are_separate())
  True
  >>> qkv_projections_are_separate()
  False
  """
  token = _SEPARATE_QKV_PROJECTIONS.set(True)
  try:
    yield
  finally:
    _SEPARATE_QKV_PROJECTIONS.reset(token)


def qkv_projections_are_separate():
  """Whether `separate_qkv_projections` is active."""
  return _SEPARATE_QKV_PROJECTIONS.get()


_JOINED_QKV_WEIGHTS = contextvars.ContextVar("joined_qkv_weights", default=None)


@contextlib.contextmanager
def joined_qkv_weights(weights_by_layer):
  """Attention layers traced inside it for inference take their joined
  query/key/value kernel and bias from `weights_by_layer` (`{id(layer):
  (kernel, bias)}`, joined once ahead of time) instead of joining their own
  on every call (a third of a short request's kernel time). Layers not in
  the mapping join their own.

  Example:
  >>> with joined_qkv_weights({7: ("kernel", "bias")}):
  ...   print(joined_qkv_weights_of(7), joined_qkv_weights_of(8))
  ('kernel', 'bias') None
  >>> print(joined_qkv_weights_of(7))
  None
  """
  token = _JOINED_QKV_WEIGHTS.set(weights_by_layer)
  try:
    yield
  finally:
    _JOINED_QKV_WEIGHTS.reset(token)


def joined_qkv_weights_of(layer_id):
  """The `(kernel, bias)` that `joined_qkv_weights` holds for `layer_id`, else None."""
  weights = _JOINED_QKV_WEIGHTS.get()
  return None if weights is None else weights.get(layer_id)


def make_dense(units, initializer_range, dtype, name, activation=None):
  """`tf.layers.dense` with a truncated-normal kernel (the original's
  `create_initializer`) and a zero bias; `activation` as for `get_activation`."""
  return keras.layers.Dense(
    units,
    activation=get_activation(activation),
    kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
    bias_initializer="zeros",
    dtype=dtype,
    name=name,
  )


def make_layer_norm(name):
  """`tf.contrib.layers.layer_norm`: last axis, ε=1e-12, always float32."""
  return keras.layers.LayerNormalization(
    axis=-1, epsilon=LAYER_NORM_EPSILON, dtype="float32", name=name
  )


def float32_value(variable):
  """A float32 variable's value, not autocast to a layer's compute dtype
  under mixed precision (the fused kernels and LayerNorm compute in float32)."""
  with keras_compat.autocast_scope(None):
    return ops.convert_to_tensor(variable)


def layer_norm(layer, x):
  """`layer` (a `make_layer_norm` LayerNorm) applied to `x` over the last axis,
  in float32, in fewer ops than Keras' own call (each op is a fixed cost on
  a short request). Same variables, same math within float rounding.

  Example:
  >>> norm = make_layer_norm("norm")
  >>> norm.build((None, 4))
  >>> [round(float(v), 4) for v in layer_norm(norm, tf.constant([[1.0, 2.0, 3.0, 4.0]]))[0]]
  [-1.3416, -0.4472, 0.4472, 1.3416]
  """
  gamma, beta = float32_value(layer.gamma), float32_value(layer.beta)
  x = ops.cast(x, "float32")
  centered = x - tf.reduce_mean(x, axis=-1, keepdims=True)
  variance = tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True)
  return centered * (tf.math.rsqrt(variance + layer.epsilon) * gamma) + beta


# Keras' gelu defaults to approximate=False: the exact erf form.
_ACTIVATIONS = {
  "": None,
  "linear": None,
  "gelu": keras.activations.gelu,
  "relu": keras.activations.relu,
  "tanh": keras.activations.tanh,
}


def get_activation(name):
  """The original's `get_activation` (`model/modeling.py:BertConfig`); "gelu" is the exact erf form."""
  if not isinstance(name, str):
    return name
  if name.lower() not in _ACTIVATIONS:
    raise ValueError(f"Unsupported activation {name!r}; expected gelu, relu, tanh or linear")
  return _ACTIVATIONS[name.lower()]


def attention_mask_adder(input_mask, attention_direction="bidirectional"):
  """Float32 `[B, 1, S, S]` adder: 0 where attention is allowed, −10000 else.

  Only keys are masked (by `input_mask`); "ltr" also hides keys j > i and
  "rtl" keys j < i (Electric's towers, `model/modeling.py:BertModel`).
  """
  if attention_direction not in ATTENTION_DIRECTIONS:
    raise ValueError(
      f"attention_direction={attention_direction!r}; expected one of {ATTENTION_DIRECTIONS}"
    )
  # expand_dims, not `[:, None, None, :]`: LiteRT's builtin strided slice takes
  # no two new axes, and the portable exports (serving/portable.py) use builtins only.
  mask = ops.expand_dims(ops.expand_dims(ops.cast(input_mask, "float32"), 1), 1)  # [B, 1, 1, S]
  if attention_direction != "bidirectional":
    seq_length = ops.shape(input_mask)[1]
    rows = ops.arange(seq_length)[:, None]
    cols = ops.arange(seq_length)[None, :]
    allowed = cols <= rows if attention_direction == "ltr" else cols >= rows
    mask = mask * ops.reshape(ops.cast(allowed, "float32"), (1, 1, seq_length, seq_length))
  return (1.0 - mask) * ATTENTION_MASK_ADDER


def add_list_children(children, save_type, **lists):
  """Names the items of sublayer lists as checkpoint children, for a layer's
  `_trackable_children` override: Keras 3 (TF backend) leaves its tracked
  lists out of object-based checkpoints."""
  if save_type == "checkpoint":
    for name, items in lists.items():
      for index, item in enumerate(items):
        children[f"{name}_{index}"] = item
  return children


def seed_generator_states(layer):
  """The state variables of the `keras.random.SeedGenerator`s (dropout) in
  `layer` and its sublayers, in model order: its variables that are not
  weights."""
  weights = {id(v) for v in layer.weights}
  return [v for v in layer.variables if id(v) not in weights]


def dropout_seed(dropout_layer):
  """One int64 `[2]` seed from a Keras `Dropout` layer's `SeedGenerator`, drawn
  as `keras.random.dropout` draws it (one per call; a rate of 0 draws none)."""
  if dropout_layer.rate == 0.0:
    return tf.zeros([2], tf.int64)
  return tf.cast(dropout_layer.seed_generator.next(), tf.int64)


def dropout(dropout_layer, x, training, first_example=None):
  """`dropout_layer`'s dropout of `x` with the fused kernels' hashed mask,
  indexed by position in the GLOBAL batch: replicas drop different elements
  (Keras' `Dropout` would give every replica the same mask).

  Args:
    dropout_layer: a `keras.layers.Dropout` (its rate and seed generator).
    x: float tensor, batch first.
    training: dropout only when true.
    first_example: global batch row of `x[0]`; None asks the replica context.

  Example:
  >>> layer = keras.layers.Dropout(0.5, seed=1)
  >>> dropout(layer, tf.ones([2, 3]), training=False).numpy().tolist()
  [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
  """
  if not training or dropout_layer.rate == 0.0:
    return x
  if first_example is None:
    first_example = replicas.replica_first_example(ops.shape(x)[0])
  return fused_ops.dropout(
    x, seed=dropout_seed(dropout_layer), rate=dropout_layer.rate, first_example=first_example
  )
