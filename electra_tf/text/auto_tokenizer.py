"""The one door from a vocab file to its in-graph tokenizer: `tokenizer_for`."""

from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.text.tokenizer import ElectraTokenizer
from electra_tf.text.vocab import WORDPIECE
from electra_tf.text.vocab import resolve_normalisation
from electra_tf.text.vocab import vocab_kind


def tokenizer_for(vocab_file, do_lower_case=None, strip_accents=None, **kwargs):
  """The tokenizer of `vocab_file`'s kind, recognised by content: an
  `ElectraTokenizer` (WordPiece, the original's tokenisation) for a
  vocab.txt, a `SentencePieceTokenizer` for a SentencePiece model.

  Args:
    vocab_file: the vocab, either kind.
    do_lower_case, strip_accents: None applies what the vocab was built
      with (`vocab_settings`); a bool that contradicts its settings file
      raises `vocab.VocabSettingsConflict` (`resolve_normalisation`).
    **kwargs: passed on to the tokenizer (Keras layer arguments, or
      `max_input_chars_per_word` for WordPiece).

  Example:
  >>> import pathlib
  >>> _ = pathlib.Path("vocab.txt").write_text("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\nhi\\n")
  >>> import tensorflow as tf
  >>> tok = tokenizer_for("vocab.txt")
  >>> type(tok).__name__, tok(tf.constant(["Hi"])).to_list()
  ('ElectraTokenizer', [[5]])
  """
  kind = vocab_kind(vocab_file)
  do_lower_case, strip_accents = resolve_normalisation(
    vocab_file, do_lower_case, strip_accents, kind
  )
  if kind == WORDPIECE:
    return ElectraTokenizer(
      vocab_file=vocab_file, do_lower_case=do_lower_case, strip_accents=strip_accents, **kwargs
    )
  return SentencePieceTokenizer(
    model_file=vocab_file, do_lower_case=do_lower_case, strip_accents=strip_accents, **kwargs
  )
