"""Checks on a corpus before it becomes a vocab or records: files that are
not text, files with old-Mac line ends, and words that lower-casing or
accent stripping would change.

Not text: a file whose bytes are mostly not UTF-8 or control characters
(random bytes, a binary file, text in another encoding) is skipped whole and
counted, with one warning per run; when such files are most of the corpus
the run is refused in one line naming a file and the share. A text file
with a few stray bytes stays (those bytes are dropped, as before).

Old-Mac line ends: a file whose lines end in a lone "\\r" (no "\\n" at
all) would be read as one line (the readers split at "\\n" and drop "\\r",
as the original's does), so its text would run together into one example;
`check_line_ends` refuses it in one line with the fix. Windows line ends
("\\r\\n") are fine.

Exports taken for prose: a Hugging Face `datasets` JSON-lines export (one
`{"id": ..., "text": ...}` object a line) or a pandas CSV (`,id,text` then
rows) is valid UTF-8, but read as sentences its keys, quotes and row numbers
become tokens of every example. `export_format_warning` looks at a file's
first lines and says so in one line with the fix.

Meaning lost: lower-casing and accent stripping (the WordPiece defaults)
change words; for Vietnamese tones, Devanagari and Thai vowel signs or
Korean syllables that is a loss of meaning, not of noise. `normalisation_warning`
measures the share of the corpus's words that change and says so in one line
with the flag that keeps them.

Example:
  >>> not_text_share(b"plain text\\n")
  0.0
  >>> round(not_text_share(bytes(range(256)) * 4), 2) > MAX_NOT_TEXT_SHARE
  True
  >>> has_cr_only_line_ends(b"one\\rtwo\\r"), has_cr_only_line_ends(b"one\\r\\ntwo\\r\\n")
  (True, False)
  >>> export_format_warning("c/train.jsonl", b'{"id": 0, "text": "A cat."}\\n')[:58]
  'c/train.jsonl: every sampled line is a JSON object (a JSON'
  >>> export_format_warning("c/prose.txt", b"The cat sat, and then\\nit slept, again.\\n") is None
  True
  >>> counts = {"Nhấn": 1, "đôi": 1, "để": 1, "ok": 1}
  >>> normalisation_warning(counts, do_lower_case=True, strip_accents=True)[:42]
  'accent stripping changes 75% of the words '
"""

import csv
import io
import json
import shlex
import unicodedata

# Bytes that are never text (C0 controls but tab, newline, vertical tab,
# form feed and carriage return; DEL).
_CONTROL_BYTES = bytes([*range(0, 9), *range(14, 32), 127])
# A file with a larger share of bytes that are not UTF-8 or control
# characters is not text. Random bytes are about 60% so; a UTF-8 text with
# some Latin-1 bytes a few percent.
MAX_NOT_TEXT_SHARE = 0.3
# When skipped files are more than this share of the corpus's bytes, the run is refused.
MAX_SKIPPED_SHARE = 0.5
# Warn when accent stripping changes at least this share of the words
# (occurrences) ...
ACCENT_WARNING_SHARE = 0.05
# ... or lower-casing this share (sentence starts and names alone stay below it).
LOWER_CASE_WARNING_SHARE = 0.4
# Words sampled for the normalisation check (the first ones of the corpus).
SAMPLE_WORDS = 200_000
# Bytes read from the start of each corpus file for `check_line_ends`.
LINE_ENDS_SAMPLE_BYTES = 1 << 16
# Bytes and lines of a file's start that `export_format_warning` looks at.
EXPORT_SAMPLE_BYTES = 1 << 16
EXPORT_SAMPLE_LINES = 20


def not_text_share(data, bad_utf8_bytes=None):
  """The share of `data`'s bytes that are not UTF-8 or are control characters.

  Args:
    data: bytes.
    bad_utf8_bytes: how many of them are not UTF-8, when already known
      (`example_writer.decode_utf8`); counted here otherwise.
  """
  if not data:
    return 0.0
  if bad_utf8_bytes is None:
    bad_utf8_bytes = len(data) - len(data.decode("utf-8", "ignore").encode("utf-8"))
  control = len(data) - len(data.translate(None, _CONTROL_BYTES))
  return (bad_utf8_bytes + control) / len(data)


