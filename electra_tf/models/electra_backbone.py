"""The ELECTRA backbone: embeddings and transformer, no head; the encoder the
discriminator and every fine-tuning model build on."""

import keras

from electra_tf.models import model_utils


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraBackbone(keras.layers.Layer):
  """`BertModel` (`model/modeling.py`): word, position and segment embeddings
  (projected when E ≠ H) and the transformer stack, with no output head.

  Args:
    bert_config: dict (or `BertConfig`) of the transformer.
    embedding_size: width E of the embedding tables; None means H. When
      E ≠ H the encoder owns `embeddings_project`.
    embeddings: an `ElectraEmbeddings` layer to use (e.g. the one shared with
      the generator); None creates one.
    fused_training_kernels: the encoder's training path runs XLA-fused
      elementwise kernels; False = plain TF ops (same math).
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    inputs: dict of int `[B, S]` tensors `input_ids`, `input_mask`,
      `segment_ids`.
    training: enables dropout.

  Returns:
    dict with `"embedding_output"` `[B, S, H]` (after any projection),
    `"hidden_states"` (each block's output), `"sequence_output"` `[B, S, H]`
    and `"pooled_output"` `[B, H]` (the raw [CLS] row; there is no pooler).

  Example:
  >>> import numpy as np
  >>> backbone = ElectraBackbone({"vocab_size": 100, "hidden_size": 16,
  ...     "num_hidden_layers": 2, "num_attention_heads": 2,
  ...     "intermediate_size": 64}, embedding_size=8)
  >>> ids = np.ones((2, 5), "int32")
  >>> backbone({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids})["pooled_output"].shape
  TensorShape([2, 16])
  """

  def __init__(
    self,
    bert_config,
    embedding_size=None,
    embeddings=None,
    fused_training_kernels=True,
    **kwargs,
  ):
    super().__init__(**kwargs)
    self.bert_config = model_utils.bert_config_dict(bert_config)
    self.embedding_size = int(embedding_size) if embedding_size is not None else None
    self.fused_training_kernels = bool(fused_training_kernels)
    embeddings = model_utils.deserialize_layer(embeddings)
    self._embeddings_given = embeddings is not None
    self.embeddings = model_utils.embeddings_of_width(
      self.bert_config, self.embedding_size, embeddings, self.dtype_policy
    )
    self.encoder = model_utils.make_encoder(
      self.bert_config,
      self.embeddings.embedding_size,
      self.fused_training_kernels,
      self.dtype_policy,
      "encoder",
    )

  def build(self, inputs_shape=None):
    model_utils.build_once(self.embeddings)
    model_utils.build_once(self.encoder)
    self.built = True

  def call(self, inputs, training=None):
    model_utils.check_inputs(inputs, type(self).__name__)
    embedded = self.embeddings(inputs["input_ids"], inputs["segment_ids"], training=training)
    outputs = dict(self.encoder(embedded, inputs["input_mask"], training=training))
    outputs["pooled_output"] = outputs["sequence_output"][:, 0]
    return outputs

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "bert_config": dict(self.bert_config),
        "embedding_size": self.embedding_size,
        "embeddings": (
          model_utils.serialize_layer(self.embeddings) if self._embeddings_given else None
        ),
        "fused_training_kernels": self.fused_training_kernels,
      }
    )
    return config
