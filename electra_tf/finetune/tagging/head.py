"""The tagging head: one dense layer on each word's first sub-token (`finetune/tagging/tagging_tasks.py`)."""

import keras
from keras import ops

from electra_tf.finetune import heads as head_utils


@keras.saving.register_keras_serializable(package="electra_tf")
class TaggingHead(keras.layers.Layer):
  """Per-word softmax over tags, no dropout; the loss is the masked
  cross-entropy **summed** over the words of each example.

  Variables: `dense/kernel [H, num_labels]`, `dense/bias` (→
  `task_specific/<task_name>/dense/...`).

  Args:
    task_name: reads `<task_name>_labels`, `_labels_mask`,
      `_labeled_positions` and `_eid`.
    num_labels: number of tags.
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    sequence_output: `[B, S, H]`.
    features: dict of the batch's features.
    training: unused (no dropout), kept for a uniform interface.

  Returns:
    dict with `loss` `[B]`, `logits` `[B, S, num_labels]`, `predictions`,
    `labels`, `labels_mask`, `eid`.

  Example:
  >>> import numpy as np
  >>> head = TaggingHead("chunk", num_labels=5)
  >>> f = {"chunk_labels": np.zeros((1, 4), "int32"),
  ...      "chunk_labels_mask": np.ones((1, 4), "float32"),
  ...      "chunk_labeled_positions": np.array([[1, 2, 3, 0]]), "chunk_eid": np.array([0])}
  >>> head(np.zeros((1, 4, 8), "float32"), f)["logits"].shape
  TensorShape([1, 4, 5])
  """

  def __init__(self, task_name, num_labels, **kwargs):
    super().__init__(**kwargs)
    self.task_name = task_name
    self.num_labels = int(num_labels)
    self.dense = head_utils.head_dense(self.num_labels, "dense")

  def build(self, sequence_output_shape, features_shape=None):
    self.dense.build((None, None, sequence_output_shape[-1]))
    self.built = True

  def call(self, sequence_output, features, training=None):
    name = self.task_name
    positions = ops.cast(features[name + "_labeled_positions"], "int32")
    # expand_dims, not `[:, :, None]`: LiteRT's builtin strided slice adds no axis.
    reprs = ops.take_along_axis(sequence_output, ops.expand_dims(positions, -1), axis=1)
    logits = self.dense(reprs)
    labels = features[name + "_labels"]
    mask = ops.cast(features[name + "_labels_mask"], logits.dtype)
    per_word = head_utils.log_softmax_cross_entropy(logits, labels, self.num_labels)
    return {
      "loss": ops.sum(per_word * mask, axis=-1),
      "logits": logits,
      "predictions": ops.argmax(logits, axis=-1),
      "labels": labels,
      "labels_mask": mask,
      "eid": features[name + "_eid"],
    }

  def prediction_features(self, features):
    """Placeholder label features for prediction: every position is read
    (`labeled_positions` = 0..S-1), so the logits are per token."""
    name = self.task_name
    return head_utils.prediction_features(
      features,
      **{
        name + "_eid": lambda b, s: ops.zeros((b,), "int32"),
        name + "_labels": lambda b, s: ops.zeros((b, s), "int32"),
        name + "_labels_mask": lambda b, s: ops.ones((b, s), "float32"),
        name + "_labeled_positions": lambda b, s: ops.tile(
          ops.arange(s, dtype="int32")[None], (b, 1)
        ),
      },
    )

  def dense_layers(self):
    """`(official name, Dense)` pairs, for the checkpoint name map."""
    return [("dense", self.dense)]

  def get_config(self):
    config = super().get_config()
    config.update(task_name=self.task_name, num_labels=self.num_labels)
    return config
