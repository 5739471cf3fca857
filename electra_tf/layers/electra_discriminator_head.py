"""The replaced-token-detection head (`discriminator_predictions`, `run_pretraining.py:PretrainingModel._get_discriminator_output`)."""

import keras
from keras import ops

from electra_tf.layers import layer_utils


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraDiscriminatorHead(keras.layers.Layer):
  """`dense` (H → H, activation, truncated normal) then `dense_1` (H → 1,
  Glorot-uniform as in the original) squeezed to one float32 logit per token.

  Args:
    hidden_size: H.
    hidden_act: activation of the first dense layer.
    initializer_range: stddev of the first kernel's truncated-normal init.
    **kwargs: standard `keras.layers.Layer` arguments.

  Example:
  >>> import numpy as np
  >>> head = ElectraDiscriminatorHead(hidden_size=16)
  >>> head(np.ones((2, 5, 16), "float32")).shape
  TensorShape([2, 5])
  """

  def __init__(self, hidden_size, hidden_act="gelu", initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = int(hidden_size)
    self.hidden_act = hidden_act
    self.initializer_range = float(initializer_range)
    self.dense = layer_utils.make_dense(
      self.hidden_size, self.initializer_range, self.dtype_policy, "dense", activation=hidden_act
    )
    self.dense_1 = keras.layers.Dense(
      1,
      kernel_initializer="glorot_uniform",
      bias_initializer="zeros",
      dtype="float32",
      name="dense_1",
    )

  def build(self, hidden_states_shape=None):
    self.dense.build((None, self.hidden_size))
    self.dense_1.build((None, self.hidden_size))
    self.built = True

  def call(self, hidden_states):
    # Dense layers on a 2-D view: a 3-D input costs each a tensordot's shape arithmetic.
    x = self.dense(ops.reshape(hidden_states, (-1, self.hidden_size)))
    logits = self.dense_1(ops.cast(x, "float32"))
    return ops.reshape(logits, ops.shape(hidden_states)[:-1])

  def compute_output_shape(self, hidden_states_shape):
    return tuple(hidden_states_shape[:-1])

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "hidden_size": self.hidden_size,
        "hidden_act": self.hidden_act,
        "initializer_range": self.initializer_range,
      }
    )
    return config
