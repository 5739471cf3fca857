"""What every in-graph tokenizer kind shares: `[CLS] a [SEP] b [SEP]`
packing of token ids and the layer surface (`TokenizerLayer`)."""

import keras
import tensorflow as tf


def pack_segments(segment_a, segment_b, max_seq_length, cls_id, sep_id, pad_id):
  """`[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, padded to `max_seq_length`.

  Pairs are truncated like the original's `_truncate_seq_pair` (pop from the
  longer segment, from `b` on ties); single segments keep their first
  `max_seq_length - 2` ids.

  Args:
    segment_a: ragged int ids [B, None].
    segment_b: optional ragged int ids [B, None] (None for single segments).
    max_seq_length: S.
    cls_id, sep_id, pad_id: the vocab's special ids.

  Returns:
    dict of int32 [B, S] tensors `input_ids`, `input_mask`, `segment_ids`.

  Example:
  >>> ids = tf.ragged.constant([[7, 8, 9]])
  >>> pack_segments(ids, None, 6, cls_id=1, sep_id=2, pad_id=0)["input_ids"].numpy().tolist()
  [[1, 7, 8, 9, 2, 0]]
  """
  segment_a = tf.cast(segment_a, tf.int32).with_row_splits_dtype(tf.int64)
  len_a = segment_a.row_lengths()
  if segment_b is None:
    keep_a = tf.minimum(len_a, max_seq_length - 2)
  else:
    segment_b = tf.cast(segment_b, tf.int32).with_row_splits_dtype(tf.int64)
    len_b = segment_b.row_lengths()
    budget = tf.cast(max_seq_length - 3, len_a.dtype)
    shorter = tf.minimum(len_a, len_b)
    fits = len_a + len_b <= budget
    short_kept = 2 * shorter <= budget
    keep_a = tf.where(
      fits,
      len_a,
      tf.where(short_kept, tf.where(len_a <= len_b, len_a, budget - len_b), (budget + 1) // 2),
    )
    keep_b = tf.where(
      fits,
      len_b,
      tf.where(short_kept, tf.where(len_a <= len_b, budget - len_a, len_b), budget // 2),
    )
  a = tf.ragged.boolean_mask(segment_a, tf.ragged.range(len_a) < tf.expand_dims(keep_a, 1))
  batch = tf.shape(len_a, out_type=tf.int64)[0]
  cls = tf.fill([batch, 1], cls_id)
  sep = tf.fill([batch, 1], sep_id)
  parts = [cls, a, sep]
  types = [tf.zeros_like(cls), tf.zeros_like(a), tf.zeros_like(sep)]
  if segment_b is not None:
    b = tf.ragged.boolean_mask(segment_b, tf.ragged.range(len_b) < tf.expand_dims(keep_b, 1))
    b_sep_lengths = tf.where(keep_b > 0, tf.ones_like(keep_b), tf.zeros_like(keep_b))
    b_sep = tf.RaggedTensor.from_row_lengths(
      tf.fill([tf.reduce_sum(b_sep_lengths)], sep_id), b_sep_lengths
    )
    parts += [b, b_sep]
    types += [tf.ones_like(b), tf.ones_like(b_sep)]

  def as_ragged(parts):
    return [
      (tf.RaggedTensor.from_tensor(p) if isinstance(p, tf.Tensor) else p).with_row_splits_dtype(
        tf.int64
      )
      for p in parts
    ]

  ids = tf.concat(as_ragged(parts), axis=1)
  segment_ids = tf.concat(as_ragged(types), axis=1)
  shape = [None, max_seq_length]
  return {
    "input_ids": ids.to_tensor(pad_id, shape=shape),
    "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),
    "segment_ids": segment_ids.to_tensor(0, shape=shape),
  }


class TokenizerLayer(keras.layers.Layer):
  """Strings [B] (or a scalar, or a Python list) → ragged ids, and `pack`;
  a subclass tokenizes a batch [B] in `_tokenize_batch`."""

  def __call__(self, inputs, *args, **kwargs):
    # Keras layers take only tensors positionally; texts in a Python list
    # (as the task models' `predict` takes them) are made one here.
    if isinstance(inputs, (list, tuple, str, bytes)):
      inputs = tf.convert_to_tensor(inputs, tf.string)
    return super().__call__(inputs, *args, **kwargs)

  def call(self, inputs):
    inputs = tf.convert_to_tensor(inputs, tf.string)
    if inputs.shape.rank == 0:
      return self._tokenize_batch(tf.expand_dims(inputs, 0))[0]
    return self._tokenize_batch(inputs)

  def pack(self, segment_a, segment_b=None, max_seq_length=128):
    """`[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, padded to `max_seq_length`,
    truncated as `pack_segments` (the original's `_truncate_seq_pair`).

    Args:
      segment_a: ragged int ids [B, None] (e.g. the output of `call`).
      segment_b: optional ragged int ids [B, None].
      max_seq_length: S.

    Returns:
      dict of int32 [B, S] tensors `input_ids`, `input_mask`, `segment_ids`.
    """
    return pack_segments(
      segment_a, segment_b, max_seq_length, self.cls_id, self.sep_id, self.pad_id
    )
