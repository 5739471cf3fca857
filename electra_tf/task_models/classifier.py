"""`ElectraClassifier`: a keras-hub style text classifier on raw strings."""

import keras
import tensorflow as tf

from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.classification.tasks import ClassificationTask
from electra_tf.task_models.task_model import ElectraTaskModel
from electra_tf.task_models.task_model import check_count


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraClassifier(ElectraTaskModel):
  """ELECTRA encoder + the original's classification head, with an in-model
  preprocessor: `fit`, `predict` and `evaluate` take raw strings (one
  segment) or `(text_a, text_b)` pairs.

  The network is a one-head `FinetuningModel` (`finetuning_model`): its
  variables carry the original's names, it loads every checkpoint
  `run_finetuning` loads, and `export` writes the SavedModel of
  `python -m electra_tf.export_saved_model --model task`.

  Args:
    bert_config: dict of the encoder's `BertConfig` fields.
    num_classes: number of labels.
    preprocessor: an `ElectraTextPreprocessor` (or its config), or None to
      take packed `input_ids/input_mask/segment_ids` dicts.
    embedding_size: embedding width E (None: the hidden size).
    task_name: the head's name (`task_specific/<task_name>/...`).
    dropout_rate: dropout before the head (the original's 0.1).
    **kwargs: standard `keras.Model` arguments.

  Returns (call):
    logits `[B, num_classes]` (float32).

  Usage (needs a checkpoint and a vocab, so not run as a doctest; the complete
  example in docs/finetune.md is run by a test):
    classifier = ElectraClassifier.from_checkpoint(
        "models/electra_small", vocab_file="models/electra_small/vocab.txt",
        num_classes=3, model_size="small")
    classifier.compile(num_train_steps=1000)
    classifier.fit(tf.data.Dataset.from_tensor_slices(((premises, hypotheses), labels)).batch(32))
    classifier.predict((["The chef cooked."], ["Someone cooked."]))
  """

  head_task_classes = (ClassificationTask,)

  def __init__(
    self,
    bert_config,
    num_classes,
    preprocessor=None,
    embedding_size=None,
    task_name="classifier",
    dropout_rate=0.1,
    **kwargs,
  ):
    self.num_classes = check_count(num_classes, "num_classes")
    self.dropout_rate = float(dropout_rate)
    super().__init__(bert_config, preprocessor, embedding_size, task_name, **kwargs)

  def make_head(self):
    return ClassificationHead(
      self.task_name,
      self.num_classes,
      dropout_rate=self.dropout_rate,
      name=f"task_specific_{self.task_name}",
    )

  @classmethod
  def from_checkpoint(cls, path, vocab_file=None, num_classes=None, *args, **kwargs):
    """A classifier initialised from `path`; the other arguments are
    `ElectraTaskModel.from_checkpoint`'s."""
    if num_classes is None:
      raise ValueError("ElectraClassifier.from_checkpoint needs num_classes")
    return super().from_checkpoint(path, vocab_file, *args, num_classes=num_classes, **kwargs)

  def task_outputs(self, head_outputs):
    return keras.ops.cast(head_outputs["logits"], "float32")

  def default_loss(self):
    """The original's: the cross-entropy **summed** over the batch."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")

  def default_metrics(self):
    return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

  def prepare_labels(self, y):
    if y is not None and len(y.shape) > 1 and not (len(y.shape) == 2 and y.shape[-1] == 1):
      raise ValueError(
        f"ElectraClassifier labels are one class id per example, shape [batch]; got {y.shape}"
      )
    if y is not None:
      # A fractional or out-of-range id trains silently otherwise (the loss casts it).
      ids = tf.cast(y, tf.float32)
      whole = tf.reduce_all(tf.equal(ids, tf.round(ids)))
      in_range = tf.reduce_all((ids >= 0) & (ids < self.num_classes))
      check = tf.debugging.Assert(
        whole & in_range,
        [f"ElectraClassifier labels must be whole class ids in [0, {self.num_classes}); got", y],
        summarize=8,
      )
      # Else the loss op may run first and fail with its own message.
      with tf.control_dependencies([check]):
        y = tf.identity(y)
    return y

  def get_config(self):
    config = super().get_config()
    config.update({"num_classes": self.num_classes, "dropout_rate": self.dropout_rate})
    return config
