"""In-graph SentencePiece tokenizer (tensorflow-text), beside the WordPiece `ElectraTokenizer`.

The text goes to the model untouched (no BERT basic tokenisation), but
lower-cased and stripped of accents where the vocab was built so
(`electra_tf.text.vocab.vocab_settings`).
"""

import base64
import difflib

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf.text.packing import TokenizerLayer
from electra_tf.text.vocab import SENTENCEPIECE
from electra_tf.text.vocab import check_special_tokens
from electra_tf.text.vocab import load_vocab
from electra_tf.text.vocab import sentencepiece_vocab_of
from electra_tf.text.vocab import vocab_kind
from electra_tf.text.vocab import vocab_settings
from electra_tf.utils import keras_compat


def _proto_bytes(proto):
  """`proto` as bytes: raw model bytes, or their base64 text (get_config's)."""
  if isinstance(proto, str):
    return base64.b64decode(proto.encode("ascii"))
  return bytes(proto)


def normalize_text(inputs, do_lower_case, strip_accents):
  """What a SentencePiece model sees of strings [B]: lower-cased (Unicode)
  and without combining marks (NFD, marks dropped, NFC) where asked.

  Example:
  >>> normalize_text(tf.constant(["Köln ÉLAN"]), True, True).numpy().tolist()
  [b'koln elan']
  """
  strings = tf.convert_to_tensor(inputs, tf.string)
  if not (do_lower_case or strip_accents):
    return strings
  # Invalid UTF-8 becomes U+FFFD first: the Unicode ops below refuse it.
  strings = tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="replace")
  if do_lower_case:
    strings = tf.strings.lower(strings, encoding="utf-8")
  if strip_accents:
    strings = tf_text.normalize_utf8(strings, "NFD")
    strings = tf.strings.regex_replace(strings, r"\p{Mn}", "")
    strings = tf_text.normalize_utf8(strings, "NFC")
  return strings


