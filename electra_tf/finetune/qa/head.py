"""The QA head: joint start→end beam prediction plus the answerable
classifier (`finetune/qa/qa_tasks.py`)."""

import keras
from keras import ops

from electra_tf.finetune import heads as head_utils


@keras.saving.register_keras_serializable(package="electra_tf")
class QAHead(keras.layers.Layer):
  """Span prediction for SQuAD / MRQA, as the original's `QATask` head.

  Variables with the defaults (→ `task_specific/<task_name>/...`):
  `dense` [H,1] start logits; `qa_hidden` [2H,512] (GELU) and `dense_1`
  [512,1] end logits; `dense_2` [2H,512] (GELU) and `dense_3` [512,1] the
  answerable logit. Without `joint_prediction` the end logits come from
  `dense_1` [H,1]; without `answerable_uses_start_logits` the answerable
  logit is one dense [H,1] under the next free name.

  Positions outside `input_mask * segment_ids` plus `[CLS]` get −1000 (the
  final `[SEP]` stays allowed, as in the original).

  Args:
    task_name: reads `<task_name>_start_positions`, `_end_positions`,
      `_is_impossible` (training labels; zeros at prediction) and `_eid`.
    beam_size: K, the number of start (and end per start) candidates.
    joint_prediction: condition the end on the start.
    answerable_classifier: add the answerable logit and its loss.
    answerable_uses_start_logits: the answerable classifier also sees the
      start-probability-weighted hidden state.
    answerable_weight: weight of the answerable sigmoid cross-entropy.
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    sequence_output: `[B, S, H]`.
    features: dict with `input_mask`, `segment_ids` and the task's features.
    training: True uses the gold start (teacher forcing) for the end logits;
      False runs the beam (`[B, K, S, 2H]`).

  Returns:
    dict with `loss` `[B]`, `start_logits`, `end_logits` (zeros at prediction
    in joint mode, as the original), `answerable_logit`, `start_positions`,
    `end_positions`, `start_top_log_probs` / `start_top_index` `[B, K]`,
    `end_top_log_probs` / `end_top_index` `[B, K, K]`, `eid`.

  Example:
  >>> import numpy as np
  >>> head = QAHead("squad", beam_size=2)
  >>> f = {"input_mask": np.ones((1, 4), "int32"), "segment_ids": np.array([[0, 0, 1, 1]]),
  ...      "squad_start_positions": np.array([2]), "squad_end_positions": np.array([3]),
  ...      "squad_is_impossible": np.array([0]), "squad_eid": np.array([0])}
  >>> head(np.zeros((1, 4, 8), "float32"), f, training=False)["end_top_index"].shape
  TensorShape([1, 2, 2])
  """

  def __init__(
    self,
    task_name,
    beam_size=20,
    joint_prediction=True,
    answerable_classifier=True,
    answerable_uses_start_logits=True,
    answerable_weight=0.5,
    **kwargs,
  ):
    super().__init__(**kwargs)
    self.task_name = task_name
    self.beam_size = int(beam_size)
    self.joint_prediction = bool(joint_prediction)
    self.answerable_classifier = bool(answerable_classifier)
    self.answerable_uses_start_logits = bool(answerable_uses_start_logits)
    self.answerable_weight = float(answerable_weight)
    # The original's tf.layers names: unnamed dense layers are numbered in creation order.
    names = iter(["dense", "dense_1", "dense_2", "dense_3"])
    self.start_dense = head_utils.head_dense(1, next(names))
    if self.joint_prediction:
      self.end_hidden = head_utils.head_dense(512, "qa_hidden", activation=head_utils.gelu)
    self.end_dense = head_utils.head_dense(1, next(names))
    if self.answerable_classifier:
      if self.answerable_uses_start_logits:
        self.answerable_hidden = head_utils.head_dense(512, next(names), activation=head_utils.gelu)
      self.answerable_dense = head_utils.head_dense(1, next(names))

  def build(self, sequence_output_shape, features_shape=None):
    h = sequence_output_shape[-1]
    self.start_dense.build((None, None, h))
    if self.joint_prediction:
      self.end_hidden.build((None, None, 2 * h))
      self.end_dense.build((None, None, 512))
    else:
      self.end_dense.build((None, None, h))
    if self.answerable_classifier:
      if self.answerable_uses_start_logits:
        self.answerable_hidden.build((None, 2 * h))
        self.answerable_dense.build((None, 512))
      else:
        self.answerable_dense.build((None, h))
    self.built = True

  def call(self, sequence_output, features, training=None):
    name = self.task_name
    k = self.beam_size
    hidden = sequence_output
    dtype = hidden.dtype
    batch_size = ops.shape(hidden)[0]
    seq_length = ops.shape(hidden)[1]
    answer_mask = ops.cast(features["input_mask"], dtype) * ops.cast(
      features["segment_ids"], dtype
    ) + ops.one_hot(0, seq_length, dtype=dtype)
    mask_adder = 1000.0 * (answer_mask - 1.0)
    start_positions = ops.cast(features[name + "_start_positions"], "int32")
    end_positions = ops.cast(features[name + "_end_positions"], "int32")

    start_logits = ops.squeeze(self.start_dense(hidden), -1)
    start_top_log_probs = ops.zeros((batch_size, k), dtype)
    start_top_index = ops.zeros((batch_size, k), "int32")
    end_top_log_probs = ops.zeros((batch_size, k, k), dtype)
    end_top_index = ops.zeros((batch_size, k, k), "int32")
    if self.joint_prediction:
      start_logits = start_logits + mask_adder
      start_log_probs = ops.log_softmax(start_logits, axis=-1)
      start_top_log_probs, start_top_index = ops.top_k(start_log_probs, k=k)
      start_top_index = ops.cast(start_top_index, "int32")
      if training:
        # teacher forcing: the gold start's hidden state next to every position
        start_one_hot = ops.one_hot(start_positions, seq_length, dtype=dtype)
        start_features = ops.sum(start_one_hot[:, :, None] * hidden, axis=1)
        start_features = ops.repeat(start_features[:, None, :], seq_length, axis=1)
        end_features = hidden
      else:
        end_features = ops.repeat(hidden[:, None], k, axis=1)  # [B, K, S, H]
        start_one_hot = ops.one_hot(start_top_index, seq_length, dtype=dtype)  # [B, K, S]
        start_features = ops.einsum("bks,bsh->bkh", start_one_hot, hidden)
        start_features = ops.repeat(start_features[:, :, None, :], seq_length, axis=2)
      end_repr = self.end_hidden(ops.concatenate([start_features, end_features], axis=-1))
      end_logits = ops.squeeze(self.end_dense(end_repr), -1)
      if training:
        end_logits = end_logits + mask_adder
      else:
        # expand_dims, not `[:, None, :]` (here and below): LiteRT's strided slice adds no axis.
        end_logits = end_logits + ops.expand_dims(mask_adder, 1)
        end_log_probs = ops.log_softmax(end_logits, axis=-1)
        end_top_log_probs, end_top_index = ops.top_k(end_log_probs, k=k)
        end_top_index = ops.cast(end_top_index, "int32")
        end_logits = ops.zeros((batch_size, seq_length), dtype)
    else:
      end_logits = ops.squeeze(self.end_dense(hidden), -1)
      start_logits = start_logits + mask_adder
      end_logits = end_logits + mask_adder

    start_loss = head_utils.log_softmax_cross_entropy(start_logits, start_positions, seq_length)
    end_loss = head_utils.log_softmax_cross_entropy(end_logits, end_positions, seq_length)
    losses = (start_loss + end_loss) / 2.0

    answerable_logit = ops.zeros((batch_size,), dtype)
    if self.answerable_classifier:
      answerable_repr = hidden[:, 0]
      if self.answerable_uses_start_logits:
        start_probs = ops.softmax(start_logits, axis=-1)
        start_feature = ops.sum(ops.expand_dims(start_probs, -1) * hidden, axis=1)
        answerable_repr = self.answerable_hidden(
          ops.concatenate([answerable_repr, start_feature], axis=-1)
        )
      answerable_logit = ops.squeeze(self.answerable_dense(answerable_repr), -1)
      is_impossible = ops.cast(features[name + "_is_impossible"], dtype)
      answerable_loss = ops.binary_crossentropy(is_impossible, answerable_logit, from_logits=True)
      losses = losses + self.answerable_weight * answerable_loss

    return {
      "loss": losses,
      "start_logits": start_logits,
      "end_logits": end_logits,
      "answerable_logit": answerable_logit,
      "start_positions": start_positions,
      "end_positions": end_positions,
      "start_top_log_probs": start_top_log_probs,
      "start_top_index": start_top_index,
      "end_top_log_probs": end_top_log_probs,
      "end_top_index": end_top_index,
      "eid": features[name + "_eid"],
    }

  def prediction_features(self, features):
    """Placeholder label features for prediction (the loss is unused)."""
    keys = ("_eid", "_start_positions", "_end_positions", "_is_impossible")
    return head_utils.prediction_features(
      features, **{self.task_name + k: lambda b, s: ops.zeros((b,), "int32") for k in keys}
    )

  def dense_layers(self):
    """`(official name, Dense)` pairs, for the checkpoint name map."""
    attributes = ("start_dense", "end_hidden", "end_dense", "answerable_hidden", "answerable_dense")
    layers = [getattr(self, a) for a in attributes if hasattr(self, a)]
    return [(layer.name, layer) for layer in layers]

  def get_config(self):
    config = super().get_config()
    config.update(
      task_name=self.task_name,
      beam_size=self.beam_size,
      joint_prediction=self.joint_prediction,
      answerable_classifier=self.answerable_classifier,
      answerable_uses_start_logits=self.answerable_uses_start_logits,
      answerable_weight=self.answerable_weight,
    )
    return config
