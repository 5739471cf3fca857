"""Raw text → packed ELECTRA inputs, inside the model (keras-hub style)."""

import numbers
import re

import keras
import numpy as np
import tensorflow as tf

from electra_tf.text import vocab as vocab_lib
from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.text.tokenizer import ElectraTokenizer

PACKINGS = ("pair", "question_context", "tagging")
# A word as the tokenizer splits text: Python's whitespace separates words, except
# the control characters the tokenizer drops instead.
_WORD = re.compile(r"(?:\S|[\x0b\x0c\x1c-\x1f\x85])+")


def pack_question_context(tokenizer, question_ids, context_ids, max_seq_length, max_query_length):
  """The QA featuriser's layout, one window: `[CLS] question [SEP] context [SEP]`,
  the question cut to `max_query_length` tokens and the context to the rest."""
  question_ids = question_ids[:, :max_query_length]
  budget = max_seq_length - 3 - question_ids.row_lengths()
  keep = tf.ragged.range(context_ids.row_lengths()) < tf.expand_dims(
    tf.cast(budget, context_ids.row_splits.dtype), 1
  )
  return tokenizer.pack(
    question_ids, tf.ragged.boolean_mask(context_ids, keep), max_seq_length=max_seq_length
  )


def pack_tagging(tokenizer, ids, max_seq_length):
  """The tagging featuriser's layout: `[CLS] sentence [SEP]`, segment ids 1."""
  packed = tokenizer.pack(ids, max_seq_length=max_seq_length)
  packed["segment_ids"] = packed["input_mask"]
  return packed


# The original's question budget (`max_query_length`).
DEFAULT_MAX_QUERY_LENGTH = 64


def largest_question_budget(max_seq_length):
  """S - 4: the longest question budget that leaves room for a context token."""
  return int(max_seq_length) - 4