def is_not_text(data, bad_utf8_bytes=None):
  """Whether `data` (a file's bytes) is to be skipped as not text."""
  return not_text_share(data, bad_utf8_bytes) > MAX_NOT_TEXT_SHARE


def has_cr_only_line_ends(data):
  """Whether `data` (the start of a file, bytes) has old-Mac line ends: a
  "\\r" that is not the last byte, and no "\\n" at all."""
  return b"\n" not in data and b"\r" in data.rstrip(b"\r")


def check_line_ends(path, data):
  """Raises a one-line ValueError naming `path` when `data` (its first
  bytes, such as `LINE_ENDS_SAMPLE_BYTES` of them) has CR-only line ends
  (`has_cr_only_line_ends`): read as it is, the whole file would be one line.
  Every reader of corpus text files calls this."""
  if has_cr_only_line_ends(data) and not is_not_text(data):  # not text: skipped as such
    raise ValueError(
      f"--corpus-dir: {path!r} has CR-only line ends (old Mac format: '\\r' without '\\n'), "
      "so it would be read as one line; convert it first, e.g. "
      f"tr '\\r' '\\n' < {shlex.quote(path)} > converted.txt (Windows '\\r\\n' line ends are fine)"
    )


def _longest_field(rows):
  """The key (or column) whose values are longest in `rows` (dicts): the text."""
  lengths = {}
  for row in rows:
    for key, value in row.items():
      lengths[key] = lengths.get(key, 0) + len(str(value))
  return max(lengths, key=lengths.get) if lengths else "text"


def _csv_header(line):
  """The fields of `line` when it reads as a CSV/TSV header (at least two
  fields, each empty, as pandas writes the index's, or one name without
  spaces, at least one not empty), else None."""
  delimiter = "\t" if "\t" in line else ","
  fields = next(csv.reader([line], delimiter=delimiter))
  if len(fields) < 2 or not any(fields):
    return None
  if not all(
    len(f) <= 40 and (f == "" or f.replace("_", "a").replace("-", "a").isalnum()) for f in fields
  ):
    return None
  return delimiter, fields


def export_format_warning(path, data, max_lines=EXPORT_SAMPLE_LINES):
  """One line when `data` (the start of the corpus file `path`) looks like
  a JSON-lines or CSV export rather than sentences, else None.

  JSON lines: every sampled line is a JSON object. CSV: the first line is a
  header of names (`,id,text`) and every sampled row after it parses into
  as many fields. Prose fails both (a sentence is no JSON object, and its
  first line is no header of names).
  """
  text = data.decode("utf-8", "ignore")
  lines = [line for line in text.splitlines() if line.strip()]
  if len(data) >= EXPORT_SAMPLE_BYTES and lines:
    lines.pop()  # the sample may cut the last line
  lines = lines[:max_lines]
  if not lines:
    return None
  objects = []
  for line in lines:
    try:
      value = json.loads(line)
    except ValueError:
      break
    if not isinstance(value, dict):
      break
    objects.append(value)
  else:
    field = _longest_field(objects)
    return (
      f"{path}: every sampled line is a JSON object (a JSON-lines export, such as "
      f"Dataset.to_json?): its keys and quotes would be read as text; write its {field!r} "
      "field out, one sentence a line"
    )
  header = _csv_header(lines[0])
  if header is None:
    return None
  delimiter, fields = header
  # Rows are parsed from the text itself: a quoted field may span lines.
  rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))[1:max_lines]
  rows = [row for row in rows if any(cell.strip() for cell in row)]
  if len(data) >= EXPORT_SAMPLE_BYTES and rows:
    rows.pop()
  if len(rows) < 2 or any(len(row) != len(fields) for row in rows):
    return None
  column = _longest_field([dict(zip(fields, row)) for row in rows]) or "text"
  kind = "TSV" if delimiter == "\t" else "CSV"
  return (
    f"{path}: its first line {lines[0]!r} and every sampled row look like {kind} (a spreadsheet "
    f"or pandas export?): the header, row numbers and quotes would be read as text; write its "
    f"{column!r} column out, one sentence a line"
  )


