"""The transformer stack of one tower: optional `embeddings_project` and L
post-LN blocks (`model/modeling.py:BertModel`)."""

import keras
from keras import ops
import tensorflow as tf

from electra_tf.layers import layer_utils
from electra_tf.layers.electra_transformer_layer import ElectraTransformerLayer


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraEncoder(keras.layers.Layer):
  """`<scope>/embeddings_project` (only when `embedding_size != hidden_size`)
  followed by `<scope>/encoder/layer_<i>`.

  The projection is linear with a Glorot-uniform kernel, as in the original;
  the embedding lookup is a separate `ElectraEmbeddings` layer (shared).

  Args:
    hidden_size: width H.
    num_hidden_layers: number of blocks L.
    num_attention_heads: heads A per block.
    intermediate_size: FFN width I.
    embedding_size: width of the incoming embeddings; None means H.
    hidden_act: FFN activation name.
    hidden_dropout_prob: hidden dropout rate.
    attention_probs_dropout_prob: attention-probability dropout rate.
    initializer_range: stddev of the truncated-normal initializers.
    attention_direction: "bidirectional", "ltr" (position i sees keys j ≤ i)
      or "rtl" (j ≥ i); the last two are Electric's towers.
    fused_training_kernels: the blocks' training path runs XLA-fused
      elementwise kernels (see `ElectraTransformerLayer`); False = plain ops.
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    embeddings: `[B, S, E]` output of `ElectraEmbeddings`.
    input_mask: int `[B, S]`, 1 for real tokens (only keys are masked).
    training: enables dropout.

  Returns:
    dict with `"embedding_output"` `[B, S, H]` (after the projection),
    `"hidden_states"` (list of each block's `[B, S, H]` output) and
    `"sequence_output"` (the last one).

  Example:
  >>> import numpy as np
  >>> encoder = ElectraEncoder(16, 2, 2, 64, embedding_size=8)
  >>> out = encoder(np.ones((2, 5, 8), "float32"), np.ones((2, 5), "int32"))
  >>> out["sequence_output"].shape
  TensorShape([2, 5, 16])
  """

  def __init__(
    self,
    hidden_size,
    num_hidden_layers,
    num_attention_heads,
    intermediate_size,
    embedding_size=None,
    hidden_act="gelu",
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
    initializer_range=0.02,
    attention_direction="bidirectional",
    fused_training_kernels=True,
    **kwargs,
  ):
    super().__init__(**kwargs)
    if attention_direction not in layer_utils.ATTENTION_DIRECTIONS:
      raise ValueError(
        f"attention_direction={attention_direction!r}; expected one of "
        f"{layer_utils.ATTENTION_DIRECTIONS}"
      )
    self.hidden_size = int(hidden_size)
    self.num_hidden_layers = int(num_hidden_layers)
    self.num_attention_heads = int(num_attention_heads)
    self.intermediate_size = int(intermediate_size)
    self.embedding_size = int(embedding_size) if embedding_size is not None else None
    self.hidden_act = hidden_act
    self.hidden_dropout_prob = float(hidden_dropout_prob)
    self.attention_probs_dropout_prob = float(attention_probs_dropout_prob)
    self.initializer_range = float(initializer_range)
    self.attention_direction = attention_direction
    self.fused_training_kernels = bool(fused_training_kernels)

    self.input_width = self.hidden_size if self.embedding_size is None else self.embedding_size
    if self.input_width != self.hidden_size:
      # tf.layers default initializers: Glorot-uniform kernel, zero bias.
      self.embeddings_project = keras.layers.Dense(
        self.hidden_size,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        dtype=self.dtype_policy,
        name="embeddings_project",
      )
    else:
      self.embeddings_project = None
    self.transformer_layers = [
      ElectraTransformerLayer(
        hidden_size=self.hidden_size,
        num_attention_heads=self.num_attention_heads,
        intermediate_size=self.intermediate_size,
        hidden_act=self.hidden_act,
        hidden_dropout_prob=self.hidden_dropout_prob,
        attention_probs_dropout_prob=self.attention_probs_dropout_prob,
        initializer_range=self.initializer_range,
        fused_training_kernels=self.fused_training_kernels,
        dtype=self.dtype_policy,
        name=f"layer_{i}",
      )
      for i in range(self.num_hidden_layers)
    ]

  def _trackable_children(self, save_type="checkpoint", **kwargs):
    children = super()._trackable_children(save_type, **kwargs)
    return layer_utils.add_list_children(
      children, save_type, transformer_layers=self.transformer_layers
    )

  def build(self, embeddings_shape=None, input_mask_shape=None):
    if self.embeddings_project is not None:
      self.embeddings_project.build((None, self.input_width))
    for layer in self.transformer_layers:
      layer.build((None, None, self.hidden_size))
    self.built = True

  def call(self, embeddings, input_mask, training=None):
    # Activations stay 2-D, `[B·S, width]` (the original's `reshape_to_matrix`).
    shape = tf.shape(embeddings)  # tensors even where static: Keras refuses a mixed tuple argument
    batch, seq = shape[0], shape[1]
    x = ops.reshape(embeddings, (-1, self.input_width))
    if self.embeddings_project is not None:
      x = self.embeddings_project(x)
    projected = x
    adder = layer_utils.attention_mask_adder(input_mask, self.attention_direction)
    hidden_states = []
    for layer in self.transformer_layers:
      x = layer(x, adder, training=training, sequence_shape=(batch, seq))
      hidden_states.append(x)

    def unflatten(matrix):  # unused outputs (and their reshapes) are pruned from graphs
      return ops.reshape(matrix, (batch, seq, self.hidden_size))

    hidden_states = [unflatten(h) for h in hidden_states]
    return {
      "embedding_output": unflatten(projected),
      "hidden_states": hidden_states,
      "sequence_output": hidden_states[-1] if hidden_states else unflatten(x),
    }

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "hidden_size": self.hidden_size,
        "num_hidden_layers": self.num_hidden_layers,
        "num_attention_heads": self.num_attention_heads,
        "intermediate_size": self.intermediate_size,
        "embedding_size": self.embedding_size,
        "hidden_act": self.hidden_act,
        "hidden_dropout_prob": self.hidden_dropout_prob,
        "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
        "initializer_range": self.initializer_range,
        "attention_direction": self.attention_direction,
        "fused_training_kernels": self.fused_training_kernels,
      }
    )
    return config
