"""One post-LayerNorm BERT transformer block (`model/modeling.py:transformer_model`)."""

import math

import keras
from keras import ops
import tensorflow as tf

from electra_tf.layers import fused_ops
from electra_tf.layers import layer_utils
from electra_tf.runtime import replicas


def _first_token(first_example, seq):
  """The row of a `[B·S, H]` tensor's first row in the flattened global batch."""
  return tf.cast(first_example, tf.int64) * tf.cast(seq, tf.int64)


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTransformerLayer(keras.layers.Layer):
  """The original's `layer_<i>`: self-attention and FFN, each followed by
  dropout, a residual connection and LayerNorm (post-LN).

  Sublayers carry the original's variable roles (`query`, `key`, `value`,
  `attention_output_dense`, `attention_layer_norm`, `intermediate_dense`,
  `output_dense`, `output_layer_norm`; `official_names` maps them). Scores,
  the −10000 mask adder and the softmax are float32 under mixed precision.

  Args:
    hidden_size: width H; must be divisible by `num_attention_heads`.
    num_attention_heads: heads A.
    intermediate_size: FFN width I.
    hidden_act: FFN activation name ("gelu" = exact erf GELU).
    hidden_dropout_prob: dropout after the attention-output and FFN-output
      projections.
    attention_probs_dropout_prob: dropout on the attention probabilities.
    initializer_range: stddev of the truncated-normal kernel initializer.
    fused_training_kernels: with `training=True`, run the elementwise chains
      as XLA-fused kernels (`fused_ops`); False uses plain TF ops (the same
      math and dropout masks). Inference always uses plain ops.
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    hidden_states: `[B, S, H]`, or `[B·S, H]` with `sequence_shape`.
    attention_mask_adder: float32 `[B, 1, S, S]` from
      `layer_utils.attention_mask_adder` (0 = attend, −10000 = masked), or
      None for no masking.
    training: enables dropout.
    sequence_shape: `(B, S)` when `hidden_states` is 2-D (the encoder keeps
      its activations 2-D); the output then is 2-D too.

  Example:
  >>> import numpy as np
  >>> layer = ElectraTransformerLayer(16, 2, 64)
  >>> layer(np.ones((2, 5, 16), "float32")).shape
  TensorShape([2, 5, 16])
  """

  def __init__(
    self,
    hidden_size,
    num_attention_heads,
    intermediate_size,
    hidden_act="gelu",
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
    initializer_range=0.02,
    fused_training_kernels=True,
    **kwargs,
  ):
    super().__init__(**kwargs)
    if hidden_size % num_attention_heads != 0:
      raise ValueError(
        f"hidden_size={hidden_size} is not a multiple of num_attention_heads={num_attention_heads}"
      )
    self.hidden_size = int(hidden_size)
    self.num_attention_heads = int(num_attention_heads)
    self.intermediate_size = int(intermediate_size)
    self.hidden_act = hidden_act
    self.hidden_dropout_prob = float(hidden_dropout_prob)
    self.attention_probs_dropout_prob = float(attention_probs_dropout_prob)
    self.initializer_range = float(initializer_range)
    self.fused_training_kernels = bool(fused_training_kernels)
    self.head_size = self.hidden_size // self.num_attention_heads

    def dense(units, name):
      return layer_utils.make_dense(units, self.initializer_range, self.dtype_policy, name)

    self.query = dense(self.hidden_size, "query")
    self.key = dense(self.hidden_size, "key")
    self.value = dense(self.hidden_size, "value")
    self.attention_probs_dropout = keras.layers.Dropout(
      self.attention_probs_dropout_prob, name="attention_probs_dropout"
    )
    self.attention_output_dense = dense(self.hidden_size, "attention_output_dense")
    self.attention_output_dropout = keras.layers.Dropout(
      self.hidden_dropout_prob, name="attention_output_dropout"
    )
    self.attention_layer_norm = layer_utils.make_layer_norm("attention_layer_norm")
    # The activation is applied in `call` (fused when training).
    self.intermediate_dense = dense(self.intermediate_size, "intermediate_dense")
    self.intermediate_activation = layer_utils.get_activation(self.hidden_act)
    self.output_dense = dense(self.hidden_size, "output_dense")
    self.output_dropout = keras.layers.Dropout(self.hidden_dropout_prob, name="output_dropout")
    self.output_layer_norm = layer_utils.make_layer_norm("output_layer_norm")

  def build(self, hidden_states_shape=None, attention_mask_adder_shape=None):
    h, i = self.hidden_size, self.intermediate_size
    for layer in (self.query, self.key, self.value, self.attention_output_dense):
      layer.build((None, h))
    self.intermediate_dense.build((None, h))
    self.output_dense.build((None, i))
    self.attention_layer_norm.build((None, h))
    self.output_layer_norm.build((None, h))
    self.built = True

  def call(self, hidden_states, attention_mask_adder=None, training=None, sequence_shape=None):
    """`[B, S, H]` → `[B, S, H]`; with `sequence_shape=(B, S)` (the encoder's
    way) `[B·S, H]` → `[B·S, H]`: each projection is then one plain matmul."""
    if sequence_shape is None:
      shape = ops.shape(hidden_states)
      batch, seq = shape[0], shape[1]
      x = ops.reshape(hidden_states, (-1, self.hidden_size))
      out = self._call_2d(x, attention_mask_adder, training, batch, seq)
      return ops.reshape(out, (batch, seq, self.hidden_size))
    batch, seq = sequence_shape
    return self._call_2d(hidden_states, attention_mask_adder, training, batch, seq)

  def _call_2d(self, x, attention_mask_adder, training, batch, seq):
    if training and self.fused_training_kernels:
      return self._fused_call(x, attention_mask_adder, batch, seq)
    first_example = replicas.replica_first_example(batch)
    if layer_utils.qkv_projections_are_separate():
      q, k, v = (
        self._projected_heads(x, p, batch, seq) for p in (self.query, self.key, self.value)
      )
    else:
      kernel, bias = layer_utils.joined_qkv_weights_of(id(self)) or self.joined_qkv_weights()
      q, k, v = self._split_heads(
        tf.nn.bias_add(self._matmul(x, kernel), ops.cast(bias, self.compute_dtype)),
        batch,
        seq,
      )
    scores = tf.matmul(q, k, transpose_b=True)  # no explicit transpose of K
    scores = ops.cast(scores, "float32") * (1.0 / math.sqrt(float(self.head_size)))
    if attention_mask_adder is not None:
      scores = scores + ops.cast(attention_mask_adder, "float32")
    probs = ops.softmax(scores, axis=-1)
    probs = layer_utils.dropout(self.attention_probs_dropout, probs, training, first_example)
    context = self._merge_heads(ops.matmul(ops.cast(probs, v.dtype), v))

    attention_output = self.attention_output_dense(context)
    attention_output = self._token_dropout(
      self.attention_output_dropout, attention_output, training, first_example, seq
    )
    # Residual sums and LayerNorm in float32 (matters under mixed precision).
    attention_output = layer_utils.layer_norm(
      self.attention_layer_norm, ops.cast(attention_output, "float32") + ops.cast(x, "float32")
    )
    attention_output = ops.cast(attention_output, self.compute_dtype)

    intermediate = self.intermediate_dense(attention_output)
    if self.intermediate_activation is not None:
      intermediate = self.intermediate_activation(intermediate)
    layer_output = self.output_dense(intermediate)
    layer_output = self._token_dropout(
      self.output_dropout, layer_output, training, first_example, seq
    )
    layer_output = layer_utils.layer_norm(
      self.output_layer_norm,
      ops.cast(layer_output, "float32") + ops.cast(attention_output, "float32"),
    )
    return ops.cast(layer_output, self.compute_dtype)

  @staticmethod
  def _token_dropout(dropout_layer, x, training, first_example, seq):
    """Dropout of a `[B·S, H]` tensor with the mask of its `[B, S, H]` form
    (the same row-major order: the first row is token `first_example · S`)."""
    if not training or dropout_layer.rate == 0.0:
      return x
    return layer_utils.dropout(dropout_layer, x, training, _first_token(first_example, seq))

  def joined_qkv_weights(self):
    """The query, key and value kernels joined `[H, 3H]` (their order) and
    their biases `[3H]` (float32), as the one-matmul projection uses them."""
    return self._qkv_kernel(), self._qkv_bias()

  def _qkv_kernel(self):
    return ops.concatenate([p.kernel for p in (self.query, self.key, self.value)], axis=1)

  def _qkv_bias(self):
    return ops.concatenate(
      [layer_utils.float32_value(p.bias) for p in (self.query, self.key, self.value)], axis=0
    )

  def _split_heads(self, qkv, batch, seq):
    """`[B·S, 3H]` → query, key and value, each `[B, A, S, d]`."""
    x = ops.reshape(qkv, (batch, seq, 3, self.num_attention_heads, self.head_size))
    return tf.unstack(ops.transpose(x, (2, 0, 3, 1, 4)))  # [3, B, A, S, d]

  def _projected_heads(self, x, dense, batch, seq):
    """One projection of `[B·S, H]` `x` by its own `dense` kernel, as
    `[B, A, S, d]` (`layer_utils.separate_qkv_projections`)."""
    y = tf.nn.bias_add(
      self._matmul(x, dense.kernel),
      ops.cast(layer_utils.float32_value(dense.bias), self.compute_dtype),
    )
    y = ops.reshape(y, (batch, seq, self.num_attention_heads, self.head_size))
    return ops.transpose(y, (0, 2, 1, 3))

  def _fused_call(self, x, attention_mask_adder, batch, seq):
    """The training path on `[B·S, H]` `x`, each elementwise chain one fused kernel."""
    first_example = replicas.replica_first_example(batch)
    first_token = _first_token(first_example, seq)
    q, k, v = fused_ops.bias_split_heads(
      ops.reshape(self._matmul(x, self._qkv_kernel()), (batch, seq, 3 * self.hidden_size)),
      self._qkv_bias(),
      self.num_attention_heads,
    )
    scores = tf.matmul(q, k, transpose_b=True)
    probs = fused_ops.attention_softmax_dropout(
      scores,
      0.0 if attention_mask_adder is None else attention_mask_adder,
      scale=1.0 / math.sqrt(float(self.head_size)),
      seed=layer_utils.dropout_seed(self.attention_probs_dropout),
      rate=self.attention_probs_dropout_prob,
      dtype=v.dtype,
      first_example=first_example,
    )
    context = self._merge_heads(ops.matmul(probs, v))

    attention_output = self._dense_dropout_residual_layer_norm(
      self.attention_output_dense,
      context,
      self.attention_output_dropout,
      x,
      self.attention_layer_norm,
      first_token,
    )
    attention_output = ops.cast(attention_output, self.compute_dtype)

    intermediate = self._matmul(attention_output, self.intermediate_dense.kernel)
    if self.intermediate_activation is keras.activations.gelu:
      intermediate = fused_ops.bias_gelu(
        intermediate, layer_utils.float32_value(self.intermediate_dense.bias)
      )
    else:
      intermediate = intermediate + ops.cast(self.intermediate_dense.bias, intermediate.dtype)
      if self.intermediate_activation is not None:
        intermediate = self.intermediate_activation(intermediate)
    layer_output = self._dense_dropout_residual_layer_norm(
      self.output_dense,
      intermediate,
      self.output_dropout,
      attention_output,
      self.output_layer_norm,
      first_token,
    )
    return ops.cast(layer_output, self.compute_dtype)

  def _merge_heads(self, context):
    """`[B, A, S, d]` → `[B·S, H]`."""
    return ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (-1, self.hidden_size))

  def _matmul(self, x, kernel):
    """A dense layer's matmul without its bias (the fused kernels add it)."""
    return ops.matmul(x, ops.cast(kernel, self.compute_dtype))

  def _dense_dropout_residual_layer_norm(
    self, dense, x, dropout, residual, layer_norm, first_token
  ):
    return fused_ops.bias_dropout_residual_layer_norm(
      self._matmul(x, dense.kernel),
      layer_utils.float32_value(dense.bias),
      residual,
      layer_utils.float32_value(layer_norm.gamma),
      layer_utils.float32_value(layer_norm.beta),
      seed=layer_utils.dropout_seed(dropout),
      rate=dropout.rate,
      epsilon=layer_norm.epsilon,
      first_example=first_token,
    )

  def compute_output_shape(self, hidden_states_shape, attention_mask_adder_shape=None):
    return tuple(hidden_states_shape)

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "hidden_size": self.hidden_size,
        "num_attention_heads": self.num_attention_heads,
        "intermediate_size": self.intermediate_size,
        "hidden_act": self.hidden_act,
        "hidden_dropout_prob": self.hidden_dropout_prob,
        "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
        "initializer_range": self.initializer_range,
        "fused_training_kernels": self.fused_training_kernels,
      }
    )
    return config
