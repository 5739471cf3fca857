"""`tokenizer.json` (Hugging Face `tokenizers`) that reproduces electra_tf's ids.

The pipeline is built from the `tokenizers` library's own objects
(`Tokenizer`, `models.WordPiece`, a `normalizers.Sequence`, a
`pre_tokenizers.Sequence`, `processors.TemplateProcessing`,
`decoders.WordPiece`), so every regex is compiled, and the file validated,
before it is written; no torch is needed.

transformers' own BERT pipeline (`BertNormalizer` + `BertPreTokenizer`)
differs from the original's `BasicTokenizer`: its character classes are
Rust's Unicode tables, not Python's, it has no Greek final sigma, it matches
`[MASK]` etc. in raw text, and transformers' BERT class cuts words at 100
characters, not 200. This module therefore spells the pipeline out as a
sequence of simpler steps, every character class computed from Python's
`unicodedata` (the database electra_tf's tokenizer uses). Only case mapping (`Lowercase`) and
canonical decomposition (`NFD`) are left to Rust: they run after step 1, so
only on characters Python's database knows, and for those Rust's tables agree
(a decomposition never changes once assigned; the few that `tokenizers`' NFD
table is too old for are written out). The tests check every code point
against the installed `tokenizers`.

1. drop NUL, U+FFFD and Unicode C* except tab/newline/CR (this removes every
   code point Python's database does not know, so no later step sees one);
2. map the original's whitespace (and `str.isspace`) to " ";
3. lower-casing only: a capital sigma that Python's `str.lower` makes final
   becomes "ς" (one regex with `\\K` and a look-ahead), then `Lowercase`;
4. accent stripping only: `NFD` (after writing out the decompositions it
   lacks), then drop category Mn. NFD's canonical
   reordering, which the original (per token) and electra_tf (per character)
   never apply to the marks that survive, is blocked by a private-use
   placeholder (all private-use characters were dropped in step 1) inserted
   after every character whose decomposition holds a non-Mn combining mark,
   and removed with the Mn marks;
5. split on " ", isolate punctuation (including the ASCII symbol ranges) and
   CJK ideographs;
6. WordPiece with the original's 200-character limit.

transformers must not match `[MASK]` etc. in raw text either (the original
splits them), which `split_special_tokens` in `tokenizer_config.json` says.
"""

import functools
import unicodedata

import tokenizers
from tokenizers import decoders
from tokenizers import models
from tokenizers import normalizers
from tokenizers import pre_tokenizers
from tokenizers import processors

from electra_tf.text import wordpiece
from electra_tf.text.tokenizer import fits_piece_limit
from electra_tf.utils.file_io import write_atomic

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_MAX_CODE_POINT = 0x110000
_SURROGATES = range(0xD800, 0xE000)
_CAPITAL_SIGMA = "\u03a3"
_FINAL_SIGMA = "\u03c2"
# Private use, so dropped from the input in step 1; marks where NFD must not
# reorder.
_REORDER_GUARD = "\ue000"


# Canonical decompositions that `tokenizers`' NFD table (the crate
# unicode-normalization-alignments, older than Unicode 13) lacks; each is
# written out as a replacement. Any other decomposition Python knows, Rust
# knows too (decompositions never change once assigned).
_DECOMPOSITIONS_RUST_LACKS = (0x11938,)


def _is_dropped(char):
  cp = ord(char)
  return cp == 0 or cp == 0xFFFD or wordpiece._is_control(char)


def _stripped(text):
  """NFD without the Mn marks (the original's accent stripping)."""
  return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def _holds_kept_mark(char):
  """Whether NFD(lower(char)) holds a combining mark that is not Mn."""
  decomposed = unicodedata.normalize("NFD", char.lower())
  return any(unicodedata.combining(c) and unicodedata.category(c) != "Mn" for c in decomposed)


@functools.lru_cache(maxsize=1)
def _char_lists():
  """Every character class the pipeline needs, in one pass over Unicode.

  The sigma classes are probed through `str.lower` itself: a character is
  "cased" if a sigma right after it (and after a space) becomes final,
  "ignorable" if it is skipped between a cased letter and a sigma.
  """
  names = ("dropped", "space", "cased", "ignorable", "kept_mark", "mn_or_guard", "split")
  lists = {name: [] for name in names}
  for cp in range(_MAX_CODE_POINT):
    if cp in _SURROGATES:
      continue
    char = chr(cp)
    # The sigma classes include the dropped characters: SentencePiece
    # vocabs lower-case text that still holds them.
    if (" " + char + _CAPITAL_SIGMA).lower()[-1] == _FINAL_SIGMA:
      lists["cased"].append(char)
    elif ("A" + char + _CAPITAL_SIGMA).lower()[-1] == _FINAL_SIGMA:
      lists["ignorable"].append(char)
    if _is_dropped(char):
      lists["dropped"].append(char)
      continue
    if wordpiece._is_whitespace(char) or char.isspace():
      lists["space"].append(char)
    if _holds_kept_mark(char):
      lists["kept_mark"].append(char)
    if unicodedata.category(char) == "Mn":
      lists["mn_or_guard"].append(char)
    if wordpiece._is_punctuation(char) or wordpiece._is_chinese_char(cp):
      lists["split"].append(char)
  lists["mn_or_guard"].append(_REORDER_GUARD)
  return {name: char_class(chars) for name, chars in lists.items()}


