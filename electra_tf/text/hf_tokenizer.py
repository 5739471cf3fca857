"""`tokenizer.json` (Hugging Face `tokenizers`) that reproduces electra_tf's ids.

transformers' own BERT pipeline differs from the original's `BasicTokenizer`
(Rust's Unicode tables, no Greek final sigma, `[MASK]` matched in raw text, a
100-character word limit), so this module spells the pipeline out in simpler
`tokenizers` steps, every character class computed from Python's
`unicodedata`; only `Lowercase` and `NFD` are left to Rust, and the tests
check every code point against the installed `tokenizers`:

1. drop NUL, U+FFFD and Unicode C* except tab/newline/CR;
2. map the original's whitespace (and `str.isspace`) to " ";
3. lower-casing only: a capital sigma `str.lower` makes final becomes "ς",
   then `Lowercase`;
4. accent stripping only: `NFD`, then drop category Mn (a private-use guard
   after each character whose decomposition holds a non-Mn mark blocks NFD's
   reordering, which the original never applies);
5. split on " ", isolate punctuation and CJK ideographs;
6. WordPiece with the original's 200-character limit.
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
# Private use, so dropped in step 1; marks where NFD must not reorder.
_REORDER_GUARD = "\ue000"


# Canonical decompositions `tokenizers`' NFD table (older than Unicode 13)
# lacks, written out as replacements.
_DECOMPOSITIONS_RUST_LACKS = (0x11938,)


def _is_dropped(char):
  cp = ord(char)
  return cp == 0 or cp == 0xFFFD or wordpiece._is_control(char)


def _holds_kept_mark(char):
  """Whether NFD(lower(char)) holds a combining mark that is not Mn."""
  decomposed = unicodedata.normalize("NFD", char.lower())
  return any(unicodedata.combining(c) and unicodedata.category(c) != "Mn" for c in decomposed)


@functools.lru_cache(maxsize=1)
def _char_lists():
  """Every character class the pipeline needs, in one pass over Unicode (the
  sigma classes probed through `str.lower` itself)."""
  names = ("dropped", "space", "cased", "ignorable", "kept_mark", "mn_or_guard", "split")
  lists = {name: [] for name in names}
  for cp in range(_MAX_CODE_POINT):
    if cp in _SURROGATES:
      continue
    char = chr(cp)
    # Dropped characters too: SentencePiece vocabs lower-case text holding them.
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
          steps.append(_replace(char_class(char), wordpiece._run_strip_accents(char)))
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
  vocab = {token.strip(): index for index, token in enumerate(tokens)}
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
  tokenizer.decoder = decoders.WordPiece(prefix="##", cleanup=True)
  specials = [t for t in SPECIAL_TOKENS if t in vocab]
  return with_specials(tokenizer, "[CLS]", "[SEP]", vocab, specials)


def with_specials(tokenizer, cls, sep, ids, specials):
  """`tokenizer` with the `[CLS] A [SEP] (B [SEP])` template and `specials`
  added as special, never normalised, tokens (`ids`: token -> id)."""
  tokenizer.post_processor = processors.TemplateProcessing(
    single=f"{cls} $A:0 {sep}:0",
    pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
    special_tokens=[(cls, ids[cls]), (sep, ids[sep])],
  )
  tokenizer.add_special_tokens(
    [
      tokenizers.AddedToken(
        token, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True
      )
      for token in sorted(specials, key=ids.get)
    ]
  )
  return tokenizer


def write_tokenizer_json(path, tokens, do_lower_case, strip_accents, max_input_chars_per_word=200):
  """Writes `build_tokenizer(...)` as `tokenizer.json` to `path`, atomically."""
  tokenizer = build_tokenizer(tokens, do_lower_case, strip_accents, max_input_chars_per_word)
  write_atomic(path, tokenizer.to_str())
