"""LAMB (layer-wise adaptive moments) for large global batches, as NVIDIA's
and Model Garden's BERT/ELECTRA recipes use it: unlike `keras.optimizers.Lamb`,
LayerNorm and bias variables are excluded from weight decay and from the trust
ratio; the rest is `AdamWeightDecay`'s (replica sum, clipping, official names).
"""

import re

import keras
import tensorflow as tf

from electra_tf.optimization.adam_weight_decay import AdamWeightDecay


@keras.saving.register_keras_serializable(package="electra_tf")
class Lamb(AdamWeightDecay):
  """LAMB with bias-corrected moments and a per-variable trust ratio.

  For each variable, at step t (1-based):
  `m = b1 m + (1-b1) g; v = b2 v + (1-b2) g²;
  update = (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) (+ weight_decay_rate * param unless excluded);
  ratio = ‖param‖ / ‖update‖ (1 if either norm is 0, or the variable is excluded from adaptation);
  param -= lr * multiplier * ratio * update`.

  Args:
    exclude_from_layer_adaptation: regexes of names whose ratio is 1; None
      (the default) uses `exclude_from_weight_decay`, as Model Garden does.
    *args, **kwargs: as for `AdamWeightDecay` (learning_rate,
      weight_decay_rate, beta_1, beta_2, epsilon, exclude_from_weight_decay,
      clip_norm, variable_names, learning_rate_multipliers, name).

  Example:
  >>> opt = Lamb(learning_rate=1e-3, weight_decay_rate=0.01)
  >>> var = keras.Variable([3.0, 4.0], name="kernel")
  >>> opt.apply([tf.constant([0.1, -0.2])], [var])
  >>> [round(float(x), 5) for x in var.numpy()]
  [2.99634, 4.00341]
  """

  def __init__(self, *args, exclude_from_layer_adaptation=None, name="Lamb", **kwargs):
    super().__init__(*args, name=name, **kwargs)
    self.exclude_from_layer_adaptation = (
      None if exclude_from_layer_adaptation is None else tuple(exclude_from_layer_adaptation)
    )

  def _do_layer_adaptation(self, name):
    patterns = self.exclude_from_layer_adaptation
    if patterns is None:
      patterns = self.exclude_patterns
    return not any(re.search(pattern, name) for pattern in patterns)

  def build(self, var_list):
    if self.built:
      return
    super().build(var_list)
    self._adaptation_flags = [self._do_layer_adaptation(self.variable_name(v)) for v in var_list]

  def update_step(self, gradient, variable, learning_rate):
    index, lr, m, v = self._moments(gradient, variable, learning_rate)
    dtype = variable.dtype
    step = tf.cast(self.iterations + 1, dtype)
    m_hat = m / (1.0 - tf.pow(tf.cast(self.beta_1, dtype), step))
    v_hat = v / (1.0 - tf.pow(tf.cast(self.beta_2, dtype), step))
    update = m_hat / (tf.sqrt(v_hat) + self.epsilon)
    if self._decay_flags[index]:
      update += self.weight_decay_rate * variable
    if self._adaptation_flags[index]:
      param_norm = tf.norm(variable)
      update_norm = tf.norm(update)
      ratio = tf.where(
        param_norm > 0.0,
        tf.where(update_norm > 0.0, param_norm / tf.maximum(update_norm, 1e-30), 1.0),
        1.0,
      )
      lr = lr * ratio
    self.assign_sub(variable, lr * update)

  def get_config(self):
    config = super().get_config()
    config["exclude_from_layer_adaptation"] = (
      None
      if self.exclude_from_layer_adaptation is None
      else list(self.exclude_from_layer_adaptation)
    )
    return config
