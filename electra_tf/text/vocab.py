"""The WordPiece vocab file, read exactly as the original reads it (`model/tokenization.py:load_vocab`)."""

import collections

import tensorflow as tf

REQUIRED_SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")


def load_vocab(vocab_file):
  """Returns an ordered dict token -> id from a vocab file.

  A token's id is its 0-based line number; each line is stripped; an empty
  line is the token "" with its own id; a duplicate token keeps its last id
  (but still uses up an id).
  """
  if not tf.io.gfile.exists(vocab_file):
    raise ValueError(f"vocab file {vocab_file!r} does not exist")
  vocab = collections.OrderedDict()
  with tf.io.gfile.GFile(vocab_file, "rb") as f:
    data = f.read()
  # The original reads line by line with readline(); only a final empty
  # string (EOF) stops it, so every line, even an empty one, is a token.
  lines = data.decode("utf-8", errors="ignore").split("\n")
  if lines and lines[-1] == "":
    lines.pop()  # the text after the last newline is EOF, not a line
  for index, line in enumerate(lines):
    vocab[line.strip()] = index
  return vocab


def check_special_tokens(vocab, vocab_file="<vocab>"):
  """Raises a ValueError naming the file and the missing special tokens."""
  missing = [t for t in REQUIRED_SPECIAL_TOKENS if t not in vocab]
  if missing:
    raise ValueError(
      f"vocab file {vocab_file!r} lacks the special token(s) {missing}; "
      f"a BERT-layout vocab needs {list(REQUIRED_SPECIAL_TOKENS)}"
    )


def special_token_ids(vocab_file):
  """`special_ids_of` the vocab in `vocab_file`."""
  return special_ids_of(load_vocab(vocab_file), vocab_file)


def special_ids_of(vocab, vocab_file="<vocab>"):
  """`{"pad": id, "unk": id, "cls": id, "sep": id, "mask": id}` looked up by
  string, as the original does (it never hard-codes ids). `[PAD]` defaults to
  0 when absent (the original never looks it up).

  Example:
  >>> special_ids_of({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3})["mask"]
  3
  """
  check_special_tokens(vocab, vocab_file)
  return {
    "pad": vocab.get("[PAD]", 0),
    "unk": vocab["[UNK]"],
    "cls": vocab["[CLS]"],
    "sep": vocab["[SEP]"],
    "mask": vocab["[MASK]"],
  }


def check_vocab_file(vocab_file, vocab_size, what="hparam"):
  """Checks that `vocab_file` exists, holds the special tokens and has
  exactly `vocab_size` ids (its line count); raises a one-line ValueError
  naming the file and the setting otherwise.

  A vocab_size larger than the file leaves embedding rows no token ever
  uses; a smaller one makes ids out of range. The released checkpoints'
  30,522 matches the released vocab.txt.

  Args:
    vocab_file: the WordPiece vocab path.
    vocab_size: the model's vocab size.
    what: how the setting is named in errors ("hparam" or "flag").

  Example:
  >>> import pathlib
  >>> _ = pathlib.Path("vocab.txt").write_text(
  ...     "[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\nword\\n")
  >>> check_vocab_file("vocab.txt", 6)
  """
  if not vocab_file:
    raise ValueError(f"{what} vocab_file is not set; expected the WordPiece vocab.txt")
  if not tf.io.gfile.exists(vocab_file):
    raise ValueError(
      f"{what} vocab_file={vocab_file!r} does not exist; expected the WordPiece vocab "
      "the TFRecords were built with"
    )
  vocab = load_vocab(vocab_file)
  check_special_tokens(vocab, vocab_file)
  num_ids = max(vocab.values()) + 1
  if int(vocab_size) != num_ids:
    raise ValueError(
      f"{what} vocab_size={vocab_size} but vocab file {vocab_file!r} has {num_ids} "
      f"entries; set vocab_size to {num_ids}"
    )
