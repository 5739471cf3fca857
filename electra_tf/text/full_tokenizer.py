"""The Python tokenizer of a vocab file of either kind, for featurisers that
work on token lists (fine-tuning): `full_tokenizer_for`."""

import tensorflow as tf

from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.text.vocab import SENTENCEPIECE
from electra_tf.text.vocab import Vocab
from electra_tf.text.vocab import load_vocab
from electra_tf.text.vocab import resolve_normalisation
from electra_tf.text.vocab import vocab_kind
from electra_tf.text.wordpiece import FullTokenizer


class SentencePieceFullTokenizer:
  """`FullTokenizer`'s surface over a SentencePiece model.

  The ids come from the in-graph `SentencePieceTokenizer` itself, run
  eagerly, so fine-tuning sees the ids serving gives (the `sentencepiece`
  package can break ties differently); `tokenize` gives their pieces.

  Usage (needs a model file, so not run as a doctest):
    tok = SentencePieceFullTokenizer("de.model")
    tok.convert_tokens_to_ids(tok.tokenize("Guten Morgen"))
  """

  kind = SENTENCEPIECE

  def __init__(self, vocab_file, do_lower_case=None, strip_accents=None):
    self.vocab_file = vocab_file
    self.graph_tokenizer = SentencePieceTokenizer(
      model_file=vocab_file, do_lower_case=do_lower_case, strip_accents=strip_accents
    )
    self.do_lower_case = self.graph_tokenizer.do_lower_case
    self.strip_accents = self.graph_tokenizer.strip_accents
    self.vocab = load_vocab(vocab_file)
    self.inv_vocab = {v: k for k, v in self.vocab.items()}

  def encode(self, text):
    """The model's ids of `text` (a list of int)."""
    return self.encode_batch([text])[0]

  def encode_batch(self, texts):
    """The model's ids of each of `texts` (one tokenizer call for all)."""
    texts = list(texts)
    return self.graph_tokenizer(tf.constant(texts, tf.string)).to_list() if texts else []

  def tokenize_with_offsets(self, text):
    """`(pieces, spans)` of `text`: `tokenize`'s pieces and the characters of
    `text` each stands for (`SentencePieceTokenizer.tokenize_with_offsets`)."""
    ((ids, spans),) = self.graph_tokenizer.tokenize_with_offsets([text])
    return self.convert_ids_to_tokens(ids), spans

  def tokenize(self, text):
    return self.convert_ids_to_tokens(self.encode(text))

  def convert_tokens_to_ids(self, tokens):
    return [self.vocab[token] for token in tokens]

  def convert_ids_to_tokens(self, ids):
    return [self.inv_vocab[i] for i in ids]


def full_tokenizer_for(vocab_file, do_lower_case=None, strip_accents=None):
  """The original's `FullTokenizer` for a WordPiece vocab.txt (or `Vocab`), a
  `SentencePieceFullTokenizer` for a SentencePiece model; `do_lower_case`
  and `strip_accents` as in `resolve_normalisation`."""
  vocab = vocab_file if isinstance(vocab_file, Vocab) else None
  path = vocab.path if vocab else vocab_file
  kind = vocab.kind if vocab else vocab_kind(path)
  do_lower_case, strip_accents = resolve_normalisation(path, do_lower_case, strip_accents, kind)
  if kind == SENTENCEPIECE:
    return SentencePieceFullTokenizer(path, do_lower_case, strip_accents)
  return FullTokenizer(vocab or path, do_lower_case=do_lower_case, strip_accents=strip_accents)
