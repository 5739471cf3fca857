"""The ELECTRA discriminator: embeddings, encoder (scope `electra`) and the
replaced-token-detection head."""

import keras

from electra_tf.layers.electra_discriminator_head import ElectraDiscriminatorHead
from electra_tf.models import model_utils


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraDiscriminator(keras.layers.Layer):
  """`BertModel(scope="electra")` plus `discriminator_predictions` (`model/modeling.py:BertModel`, `run_pretraining.py:PretrainingModel._get_discriminator_output`).

  Args:
    bert_config: dict (or `BertConfig`) of the discriminator's transformer.
    embedding_size: width E of the embedding tables; None means H. When
      E ≠ H the encoder owns `embeddings_project`.
    embeddings: an `ElectraEmbeddings` layer to use (e.g. the one shared with
      the generator); None creates one.
    include_head: False builds the encoder only (no
      `discriminator_predictions`), as for fine-tuning.
    fused_training_kernels: the encoder's training path runs XLA-fused
      elementwise kernels; False = plain TF ops (same math).
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    inputs: dict of int `[B, S]` tensors `input_ids`, `input_mask`,
      `segment_ids`.
    training: enables dropout.

  Returns:
    dict with `"embedding_output"` `[B, S, H]` (after any projection),
    `"hidden_states"` (each block's output), `"sequence_output"` `[B, S, H]`,
    `"pooled_output"` `[B, H]` (the raw [CLS] row; there is no pooler) and,
    with the head, float32 `"logits"` `[B, S]` (RTD logits).

  Example:
  >>> import numpy as np
  >>> disc = ElectraDiscriminator({"vocab_size": 100, "hidden_size": 16,
  ...     "num_hidden_layers": 2, "num_attention_heads": 2,
  ...     "intermediate_size": 64}, embedding_size=8)
  >>> ids = np.ones((2, 5), "int32")
  >>> disc({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids})["logits"].shape
  TensorShape([2, 5])
  """

  def __init__(
    self,
    bert_config,
    embedding_size=None,
    embeddings=None,
    include_head=True,
    fused_training_kernels=True,
    **kwargs,
  ):
    super().__init__(**kwargs)
    self.bert_config = model_utils.bert_config_dict(bert_config)
    self.embedding_size = int(embedding_size) if embedding_size is not None else None
    self.include_head = bool(include_head)
    self.fused_training_kernels = bool(fused_training_kernels)
    c = self.bert_config
    width = self.embedding_size if self.embedding_size is not None else c["hidden_size"]
    embeddings = model_utils.deserialize_layer(embeddings)
    self._embeddings_given = embeddings is not None
    if embeddings is None:
      embeddings = model_utils.make_embeddings(c, width, self.dtype_policy, "embeddings")
    elif embeddings.embedding_size != width:
      raise ValueError(
        f"the given embeddings have width {embeddings.embedding_size} but "
        f"embedding_size={embedding_size} (hidden_size={c['hidden_size']}) needs {width}"
      )
    self.embeddings = embeddings
    self.encoder = model_utils.make_encoder(
      c, width, self.fused_training_kernels, self.dtype_policy, "encoder"
    )
    if self.include_head:
      self.head = ElectraDiscriminatorHead(
        hidden_size=c["hidden_size"],
        hidden_act=c["hidden_act"],
        initializer_range=c["initializer_range"],
        dtype=self.dtype_policy,
        name="discriminator_predictions",
      )
    else:
      self.head = None

  def build(self, inputs_shape=None):
    model_utils.build_once(self.embeddings)
    model_utils.build_once(self.encoder)
    if self.head is not None:
      model_utils.build_once(self.head, (None, None, self.bert_config["hidden_size"]))
    self.built = True

  def call(self, inputs, training=None):
    model_utils.check_inputs(inputs, "ElectraDiscriminator")
    embedded = self.embeddings(inputs["input_ids"], inputs["segment_ids"], training=training)
    outputs = dict(self.encoder(embedded, inputs["input_mask"], training=training))
    outputs["pooled_output"] = outputs["sequence_output"][:, 0]
    if self.head is not None:
      outputs["logits"] = self.head(outputs["sequence_output"])
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
        "include_head": self.include_head,
        "fused_training_kernels": self.fused_training_kernels,
      }
    )
    return config
