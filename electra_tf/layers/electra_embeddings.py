"""Word + position + token-type embeddings with LayerNorm (`model/modeling.py:BertModel`)."""

import keras
from keras import ops
import tensorflow as tf

from electra_tf.layers import layer_utils


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraEmbeddings(keras.layers.Layer):
  """The original's embedding block (`<scope>/embeddings`).

  `word_embeddings[input_ids] + token_type_embeddings[segment_ids] +
  position_embeddings[0:S]`, then LayerNorm (ε=1e-12, float32) and dropout.
  The generator and the discriminator share one by default. The position
  table is keras-hub's `PositionEmbedding` (`position_embeddings`).

  Args:
    vocab_size: rows V of the word table.
    embedding_size: width E of all three tables.
    max_position_embeddings: rows P of the position table.
    type_vocab_size: rows T of the token-type table.
    initializer_range: stddev of the truncated-normal table initializer.
    dropout_rate: dropout after the LayerNorm (the original's
      `hidden_dropout_prob`).
    **kwargs: standard `keras.layers.Layer` arguments.

  Example:
  >>> import numpy as np
  >>> layer = ElectraEmbeddings(vocab_size=100, embedding_size=8)
  >>> out = layer(np.zeros((2, 5), "int32"), np.zeros((2, 5), "int32"))
  >>> out.shape
  TensorShape([2, 5, 8])
  """

  def __init__(
    self,
    vocab_size,
    embedding_size,
    max_position_embeddings=512,
    type_vocab_size=2,
    initializer_range=0.02,
    dropout_rate=0.1,
    **kwargs,
  ):
    super().__init__(**kwargs)
    self.vocab_size = int(vocab_size)
    self.embedding_size = int(embedding_size)
    self.max_position_embeddings = int(max_position_embeddings)
    self.type_vocab_size = int(type_vocab_size)
    self.initializer_range = float(initializer_range)
    self.dropout_rate = float(dropout_rate)
    import keras_hub  # deferred: `import electra_tf` (builders, Beam workers) loads no keras_hub

    self.position_embedding = keras_hub.layers.PositionEmbedding(
      sequence_length=self.max_position_embeddings,
      initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
      dtype=self.dtype_policy,
      name="position_embedding",
    )
    self.layer_norm = layer_utils.make_layer_norm(name="LayerNorm")
    self.dropout = keras.layers.Dropout(self.dropout_rate, name="dropout")

  def build(self, input_ids_shape=None, segment_ids_shape=None):
    init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
    self.word_embeddings = self.add_weight(
      name="word_embeddings", shape=(self.vocab_size, self.embedding_size), initializer=init
    )
    self.token_type_embeddings = self.add_weight(
      name="token_type_embeddings",
      shape=(self.type_vocab_size, self.embedding_size),
      initializer=init,
    )
    self.position_embedding.build((None, None, self.embedding_size))
    self.layer_norm.build((None, None, self.embedding_size))
    self.built = True

  def call(self, input_ids, segment_ids, training=None):
    seq_length = ops.shape(input_ids)[1]
    if isinstance(seq_length, int) and seq_length > self.max_position_embeddings:
      raise ValueError(
        f"sequence length {seq_length} exceeds max_position_embeddings="
        f"{self.max_position_embeddings}"
      )
    dtype = self.compute_dtype
    # tf.gather, not ops.take: take spends three ops per lookup wrapping negative ids.
    x = tf.gather(ops.cast(self.word_embeddings, dtype), input_ids)
    x = x + tf.gather(ops.cast(self.token_type_embeddings, dtype), segment_ids)
    x = x + ops.cast(self.position_embedding(x), dtype)
    x = layer_utils.layer_norm(self.layer_norm, x)
    return layer_utils.dropout(self.dropout, x, training)

  @property
  def position_embeddings(self):
    """The `[P, E]` position table (`<scope>/embeddings/position_embeddings`)."""
    return self.position_embedding.position_embeddings

  def compute_output_shape(self, input_ids_shape, segment_ids_shape=None):
    return tuple(input_ids_shape) + (self.embedding_size,)

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "vocab_size": self.vocab_size,
        "embedding_size": self.embedding_size,
        "max_position_embeddings": self.max_position_embeddings,
        "type_vocab_size": self.type_vocab_size,
        "initializer_range": self.initializer_range,
        "dropout_rate": self.dropout_rate,
      }
    )
    return config
