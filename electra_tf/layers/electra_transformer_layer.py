"""One post-LayerNorm BERT transformer block (spec §5.3)."""

import math

import keras
from keras import ops
import tensorflow as tf

from electra_tf.layers import layer_utils


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTransformerLayer(keras.layers.Layer):
  """The original's `layer_<i>`: self-attention and FFN, each followed by
  dropout, a residual connection and LayerNorm (post-LN).

  Sublayers carry the original's variable roles: `query`, `key`, `value`,
  `attention_output_dense` (`attention/output/dense`),
  `attention_layer_norm` (`attention/output/LayerNorm`),
  `intermediate_dense` (`intermediate/dense`), `output_dense`
  (`output/dense`) and `output_layer_norm` (`output/LayerNorm`). All kernels
  are `[in, out]` with truncated-normal init. Scores, the −10000 mask adder
  and the softmax are float32 under mixed precision.

  Args:
    hidden_size: width H; must be divisible by `num_attention_heads`.
    num_attention_heads: heads A.
    intermediate_size: FFN width I.
    hidden_act: FFN activation name ("gelu" = exact erf GELU).
    hidden_dropout_prob: dropout after the attention-output and FFN-output
      projections.
    attention_probs_dropout_prob: dropout on the attention probabilities.
    initializer_range: stddev of the truncated-normal kernel initializer.
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    hidden_states: `[B, S, H]`.
    attention_mask_adder: float32 `[B, 1, S, S]` from
      `layer_utils.attention_mask_adder` (0 = attend, −10000 = masked), or
      None for no masking.
    training: enables dropout.

  Example:
  >>> layer = ElectraTransformerLayer(16, 2, 64)
  >>> layer(np.ones((2, 5, 16), "float32")).shape
  TensorShape([2, 5, 16])
  """

  def __init__(self, hidden_size, num_attention_heads, intermediate_size,
               hidden_act="gelu", hidden_dropout_prob=0.1,
               attention_probs_dropout_prob=0.1, initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    if hidden_size % num_attention_heads != 0:
      raise ValueError(
          f"hidden_size={hidden_size} is not a multiple of num_attention_heads="
          f"{num_attention_heads}")
    self.hidden_size = int(hidden_size)
    self.num_attention_heads = int(num_attention_heads)
    self.intermediate_size = int(intermediate_size)
    self.hidden_act = hidden_act
    self.hidden_dropout_prob = float(hidden_dropout_prob)
    self.attention_probs_dropout_prob = float(attention_probs_dropout_prob)
    self.initializer_range = float(initializer_range)
    self.head_size = self.hidden_size // self.num_attention_heads

    def dense(units, name, activation=None):
      return keras.layers.Dense(
          units, activation=activation,
          kernel_initializer=layer_utils.truncated_normal(self.initializer_range),
          bias_initializer="zeros", dtype=self.dtype_policy, name=name)

    self.query = dense(self.hidden_size, "query")
    self.key = dense(self.hidden_size, "key")
    self.value = dense(self.hidden_size, "value")
    self.attention_probs_dropout = keras.layers.Dropout(
        self.attention_probs_dropout_prob, name="attention_probs_dropout")
    self.attention_output_dense = dense(self.hidden_size, "attention_output_dense")
    self.attention_output_dropout = keras.layers.Dropout(
        self.hidden_dropout_prob, name="attention_output_dropout")
    self.attention_layer_norm = layer_utils.make_layer_norm("attention_layer_norm")
    self.intermediate_dense = dense(
        self.intermediate_size, "intermediate_dense",
        activation=layer_utils.get_activation(self.hidden_act))
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

  def _split_heads(self, x, batch, seq):
    x = ops.reshape(x, (batch, seq, self.num_attention_heads, self.head_size))
    return ops.transpose(x, (0, 2, 1, 3))  # [B, A, S, d]

  def call(self, hidden_states, attention_mask_adder=None, training=None):
    shape = ops.shape(hidden_states)
    batch, seq = shape[0], shape[1]
    x = hidden_states
    q = self._split_heads(self.query(x), batch, seq)
    k = self._split_heads(self.key(x), batch, seq)
    v = self._split_heads(self.value(x), batch, seq)
    scores = tf.matmul(q, k, transpose_b=True)  # no explicit transpose of K
    scores = ops.cast(scores, "float32") * (1.0 / math.sqrt(float(self.head_size)))
    if attention_mask_adder is not None:
      scores = scores + ops.cast(attention_mask_adder, "float32")
    probs = ops.softmax(scores, axis=-1)
    probs = self.attention_probs_dropout(probs, training=training)
    context = ops.matmul(ops.cast(probs, v.dtype), v)  # [B, A, S, d]
    context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (batch, seq, self.hidden_size))

    attention_output = self.attention_output_dense(context)
    attention_output = self.attention_output_dropout(attention_output, training=training)
    # Residual sums and LayerNorm in float32 (matters under mixed precision).
    attention_output = self.attention_layer_norm(
        ops.cast(attention_output, "float32") + ops.cast(x, "float32"))
    attention_output = ops.cast(attention_output, self.compute_dtype)

    intermediate = self.intermediate_dense(attention_output)
    layer_output = self.output_dense(intermediate)
    layer_output = self.output_dropout(layer_output, training=training)
    layer_output = self.output_layer_norm(
        ops.cast(layer_output, "float32") + ops.cast(attention_output, "float32"))
    return ops.cast(layer_output, self.compute_dtype)

  def compute_output_shape(self, hidden_states_shape, attention_mask_adder_shape=None):
    return tuple(hidden_states_shape)

  def get_config(self):
    config = super().get_config()
    config.update({
        "hidden_size": self.hidden_size,
        "num_attention_heads": self.num_attention_heads,
        "intermediate_size": self.intermediate_size,
        "hidden_act": self.hidden_act,
        "hidden_dropout_prob": self.hidden_dropout_prob,
        "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
        "initializer_range": self.initializer_range,
    })
    return config
