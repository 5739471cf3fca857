"""The ELECTRA discriminator: the backbone (scope `electra`) and the
replaced-token-detection head."""

import keras

from electra_tf.layers.electra_discriminator_head import ElectraDiscriminatorHead
from electra_tf.models import model_utils
from electra_tf.models.electra_backbone import ElectraBackbone


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraDiscriminator(ElectraBackbone):
  """`BertModel(scope="electra")` plus `discriminator_predictions`
  (`run_pretraining.py:PretrainingModel._get_discriminator_output`): an
  `ElectraBackbone` with the replaced-token-detection head.

  Args:
    bert_config, embedding_size, embeddings, fused_training_kernels: as
      for `ElectraBackbone`.
    include_head: False builds no `discriminator_predictions` (what `.keras`
      files saved before `ElectraBackbone` existed hold).
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args: as for `ElectraBackbone`.

  Returns:
    `ElectraBackbone`'s outputs and, with the head, float32 `"logits"`
    `[B, S]` (RTD logits).

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
    super().__init__(
      bert_config,
      embedding_size=embedding_size,
      embeddings=embeddings,
      fused_training_kernels=fused_training_kernels,
      **kwargs,
    )
    self.include_head = bool(include_head)
    self.head = None
    if self.include_head:
      c = self.bert_config
      self.head = ElectraDiscriminatorHead(
        hidden_size=c["hidden_size"],
        hidden_act=c["hidden_act"],
        initializer_range=c["initializer_range"],
        dtype=self.dtype_policy,
        name="discriminator_predictions",
      )

  def build(self, inputs_shape=None):
    super().build(inputs_shape)
    if self.head is not None:
      model_utils.build_once(self.head, (None, None, self.bert_config["hidden_size"]))

  def call(self, inputs, training=None):
    outputs = super().call(inputs, training=training)
    if self.head is not None:
      outputs["logits"] = self.head(outputs["sequence_output"])
    return outputs

  def get_config(self):
    config = super().get_config()
    config["include_head"] = self.include_head
    return config
