"""The original's learning-rate schedule (`model/optimization.py:create_optimizer`) as a Keras schedule."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraLearningRateSchedule(keras.optimizers.schedules.LearningRateSchedule):
  """Polynomial decay to 0, MULTIPLIED by a linear warmup factor.

  `lr(step) = base * (1 - min(step, T) / T) ** power * min(1, step / W)`
  with `T = num_train_steps` and `W = max(T * warmup_proportion,
  warmup_steps)`. Unlike BERT, the warmup multiplies the already decayed
  rate, so the peak is `base * (1 - W / T) ** power` and step 0 has rate 0.

  Args:
    learning_rate: the base rate.
    num_train_steps: T, where the rate reaches 0.
    warmup_steps: warmup length in steps.
    warmup_proportion: warmup length as a fraction of T (fine-tuning).
    lr_decay_power: the polynomial's power (1 = linear).

  Example:
  >>> schedule = ElectraLearningRateSchedule(1.0, 100, warmup_steps=10)
  >>> round(float(schedule(10)), 6)
  0.9
  """

  def __init__(
    self, learning_rate, num_train_steps, warmup_steps=0, warmup_proportion=0.0, lr_decay_power=1.0
  ):
    if num_train_steps <= 0:
      raise ValueError(f"num_train_steps must be > 0, got {num_train_steps}")
    warmup = max(num_train_steps * warmup_proportion, warmup_steps)
    if warmup <= 0:
      # The original divides by zero here (`model/optimization.py:create_optimizer`).
      raise ValueError(
        "The warmup length max(num_train_steps * warmup_proportion, warmup_steps) must be > 0, "
        f"got warmup_steps={warmup_steps}, warmup_proportion={warmup_proportion}"
      )
    self.learning_rate = learning_rate
    self.num_train_steps = num_train_steps
    self.warmup_steps = warmup_steps
    self.warmup_proportion = warmup_proportion
    self.lr_decay_power = lr_decay_power
    self._warmup = float(warmup)

  def __call__(self, step):
    step = tf.cast(step, tf.float32)
    total = float(self.num_train_steps)
    decayed = self.learning_rate * tf.pow(
      1.0 - tf.minimum(step, total) / total, float(self.lr_decay_power)
    )
    return decayed * tf.minimum(1.0, step / self._warmup)

  def get_config(self):
    return {
      "learning_rate": self.learning_rate,
      "num_train_steps": self.num_train_steps,
      "warmup_steps": self.warmup_steps,
      "warmup_proportion": self.warmup_proportion,
      "lr_decay_power": self.lr_decay_power,
    }
