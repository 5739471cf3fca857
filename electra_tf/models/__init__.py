"""ELECTRA models: generator, discriminator and the pre-training container."""

from electra_tf.models.electra_discriminator import ElectraDiscriminator
from electra_tf.models.electra_generator import ElectraGenerator
from electra_tf.models.electra_pretrainer import ElectraPretrainer