def question_budget(max_seq_length, recorded=DEFAULT_MAX_QUERY_LENGTH):
  """The question budget at `max_seq_length` when none is given: `recorded`
  (a QA trial's `max_query_length`, else the original's 64), cut to
  `largest_question_budget`."""
  return max(1, min(int(recorded), largest_question_budget(max_seq_length)))


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTextPreprocessor(keras.layers.Layer):
  """Tokenises one or two text segments in-graph and packs them as the
  original's featurisers do: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`,
  truncated like `_truncate_seq_pair`, padded to `max_seq_length`.

  Args:
    tokenizer: an `ElectraTokenizer` or a `SentencePieceTokenizer` (or its
      config dict).
    max_seq_length: S, the packed length.
    packing: `"pair"` (one or two segments, the classification featuriser),
      `"question_context"` (always two: the question cut to
      `max_query_length` tokens, the context to the rest, as `pack_question_context`)
      or `"tagging"` (one segment, segment ids 1, as `pack_tagging`).
    max_query_length: the question budget of `"question_context"` (the
      original's 64; None: 64, or less where S leaves no room for a
      context token: S - 4). A budget above S - 4 is refused.
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

  def __init__(
    self, tokenizer, max_seq_length=128, packing="pair", max_query_length=None, **kwargs
  ):
    kwargs.setdefault("trainable", False)
    super().__init__(**kwargs)
    if isinstance(tokenizer, dict):
      tokenizer = keras.saving.deserialize_keras_object(tokenizer)
    if max_query_length is None and isinstance(max_seq_length, numbers.Integral):
      max_query_length = question_budget(max_seq_length)
    for name, value in (("max_seq_length", max_seq_length), ("max_query_length", max_query_length)):
      if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}={value!r}; expected an integer")
    if max_seq_length < 3:
      raise ValueError(f"max_seq_length={max_seq_length}; expected at least 3")
    if packing not in PACKINGS:
      raise ValueError(f"packing={packing!r}; expected one of {PACKINGS}")
    if max_query_length < 1:
      raise ValueError(f"max_query_length={max_query_length}; expected at least 1")
    largest = largest_question_budget(max_seq_length)
    if packing == "question_context" and max_query_length > largest:
      raise ValueError(
        f"max_query_length={max_query_length} leaves no room for the context in "
        f"max_seq_length={max_seq_length}; expected at most {largest}"
      )
    self.tokenizer = tokenizer
    self.max_seq_length = int(max_seq_length)
    self.packing = packing
    self.max_query_length = int(max_query_length)

  @classmethod
  def from_vocab_file(
    cls, vocab_file, max_seq_length=128, do_lower_case=None, strip_accents=None, **kwargs
  ):
    """A preprocessor whose vocabulary (a WordPiece vocab.txt's tokens or a
    SentencePiece model's bytes) is stored in its config. `do_lower_case` and
    `strip_accents` None apply what the vocab was built with; a bool that
    contradicts the vocab's settings file raises `VocabSettingsConflict`."""
    kind = vocab_lib.vocab_kind(vocab_file)
    do_lower_case, strip_accents = vocab_lib.resolve_normalisation(
      vocab_file, do_lower_case, strip_accents, kind
    )
    if kind == vocab_lib.SENTENCEPIECE:
      tokenizer = SentencePieceTokenizer(
        proto=vocab_lib.load_vocab(vocab_file).proto,
        do_lower_case=do_lower_case,
        strip_accents=strip_accents,
      )
      return cls(tokenizer, max_seq_length=max_seq_length, **kwargs)
    with tf.io.gfile.GFile(vocab_file, "r") as f:
      vocabulary = [line.rstrip("\n") for line in f]
    while vocabulary and not vocabulary[-1]:
      vocabulary.pop()
    # Checked here, where the file is known (the tokenizer sees a list).
    vocab_lib.check_special_tokens({t: i for i, t in enumerate(vocabulary)}, vocab_file)
    tokenizer = ElectraTokenizer(
      vocabulary=vocabulary, do_lower_case=do_lower_case, strip_accents=strip_accents
    )
    return cls(tokenizer, max_seq_length=max_seq_length, **kwargs)

  def call(self, inputs):
    if isinstance(inputs, dict):
      return {k: tf.cast(inputs[k], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    if isinstance(inputs, (tuple, list)) and len(inputs) == 1:
      inputs = inputs[0]
    segments = len(inputs) if isinstance(inputs, (tuple, list)) else 1
    expected = {"pair": (1, 2), "question_context": (2,), "tagging": (1,)}[self.packing]
    if segments not in expected:
      raise ValueError(
        f"{self.packing!r} packing takes {' or '.join(map(str, expected))} text segment(s) "
        f"per example, got {segments}"
        + (" (questions, contexts)" if self.packing == "question_context" else "")
      )
    for part in inputs if segments == 2 else (inputs,):
      shape = getattr(part, "shape", None)
      rank = getattr(shape, "rank", None)
      # Flattened, [B, 3] texts would give 3 rows per example ([B, 1] is one text a row).
      if rank is not None and (rank > 2 or (rank == 2 and shape[-1] != 1)):
        raise ValueError(
          f"ElectraTextPreprocessor takes a batch of texts (shape [B] or [B, 1]) per segment; "
          f"got shape {list(shape)}: one text per row, pairs as (text_a, text_b)"
        )
    s = self.max_seq_length
    if segments == 1:
      ids = self.tokenizer(tf.reshape(inputs, [-1]))
      if self.packing == "tagging":
        return pack_tagging(self.tokenizer, ids, s)
      return self.tokenizer.pack(ids, max_seq_length=s)
    text_a, text_b = (tf.reshape(t, [-1]) for t in inputs)
    ids = self.tokenizer(tf.concat([text_a, text_b], axis=0))
    n = tf.shape(text_a, out_type=tf.int64)[0]
    if self.packing == "question_context":
      return pack_question_context(self.tokenizer, ids[:n], ids[n:], s, self.max_query_length)
    return self.tokenizer.pack(ids[:n], ids[n:], max_seq_length=s)

  def token_ids(self, texts):
    """The WordPiece ids of each text, as Python lists (eager)."""
    texts = as_strings(texts)
    return self.tokenizer(tf.constant(texts, tf.string)).to_list() if texts else []

  @property
  def sentencepiece(self):
    """Whether the tokenizer is a SentencePiece model's."""
    return isinstance(self.tokenizer, SentencePieceTokenizer)

  def piece_spans(self, texts):
    """Each text's ids and the characters each piece stands for (eager; a
    SentencePiece tokenizer only: `SentencePieceTokenizer.tokenize_with_offsets`)."""
    return self.tokenizer.tokenize_with_offsets(as_strings(texts))

  def word_pieces(self, texts):
    """How each text's whitespace-separated words tokenise (in Python, eager).
    A SentencePiece model tokenises the whole text and each piece goes to the
    word its characters are in (a piece of only `▁`, to the word after it).

    Args:
      texts: a list (or 1-D array/tensor) of strings.

    Returns:
      one `(spans, piece_ids)` per text: the words' `(start, end)` character
      offsets in the text and each word's list of WordPiece ids (possibly
      empty, e.g. for a word of control characters).
    """
    texts = as_strings(texts)
    spans = [[m.span() for m in _WORD.finditer(t)] for t in texts]
    if self.sentencepiece:
      return [
        (row, _group_by_word(row, ids, piece_spans))
        for row, (ids, piece_spans) in zip(spans, self.piece_spans(texts))
      ]
    pieces = self.token_ids([t[a:b] for t, row in zip(texts, spans) for a, b in row])
    ends = np.cumsum([len(row) for row in spans], dtype=int)
    return [(row, pieces[end - len(row) : end]) for row, end in zip(spans, ends)]

  def get_config(self):
    config = super().get_config()
    config.update(
      tokenizer=keras.saving.serialize_keras_object(self.tokenizer),
      max_seq_length=self.max_seq_length,
      packing=self.packing,
      max_query_length=self.max_query_length,
    )
    return config


def _group_by_word(words, ids, spans):
  """`ids` split into one list per word of `words` (character spans): a piece
  goes to the first word that ends after it starts, else to the last word."""
  ends = [end for _, end in words]
  grouped = [[] for _ in words]
  for piece_id, (start, _) in zip(ids, spans):
    if grouped:
      grouped[min(int(np.searchsorted(ends, start, "right")), len(grouped) - 1)].append(piece_id)
  return grouped


def as_strings(texts):
  """A list, 1-D array or string tensor of texts → a list of `str`; nested
  lists (say, lists of words) are refused."""
  if isinstance(texts, tf.Tensor):
    texts = texts.numpy()
  array = np.asarray(texts, dtype=object)
  items = array.reshape(-1)
  if array.ndim > 1 or any(isinstance(t, (list, tuple, np.ndarray)) for t in items):
    raise ValueError(
      "expected a 1-D batch of texts, one string each (join a sentence's words with spaces); "
      f"got nested lists or an array of shape {array.shape}"
    )
  not_text = [t for t in items if not isinstance(t, (str, bytes))]
  if not_text:
    # str() would make a text of it ("123", "None") and predict on that.
    raise ValueError(f"expected texts (str); got a {type(not_text[0]).__name__} ({not_text[0]!r})")
  return [t.decode("utf-8", "replace") if isinstance(t, bytes) else t for t in items]