def char_class(chars):
  """An Oniguruma bracket expression matching exactly `chars` (code point ranges)."""
  cps = sorted(set(map(ord, chars)))
  parts = []
  start = prev = None
  for cp in cps + [None]:
    if cp is not None and prev is not None and cp == prev + 1:
      prev = cp
      continue
    if start is not None:
      parts.append(f"\\x{{{start:X}}}" + (f"-\\x{{{prev:X}}}" if prev > start else ""))
    start = prev = cp
  return "[" + "".join(parts) + "]"


def _replace(regex, content):
  return normalizers.Replace(tokenizers.Regex(regex), content)


def lowercase_steps():
  """Python's `str.lower` (step 3) as normaliser steps: a capital sigma that
  it makes final becomes "ς", then `Lowercase`."""
  c = _char_lists()
  final_sigma = f"{c['cased']}{c['ignorable']}*\\K{_CAPITAL_SIGMA}(?!{c['ignorable']}*{c['cased']})"
  return [_replace(final_sigma, _FINAL_SIGMA), normalizers.Lowercase()]


def normalizer(do_lower_case, strip_accents):
  """The normaliser (steps 1-4), a `tokenizers.normalizers.Sequence`."""
  c = _char_lists()
  steps = [_replace(c["dropped"], ""), _replace(c["space"], " ")]
  if do_lower_case:
    steps += lowercase_steps()
    if strip_accents:
      steps.append(_replace(f"(?<={c['kept_mark']})", _REORDER_GUARD))
      for cp in _DECOMPOSITIONS_RUST_LACKS:
        char = chr(cp)
        if unicodedata.decomposition(char) and not _is_dropped(char):
          steps.append(_replace(char_class(char), _stripped(char)))
      steps += [normalizers.NFD(), _replace(c["mn_or_guard"], "")]
  return normalizers.Sequence(steps)


def pre_tokenizer():
  """The pre-tokeniser (step 5), a `tokenizers.pre_tokenizers.Sequence`."""
  return pre_tokenizers.Sequence(
    [
      pre_tokenizers.Split(" ", behavior="removed"),
      pre_tokenizers.Split(tokenizers.Regex(_char_lists()["split"]), behavior="isolated"),
    ]
  )


def wordpiece_vocab(tokens):
  """{token: id} as electra_tf reads a vocab: stripped lines, a duplicate keeps
  its last id; the empty token and pieces over electra_tf's byte limit are
  never produced."""
  vocab = {}
  for index, token in enumerate(tokens):
    vocab[token.strip()] = index
  return {token: index for token, index in vocab.items() if token and fits_piece_limit(token)}


def build_tokenizer(tokens, do_lower_case, strip_accents, max_input_chars_per_word=200):
  """A `tokenizers.Tokenizer` for the vocab `tokens` (id = position) that
  gives electra_tf's ids.

  `strip_accents` only acts with `do_lower_case`, as in the original. The
  special tokens of `SPECIAL_TOKENS` in the vocab are added as special (not
  normalised) tokens; `[CLS] A [SEP] (B [SEP])` frame the sequences.

  Raises:
    ValueError: the vocab lacks `[CLS]` or `[SEP]`.
  """
  vocab = wordpiece_vocab(tokens)
  missing = [t for t in ("[CLS]", "[SEP]") if t not in vocab]
  if missing:
    raise ValueError(f"the vocab lacks the special tokens {missing}")
  tokenizer = tokenizers.Tokenizer(
    models.WordPiece(
      vocab,
      unk_token="[UNK]",
      max_input_chars_per_word=int(max_input_chars_per_word),
      continuing_subword_prefix="##",
    )
  )
  tokenizer.normalizer = normalizer(do_lower_case, do_lower_case and strip_accents)
  tokenizer.pre_tokenizer = pre_tokenizer()
  tokenizer.post_processor = processors.TemplateProcessing(
    single="[CLS] $A:0 [SEP]:0",
    pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
    special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
  )
  tokenizer.decoder = decoders.WordPiece(prefix="##", cleanup=True)
  tokenizer.add_special_tokens(
    [
      tokenizers.AddedToken(
        token, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True
      )
      for token in sorted((t for t in SPECIAL_TOKENS if t in vocab), key=vocab.get)
    ]
  )
  return tokenizer


def write_tokenizer_json(path, tokens, do_lower_case, strip_accents, max_input_chars_per_word=200):
  """Writes `build_tokenizer(...)` as `tokenizer.json` to `path`, atomically."""
  tokenizer = build_tokenizer(tokens, do_lower_case, strip_accents, max_input_chars_per_word)
  write_atomic(path, tokenizer.to_str())
