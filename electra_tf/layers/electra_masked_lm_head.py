"""The generator's MLM head (`generator_predictions`, `run_pretraining.py:PretrainingModel._get_masked_lm_output`)."""

import keras
from keras import ops
import tensorflow as tf

from electra_tf.layers import layer_utils


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraMaskedLMHead(keras.layers.Layer):
  """`get_token_logits`: dense → activation → LayerNorm → `h · Wᵀ + output_bias`.

  `W` is the word-embedding table passed at call time (tied output); the
  head owns only `dense` (`[in, E]`, truncated normal), `LayerNorm` and
  `output_bias` (`[V]`, zeros). Logits are float32 under mixed precision.

  Args:
    vocab_size: V, length of `output_bias`.
    embedding_size: E, the width of the tied word table (Hg when the
      generator's embeddings are untied).
    hidden_act: activation after the dense layer.
    initializer_range: stddev of the dense kernel's truncated-normal init.
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    hidden_states: `[..., in]` (e.g. the generator outputs gathered at the
      masked positions, `[B, N, Hg]`).
    embedding_table: `[V, E]` word-embedding table (variable or tensor).

  Example:
  >>> import numpy as np
  >>> head = ElectraMaskedLMHead(vocab_size=100, embedding_size=8)
  >>> table = np.random.normal(size=(100, 8)).astype("float32")
  >>> head(np.ones((2, 3, 16), "float32"), table).shape
  TensorShape([2, 3, 100])
  """

  def __init__(
    self, vocab_size, embedding_size, hidden_act="gelu", initializer_range=0.02, **kwargs
  ):
    # The tied table must reach `call` in float32, so inputs are not
    # autocast; `transform` casts the hidden states to the compute dtype.
    kwargs.pop("autocast", None)
    super().__init__(autocast=False, **kwargs)
    self.vocab_size = int(vocab_size)
    self.embedding_size = int(embedding_size)
    self.hidden_act = hidden_act
    self.initializer_range = float(initializer_range)
    self.dense = layer_utils.make_dense(
      self.embedding_size, self.initializer_range, self.dtype_policy, "dense", activation=hidden_act
    )
    self.layer_norm = layer_utils.make_layer_norm("LayerNorm")

  def build(self, hidden_states_shape, embedding_table_shape=None):
    self.dense.build((None, hidden_states_shape[-1]))
    self.layer_norm.build((None, self.embedding_size))
    self.output_bias = self.add_weight(
      name="output_bias", shape=(self.vocab_size,), initializer="zeros"
    )
    self.built = True

  def transform(self, hidden_states):
    """dense + activation + LayerNorm; float32 `[..., E]`."""
    x = self.dense(ops.cast(hidden_states, self.compute_dtype))
    return layer_utils.layer_norm(self.layer_norm, x)

  def call(self, hidden_states, embedding_table):
    # On a 2-D view: a 3-D input costs each matmul a tensordot's shape arithmetic.
    rank = len(hidden_states.shape)
    flat = hidden_states
    if rank != 2:
      flat = ops.reshape(hidden_states, (-1, self.dense.kernel.shape[0]))
    table = ops.cast(embedding_table, "float32")
    logits = tf.matmul(self.transform(flat), table, transpose_b=True)
    logits = tf.nn.bias_add(logits, ops.cast(self.output_bias, "float32"))
    if rank == 2:
      return logits
    leading = tf.shape(hidden_states)[:-1]
    return tf.reshape(logits, tf.concat([leading, [self.vocab_size]], axis=0))

  def compute_output_shape(self, hidden_states_shape, embedding_table_shape=None):
    return tuple(hidden_states_shape[:-1]) + (self.vocab_size,)

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "vocab_size": self.vocab_size,
        "embedding_size": self.embedding_size,
        "hidden_act": self.hidden_act,
        "initializer_range": self.initializer_range,
      }
    )
    return config
