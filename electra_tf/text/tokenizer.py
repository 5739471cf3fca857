"""In-graph WordPiece tokenizer with the original's exact behaviour (`model/tokenization.py`).

tensorflow-text's `BertTokenizer` differs from the original in many places
(Unicode classes, no 200-character rule, no Greek final sigma...), so this
layer does the whole `BasicTokenizer` itself, through per-code-point tables
computed from Python's `unicodedata`, and only hands the finished words to
`text.FastWordpieceTokenizer`. Known gap: NFD's canonical reordering of the
non-Mn combining marks that survive accent stripping is not applied.
"""

import functools
import logging
import os
import unicodedata

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf.text import wordpiece as tokenization
from electra_tf.text.packing import TokenizerLayer
from electra_tf.text.vocab import SentencePieceVocab
from electra_tf.text.vocab import check_special_tokens
from electra_tf.text.vocab import load_vocab
from electra_tf.utils.file_io import atomic_path

_MAX_CODE_POINT = 0x110000
_BLOCK = 256
_SPACE = 0x20
_CAPITAL_SIGMA = 0x3A3
MAX_PIECE_BYTES = 256  # FastWordpieceTokenizer's limit per vocab token
_FINAL_SIGMA = 0x3C2
# Context classes for the final-sigma rule of Python's str.lower.
_SIGMA_OTHER, _SIGMA_CASED, _SIGMA_IGNORABLE = 0, 1, 2


def fits_piece_limit(token):
  """Whether a vocab token (without its "##") fits `MAX_PIECE_BYTES` UTF-8
  bytes; a longer one is never produced."""
  return len(token.removeprefix("##").encode("utf-8")) <= MAX_PIECE_BYTES


def _two_level(table):
  """Compresses a dense per-code-point int32 table into (index, blocks)."""
  blocks = table.reshape(-1, _BLOCK)
  unique, index = np.unique(blocks, axis=0, return_inverse=True)
  return index.astype(np.int32).reshape(-1), unique.astype(np.int32).reshape(-1)


def _char_image(char, do_lower_case, strip_accents):
  """The code points `char` turns into (None = unchanged)."""
  cp = ord(char)
  if cp == 0 or cp == 0xFFFD or tokenization._is_control(char):
    return []
  # Zl/Zp are not BERT whitespace but str.split() splits on them.
  if tokenization._is_whitespace(char) or char.isspace():
    return [_SPACE]
  piece = char
  if do_lower_case:
    piece = piece.lower()
    if strip_accents:
      piece = tokenization._run_strip_accents(piece)
  out = []
  for c in piece:
    if tokenization._is_punctuation(c):
      out.extend((_SPACE, ord(c), _SPACE))
    elif c.isspace():
      out.append(_SPACE)
    else:
      out.append(ord(c))
  if tokenization._is_chinese_char(cp):
    out = [_SPACE] + out + [_SPACE]
  return None if out == [cp] else out


_TABLES_FORMAT = 1


def _cache_path(do_lower_case, strip_accents):
  root = os.environ.get("ELECTRA_TF_CACHE_DIR") or os.path.join(
    os.path.expanduser("~"), ".cache", "electra_tf"
  )
  name = (
    f"tokenizer_tables_v{_TABLES_FORMAT}_unicode{unicodedata.unidata_version}"
    f"_lower{int(do_lower_case)}_strip{int(strip_accents)}.npz"
  )
  return os.path.join(root, name)


@functools.lru_cache(maxsize=4)
def _build_tables(do_lower_case, strip_accents):
  """`_compute_tables`, cached on disk (they take seconds to compute)."""
  path = _cache_path(do_lower_case, strip_accents)
  try:
    with np.load(path) as data:
      return {k: data[k] for k in data.files}
  except (OSError, ValueError, KeyError):
    pass
  tables = _compute_tables(do_lower_case, strip_accents)
  try:
    with atomic_path(path) as temp, open(temp, "wb") as f:
      np.savez(f, **tables)
  except OSError as e:  # a read-only home is fine: just slower next time
    logging.info("could not cache tokenizer tables at %s: %s", path, e)
  return tables


