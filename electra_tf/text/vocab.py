"""The vocab file of either kind, recognised by its content: a WordPiece
`vocab.txt` (read as `model/tokenization.py:load_vocab` reads it) or a
SentencePiece model. What a vocab was built with is recorded beside it in
`<vocab file>.json` (`vocab_settings`); every reader applies it through
`resolve_normalisation`."""

import collections
import dataclasses
import hashlib
import io
import json
from typing import Mapping

import sentencepiece
import tensorflow as tf

from electra_tf.utils.file_io import check_not_lfs_pointer
from electra_tf.utils.file_io import not_there
from electra_tf.utils.file_io import read_json
from electra_tf.utils.file_io import write_atomic

REQUIRED_SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")
WORDPIECE = "wordpiece"
SENTENCEPIECE = "sentencepiece"
# A model may name its own padding and unknown pieces as it likes.
SENTENCEPIECE_SPECIAL_PIECES = {"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}
SETTINGS_SUFFIX = ".json"
# The builders' flags for each normalisation, when on and when off.
NORMALISATION_FLAGS = {
  "do_lower_case": ("--do-lower-case", "--no-lower-case"),
  "strip_accents": ("--do-strip-accents", "--no-strip-accents"),
}
# Normalisation when a vocab has no settings file.
DEFAULT_SETTINGS = {
  WORDPIECE: {"do_lower_case": True, "strip_accents": True},
  SENTENCEPIECE: {"do_lower_case": False, "strip_accents": False},
}
# Bytes read to tell the kinds apart: a model's first pieces carry float scores.
_SNIFF_BYTES = 4096


class SentencePieceVocab(collections.OrderedDict):
  """piece -> id of a SentencePiece model, with the model's special ids
  (`special_ids`; None for a piece the model lacks) and its bytes (`proto`)."""

  kind = SENTENCEPIECE

  def __init__(self, pieces, special_ids, proto):
    super().__init__((piece, index) for index, piece in enumerate(pieces))
    self.special_ids = special_ids
    self.proto = proto


def _read(vocab_file, what="vocab file"):
  """The file's bytes; `what` names it in errors (a flag such as `--vocab-file`)."""
  if not vocab_file or not tf.io.gfile.exists(vocab_file):
    raise ValueError(f"{what} {vocab_file!r} {not_there(vocab_file)}")
  if tf.io.gfile.isdir(vocab_file):
    raise ValueError(
      f"{what} {vocab_file!r} is a directory; expected the vocab file (a WordPiece "
      "vocab.txt or a SentencePiece .model)"
    )
  with tf.io.gfile.GFile(vocab_file, "rb") as f:
    data = f.read()
  check_not_lfs_pointer(vocab_file, data)
  return data


def _looks_binary(data):
  head = data[:_SNIFF_BYTES]
  if b"\x00" in head:
    return True
  try:
    head.decode("utf-8")
  except UnicodeDecodeError as e:
    # A multi-byte character cut by the sniff window is still text.
    return e.start < len(head) - 3
  return False


def sentencepiece_vocab_of(data, vocab_file="<proto>"):
  """The `SentencePieceVocab` of a model's bytes; a one-line ValueError
  naming `vocab_file` where they are no SentencePiece model."""
  processor = sentencepiece.SentencePieceProcessor()
  try:
    processor.LoadFromSerializedProto(data)
  except (RuntimeError, OSError):
    raise ValueError(
      f"vocab file {vocab_file!r} is neither a WordPiece vocab.txt nor a SentencePiece model "
      "(it does not parse as one)"
    ) from None
  pieces = [processor.IdToPiece(i) for i in range(processor.GetPieceSize())]
  special = {"pad": processor.pad_id() if processor.pad_id() >= 0 else 0, "unk": processor.unk_id()}
  for name, piece in SENTENCEPIECE_SPECIAL_PIECES.items():
    index = processor.PieceToId(piece)
    special[name] = index if pieces[index] == piece else None
  return SentencePieceVocab(pieces, special, data)


def _parse(data, vocab_file):
  """`(kind, SentencePieceVocab or None)` of a vocab file's bytes."""
  if not _looks_binary(data):
    return WORDPIECE, None
  try:
    return SENTENCEPIECE, sentencepiece_vocab_of(data, vocab_file)
  except ValueError:
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
      # Windows editors' "Unicode": the NUL bytes of UTF-16, not a model.
      raise ValueError(
        f"vocab file {vocab_file!r} is UTF-16 text (it starts with UTF-16's byte-order "
        "mark); save it as UTF-8"
      ) from None
    if b"\x00" in data[:_SNIFF_BYTES]:
      raise
    # Text with bytes that are not UTF-8: read as the original reads it.
    return WORDPIECE, None


def vocab_kind(vocab_file):
  """`"wordpiece"` (a text vocab.txt) or `"sentencepiece"` (a model), by
  content, whatever the file's name; a ValueError naming the file otherwise.

  Example:
  >>> import pathlib
  >>> _ = pathlib.Path("words.model").write_text("[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\n")
  >>> vocab_kind("words.model")
  'wordpiece'
  """
  return _parse(_read(vocab_file), vocab_file)[0]


def load_vocab(vocab_file):
  """An ordered dict token -> id from a vocab file of either kind.

  WordPiece: the id is the 0-based line number of the stripped line (an
  empty line is the token ""; a duplicate keeps its last id, its first line
  still uses one up). SentencePiece: a `SentencePieceVocab`.
  """
  return _tokens_of(_read(vocab_file), vocab_file)


def _wordpiece_lines(data):
  """The lines of a WordPiece vocab, as the original's readline() loop reads them."""
  lines = data.decode("utf-8", errors="ignore").split("\n")
  if lines and lines[-1] == "":
    lines.pop()  # the text after the last newline is EOF, not a line
  return lines


def _tokens_of(data, vocab_file):
  """`load_vocab` of a vocab file's bytes."""
  kind, sentencepiece_vocab = _parse(data, vocab_file)
  if kind == SENTENCEPIECE:
    return sentencepiece_vocab
  vocab = collections.OrderedDict()
  for index, line in enumerate(_wordpiece_lines(data)):
    vocab[line.strip()] = index
  return vocab


def check_special_tokens(vocab, vocab_file="<vocab>"):
  """Raises a ValueError naming the file and the missing special tokens."""
  if isinstance(vocab, SentencePieceVocab):
    missing = [SENTENCEPIECE_SPECIAL_PIECES[k] for k, v in vocab.special_ids.items() if v is None]
    if missing:
      raise ValueError(
        f"SentencePiece model {vocab_file!r} lacks the piece(s) {missing}; train it with "
        "them as control symbols (python -m tfrecords_tools.build_vocab --model-type unigram "
        "does)"
      )
    return
  missing = [t for t in REQUIRED_SPECIAL_TOKENS if t not in vocab]
  if missing and any(str(t).startswith("{") for t in list(vocab)[:1]):
    # One token per line: a JSON file (a Hugging Face tokenizer.json) is no vocab.
    raise ValueError(
      f"vocab file {vocab_file!r} is a JSON file (a tokenizer.json?), not a vocab with one "
      "token per line; pass the vocab.txt beside it"
    )
  if missing:
    raise ValueError(
      f"vocab file {vocab_file!r} lacks the special token(s) {missing}; "
      f"a BERT-layout vocab needs {list(REQUIRED_SPECIAL_TOKENS)}"
    )


def special_token_ids(vocab_file):
  """`special_ids_of` the vocab in `vocab_file` (either kind)."""
  return special_ids_of(load_vocab(vocab_file), vocab_file)


def special_ids_of(vocab, vocab_file="<vocab>"):
  """`{"pad": id, "unk": id, "cls": id, "sep": id, "mask": id}`.

  WordPiece: looked up by string, as the original does; `[PAD]` is 0 when
  absent. SentencePiece: the model's own padding (0 when it has none) and
  unknown ids, and its `[CLS]`, `[SEP]`, `[MASK]` pieces.

  Example:
  >>> special_ids_of({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3})["mask"]
  3
  """
  check_special_tokens(vocab, vocab_file)
  if isinstance(vocab, SentencePieceVocab):
    return dict(vocab.special_ids)
  return {
    "pad": vocab.get("[PAD]", 0),
    "unk": vocab["[UNK]"],
    "cls": vocab["[CLS]"],
    "sep": vocab["[SEP]"],
    "mask": vocab["[MASK]"],
  }


def settings_path(vocab_file):
  """Where the settings a vocab was built with are recorded: `<vocab_file>.json`."""
  return f"{vocab_file}{SETTINGS_SUFFIX}"


def vocab_settings(vocab_file, kind=None, size=None):
  """`{"kind", "do_lower_case", "strip_accents"}` the vocab was built with:
  from its settings file where there is one, else the kind's defaults.

  Args:
    vocab_file: the vocab, either kind.
    kind: its kind if already known (saves reading it).
    size: its number of ids if known: a settings file that records another
      kind or size is another vocab's, and is refused.
  """
  kind = kind or vocab_kind(vocab_file)
  settings = {"kind": kind, **DEFAULT_SETTINGS[kind]}
  path = settings_path(vocab_file)
  recorded = read_json(path, "vocab settings file")
  if recorded is None:
    return settings
  if isinstance(recorded, dict):
    other = {"kind": kind, "vocab_size": size}
    for key, actual in other.items():
      if actual is not None and recorded.get(key, actual) != actual:
        raise ValueError(
          f"vocab settings file {path!r} says {key} {recorded[key]!r} but {vocab_file!r} "
          f"has {actual!r}: it belongs to another vocab; delete it (the kind's defaults "
          "apply) or rebuild the vocab with build_vocab"
        )
  for key in ("do_lower_case", "strip_accents"):
    value = recorded.get(key, settings[key]) if isinstance(recorded, dict) else None
    if not isinstance(value, bool):
      raise ValueError(
        f"vocab settings file {path!r}: expected a JSON object with boolean {key!r}, got {value!r}"
      )
    settings[key] = value
  return settings


class VocabSettingsConflict(ValueError):
  """A flag or hparam asks for another normalisation than the one a vocab's
  settings file records."""


def has_recorded_settings(vocab_file):
  """Whether `vocab_file` has a settings file beside it (`settings_path`)."""
  return bool(vocab_file) and tf.io.gfile.exists(settings_path(vocab_file))


def _effective(kind, do_lower_case, strip_accents):
  # WordPiece strips accents only while lower-casing (the original's quirk).
  if kind == WORDPIECE:
    return do_lower_case, do_lower_case and strip_accents
  return do_lower_case, strip_accents


def resolve_normalisation(
  vocab_file, do_lower_case=None, strip_accents=None, kind=None, names=None
):
  """`(do_lower_case, strip_accents)` to tokenise `vocab_file` with.

  None takes what the vocab was built with (`vocab_settings`). A bool is
  applied when the vocab has no settings file, and when it has one, only if
  it normalises text the same way; otherwise a `VocabSettingsConflict`
  names the flag (`names`), the settings file and what it says.

  Args:
    vocab_file: the vocab, either kind.
    do_lower_case, strip_accents: None or the user's bool.
    kind: its kind if already known.
    names: `{key: (name when true, name when false)}` for the message,
      e.g. `{"strip_accents": ("--do-strip-accents", "--no-strip-accents")}`;
      default `key=true` / `key=false`.

  Example:
  >>> import pathlib
  >>> _ = pathlib.Path("v.txt").write_text("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\n")
  >>> write_vocab_settings("v.txt", {"do_lower_case": True, "strip_accents": False})
  >>> resolve_normalisation("v.txt")
  (True, False)
  >>> try:
  ...   resolve_normalisation("v.txt", strip_accents=True)
  ... except VocabSettingsConflict as e:
  ...   print(str(e).split(";")[0])
  strip_accents=true contradicts 'v.txt.json', which says the vocab was built with strip_accents=false
  """
  kind = kind or vocab_kind(vocab_file)
  recorded = vocab_settings(vocab_file, kind)
  given = {"do_lower_case": do_lower_case, "strip_accents": strip_accents}
  resolved = {k: recorded[k] if v is None else bool(v) for k, v in given.items()}
  if has_recorded_settings(vocab_file):
    before = _effective(kind, recorded["do_lower_case"], recorded["strip_accents"])
    after = _effective(kind, resolved["do_lower_case"], resolved["strip_accents"])
    if before != after:
      names = names or {}
      for key in ("do_lower_case", "strip_accents"):
        value = given[key]
        if value is None or bool(value) == recorded[key]:
          continue
        flag = names.get(key, (f"{key}=true", f"{key}=false"))[0 if value else 1]
        raise VocabSettingsConflict(
          f"{flag} contradicts {settings_path(vocab_file)!r}, which says the vocab was built "
          f"with {key}={str(recorded[key]).lower()}; leave it out to apply the vocab's settings"
        )
  return resolved["do_lower_case"], resolved["strip_accents"]


def normalisation_for_hparams(vocab_file, hparams):
  """`(do_lower_case, strip_accents)` of a vocab with a settings file, which
  the user's `hparams` (a dict of the keys the user set) may only agree with
  (`VocabSettingsConflict` otherwise). None when the vocab is missing,
  unreadable or has no settings file: the hparams decide.

  Example:
  >>> import pathlib
  >>> _ = pathlib.Path("v.txt").write_text("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\n")
  >>> write_vocab_settings("v.txt", {"do_lower_case": False, "strip_accents": False})
  >>> normalisation_for_hparams("v.txt", {"learning_rate": 1e-4})
  (False, False)
  """
  if not vocab_file or not tf.io.gfile.exists(vocab_file) or not has_recorded_settings(vocab_file):
    return None
  try:
    kind = vocab_kind(vocab_file)
  except ValueError:
    return None  # the run's own checks name the file
  names = {k: (f"hparam {k}=true", f"hparam {k}=false") for k in ("do_lower_case", "strip_accents")}
  lower, strip = hparams.get("do_lower_case"), hparams.get("strip_accents")
  return resolve_normalisation(vocab_file, lower, strip, kind, names)


def write_vocab_settings(vocab_file, settings):
  """Records `settings` (a JSON-able dict) beside `vocab_file`, atomically."""
  write_atomic(settings_path(vocab_file), json.dumps(settings, indent=2, sort_keys=True) + "\n")


def duplicate_token_message(data, vocab_file, what="vocab file"):
  """None, or one line naming a token a WordPiece vocab file lists twice (the
  first copy still uses up an id, shifting every later one) and its lines."""
  first_line = {}
  for number, line in enumerate(_wordpiece_lines(data), start=1):
    token = line.strip()
    if token in first_line:
      return (
        f"{what} {vocab_file!r}: token {token!r} is on lines {first_line[token]} and "
        f"{number}; expected every token once (a repeated token shifts the ids of all that "
        "follow)"
      )
    first_line[token] = number
  return None


@dataclasses.dataclass(frozen=True)
class Vocab:
  """A vocab file read once (`Vocab.read(path)`), passed on in place of its path.

  Args:
    path: the file it was read from.
    kind: `"wordpiece"` or `"sentencepiece"`.
    tokens: token -> id (`load_vocab`'s mapping).
    size: the number of ids (the model's `vocab_size`).
    special_ids: `special_ids_of` the tokens.
    do_lower_case, strip_accents: the normalisation it was built with
      (`vocab_settings`).
    has_settings: whether a settings file recorded them.
    sha256: of the file's bytes.
    num_bytes: the file's size.

  Example:
  >>> import pathlib
  >>> _ = pathlib.Path("v.txt").write_text("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\nhi\\n")
  >>> vocab = Vocab.read("v.txt")
  >>> vocab.kind, vocab.size, vocab.special_ids["mask"], vocab.sha256[:12]
  ('wordpiece', 6, 4, '606985db030e')
  """

  path: str
  kind: str
  tokens: Mapping
  size: int
  special_ids: Mapping
  do_lower_case: bool
  strip_accents: bool
  has_settings: bool
  sha256: str
  num_bytes: int

  def __repr__(self):
    return f"Vocab({self.path!r}, {self.kind}, {self.size} ids, sha256 {self.sha256[:12]})"

  @classmethod
  def read(cls, path, what="vocab file"):
    """Reads `path` (either kind); a ValueError naming the file (as `what`,
    e.g. a flag) when it is missing, not a vocab, lacks a special token or
    repeats one."""
    data = _read(path, what)
    tokens = _tokens_of(data, path)
    kind = tokens.kind if isinstance(tokens, SentencePieceVocab) else WORDPIECE
    if kind == WORDPIECE:
      duplicate = duplicate_token_message(data, path, what)
      if duplicate:
        raise ValueError(duplicate)
    special = special_ids_of(tokens, path)
    size = max(tokens.values()) + 1
    settings = vocab_settings(path, kind, size)
    return cls(
      path=path,
      kind=kind,
      tokens=tokens,
      size=size,
      special_ids=special,
      do_lower_case=settings["do_lower_case"],
      strip_accents=settings["strip_accents"],
      has_settings=has_recorded_settings(path),
      sha256=hashlib.sha256(data).hexdigest(),
      num_bytes=len(data),
    )

  @property
  def tokens_sha256(self):
    """sha256 of the tokens in id order (blind to CRLF and stripped spaces)."""
    ordered = sorted(self.tokens, key=self.tokens.get)
    return hashlib.sha256("\n".join(ordered).encode("utf-8")).hexdigest()

  def identity(self):
    """`file_io.content_identity` of the file as read."""
    return {"size": self.num_bytes, "sha256": self.sha256}

  def fingerprint(self):
    """What an artefact records of the vocab it was made with."""
    return {
      "file": self.path,
      "sha256": self.sha256,
      "tokens_sha256": self.tokens_sha256,
      "size": self.size,
      "kind": self.kind,
      "do_lower_case": self.do_lower_case,
      "strip_accents": self.strip_accents,
    }

  def check_made_with(self, recorded, what):
    """A ValueError when `recorded` (an artefact's `fingerprint` of the
    vocab it was made with) is another vocab's; `what` names the artefact
    and how it was made ("the TFRecords in 'dir' were made").

    Example:
    >>> import pathlib
    >>> _ = pathlib.Path("v.txt").write_text("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\n")
    >>> vocab = Vocab.read("v.txt")
    >>> vocab.check_made_with(vocab.fingerprint(), "records were made")
    """
    if recorded.get("sha256") == self.sha256 or self._same_tokens(recorded):
      return
    raise ValueError(
      f"{what} with vocab {recorded.get('file')!r} ({recorded.get('size')} tokens, "
      f"sha256 {str(recorded.get('sha256'))[:12]}) but the vocab given is {self.path!r} "
      f"({self.size} tokens, sha256 {self.sha256[:12]}): its ids mean other tokens; give "
      "that vocab"
    )

  def _same_tokens(self, recorded):
    """Whether `recorded` has these tokens in this order (by `tokens_sha256`,
    or else by the recorded file when it is still there unchanged)."""
    if "tokens_sha256" in recorded:
      return recorded["tokens_sha256"] == self.tokens_sha256
    path = recorded.get("file")
    if not path or path == self.path or not tf.io.gfile.exists(path):
      return False
    try:
      other = Vocab.read(path)
    except ValueError:
      return False
    return other.sha256 == recorded.get("sha256") and other.tokens_sha256 == self.tokens_sha256

  def check_size(self, vocab_size, what="hparam"):
    """A ValueError naming the file when `vocab_size` is not its number of ids."""
    if int(vocab_size) != self.size:
      raise ValueError(
        f"{what} vocab_size={vocab_size} but vocab file {self.path!r} has {self.size} "
        f"entries; set vocab_size to {self.size}"
      )


def check_vocab_file(vocab_file, vocab_size, what="hparam"):
  """Checks that `vocab_file` exists, holds the special tokens, lists no
  token twice and has exactly `vocab_size` ids; returns its `Vocab`, or
  raises a ValueError naming the file and the setting.

  Args:
    vocab_file: the WordPiece vocab.txt or SentencePiece model path.
    vocab_size: the model's vocab size.
    what: how the setting is named in errors ("hparam" or "flag").

  Example:
  >>> import pathlib
  >>> _ = pathlib.Path("vocab.txt").write_text(
  ...     "[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\nword\\n")
  >>> check_vocab_file("vocab.txt", 6)
  Vocab('vocab.txt', wordpiece, 6 ids, sha256 c692da3a1318)
  """
  if not vocab_file:
    raise ValueError(
      f"{what} vocab_file is not set; expected the WordPiece vocab.txt or SentencePiece model"
    )
  if not tf.io.gfile.exists(vocab_file):
    raise ValueError(
      f"{what} vocab_file={vocab_file!r} {not_there(vocab_file)}; expected the vocab (WordPiece "
      "vocab.txt or SentencePiece model) the TFRecords were built with"
    )
  vocab = Vocab.read(vocab_file)
  vocab.check_size(vocab_size, what)
  return vocab


def train_sentencepiece(
  sentences,
  vocab_size,
  model_type="unigram",
  character_coverage=0.9995,
  input_sentence_size=0,
):
  """Trains a SentencePiece model on `sentences`; returns its bytes.

  The first ids are `[PAD] [UNK] [CLS] [SEP] [MASK]`, no BOS/EOS; the last
  three are control symbols (never produced from text). `vocab_size` is an
  upper bound: a small corpus can give fewer pieces.

  Args:
    sentences: an iterable of str, one sentence or line each.
    vocab_size: the most pieces, the five special ones included.
    model_type: "unigram" or "bpe".
    character_coverage: share of the characters the pieces cover (the rest
      become `[UNK]`); 1.0 suits small alphabets.
    input_sentence_size: train on a sample of this many sentences (0: all).

  Example:
  >>> model = train_sentencepiece(["Grüße aus Köln", "Guten Morgen"] * 20, 40)
  >>> import sentencepiece
  >>> sentencepiece.SentencePieceProcessor(model_proto=model).id_to_piece(4)
  '[MASK]'
  """
  if model_type not in ("unigram", "bpe"):
    raise ValueError(f"model_type {model_type!r}: expected 'unigram' or 'bpe'")
  model = io.BytesIO()
  interrupted = []

  def sentences_watched():
    # The trainer turns the iterator's exceptions, Ctrl-C included, into a
    # RuntimeError: remember a Ctrl-C to raise it again.
    try:
      yield from sentences
    except KeyboardInterrupt as e:  # SIGTERM's `interrupts.Stopped` too
      interrupted.append(e)
      raise

  try:
    sentencepiece.SentencePieceTrainer.train(
      sentence_iterator=sentences_watched(),
      model_writer=model,
      vocab_size=int(vocab_size),
      model_type=model_type,
      character_coverage=character_coverage,
      input_sentence_size=int(input_sentence_size),
      shuffle_input_sentence=True,
      pad_id=0,
      pad_piece="[PAD]",
      unk_id=1,
      unk_piece="[UNK]",
      bos_id=-1,
      eos_id=-1,
      control_symbols=list(SENTENCEPIECE_SPECIAL_PIECES.values()),
      hard_vocab_limit=False,
      minloglevel=2,
    )
  except RuntimeError as e:
    if interrupted:
      raise interrupted[0] from None
    # SentencePiece's message names the limit broken, e.g. "Vocabulary size is too high (N)".
    message = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
    message = message.split("] ", 1)[-1]  # drop the "INTERNAL: file.cc(line) [check]" prefix
    raise ValueError(f"SentencePiece training failed: {message}") from None
  return model.getvalue()
