"""The original's pre-training evaluation metrics (`run_pretraining.py:PretrainingModel.eval_metrics`)."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="electra_tf")
class WeightedAccuracy(keras.metrics.Metric):
  """`tf.compat.v1.metrics.accuracy`: `sum(w * [label == pred]) / sum(w)`, streamed
  (precision with `w = preds * mask`, recall with `w = labels * mask`).

  Args:
    name: metric name.
    dtype: dtype of the accumulators.

  Example:
  >>> metric = WeightedAccuracy()
  >>> metric.update_state([1, 2, 3], [1, 0, 3], sample_weight=[1.0, 1.0, 0.0])
  >>> float(metric.result())
  0.5
  """

  def __init__(self, name="weighted_accuracy", dtype="float32"):
    super().__init__(name=name, dtype=dtype)
    self.total = self.add_variable(
      shape=(), initializer="zeros", dtype=dtype, aggregation="sum", name="total"
    )
    self.count = self.add_variable(
      shape=(), initializer="zeros", dtype=dtype, aggregation="sum", name="count"
    )

  def update_state(self, labels, predictions, sample_weight=None):
    labels = tf.reshape(tf.cast(labels, tf.int64), [-1])
    predictions = tf.reshape(tf.cast(predictions, tf.int64), [-1])
    correct = tf.cast(tf.equal(labels, predictions), self.dtype)
    if sample_weight is None:
      weights = tf.ones_like(correct)
    else:
      weights = tf.reshape(tf.cast(sample_weight, self.dtype), [-1])
    self.total.assign_add(tf.reduce_sum(correct * weights))
    self.count.assign_add(tf.reduce_sum(weights))

  def result(self):
    # tf.metrics.accuracy returns 0 when no weight was seen (div_no_nan).
    return tf.math.divide_no_nan(tf.convert_to_tensor(self.total), tf.convert_to_tensor(self.count))


def make_pretraining_metrics(electra_or_electric=True, disc_weight=50.0):
  """The metrics the original's evaluation reports, by key (`run_pretraining.py:PretrainingModel.eval_metrics`).

  Args:
    electra_or_electric: whether a discriminator is trained.
    disc_weight: discriminator metrics exist only when it is > 0.

  Returns:
    Dict name → Keras metric; feed it with `update_pretraining_metrics`.

  Example:
  >>> sorted(make_pretraining_metrics(False))
  ['masked_lm_accuracy', 'masked_lm_loss']
  """
  metrics = {
    "masked_lm_accuracy": WeightedAccuracy(name="masked_lm_accuracy"),
    "masked_lm_loss": keras.metrics.Mean(name="masked_lm_loss"),
  }
  if electra_or_electric:
    metrics["sampled_masked_lm_accuracy"] = WeightedAccuracy(name="sampled_masked_lm_accuracy")
    if disc_weight > 0:
      metrics["disc_loss"] = keras.metrics.Mean(name="disc_loss")
      # tf.metrics.auc's defaults (its trapezoidal rule is Keras' "interpolation").
      metrics["disc_auc"] = keras.metrics.AUC(
        num_thresholds=200, curve="ROC", summation_method="interpolation", name="disc_auc"
      )
      metrics["disc_accuracy"] = WeightedAccuracy(name="disc_accuracy")
      metrics["disc_precision"] = WeightedAccuracy(name="disc_precision")
      metrics["disc_recall"] = WeightedAccuracy(name="disc_recall")
  return metrics


def update_pretraining_metrics(metrics, step_outputs):
  """Feeds one batch's outputs (from `pretraining_step.forward`) to the metrics.

  Args:
    metrics: dict from `make_pretraining_metrics`.
    step_outputs: dict with `masked_lm_ids`, `masked_lm_preds`,
      `masked_lm_weights`, `mlm_per_slot_loss`, and when present
      `sampled_tokens`, `disc_labels`, `disc_preds`, `disc_probs`,
      `disc_per_example_loss`, `input_mask`.
  """
  d = step_outputs
  weights = d["masked_lm_weights"]
  metrics["masked_lm_accuracy"].update_state(d["masked_lm_ids"], d["masked_lm_preds"], weights)
  metrics["masked_lm_loss"].update_state(
    tf.reshape(d["mlm_per_slot_loss"], [-1]), sample_weight=tf.reshape(weights, [-1])
  )
  if "sampled_masked_lm_accuracy" in metrics:
    metrics["sampled_masked_lm_accuracy"].update_state(
      d["masked_lm_ids"], d["sampled_tokens"], weights
    )
  if "disc_loss" in metrics:
    input_mask = tf.cast(d["input_mask"], tf.int32)
    labels = tf.cast(d["disc_labels"], tf.int32)
    preds = tf.cast(d["disc_preds"], tf.int32)
    metrics["disc_loss"].update_state(tf.reshape(d["disc_per_example_loss"], [-1]))
    # Padding positions take part as negatives with score 0, as in the original.
    metrics["disc_auc"].update_state(
      tf.reshape(labels * input_mask, [-1]),
      tf.reshape(d["disc_probs"] * tf.cast(input_mask, tf.float32), [-1]),
    )
    metrics["disc_accuracy"].update_state(labels, preds, input_mask)
    metrics["disc_precision"].update_state(labels, preds, preds * input_mask)
    metrics["disc_recall"].update_state(labels, preds, labels * input_mask)