def _compute_tables(do_lower_case, strip_accents):
  """Two-level compressed per-code-point tables: `image_index/image_blocks`
  (−1 = unchanged, else a row of `image_values` split by `image_splits`) and
  `sigma_index/sigma_blocks` (final-sigma context class)."""
  image_code = np.full([_MAX_CODE_POINT], -1, np.int32)
  sigma_class = np.zeros([_MAX_CODE_POINT], np.int32)
  values, splits = [], [0]
  for cp in range(_MAX_CODE_POINT):
    char = chr(cp)
    image = _char_image(char, do_lower_case, strip_accents)
    if image is not None:
      image_code[cp] = len(splits) - 1
      values.extend(image)
      splits.append(len(values))
    if image == []:
      # Dropped characters are invisible to the context scans.
      sigma_class[cp] = _SIGMA_IGNORABLE
    elif do_lower_case:
      # Python's own final-sigma scan classifies `char`; probe it directly.
      if (" " + char + "\u03a3").lower()[-1] == "\u03c2":
        sigma_class[cp] = _SIGMA_CASED
      elif ("A" + char + "\u03a3").lower()[-1] == "\u03c2":
        sigma_class[cp] = _SIGMA_IGNORABLE
  image_index, image_blocks = _two_level(image_code)
  sigma_index, sigma_blocks = _two_level(sigma_class)
  return {
    "image_index": image_index,
    "image_blocks": image_blocks,
    "image_values": np.asarray(values, np.int32),
    "image_splits": np.asarray(splits, np.int32),
    "sigma_index": sigma_index,
    "sigma_blocks": sigma_blocks,
  }


