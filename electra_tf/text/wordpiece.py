"""The original's WordPiece tokenizer in pure Python (`model/tokenization.py`):
the reference the in-graph `ElectraTokenizer` is tested against, and the
featuriser fine-tuning uses."""

import unicodedata

from electra_tf.text.vocab import SentencePieceVocab
from electra_tf.text.vocab import Vocab
from electra_tf.text.vocab import load_vocab

# Code points BERT treats as CJK ideographs (Hangul, Hiragana and Katakana are
# deliberately absent: they are written with spaces between words).
CJK_RANGES = (
  (0x4E00, 0x9FFF),
  (0x3400, 0x4DBF),
  (0x20000, 0x2A6DF),
  (0x2A700, 0x2B73F),
  (0x2B740, 0x2B81F),
  (0x2B820, 0x2CEAF),
  (0xF900, 0xFAFF),
  (0x2F800, 0x2FA1F),
)

# ASCII ranges counted as punctuation although Unicode files some of them
# under symbols (e.g. "$", "^", "`").
ASCII_PUNCTUATION_RANGES = ((33, 47), (58, 64), (91, 96), (123, 126))


def convert_to_unicode(text):
  """Returns `text` as str; bytes are decoded as UTF-8, bad bytes ignored."""
  if isinstance(text, str):
    return text
  if isinstance(text, bytes):
    return text.decode("utf-8", "ignore")
  raise ValueError(f"Unsupported string type: {type(text)}")


def _is_whitespace(char):
  """Space, tab, newline, carriage return or Unicode category Zs."""
  return char in (" ", "\t", "\n", "\r") or unicodedata.category(char) == "Zs"


def _is_control(char):
  """Unicode category C* except tab, newline and carriage return."""
  return char not in ("\t", "\n", "\r") and unicodedata.category(char).startswith("C")


def _is_punctuation(char):
  """ASCII 33-47, 58-64, 91-96, 123-126, or Unicode category P*."""
  cp = ord(char)
  for low, high in ASCII_PUNCTUATION_RANGES:
    if low <= cp <= high:
      return True
  return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
  for low, high in CJK_RANGES:
    if low <= cp <= high:
      return True
  return False


def _clean_text(text):
  """Drops NUL, U+FFFD and control characters; maps whitespace to " "."""
  output = []
  for char in text:
    cp = ord(char)
    if cp == 0 or cp == 0xFFFD or _is_control(char):
      continue
    output.append(" " if _is_whitespace(char) else char)
  return "".join(output)


def _tokenize_chinese_chars(text):
  """Puts a space on both sides of every CJK ideograph."""
  output = []
  for char in text:
    if _is_chinese_char(ord(char)):
      output.extend((" ", char, " "))
    else:
      output.append(char)
  return "".join(output)


def _run_strip_accents(text):
  """NFD, then drop the non-spacing marks (category Mn)."""
  text = unicodedata.normalize("NFD", text)
  return "".join(c for c in text if unicodedata.category(c) != "Mn")


def _run_split_on_punc(text):
  """Splits `text` so that every punctuation character is its own piece."""
  pieces = []
  start_new_piece = True
  for char in text:
    if _is_punctuation(char):
      pieces.append([char])
      start_new_piece = True
    else:
      if start_new_piece:
        pieces.append([])
      start_new_piece = False
      pieces[-1].append(char)
  return ["".join(piece) for piece in pieces]


class BasicTokenizer:
  """Cleaning, CJK spacing, lower-casing/accent stripping, punctuation split.

  Args:
    do_lower_case: lower-case every token.
    strip_accents: NFD + drop category Mn; only applied when `do_lower_case`
      is also true (a quirk of the original, see docs/differences.md).

  Example:

  >>> BasicTokenizer().tokenize("Héllo, [MASK]!")
  ['hello', ',', '[', 'mask', ']', '!']
  """

  def __init__(self, do_lower_case=True, strip_accents=True):
    self.do_lower_case = do_lower_case
    self.strip_accents = strip_accents

  def tokenize(self, text):
    text = _tokenize_chinese_chars(_clean_text(convert_to_unicode(text)))
    split_tokens = []
    # str.split() splits on Python's whitespace, as the original's whitespace_tokenize.
    for token in text.split():
      if self.do_lower_case:
        token = token.lower()
        if self.strip_accents:
          token = _run_strip_accents(token)
      split_tokens.extend(_run_split_on_punc(token))
    return " ".join(split_tokens).split()


class WordpieceTokenizer:
  """Greedy longest-match-first WordPiece.

  Args:
    vocab: a mapping token -> id (only membership is used).
    unk_token: emitted for a word that cannot be covered by vocab pieces.
    max_input_chars_per_word: words longer than this become `unk_token`.

  Example:

  >>> WordpieceTokenizer({"un": 0, "##aff": 1, "##able": 2}).tokenize("unaffable")
  ['un', '##aff', '##able']
  """

  def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
    self.vocab = vocab
    self.unk_token = unk_token
    self.max_input_chars_per_word = max_input_chars_per_word

  def tokenize(self, text):
    text = convert_to_unicode(text)
    output_tokens = []
    for token in text.split():
      if len(token) > self.max_input_chars_per_word:
        output_tokens.append(self.unk_token)
        continue
      sub_tokens = []
      start = 0
      while start < len(token):
        end = len(token)
        piece = None
        while start < end:
          candidate = token[start:end]
          if start > 0:
            candidate = "##" + candidate
          if candidate in self.vocab:
            piece = candidate
            break
          end -= 1
        if piece is None:
          # No prefix of the remainder is a piece: the whole word is unknown.
          sub_tokens = [self.unk_token]
          break
        sub_tokens.append(piece)
        start = end
      output_tokens.extend(sub_tokens)
    return output_tokens


class FullTokenizer:
  """BasicTokenizer followed by WordpieceTokenizer, with id conversion.

  Args:
    vocab_file: WordPiece vocab, one token per line, or its `vocab.Vocab`.
    do_lower_case: lower-case the text.
    strip_accents: strip accents (only when lower-casing).

  Usage (needs a vocab file, so not run as a doctest):
    tok = FullTokenizer("vocab.txt")
    tok.convert_tokens_to_ids(tok.tokenize("hello world"))
  """

  def __init__(self, vocab_file, do_lower_case=True, strip_accents=True):
    self.vocab = vocab_file.tokens if isinstance(vocab_file, Vocab) else load_vocab(vocab_file)
    if isinstance(self.vocab, SentencePieceVocab):
      raise ValueError(
        f"vocab file {vocab_file!r} is a SentencePiece model; this step needs a WordPiece "
        "vocab.txt (SentencePiece vocabularies are not supported here yet)"
      )
    self.inv_vocab = {v: k for k, v in self.vocab.items()}
    self.do_lower_case = do_lower_case
    self.strip_accents = strip_accents
    self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case, strip_accents=strip_accents)
    self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

  def tokenize(self, text):
    split_tokens = []
    for token in self.basic_tokenizer.tokenize(text):
      split_tokens.extend(self.wordpiece_tokenizer.tokenize(token))
    return split_tokens

  def convert_tokens_to_ids(self, tokens):
    return [self.vocab[token] for token in tokens]

  def convert_ids_to_tokens(self, ids):
    return [self.inv_vocab[i] for i in ids]