def skipped_message(skipped_files, skipped_bytes, total_bytes, example):
  """What a run says about the files it skipped as not text: `(refuse,
  line)`; `refuse` when they are most of the corpus."""
  share = skipped_bytes / max(total_bytes, 1)
  what = (
    f"{skipped_files} file(s) ({share:.0%} of the corpus's {total_bytes:,} bytes, e.g. "
    f"{example!r}) are not text: mostly bytes that are not UTF-8 or control characters "
    "(random or binary data, or another encoding: convert it to UTF-8)"
  )
  if share > MAX_SKIPPED_SHARE:
    return True, f"{what}; too little text is left to use"
  return False, f"skipped {what}"


def without_accents(word):
  """The original's accent stripping: NFD, then drop the combining marks (Mn)."""
  return "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")


def has_hangul_syllable(word):
  """Whether `word` holds a precomposed Hangul syllable (U+AC00..U+D7A3),
  which accent stripping's NFD splits into conjoining jamo."""
  return any("\uac00" <= c <= "\ud7a3" for c in word)


def hangul_share(word_counts):
  """The share of the words (occurrences) that hold a Hangul syllable."""
  total = sum(word_counts.values())
  hangul = sum(n for w, n in word_counts.items() if has_hangul_syllable(w))
  return hangul / total if total else 0.0


def _example(word, changed):
  return f'"{word}" -> "{changed}"'


def normalisation_warning(
  word_counts,
  do_lower_case,
  strip_accents,
  accents_flag="--no-strip-accents",
  lower_case_flag="--no-lower-case",
):
  """One line saying how much of the corpus lower-casing and accent
  stripping change, or None when it is little.

  Args:
    word_counts: `{word as written: occurrences}` of (a sample of) the corpus.
    do_lower_case, strip_accents: the normalisation applied (accents are
      stripped only with lower-casing, as the original's tokenizer does).
    accents_flag, lower_case_flag: the flags that keep them.
  """
  total = sum(word_counts.values())
  if not total or not do_lower_case:
    return None
  accents = lowered = hangul = 0
  accent_example = lower_example = None
  for word, count in word_counts.items():
    lower = word.lower()
    if lower != word:
      lowered += count
      lower_example = lower_example or _example(word, lower)
    if strip_accents and without_accents(lower) != lower:
      if has_hangul_syllable(lower):
        # Not an accent lost: the syllable becomes letters no piece joins again.
        hangul += count
        continue
      accents += count
      if accent_example is None or count > accent_example[0]:
        accent_example = (count, _example(word, without_accents(lower)))
  parts = []
  if hangul / total >= ACCENT_WARNING_SHARE:
    parts.append(
      f"accent stripping decomposes the Hangul syllables of {hangul / total:.0%} of the words "
      "into conjoining jamo (no vocab piece then holds a syllable, and pieces start "
      f"mid-syllable); pass {accents_flag} to keep syllables"
    )
  if accents / total >= ACCENT_WARNING_SHARE:
    parts.append(
      f"accent stripping changes {accents / total:.0%} of the words (e.g. {accent_example[1]}; "
      "tones, vowel signs and syllables that tell words apart are lost); pass "
      f"{accents_flag} to keep them"
    )
  if lowered / total >= LOWER_CASE_WARNING_SHARE:
    parts.append(
      f"lower-casing changes {lowered / total:.0%} of the words (e.g. {lower_example}); pass "
      f"{lower_case_flag} to keep the case"
    )
  if not parts:
    return None
  return "; ".join(parts) + " (the same flags for the builder; see docs/vocab.md)"
