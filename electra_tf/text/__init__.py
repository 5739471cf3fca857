"""Text to ids: the vocab file of either kind (`vocab`: a WordPiece vocab.txt
or a SentencePiece model, told apart by content), the original's WordPiece
tokenization in Python (`wordpiece`), the in-graph tokenizers built on
tensorflow-text (`tokenizer`: WordPiece, `sentencepiece_tokenizer`) and the
one function that picks by vocab kind (`tokenizer_for`); `Vocab` is a vocab
file read once. A new tokenizer kind goes here; it imports only `utils`."""

from electra_tf.text.auto_tokenizer import tokenizer_for
from electra_tf.text.vocab import Vocab

__all__ = [
  "Vocab",
  "tokenizer_for",
]
