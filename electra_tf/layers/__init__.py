"""Keras layers of the ELECTRA model (`model/modeling.py`,
`run_pretraining.py:PretrainingModel`): embeddings, transformer layers, the
encoder and the generator/discriminator heads, with the fused kernels they
run on. One public class per file; layers import `utils` and `runtime` only."""

from electra_tf.layers.electra_cloze_head import ElectraClozeHead
from electra_tf.layers.electra_discriminator_head import ElectraDiscriminatorHead
from electra_tf.layers.electra_embeddings import ElectraEmbeddings
from electra_tf.layers.electra_encoder import ElectraEncoder
from electra_tf.layers.electra_masked_lm_head import ElectraMaskedLMHead
from electra_tf.layers.electra_transformer_layer import ElectraTransformerLayer

__all__ = [
  "ElectraClozeHead",
  "ElectraDiscriminatorHead",
  "ElectraEmbeddings",
  "ElectraEncoder",
  "ElectraMaskedLMHead",
  "ElectraTransformerLayer",
]