@keras.saving.register_keras_serializable(package="electra_tf")
class SentencePieceTokenizer(TokenizerLayer):
  """Strings → SentencePiece ids, with `ElectraTokenizer`'s surface.

  Args:
    model_file: path of the SentencePiece model (`.model`). Either this or
      `proto` must be given.
    proto: the model's bytes (or their base64 text, as `get_config` gives).
    do_lower_case: lower-case (Unicode) before the model; None: as the
      model's settings file says (off without one).
    strip_accents: drop combining marks before the model; None: likewise.
    **kwargs: standard Keras layer arguments.

  Call arguments:
    inputs: a string tensor [B] (or a scalar).

  Returns:
    A `tf.RaggedTensor` of int32 ids, [B, None] ([None] for a scalar).

  Example:

  >>> from electra_tf.text.vocab import train_sentencepiece
  >>> model = train_sentencepiece(["Grüße aus Köln", "Guten Morgen, Köln"] * 20, 40)
  >>> tok = SentencePieceTokenizer(proto=model)
  >>> ids = tok(tf.constant(["Guten Morgen"]))
  >>> tok.detokenize(ids).numpy().tolist()
  [b'Guten Morgen']
  >>> packed = tok.pack(ids, max_seq_length=8)
  >>> int(packed["input_ids"][0, 0]) == tok.cls_id
  True
  """

  def __init__(self, model_file=None, proto=None, do_lower_case=None, strip_accents=None, **kwargs):
    kwargs.setdefault("trainable", False)
    super().__init__(**kwargs)
    if (model_file is None) == (proto is None):
      raise ValueError("SentencePieceTokenizer needs exactly one of `model_file` and `proto`")
    if model_file is not None:
      if vocab_kind(model_file) != SENTENCEPIECE:
        raise ValueError(
          f"vocab file {model_file!r} is a WordPiece vocab.txt, not a SentencePiece model; "
          "use electra_tf.text.tokenizer_for (or ElectraTokenizer)"
        )
      vocab = load_vocab(model_file)
      settings = vocab_settings(model_file, SENTENCEPIECE)
      source = model_file
    else:
      vocab = sentencepiece_vocab_of(_proto_bytes(proto))
      settings = {"do_lower_case": False, "strip_accents": False}
      source = "<proto argument>"
    check_special_tokens(vocab, source)
    self.model_file = model_file
    self.proto = None if proto is None else _proto_bytes(proto)
    self.model_bytes = bytes(vocab.proto)
    self.do_lower_case = bool(settings["do_lower_case"] if do_lower_case is None else do_lower_case)
    self.strip_accents = bool(settings["strip_accents"] if strip_accents is None else strip_accents)
    self.vocab = dict(vocab)
    self.vocab_size = len(vocab)
    special = vocab.special_ids
    self.pad_id = special["pad"]
    self.unk_id = special["unk"]
    self.cls_id = special["cls"]
    self.sep_id = special["sep"]
    self.mask_id = special["mask"]
    self._sentencepiece = keras_compat.sentencepiece_tokenizer(vocab.proto, tf.int32)

  @property
  def vocab_file(self):
    """The model's path (None when built from `proto`), as `ElectraTokenizer.vocab_file`."""
    return self.model_file

  def normalize(self, inputs):
    """What the model sees (`normalize_text` with this tokenizer's settings)."""
    return normalize_text(inputs, self.do_lower_case, self.strip_accents)

  def _tokenize_batch(self, inputs):
    return self._sentencepiece.tokenize(self.normalize(inputs)).with_row_splits_dtype(tf.int64)

  def tokenize_with_offsets(self, texts):
    """Each text's ids (`call`'s) with the characters each piece stands for (eager).

    A piece's span `(start, end)` indexes the text as given, without the
    whitespace its `▁` stands for: `text[start:end]` is the piece's own text
    as written. A piece that is only `▁` has an empty span.

    Args:
      texts: a list of `str`.

    Returns:
      one `(ids, spans)` per text: lists of int and of `(start, end)`.

    Example:
    >>> from electra_tf.text.vocab import train_sentencepiece
    >>> tok = SentencePieceTokenizer(proto=train_sentencepiece(["Guten Morgen, Köln"] * 20, 30))
    >>> text = "Morgen  Köln"
    >>> ids, spans = tok.tokenize_with_offsets([text])[0]
    >>> ids == tok(tf.constant([text])).to_list()[0]
    True
    >>> "".join(text[a:b] for a, b in spans)  # the text as written, but its spaces
    'MorgenKöln'
    """
    texts = [str(t) for t in texts]
    if not texts:
      return []
    normalized = self.normalize(tf.constant(texts, tf.string))
    ids, starts, ends = self._sentencepiece.tokenize_with_offsets(normalized)
    ids = ids.with_row_splits_dtype(tf.int64)
    rows = zip(texts, normalized.numpy(), ids.to_list(), starts.to_list(), ends.to_list())
    out = []
    for text, seen, row_ids, row_starts, row_ends in rows:
      seen = seen.decode("utf-8", "replace")
      to_text = self._origins(text, seen)
      # Byte offsets into what the model saw → its characters → `text`'s.
      first_byte = np.cumsum([0] + [len(c.encode("utf-8")) for c in seen])
      spans = []
      for start, end in zip(row_starts, row_ends):
        start = int(np.searchsorted(first_byte, start, "right")) - 1
        end = int(np.searchsorted(first_byte, end, "left"))
        start, end = to_text[start], to_text[end]
        while start < end and text[start].isspace():
          start += 1
        spans.append((start, end))
      out.append((row_ids, spans))
    return out

  def _origins(self, text, seen):
    """For each position of `seen` (`text` normalised) and its end, the
    position in `text` it comes from."""
    if seen == text:
      return list(range(len(text) + 1))
    # Normalised one character at a time, each output character knows its origin.
    pieces = [p.decode("utf-8", "replace") for p in self.normalize(tf.constant(list(text))).numpy()]
    joined = "".join(pieces)
    origin = [i for i, p in enumerate(pieces) for _ in p] + [len(text)]
    if joined == seen:
      return origin
    # Context-dependent normalising (rare: a final sigma, Hangul jamo): align.
    to_joined = [0] * (len(seen) + 1)
    to_joined[-1] = len(joined)
    matcher = difflib.SequenceMatcher(None, joined, seen, autojunk=False)
    for _, i1, i2, j1, j2 in matcher.get_opcodes():
      for j in range(j1, j2):
        to_joined[j] = min(i1 + (j - j1), max(i1, i2 - 1))
    return [origin[j] for j in to_joined]

  def detokenize(self, ids):
    """Ids (ragged [B, None]) back to strings [B] (the normalised text)."""
    return self._sentencepiece.detokenize(ids)

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "model_file": self.model_file,
        "proto": None if self.proto is None else base64.b64encode(self.proto).decode("ascii"),
        "do_lower_case": self.do_lower_case,
        "strip_accents": self.strip_accents,
      }
    )
    return config
