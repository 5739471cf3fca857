"""`tokenizer.json` (Hugging Face `tokenizers`) for a SentencePiece vocab that
reproduces electra_tf's ids (`electra_tf.text.sentencepiece_tokenizer`).

Built from `tokenizers`' own objects, in electra_tf's order:

1. lower-casing and accent stripping where the vocab was built with them;
2. the model's own normaliser: its precompiled character map, composed as
   SentencePiece composes (`composition_steps`), then extra spaces removed;
3. `Metaspace`: spaces become "▁", the dummy prefix, a cut before each "▁";
4. `models.Unigram` with the pieces' scores, or `models.BPE` with every
   merge of two pieces into a third, ranked by the third's score;
5. `[CLS] A [SEP] (B [SEP])` with the model's ids.

SentencePiece never produces its control and unknown pieces from text;
`tokenizers`' Unigram would, so each is cut by a pre-tokeniser split between
two of its characters that no normal piece holds side by side.

The proto is read with a small wire-format reader: the `sentencepiece`
package's generated `sentencepiece_model_pb2` needs a newer protobuf than
TensorFlow allows.
"""

import functools
import re
import struct
import unicodedata

import tokenizers
from tokenizers import decoders
from tokenizers import models
from tokenizers import normalizers
from tokenizers import pre_tokenizers

from electra_tf.text import hf_tokenizer
from electra_tf.text import vocab as vocab_lib
from electra_tf.utils.file_io import write_atomic

SPACE = "\u2581"
# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
UNIGRAM, BPE = 1, 2
# Field numbers of sentencepiece_model.proto.
_MODEL_PIECES, _MODEL_TRAINER, _MODEL_NORMALIZER = 1, 2, 3
_PIECE_TEXT, _PIECE_SCORE, _PIECE_TYPE = 1, 2, 3
_TRAINER_MODEL_TYPE, _TRAINER_WHITESPACE_SUFFIX, _TRAINER_BYTE_FALLBACK = 3, 24, 35
_NORMALIZER_CHARSMAP, _NORMALIZER_DUMMY_PREFIX = 2, 3
_NORMALIZER_REMOVE_SPACES, _NORMALIZER_ESCAPE_SPACES = 4, 5
# Control characters; the first the model's map deletes guards compositions.
_GUARD_CANDIDATES = "\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x7f"
# Used where the map deletes none of them; removed right after `NFC`.
_PRIVATE_GUARD = "\ue000"


def _varint(data, pos):
  result = shift = 0
  while True:
    byte = data[pos]
    pos += 1
    result |= (byte & 0x7F) << shift
    if not byte & 0x80:
      return result, pos
    shift += 7


def _fields(data):
  """`[(field number, value)]` of one serialised message: ints for varints,
  bytes for length-delimited and fixed-width fields."""
  fields = []
  pos = 0
  while pos < len(data):
    key, pos = _varint(data, pos)
    number, wire = key >> 3, key & 7
    if wire == 0:
      value, pos = _varint(data, pos)
    elif wire == 2:
      size, pos = _varint(data, pos)
      value, pos = data[pos : pos + size], pos + size
    elif wire in (1, 5):
      size = 8 if wire == 1 else 4
      value, pos = data[pos : pos + size], pos + size
    else:
      raise ValueError(f"wire type {wire} in a SentencePiece model")
    fields.append((number, value))
  return fields


def _first(fields, number, default):
  return next((value for n, value in fields if n == number), default)


def read_model(proto):
  """The parts of a SentencePiece `ModelProto` (bytes) the tokenizer needs,
  with the proto's defaults: `{"pieces": [(piece, score, type)], ...}`."""
  model = _fields(bytes(proto))
  pieces = []
  for number, value in model:
    if number == _MODEL_PIECES:
      piece = _fields(value)
      score = _first(piece, _PIECE_SCORE, b"\0\0\0\0")
      pieces.append(
        (
          _first(piece, _PIECE_TEXT, b"").decode("utf-8"),
          struct.unpack("<f", score)[0],
          _first(piece, _PIECE_TYPE, NORMAL),
        )
      )
  trainer = _fields(_first(model, _MODEL_TRAINER, b""))
  normalizer = _fields(_first(model, _MODEL_NORMALIZER, b""))
  return {
    "pieces": pieces,
    "model_type": _first(trainer, _TRAINER_MODEL_TYPE, UNIGRAM),
    "whitespace_as_suffix": bool(_first(trainer, _TRAINER_WHITESPACE_SUFFIX, 0)),
    "byte_fallback": bool(_first(trainer, _TRAINER_BYTE_FALLBACK, 0)),
    "charsmap": _first(normalizer, _NORMALIZER_CHARSMAP, b""),
    "add_dummy_prefix": bool(_first(normalizer, _NORMALIZER_DUMMY_PREFIX, 1)),
    "remove_extra_whitespaces": bool(_first(normalizer, _NORMALIZER_REMOVE_SPACES, 1)),
    "escape_whitespaces": bool(_first(normalizer, _NORMALIZER_ESCAPE_SPACES, 1)),
  }