def _lookup(index, blocks, cps):
  return tf.gather(blocks, tf.gather(index, cps // _BLOCK) * _BLOCK + cps % _BLOCK)


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTokenizer(TokenizerLayer):
  """Strings → WordPiece ids, identical to the original `FullTokenizer`.

  Args:
    vocab_file: path of the WordPiece vocab. Either this or `vocabulary`
      must be given.
    vocabulary: the vocab as a list of tokens (id = position).
    do_lower_case: lower-case the text.
    strip_accents: strip accents (only effective when lower-casing, a quirk
      of the original kept on purpose; docs/differences.md).
    max_input_chars_per_word: words longer than this become `[UNK]`.
    **kwargs: standard Keras layer arguments.

  Call arguments:
    inputs: a string tensor of any rank-1 shape [B] (or a scalar).

  Returns:
    A `tf.RaggedTensor` of int32 token ids, [B, None] ([None] for a scalar).

  Example:

  >>> tok = ElectraTokenizer(vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]",
  ...                                    "[MASK]", "hello", "!"])
  >>> tok(tf.constant(["Hello!"])).to_list()
  [[5, 6]]
  """

  def __init__(
    self,
    vocab_file=None,
    vocabulary=None,
    do_lower_case=True,
    strip_accents=True,
    max_input_chars_per_word=200,
    **kwargs,
  ):
    kwargs.setdefault("trainable", False)
    super().__init__(**kwargs)
    if (vocab_file is None) == (vocabulary is None):
      raise ValueError("ElectraTokenizer needs exactly one of `vocab_file` and `vocabulary`")
    if vocab_file is not None:
      vocab = load_vocab(vocab_file)
      if isinstance(vocab, SentencePieceVocab):
        raise ValueError(
          f"vocab file {vocab_file!r} is a SentencePiece model, not a WordPiece vocab.txt; "
          "use electra_tf.text.tokenizer_for (or SentencePieceTokenizer)"
        )
      source = vocab_file
      tokens = [None] * (max(vocab.values()) + 1 if vocab else 0)
      for token, index in vocab.items():
        tokens[index] = token
    else:
      tokens = [str(t).strip() for t in vocabulary]
      vocab = {t: i for i, t in enumerate(tokens)}
      source = "<vocabulary argument>"
    check_special_tokens(vocab, source)
    self.vocab_file = vocab_file
    self.vocabulary = None if vocabulary is None else list(vocabulary)
    self.do_lower_case = bool(do_lower_case)
    self.strip_accents = bool(strip_accents)
    self.max_input_chars_per_word = int(max_input_chars_per_word)
    self.vocab = dict(vocab)
    self.unk_id = vocab["[UNK]"]
    self.cls_id = vocab["[CLS]"]
    self.sep_id = vocab["[SEP]"]
    self.mask_id = vocab["[MASK]"]
    self.pad_id = vocab.get("[PAD]", 0)
    self.vocab_size = len(tokens)
    self._id_tokens = tokens

    # An id whose token is empty or shadowed by a later duplicate must never
    # be produced: it gets a token no normalised word holds (U+FFFF is dropped).
    wordpiece_vocab = []
    for index, token in enumerate(tokens):
      if token is None or token == "" or vocab.get(token) != index:
        wordpiece_vocab.append(f"\uffff{index}")
      elif not fits_piece_limit(token):
        # FastWordpieceTokenizer cannot hold such a piece; real vocabs have none.
        logging.warning(
          "vocab token %d is longer than %d UTF-8 bytes and will never be produced",
          index,
          MAX_PIECE_BYTES,
        )
        wordpiece_vocab.append(f"\uffff{index}")
      else:
        wordpiece_vocab.append(token)
    fast_wordpiece = functools.partial(
      tf_text.FastWordpieceTokenizer,
      vocab=wordpiece_vocab,
      suffix_indicator="##",
      token_out_type=tf.int32,
      unknown_token="[UNK]",
    )
    # The original's limit counts characters; ours is applied separately, so
    # the byte limit must never bite first (4 bytes per character).
    self._wordpiece = fast_wordpiece(
      max_bytes_per_word=4 * self.max_input_chars_per_word + 8, no_pretokenization=True
    )
    self._ascii_wordpiece = fast_wordpiece(
      max_bytes_per_word=self.max_input_chars_per_word, no_pretokenization=False
    )

    tables = _build_tables(self.do_lower_case, self.do_lower_case and self.strip_accents)
    self._tables = {k: tf.constant(v) for k, v in tables.items()}

  def normalize_words(self, inputs):
    """The `BasicTokenizer` part: strings [B] → ragged words [B, None]."""
    inputs = tf.convert_to_tensor(inputs, tf.string)
    cps = tf.strings.unicode_decode(inputs, "UTF-8", errors="replace", replacement_char=0xFFFD)
    flat = cps.flat_values
    row_splits = cps.row_splits
    t = self._tables
    if self.do_lower_case:
      flat = self._apply_final_sigma(flat, cps.value_rowids(), row_splits)
    code = _lookup(t["image_index"], t["image_blocks"], flat)
    changed = code >= 0
    safe_code = tf.maximum(code, 0)
    starts = tf.gather(t["image_splits"], safe_code)
    image_len = tf.where(changed, tf.gather(t["image_splits"], safe_code + 1) - starts, 1)
    out_ends = tf.cumsum(image_len)
    out_starts = out_ends - image_len
    source = tf.repeat(tf.range(tf.size(flat)), image_len)
    slot = tf.range(tf.size(source)) - tf.gather(out_starts, source)
    from_table = tf.gather(t["image_values"], tf.gather(starts, source) + slot)
    values = tf.where(tf.gather(changed, source), from_table, tf.gather(flat, source))
    out_splits = tf.gather(tf.concat([[0], out_ends], 0), row_splits)
    normalized = tf.RaggedTensor.from_row_splits(values, out_splits, validate=False)
    strings = tf.strings.unicode_encode(normalized, "UTF-8")
    words = tf.strings.split(strings, sep=" ")
    return tf.ragged.boolean_mask(words, tf.strings.length(words) > 0)

  def _apply_final_sigma(self, flat, row_ids, row_splits):
    """Replaces each capital sigma that Python would lower to "ς" by "ς"."""
    t = self._tables
    sigma_pos = tf.cast(tf.where(tf.equal(flat, _CAPITAL_SIGMA))[:, 0], tf.int32)

    def fix():
      cls = _lookup(t["sigma_index"], t["sigma_blocks"], flat)
      visible = tf.not_equal(cls, _SIGMA_IGNORABLE)
      visible_pos = tf.cast(tf.where(visible)[:, 0], tf.int32)
      n_visible = tf.size(visible_pos)
      count_through = tf.cumsum(tf.cast(visible, tf.int32))
      k = tf.gather(count_through, sigma_pos)  # visible chars at or before
      # A capital sigma is itself visible, so the previous visible char is the
      # (k-1)-th-from-1 entry and the next one is the (k)-th (0-based).
      prev_pos = tf.gather(visible_pos, tf.maximum(k - 2, 0))
      next_pos = tf.gather(visible_pos, tf.minimum(k, n_visible - 1))
      row = tf.gather(row_ids, sigma_pos)
      row_start = tf.cast(tf.gather(row_splits, row), tf.int32)
      row_end = tf.cast(tf.gather(row_splits, row + 1), tf.int32)
      has_prev = (k >= 2) & (prev_pos >= row_start)
      has_next = (k < n_visible) & (next_pos < row_end)
      prev_cased = has_prev & tf.equal(tf.gather(cls, prev_pos), _SIGMA_CASED)
      next_cased = has_next & tf.equal(tf.gather(cls, next_pos), _SIGMA_CASED)
      final = prev_cased & ~next_cased
      return tf.tensor_scatter_nd_update(
        flat,
        tf.expand_dims(tf.boolean_mask(sigma_pos, final), 1),
        tf.fill([tf.reduce_sum(tf.cast(final, tf.int32))], _FINAL_SIGMA),
      )

    return tf.cond(tf.size(sigma_pos) > 0, fix, lambda: flat)

  def _tokenize_ascii(self, strings):
    """Ids of printable-ASCII strings (tab and CR allowed): for them the
    `BasicTokenizer` is FastWordpieceTokenizer's own pre-tokenization."""
    if self.do_lower_case:
      strings = tf.strings.lower(strings)
    return self._ascii_wordpiece.tokenize(strings)

  def _tokenize_other(self, strings):
    """Ids of any strings, through the per-code-point tables."""
    words = self.normalize_words(strings)
    n_chars = tf.strings.length(words.flat_values, unit="UTF8_CHAR")
    words = words.with_flat_values(
      tf.where(n_chars > self.max_input_chars_per_word, "[UNK]", words.flat_values)
    )
    return self._wordpiece.tokenize(words).merge_dims(1, 2)

  def _tokenize_batch(self, inputs):
    # Most text is ASCII: it takes the fast path, the rest the tables.
    is_ascii = tf.strings.regex_full_match(inputs, "[\\t\\r\\x20-\\x7e]*")
    index = tf.range(tf.size(inputs))
    ascii_index = tf.boolean_mask(index, is_ascii)
    other_index = tf.boolean_mask(index, ~is_ascii)
    ascii_ids = self._tokenize_ascii(tf.gather(inputs, ascii_index))
    other_ids = self._tokenize_other(tf.gather(inputs, other_index))
    both = tf.concat(
      [ascii_ids.with_row_splits_dtype(tf.int64), other_ids.with_row_splits_dtype(tf.int64)], axis=0
    )
    order = tf.math.invert_permutation(tf.concat([ascii_index, other_index], 0))
    return tf.gather(both, order)

  def id_tokens(self):
    """The vocab's tokens in id order, however the vocab was given."""
    return list(self._id_tokens)

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "vocab_file": self.vocab_file,
        "vocabulary": self.vocabulary,
        "do_lower_case": self.do_lower_case,
        "strip_accents": self.strip_accents,
        "max_input_chars_per_word": self.max_input_chars_per_word,
      }
    )
    return config
