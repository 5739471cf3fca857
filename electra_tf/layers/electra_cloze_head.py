"""Electric's cloze head over the two generator towers (`cloze_predictions`)."""

import keras
from keras import ops

from electra_tf.layers.electra_masked_lm_head import ElectraMaskedLMHead


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraClozeHead(ElectraMaskedLMHead):
  """Joins the left-to-right and right-to-left towers and predicts every
  position: the representation at t is `concat(ltr[t-1], rtl[t+1])` (width
  2·Hg, wrapping around at the ends as the original's roll does), followed by
  the same dense → activation → LayerNorm → tied-output math as the MLM head.

  Args:
    vocab_size: V.
    embedding_size: E, width of the tied (LTR tower's) word table.
    hidden_act: activation after the dense layer.
    initializer_range: stddev of the dense kernel's truncated-normal init.
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    ltr_output: `[B, S, Hg]` left-to-right tower output.
    rtl_output: `[B, S, Hg]` right-to-left tower output.
    embedding_table: `[V, E]`.

  Returns:
    dict with `"sequence_output"` `[B, S, 2·Hg]` and float32 `"logits"`
    `[B, S, V]`.

  Example:
  >>> import numpy as np
  >>> head = ElectraClozeHead(vocab_size=100, embedding_size=8)
  >>> table = np.random.normal(size=(100, 8)).astype("float32")
  >>> x = np.ones((2, 5, 4), "float32")
  >>> head(x, x, table)["logits"].shape
  TensorShape([2, 5, 100])
  """

  def build(self, ltr_output_shape, rtl_output_shape=None, embedding_table_shape=None):
    super().build(tuple(ltr_output_shape[:-1]) + (2 * ltr_output_shape[-1],))

  @staticmethod
  def join_towers(ltr_output, rtl_output):
    """`new[t] = concat(ltr[t-1], rtl[t+1])`, wrapping around."""
    return ops.concatenate(
      [ops.roll(ltr_output, shift=1, axis=1), ops.roll(rtl_output, shift=-1, axis=1)], axis=-1
    )

  def call(self, ltr_output, rtl_output, embedding_table):
    joined = self.join_towers(ltr_output, rtl_output)
    logits = super().call(joined, embedding_table)
    return {"sequence_output": joined, "logits": logits}

  def compute_output_shape(
    self, ltr_output_shape, rtl_output_shape=None, embedding_table_shape=None
  ):
    shape = tuple(ltr_output_shape)
    return {
      "sequence_output": shape[:-1] + (2 * shape[-1],),
      "logits": shape[:-1] + (self.vocab_size,),
    }
