"""The original's (BERT's) AdamWeightDecayOptimizer as a Keras 3 optimizer (`model/optimization.py:AdamWeightDecayOptimizer`)."""

import re

import keras
import tensorflow as tf

from electra_tf.utils import keras_compat

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


@keras.saving.register_keras_serializable(package="electra_tf")
class AdamWeightDecay(keras.optimizers.Optimizer):
  """Adam without bias correction, decoupled weight decay scaled by the rate.

  For each variable:
  `m = b1 m + (1-b1) g; v = b2 v + (1-b2) g²;
  update = m / (sqrt(v) + eps) (+ weight_decay_rate * param unless excluded);
  param -= lr * multiplier * update`.

  Gradients are clipped to a global norm of `clip_norm` AFTER they are
  summed over replicas (unlike Keras' `global_clipnorm`), so one device and
  N replicas clip alike. Exclusions and layer-wise rates are decided on each
  variable's official name when `variable_names` gives one, else its path;
  `m`, `v` are the original's `<name>/adam_m`, `<name>/adam_v`.

  Args:
    learning_rate: float or `LearningRateSchedule` (called with the step
      before its increment, as the original's `global_step`).
    weight_decay_rate: decoupled decay (0.01 in pre-training).
    beta_1, beta_2, epsilon: Adam's constants (0.9, 0.999, 1e-6).
    exclude_from_weight_decay: regexes (`re.search`); matching names are not
      decayed.
    clip_norm: global-norm clip (None or <= 0: no clipping).
    variable_names: optional dict from a variable's Keras `path` to its
      official name.
    learning_rate_multipliers: optional dict from a name (official if known,
      else path) to a multiplier of the rate (layer-wise decay); names absent
      from it use 1.0.
    name: optimizer name.
    **kwargs: passed to `keras.optimizers.Optimizer`.

  Example:
  >>> opt = AdamWeightDecay(learning_rate=1e-3, weight_decay_rate=0.01)
  >>> var = keras.Variable([1.0, 2.0], name="kernel")
  >>> opt.apply([tf.constant([0.1, 0.1])], [var])
  """

  def __init__(
    self,
    learning_rate=0.001,
    weight_decay_rate=0.0,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
    clip_norm=1.0,
    variable_names=None,
    learning_rate_multipliers=None,
    name="AdamWeightDecay",
    **kwargs,
  ):
    for key in ("global_clipnorm", "clipnorm", "clipvalue", "weight_decay"):
      if kwargs.get(key) is not None:
        raise ValueError(
          f"AdamWeightDecay: {key} is not supported; use clip_norm / weight_decay_rate"
        )
    super().__init__(learning_rate=learning_rate, name=name, **kwargs)
    self.weight_decay_rate = weight_decay_rate
    self.beta_1 = beta_1
    self.beta_2 = beta_2
    self.epsilon = epsilon
    self.exclude_patterns = tuple(exclude_from_weight_decay or ())
    self.clip_norm = clip_norm
    self.variable_names = dict(variable_names or {})
    self.learning_rate_multipliers = dict(learning_rate_multipliers or {})

  def variable_name(self, variable):
    """The name decisions are made on: official if known, else the path."""
    path = getattr(variable, "path", None) or variable.name
    return self.variable_names.get(path, path)

  def _do_use_weight_decay(self, name):
    if not self.weight_decay_rate:
      return False
    return not any(re.search(pattern, name) for pattern in self.exclude_patterns)

  def build(self, var_list):
    if self.built:
      return
    super().build(var_list)
    self._adam_m = []
    self._adam_v = []
    self._decay_flags = []
    self._lr_multipliers = []
    for var in var_list:
      self._adam_m.append(self.add_variable_from_reference(var, "adam_m"))
      self._adam_v.append(self.add_variable_from_reference(var, "adam_v"))
      name = self.variable_name(var)
      self._decay_flags.append(self._do_use_weight_decay(name))
      self._lr_multipliers.append(float(self.learning_rate_multipliers.get(name, 1.0)))

  def official_slots(self, official_name_map):
    """`{"<name>/adam_m": m, "<name>/adam_v": v}` for `{name: model variable}`."""
    slots = {}
    for name, var in official_name_map.items():
      index = self._get_variable_index(var)
      slots[f"{name}/adam_m"] = self._adam_m[index]
      slots[f"{name}/adam_v"] = self._adam_v[index]
    return slots

  def _backend_update_step(self, grads, trainable_variables, learning_rate):
    # Sum over replicas first, then clip the summed gradients, then update.
    tf_vars = [v.value if isinstance(v, keras.Variable) else v for v in trainable_variables]
    grads_and_vars = keras_compat.all_reduce_sum_gradients(self, list(zip(grads, tf_vars)))
    grads = [g for g, _ in grads_and_vars]
    if self.clip_norm is not None and self.clip_norm > 0:
      grads, _ = tf.clip_by_global_norm(grads, self.clip_norm)
    keras_compat.apply_distributed_update(self, list(zip(grads, tf_vars)), learning_rate)

  def _moments(self, gradient, variable, learning_rate):
    """The variable's index, its rate, and its `m`, `v` updated with `gradient`."""
    index = self._get_variable_index(variable)
    lr = tf.cast(learning_rate, variable.dtype) * self._lr_multipliers[index]
    # Embedding gradients arrive as IndexedSlices; the update is dense anyway.
    gradient = tf.cast(tf.convert_to_tensor(gradient), variable.dtype)
    m = self._adam_m[index]
    v = self._adam_v[index]
    self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
    self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * tf.square(gradient))
    return index, lr, m, v

  def update_step(self, gradient, variable, learning_rate):
    index, lr, m, v = self._moments(gradient, variable, learning_rate)
    update = m / (tf.sqrt(v) + self.epsilon)
    if self._decay_flags[index]:
      update += self.weight_decay_rate * variable
    self.assign_sub(variable, lr * update)

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "weight_decay_rate": self.weight_decay_rate,
        "beta_1": self.beta_1,
        "beta_2": self.beta_2,
        "epsilon": self.epsilon,
        "exclude_from_weight_decay": list(self.exclude_patterns),
        "clip_norm": self.clip_norm,
        "variable_names": self.variable_names,
        "learning_rate_multipliers": self.learning_rate_multipliers,
      }
    )
    return config
