"""The GLUE head: dropout and one dense layer on the `[CLS]` vector (`finetune/classification/classification_tasks.py`)."""

import keras
from keras import ops

from electra_tf.finetune import heads as head_utils
from electra_tf.layers import layer_utils


@keras.saving.register_keras_serializable(package="electra_tf")
class ClassificationHead(keras.layers.Layer):
  """Classification or regression on the `[CLS]` hidden state (no pooler).

  Variables: `dense/kernel [H, num_labels]`, `dense/bias` (→
  `task_specific/<task_name>/dense/...`).

  Args:
    task_name: the task name; features are read as `<task_name>_label_ids`
      (classification) or `<task_name>_targets` (regression) and `_eid`.
    num_labels: number of classes (1 for regression).
    regression: squared-error regression instead of softmax classification.
    dropout_rate: dropout before the dense layer when training (the
      original's keep_prob 0.9).
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    sequence_output: `[B, S, H]` encoder output.
    features: dict of the batch's features.
    training: enables dropout.

  Returns:
    dict with per-example `loss` `[B]`, `predictions`, the labels/targets,
    `eid`, and `logits` for classification.

  Example:
  >>> import numpy as np
  >>> head = ClassificationHead("rte", num_labels=2)
  >>> out = head(np.zeros((2, 4, 8), "float32"),
  ...            {"rte_label_ids": np.array([0, 1]), "rte_eid": np.array([0, 1])})
  >>> out["logits"].shape
  TensorShape([2, 2])
  """

  def __init__(self, task_name, num_labels, regression=False, dropout_rate=0.1, **kwargs):
    super().__init__(**kwargs)
    self.task_name = task_name
    self.num_labels = int(num_labels)
    self.regression = bool(regression)
    self.dropout_rate = float(dropout_rate)
    if self.regression and self.num_labels != 1:
      raise ValueError(f"a regression head has one output, got num_labels={num_labels}")
    self.dropout = keras.layers.Dropout(self.dropout_rate, name="dropout")
    self.dense = head_utils.head_dense(self.num_labels, "dense")

  def build(self, sequence_output_shape, features_shape=None):
    self.dense.build((None, sequence_output_shape[-1]))
    self.built = True

  def call(self, sequence_output, features, training=None):
    # Row-keyed dropout: replicas and micro-batches drop what one device's batch drops.
    reprs = layer_utils.dropout(self.dropout, sequence_output[:, 0], training)
    logits = self.dense(reprs)
    name = self.task_name
    outputs = {"eid": features[name + "_eid"]}
    if self.regression:
      predictions = ops.squeeze(logits, -1)
      targets = ops.cast(features[name + "_targets"], predictions.dtype)
      outputs.update(
        loss=ops.square(predictions - targets), predictions=predictions, targets=targets
      )
    else:
      labels = features[name + "_label_ids"]
      outputs.update(
        loss=head_utils.log_softmax_cross_entropy(logits, labels, self.num_labels),
        logits=logits,
        predictions=ops.argmax(logits, axis=-1),
        label_ids=labels,
      )
    return outputs

  def prediction_features(self, features):
    """Placeholder label features for prediction (the loss is unused)."""
    name = self.task_name
    labels = (name + "_targets", "float32") if self.regression else (name + "_label_ids", "int32")
    return head_utils.prediction_features(
      features,
      **{
        name + "_eid": lambda b, s: ops.zeros((b,), "int32"),
        labels[0]: lambda b, s: ops.zeros((b,), labels[1]),
      },
    )

  def dense_layers(self):
    """`(official name, Dense)` pairs, for the checkpoint name map."""
    return [("dense", self.dense)]

  def get_config(self):
    config = super().get_config()
    config.update(
      task_name=self.task_name,
      num_labels=self.num_labels,
      regression=self.regression,
      dropout_rate=self.dropout_rate,
    )
    return config
