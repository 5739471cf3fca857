"""`ElectraTokenTagger`: keras-hub style token tagging on raw sentences."""

import numbers

import keras
from keras import ops
import numpy as np
import tensorflow as tf

from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.finetune.tagging.tasks import TaggingTask
from electra_tf.finetune.text_preprocessor import as_strings
from electra_tf.task_models.task_model import ElectraTaskModel
from electra_tf.task_models.task_model import check_count

# The label of a wordpiece position that is not scored.
IGNORED = -1


@keras.saving.register_keras_serializable(package="electra_tf")
class _ScoredAccuracy(keras.metrics.Mean):
  """Accuracy over the positions whose label is not `IGNORED`."""

  def update_state(self, y_true, y_pred, sample_weight=None):
    y_true = ops.cast(y_true, "int32")
    weight = ops.cast(ops.not_equal(y_true, IGNORED), "float32")
    if sample_weight is not None:
      weight = weight * ops.cast(sample_weight, "float32")
    correct = ops.cast(ops.equal(ops.cast(ops.argmax(y_pred, axis=-1), "int32"), y_true), "float32")
    return super().update_state(correct, sample_weight=weight)


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTokenTagger(ElectraTaskModel):
  """ELECTRA encoder + the original's tagging head (one dense layer, no
  dropout), with an in-model preprocessor: `fit`, `predict` and `evaluate`
  take raw sentence strings and give tag logits at every wordpiece.

  Packing is the tagging featuriser's: `[CLS] sentence [SEP]` with segment
  ids 1, the sentence cut to `max_seq_length - 2` wordpieces (a plain cut,
  not the original's early cut by word count).

  Labels are one tag id per wordpiece position, int `[B, S]`, with
  `IGNORED` (−1) at positions that are not scored: padding, `[CLS]`/`[SEP]`
  and (the original's convention) every wordpiece of a word but its first.
  `wordpiece_labels` builds them from per-word tags (words split on
  whitespace); `predict_tags` reads each word's tag back from its first
  wordpiece (with a SentencePiece model, the one holding its `▁`). The
  default loss is the original's: the cross-entropy summed over the scored
  positions and the batch; the default metric, accuracy over them.

  Variables: `electra/...` and `task_specific/<task_name>/dense`; `export`
  writes the SavedModel of `export_saved_model --model task`.

  Args:
    bert_config: dict of the encoder's `BertConfig` fields.
    num_tags: number of tags.
    task_name: the head's name (`task_specific/<task_name>/...`).
    **kwargs: `preprocessor` (an `ElectraTextPreprocessor` with
      `packing="tagging"`, or its config; None takes packed
      `input_ids/input_mask/segment_ids` dicts), `embedding_size` (None: the
      hidden size) and the standard `keras.Model` arguments.

  Returns (call):
    float32 logits `[B, S, num_tags]`.

  Example (the labels; `fit`/`predict` as below):
  >>> from electra_tf.text.tokenizer import ElectraTokenizer
  >>> from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
  >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s"]
  >>> preprocessor = ElectraTextPreprocessor(
  ...     ElectraTokenizer(vocabulary=vocab), max_seq_length=8, packing="tagging")
  >>> tagger = ElectraTokenTagger({"vocab_size": 9, "hidden_size": 8, "num_hidden_layers": 1,
  ...     "num_attention_heads": 1, "intermediate_size": 16}, num_tags=3,
  ...     preprocessor=preprocessor)
  >>> tagger.wordpiece_labels(["the cats sat"], [[0, 1, 2]]).tolist()
  [[-1, 0, 1, -1, 2, -1, -1, -1]]

  Usage with a released checkpoint (not run as a doctest; tests run it on
  a tiny model):
    tagger = ElectraTokenTagger.from_checkpoint(
        "models/electra_small", vocab_file="models/electra_small/vocab.txt", num_tags=9)
    labels = tagger.wordpiece_labels(sentences, word_tags)
    tagger.compile(num_train_steps=1000)
    tagger.fit(tf.data.Dataset.from_tensor_slices((sentences, labels)).batch(32))
    tagger.predict_tags(["He reckons the current account deficit will narrow ."])
  """

  packing = "tagging"
  head_task_classes = (TaggingTask,)

  def __init__(self, bert_config, num_tags, task_name="tagger", **kwargs):
    self.num_tags = check_count(num_tags, "num_tags")
    super().__init__(bert_config, task_name=task_name, **kwargs)

  def make_head(self):
    return TaggingHead(self.task_name, self.num_tags, name=f"task_specific_{self.task_name}")

  def task_outputs(self, head_outputs):
    return ops.cast(head_outputs["logits"], "float32")

  def default_loss(self):
    """The original's: the cross-entropy summed over the scored positions
    and the batch."""
    return keras.losses.SparseCategoricalCrossentropy(
      from_logits=True, reduction="sum", ignore_class=IGNORED
    )

  def default_metrics(self):
    return [_ScoredAccuracy(name="accuracy")]

  def prepare_labels(self, y):
    if y is None:
      return y
    length = self.preprocessor.max_seq_length if self.preprocessor is not None else None
    shape = getattr(y, "shape", None)
    message = (
      "ElectraTokenTagger labels are one tag id per wordpiece position, shape "
      f"[batch, {length or 'max_seq_length'}], with {IGNORED} where nothing is scored "
      f"(wordpiece_labels builds them from per-word tags); got shape "
    )
    if shape is None or len(shape) != 2 or (length and shape[1] not in (None, length)):
      raise ValueError(message + str(shape))
    if length and shape[1] is None:  # a retraced step sees [batch, None]
      check = tf.debugging.assert_equal(tf.shape(y)[1], length, message=message + "[batch, n]")
      with tf.control_dependencies([check]):
        y = tf.identity(y)
    return y

  # --- words ↔ wordpiece positions (Python, eager) -------------------------------

  def _first_pieces(self, sentences):
    """Per sentence: the packed position of each word's first wordpiece,
    or None for a word with no wordpiece or cut off by the truncation."""
    if self.preprocessor is None:
      raise ValueError("this needs the model's preprocessor (its tokenizer and length)")
    last = self.preprocessor.max_seq_length - 2  # the last sentence position kept
    positions = []
    for _, pieces in self.preprocessor.word_pieces(sentences):
      starts = 1 + np.cumsum([0] + [len(p) for p in pieces[:-1]])
      positions.append(
        [int(s) if p and s <= last else None for s, p in zip(starts, pieces)] if pieces else []
      )
    return positions

  def wordpiece_labels(self, sentences, word_tags):
    """Per-wordpiece labels `[B, S]` (int32 numpy) from per-word tags: each
    word's tag at its first wordpiece, `IGNORED` elsewhere.

    Args:
      sentences: list of strings; words are split on whitespace.
      word_tags: per sentence, one tag id per word.
    """
    sentences = as_strings(sentences)
    word_tags = list(word_tags)
    if len(word_tags) != len(sentences):
      raise ValueError(
        f"{len(sentences)} sentences but {len(word_tags)} rows of word_tags; expected one "
        "list of tag ids per sentence"
      )
    positions = self._first_pieces(sentences)
    labels = np.full((len(positions), self.preprocessor.max_seq_length), IGNORED, np.int32)
    for i, (row, tags) in enumerate(zip(positions, word_tags)):
      if isinstance(tags, (str, bytes)) or not hasattr(tags, "__len__"):
        raise ValueError(
          f"word_tags[{i}]={tags!r}; expected a list of tag ids (one per word of sentence {i})"
        )
      if len(row) != len(tags):
        raise ValueError(
          f"sentence {i} has {len(row)} whitespace-separated words but {len(tags)} tags"
        )
      for position, tag in zip(row, tags):
        if isinstance(tag, (bool, np.bool_)) or not isinstance(tag, numbers.Integral):
          raise ValueError(f"word_tags[{i}]: tag {tag!r} is not a tag id (an integer)")
        if not IGNORED <= tag < self.num_tags:
          raise ValueError(
            f"word_tags[{i}]: tag {tag} is outside [0, {self.num_tags}) (num_tags; "
            f"{IGNORED} ignores a word)"
          )
        if position is not None:
          labels[i, position] = tag
    return labels

  def predict_tags(self, sentences, batch_size=None):
    """Per sentence, the predicted tag id of each whitespace-separated word
    (read at its first wordpiece); `IGNORED` for a word the truncation cut
    off or that has no wordpiece."""
    sentences = as_strings(sentences)
    logits = self.predict(sentences, batch_size=batch_size, verbose=0)
    predictions = np.argmax(logits, axis=-1)
    return [
      [IGNORED if p is None else int(predictions[i, p]) for p in row]
      for i, row in enumerate(self._first_pieces(sentences))
    ]

  def get_config(self):
    config = super().get_config()
    config["num_tags"] = self.num_tags
    return config
