"""ELECTRA models: the backbone (the encoder every task builds on), generator,
discriminator and the pre-training container
(`ElectraPretrainer`, whose `train_step` runs `pretraining.step`), and the
official variable names of every model (`official_names`), which the
checkpoint formats and the optimizers' exclusions are decided on."""

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