def _check_supported(model, source):
  """One line for what this module cannot reproduce exactly."""
  kinds = {UNIGRAM: "unigram", BPE: "bpe"}
  problems = []
  if model["model_type"] not in kinds:
    problems.append(f"model type {model['model_type']} (only unigram and bpe)")
  if model["byte_fallback"] or any(t == BYTE for _, _, t in model["pieces"]):
    problems.append("byte fallback")
  if any(t == USER_DEFINED for _, _, t in model["pieces"]):
    problems.append("user-defined symbols")
  if any(t == UNUSED for _, _, t in model["pieces"]):
    problems.append("unused pieces")
  if model["whitespace_as_suffix"] or not model["escape_whitespaces"]:
    problems.append("whitespace as a suffix or not escaped")
  if problems:
    raise ValueError(
      f"SentencePiece model {source!r} uses {', '.join(problems)}; its Hugging Face "
      "tokenizer.json would not give electra_tf's ids"
    )


@functools.lru_cache(maxsize=1)
def _guard_positions():
  """A regex matching (empty) where SentencePiece's map joins nothing that
  `NFC` would: after every character that decomposes, and between two
  combining marks out of canonical order."""
  precomposed = []
  by_class = {}
  for cp in range(0x110000):
    if 0xD800 <= cp < 0xE000:
      continue
    char = chr(cp)
    if unicodedata.normalize("NFD", char) != char:
      precomposed.append(char)
    if unicodedata.combining(char):
      by_class.setdefault(unicodedata.combining(char), []).append(char)
  char_class = hf_tokenizer.char_class
  out_of_order = [
    f"(?<={char_class(chars)})(?={char_class(c for k in by_class if k < ccc for c in by_class[k])})"
    for ccc, chars in sorted(by_class.items())
    if any(k < ccc for k in by_class)
  ]
  return "|".join([f"(?<={char_class(precomposed)})"] + out_of_order)


def composition_steps(charsmap):
  """Normaliser steps, before `Precompiled(charsmap)`, that make `tokenizers`
  compose as SentencePiece does with that map; `[]` for a map that composes
  nothing (identity, or a custom rule without compositions).

  SentencePiece's map composes a fully decomposed letter but not a
  precomposed one followed by a further mark, nor marks out of canonical
  order. `NFC` composes the first; a guard (a control character the map
  deletes) at `_guard_positions` keeps it from the others.

  >>> composition_steps(b"")  # no map: SentencePiece leaves the text as it is
  []
  """
  if not charsmap:
    return []
  precompiled = normalizers.Precompiled(charsmap)
  if precompiled.normalize_str("a\u0302") != "\u00e2":
    return []
  guard = next((c for c in _GUARD_CANDIDATES if precompiled.normalize_str(c) == ""), None)
  steps = [
    normalizers.Replace(tokenizers.Regex(_guard_positions()), guard or _PRIVATE_GUARD),
    normalizers.NFC(),
  ]
  if guard is None:
    steps.append(normalizers.Replace(_PRIVATE_GUARD, ""))
  return steps


def normalizer(model, do_lower_case, strip_accents):
  """Steps 1-2: electra_tf's normalisation, then the model's."""
  steps = []
  if do_lower_case:
    steps += hf_tokenizer.lowercase_steps()
  if strip_accents:
    steps += [
      normalizers.NFD(),
      normalizers.Replace(tokenizers.Regex(r"\p{Mn}"), ""),
      normalizers.NFC(),
    ]
  if model["charsmap"]:
    steps += composition_steps(model["charsmap"])
    steps.append(normalizers.Precompiled(model["charsmap"]))
  if model["remove_extra_whitespaces"]:
    steps += [
      normalizers.Replace(tokenizers.Regex(" {2,}"), " "),
      normalizers.Replace(tokenizers.Regex(r"\A | \z"), ""),
    ]
  return normalizers.Sequence(steps)


