"""ELECTRA models: the backbone (the encoder every task builds on), generator,
discriminator, the pre-training container (`ElectraPretrainer`) and the
official variable names of every model (`official_names`)."""

from electra_tf.models.electra_backbone import ElectraBackbone
from electra_tf.models.electra_discriminator import ElectraDiscriminator
from electra_tf.models.electra_generator import ElectraGenerator
from electra_tf.models.electra_pretrainer import ElectraPretrainer

__all__ = [
  "ElectraBackbone",
  "ElectraDiscriminator",
  "ElectraGenerator",
  "ElectraPretrainer",
]
