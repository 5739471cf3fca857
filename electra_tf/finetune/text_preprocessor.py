"""Raw text → packed ELECTRA inputs, inside the model (keras-hub style)."""

import keras
import tensorflow as tf

from electra_tf.text.tokenizer import ElectraTokenizer


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTextPreprocessor(keras.layers.Layer):
  """Tokenises one or two text segments in-graph and packs them as the
  original's featurisers do: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`,
  truncated like `_truncate_seq_pair`, padded to `max_seq_length`.

  Args:
    tokenizer: an `ElectraTokenizer` (or its config dict).
    max_seq_length: S, the packed length.
    **kwargs: standard Keras layer arguments.

  Call args:
    inputs: strings `[B]`, or a tuple/list `(text_a, text_b)` of strings
      `[B]`; already packed features (a dict with `input_ids`) pass through.

  Returns:
    dict of int32 `[B, S]` `input_ids`, `input_mask`, `segment_ids`.

  Example:
  >>> tokenizer = ElectraTokenizer(vocabulary=["[PAD]", "[UNK]", "[CLS]",
  ...                                          "[SEP]", "[MASK]", "the", "cat"])
  >>> packed = ElectraTextPreprocessor(tokenizer, max_seq_length=6)(
  ...     (tf.constant(["the cat"]), tf.constant(["cat"])))
  >>> packed["input_ids"].numpy().tolist(), packed["segment_ids"].numpy().tolist()
  ([[2, 5, 6, 3, 6, 3]], [[0, 0, 0, 0, 1, 1]])
  """

  def __init__(self, tokenizer, max_seq_length=128, **kwargs):
    kwargs.setdefault("trainable", False)
    super().__init__(**kwargs)
    if isinstance(tokenizer, dict):
      tokenizer = keras.saving.deserialize_keras_object(tokenizer)
    if max_seq_length < 3:
      raise ValueError(f"max_seq_length={max_seq_length}; expected at least 3")
    self.tokenizer = tokenizer
    self.max_seq_length = int(max_seq_length)

  @classmethod
  def from_vocab_file(cls, vocab_file, max_seq_length=128, do_lower_case=True, **kwargs):
    """A preprocessor whose vocabulary is stored in its config (so a saved
    `.keras` model does not depend on the vocab file's path)."""
    with tf.io.gfile.GFile(vocab_file, "r") as f:
      vocabulary = [line.rstrip("\n") for line in f]
    while vocabulary and not vocabulary[-1]:
      vocabulary.pop()
    tokenizer = ElectraTokenizer(vocabulary=vocabulary, do_lower_case=do_lower_case)
    return cls(tokenizer, max_seq_length=max_seq_length, **kwargs)

  def call(self, inputs):
    if isinstance(inputs, dict):
      return {k: tf.cast(inputs[k], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    if isinstance(inputs, (tuple, list)):
      if len(inputs) == 1:
        inputs = inputs[0]
      elif len(inputs) == 2:
        text_a, text_b = (tf.reshape(t, [-1]) for t in inputs)
        ids = self.tokenizer(tf.concat([text_a, text_b], axis=0))
        n = tf.shape(text_a, out_type=tf.int64)[0]
        return self.tokenizer.pack(ids[:n], ids[n:], max_seq_length=self.max_seq_length)
      else:
        raise ValueError(f"expected one or two text segments, got {len(inputs)}")
    return self.tokenizer.pack(
      self.tokenizer(tf.reshape(inputs, [-1])), max_seq_length=self.max_seq_length
    )

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
        "max_seq_length": self.max_seq_length,
      }
    )
    return config