def _cuts(model, source):
  """Pre-tokeniser splits that keep every control/unknown piece from matching
  text (Unigram only): each is cut after its first `k` characters, where
  `p[k-1] p[k]` occurs in no normal piece."""
  normal = [p for p, _, t in model["pieces"] if t == NORMAL]
  cuts = []
  for piece, _, piece_type in model["pieces"]:
    if piece_type == NORMAL:
      continue
    k = next(
      (k for k in range(1, len(piece)) if not any(piece[k - 1 : k + 1] in p for p in normal)),
      None,
    )
    if k is None:
      raise ValueError(
        f"SentencePiece model {source!r}: its special piece {piece!r} could be matched in "
        "text by Hugging Face's Unigram (every two neighbouring characters of it are in a "
        "normal piece)"
      )
    pattern = re.escape(piece[:k]) + "(?=" + re.escape(piece[k:]) + ")"
    cuts.append(pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="merged_with_previous"))
  return cuts


def _bpe_merges(model):
  """Every `(a, b)` whose concatenation is a normal piece, both pieces, by
  the concatenation's score (SentencePiece merges the best-scored pair first)."""
  index = {p: i for i, (p, _, t) in enumerate(model["pieces"]) if t == NORMAL}
  ranked = []
  for piece, score, piece_type in model["pieces"]:
    if piece_type != NORMAL:
      continue
    for k in range(1, len(piece)):
      left, right = piece[:k], piece[k:]
      if left in index and right in index:
        ranked.append((-score, index[piece], index[left], (left, right)))
  return [pair for *_, pair in sorted(ranked)]


def _special_pieces(proto, source):
  """`{name: piece}` of the pieces electra_tf uses (`pad`, `unk`, `cls`,
  `sep`, `mask`); one line naming `source` for a model without them."""
  vocab = vocab_lib.sentencepiece_vocab_of(bytes(proto), source)
  pieces = list(vocab)
  return {name: pieces[i] for name, i in vocab_lib.special_ids_of(vocab, source).items()}


def build_tokenizer(proto, do_lower_case=False, strip_accents=False, source="<proto>"):
  """A `tokenizers.Tokenizer` for the SentencePiece model `proto` (bytes) that
  gives `SentencePieceTokenizer`'s ids and packing.

  Raises:
    ValueError: one line naming `source`, for a model this cannot reproduce
      (byte fallback, user-defined symbols, unused pieces, word/char models)
      or one without `[CLS]`, `[SEP]`, `[MASK]`.
  """
  model = read_model(proto)
  _check_supported(model, source)
  special = _special_pieces(proto, source)
  ids = {p: i for i, (p, _, _) in enumerate(model["pieces"])}
  unk_id = ids[special["unk"]]
  pre = [
    pre_tokenizers.Metaspace(
      replacement=SPACE,
      prepend_scheme="always" if model["add_dummy_prefix"] else "never",
      split=True,
    )
  ]
  if model["model_type"] == UNIGRAM:
    tokenizer = tokenizers.Tokenizer(
      models.Unigram([(p, s) for p, s, _ in model["pieces"]], unk_id=unk_id, byte_fallback=False)
    )
    pre += _cuts(model, source)
  else:
    tokenizer = tokenizers.Tokenizer(
      models.BPE(ids, _bpe_merges(model), unk_token=special["unk"], fuse_unk=True)
    )
  tokenizer.normalizer = normalizer(model, do_lower_case, strip_accents)
  tokenizer.pre_tokenizer = pre_tokenizers.Sequence(pre)
  tokenizer.decoder = decoders.Metaspace(
    replacement=SPACE, prepend_scheme="always" if model["add_dummy_prefix"] else "never"
  )
  return hf_tokenizer.with_specials(
    tokenizer, special["cls"], special["sep"], ids, set(special.values())
  )


def special_tokens(proto, source="<proto>"):
  """`{"unk_token": ..., "sep_token": ..., "pad_token": ..., "cls_token": ...,
  "mask_token": ...}`: the model's pieces, for `tokenizer_config.json`."""
  special = _special_pieces(proto, source)
  return {f"{name}_token": special[name] for name in ("unk", "sep", "pad", "cls", "mask")}


def write_tokenizer_json(path, proto, do_lower_case, strip_accents, source="<proto>"):
  """Writes `build_tokenizer(...)` as `tokenizer.json` to `path`, atomically."""
  write_atomic(path, build_tokenizer(proto, do_lower_case, strip_accents, source).to_str())
