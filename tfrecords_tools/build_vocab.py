"""Learns a vocab: `python -m tfrecords_tools.build_vocab --corpus-dir DIR --vocab-size N --output F`.

`--model-type wordpiece` (the default) writes a WordPiece vocab.txt in the
BERT layout. Words are counted after the same `BasicTokenizer`
normalisation the builder uses (`WordNormalizer`: the in-graph tokenizer's
own per-character tables, applied with `str.translate`), then the
`tokenizers` package's WordPiece trainer picks the pieces (`--learner
tensorflow-text`: tensorflow-text's learner, deterministic but slow beyond a
few megabytes; docs/vocab.md has the figures). A progress line (MB read,
words counted, ETA) is printed every `PROGRESS_SECONDS`. The normalisation (`--no-lower-case`,
`--no-strip-accents`) and the special tokens are recorded in `<output>.json`
beside it, which the builder, training, export and publishing apply (and
refuse a flag that contradicts). The file starts `[PAD]`, `[unused0]`…`[unused<k-1>]`,
`[UNK]`, `[CLS]`, `[SEP]`, `[MASK]` like the uncased BERT vocab (ids 0, 1…k,
k+1…k+4) and has at most `--vocab-size` lines.

`--model-type unigram` or `bpe` trains a SentencePiece model (`.model`) on
the corpus lines as they are (no BERT pre-tokenisation; lower-casing and
accent stripping only where asked), with `[PAD]`=0, `[UNK]`=1, `[CLS]`=2,
`[SEP]`=3, `[MASK]`=4, and records what it was built with in
`<output>.json` beside it, like a WordPiece vocab. Without
`--character-coverage` the coverage is chosen from the corpus's alphabet
(`SMALL_ALPHABET_CHARS`). Both kinds end with two lines: the share of a
corpus sample's distinct characters and of its tokens that become [UNK].

Example:

    python -m tfrecords_tools.build_vocab --corpus-dir corpus --vocab-size 8000 \
        --output vocab.txt
    python -m tfrecords_tools.build_vocab --corpus-dir corpus_ja --vocab-size 32000 \
        --output ja.model --model-type unigram
"""

import argparse
import collections
import dataclasses
import functools
import os
import sys
import time

import numpy as np
import tensorflow as tf
import tokenizers

from electra_tf.text import tokenizer as tokenizer_lib
from electra_tf.text import vocab as vocab_lib
from electra_tf.text.auto_tokenizer import tokenizer_for
from electra_tf.text.sentencepiece_tokenizer import normalize_text
from electra_tf.text.tokenizer import ElectraTokenizer
from electra_tf.utils import exit_codes
from electra_tf.utils import file_io
from electra_tf.utils import interrupts
from electra_tf.utils.file_io import check_writable
from electra_tf.utils.file_io import write_atomic
from tfrecords_tools import text_checks
from tfrecords_tools import text_corpus
from tfrecords_tools.example_writer import decode_utf8

SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")
MODEL_TYPES = ("wordpiece", "unigram", "bpe")
# SentencePiece's trainer leaves out longer sentences (its max_sentence_length, in bytes).
MAX_SENTENCE_BYTES = 4192
# Lines normalised per call when lower-casing or stripping accents.
NORMALIZE_BATCH_LINES = 4096
# Longer lines are cut at spaces into pieces of at most this many characters
# (the normaliser's memory grows with lines × longest line in a batch).
MAX_PIECE_CHARS = 10_000
# Lines × longest line per normaliser batch (~100 MB of intermediates).
MAX_BATCH_CELLS = 1 << 22
# SentencePiece's character coverage when --character-coverage is not given:
# a corpus whose sample has at most SMALL_ALPHABET_CHARS distinct characters,
# and no more than an eighth of --vocab-size, is written in small alphabets
# (Latin with diacritics, Cyrillic, Hangul syllables in everyday use,
# Devanagari…): every character gets a piece (coverage 1.0), since each one
# is a real letter and dropping 0.05% of them drops whole letters. Larger
# alphabets (Chinese, Japanese) keep SentencePiece's 0.9995, which leaves
# the rarest ideographs to [UNK] instead of spending pieces on them. So does a
# toy vocab, where characters alone would take more than an eighth of the pieces.
SMALL_ALPHABET_CHARS = 1000
ALPHABET_SHARE_OF_VOCAB = 8
SMALL_ALPHABET_COVERAGE = 1.0
LARGE_ALPHABET_COVERAGE = 0.9995
# Characters of the corpus's first lines read to count its alphabet.
ALPHABET_SAMPLE_CHARS = 1 << 21
# Characters of the corpus's first lines tokenised to report the [UNK] shares.
UNKNOWN_SAMPLE_CHARS = 200_000
# WordPiece learners: the `tokenizers` package's trainer (the default: Rust,
# minutes for gigabytes) or tensorflow-text's (today's before it; exact
# binary search on a count threshold, pure Python, hours beyond ~20 MB).
LEARNERS = ("tokenizers", "tensorflow-text")
# Files are read in pieces of about this many bytes, cut after a newline, so
# memory stays bounded whatever a file's size (the words of one piece are
# listed at once: ~20 times its size in Python objects).
READ_CHUNK_BYTES = 8 << 20
# Distinct words kept while counting: past twice this many, only this many
# most frequent are kept (the rest have been seen a handful of times; the
# tensorflow-text learner never used more than 5e6 words either).
MAX_DISTINCT_WORDS = 5_000_000
# The longest piece a learner may make, in characters (with "##").
MAX_PIECE_LENGTH = 50
# Seconds between two progress lines while the corpus is counted.
PROGRESS_SECONDS = 10.0
# Characters per string fed to the `tokenizers` trainer (`_repeated_words`):
# it buffers hundreds of strings, so larger ones cost memory (1 MB strings
# added 350 MB at 1 GB of text) and smaller ones time.
FEED_CHARS = 1 << 16


# The largest --vocab-size taken: far above any ELECTRA vocab, far below what
# the trainers' allocations abort on.
MAX_VOCAB_SIZE = 1_000_000


# How many `[unusedN]` tokens follow `[PAD]` when --num-unused is not given (BERT's layout).
DEFAULT_NUM_UNUSED = 99


def reserved_tokens(num_unused=DEFAULT_NUM_UNUSED):
  return ["[PAD]"] + [f"[unused{i}]" for i in range(num_unused)] + list(SPECIAL_TOKENS)


@dataclasses.dataclass
class CountReport:
  """What `count_words` had to change in the corpus (all totals)."""

  bad_bytes: int = 0  # bytes dropped because they are not UTF-8
  bad_bytes_files: int = 0
  bad_bytes_example: str = ""
  split_lines: int = 0  # lines longer than MAX_PIECE_CHARS, cut at spaces
  skipped_words: int = 0  # space-free runs longer than MAX_PIECE_CHARS
  skipped_chars: int = 0
  long_sentences: int = 0  # SentencePiece: lines its trainer leaves out
  pruned_words: int = 0  # rare distinct words dropped to bound memory (`MAX_DISTINCT_WORDS`)
  total_bytes: int = 0  # of every file read
  not_text_files: int = 0  # files skipped whole: not text (`text_checks`)
  not_text_bytes: int = 0
  not_text_example: str = ""
  # {word as written: occurrences} of the corpus's first words, for
  # `text_checks.normalisation_warning`.
  sample_words: collections.Counter = dataclasses.field(default_factory=collections.Counter)

  def check_text(self):
    """Raises a one-line `ValueError` when files that are not text are
    most of the corpus; else returns the warning about them, or None."""
    if not self.not_text_files:
      return None
    refuse, line = text_checks.skipped_message(
      self.not_text_files, self.not_text_bytes, self.total_bytes, self.not_text_example
    )
    if refuse:
      raise ValueError(line)
    return line

  def summary(self):
    """One line per kind of change, empty when nothing changed."""
    lines = []
    if self.not_text_files:
      lines.append(self.check_text())
    if self.long_sentences:
      lines.append(
        f"{self.long_sentences} lines longer than {MAX_SENTENCE_BYTES} UTF-8 bytes are left out "
        "of SentencePiece training (put sentences or paragraphs on lines of their own)"
      )
    if self.bad_bytes:
      lines.append(
        f"ignored {self.bad_bytes} bytes that are not UTF-8 in {self.bad_bytes_files} file(s) "
        f"(e.g. {self.bad_bytes_example!r})"
      )
    if self.split_lines:
      lines.append(
        f"split {self.split_lines} lines longer than {MAX_PIECE_CHARS} characters at spaces"
      )
    if self.pruned_words:
      lines.append(
        f"dropped {self.pruned_words} rare distinct words while counting to bound memory "
        f"(kept the {MAX_DISTINCT_WORDS} most frequent)"
      )
    if self.skipped_words:
      lines.append(
        f"skipped {self.skipped_words} words longer than {MAX_PIECE_CHARS} characters "
        f"({self.skipped_chars} characters; the tokenizer maps words over 200 characters "
        "to [UNK])"
      )
    return lines


def split_long_line(line, max_chars=MAX_PIECE_CHARS):
  """Cuts `line` at spaces into pieces of at most `max_chars` characters.

  Words are split at whitespace by the normaliser anyway, so the pieces give
  the same words as the whole line; a run without a space longer than
  `max_chars` cannot be cut there and is dropped.

  Args:
    line: a str.
    max_chars: the longest piece.

  Returns:
    `(pieces, skipped_words, skipped_chars)`.

  Example:
  >>> split_long_line("aa bb cc " + "x" * 9 + " dd", max_chars=5)
  (['aa bb', 'cc', 'dd'], 1, 9)
  """
  if len(line) <= max_chars:
    return [line], 0, 0
  pieces, skipped_words, skipped_chars = [], 0, 0
  start, n = 0, len(line)
  while start < n:
    while start < n and line[start] == " ":
      start += 1
    if n - start <= max_chars:
      if start < n:
        pieces.append(line[start:])
      break
    cut = line.rfind(" ", start, start + max_chars + 1)
    if cut > start:
      pieces.append(line[start:cut])
      start = cut + 1
      continue
    end = line.find(" ", start)
    end = n if end < 0 else end
    skipped_words += 1
    skipped_chars += end - start
    start = end
  return pieces, skipped_words, skipped_chars


def _batches(lines, max_cells=MAX_BATCH_CELLS):
  """Lines grouped so that lines × longest line stays under `max_cells`
  (sorted by length, so each batch holds lines of similar length)."""
  batch, longest = [], 0
  for line in sorted(lines, key=len):
    longest_with = max(longest, len(line))
    if batch and (len(batch) + 1) * longest_with > max_cells:
      yield batch
      batch, longest_with = [], len(line)
    batch.append(line)
    longest = longest_with
  if batch:
    yield batch


@functools.lru_cache(maxsize=4)
def translate_table(do_lower_case=True, strip_accents=True):
  """The builder's per-character normalisation as a `str.translate` table.

  Made from the in-graph tokenizer's own tables
  (`electra_tf.text.tokenizer._build_tables`, computed from Python's
  `unicodedata` as the original's `BasicTokenizer`), so a character changes
  here exactly as it does in the builder: dropped (control characters,
  U+FFFD), a space (whitespace), spaced out (punctuation, CJK ideographs),
  lower-cased and stripped of accents where asked. Accents are stripped only
  with lower-casing, as the tokenizer does. Only the Greek capital sigma's
  final form depends on context; `WordNormalizer` handles it.

  Args:
    do_lower_case, strip_accents: the builder's normalisation flags.

  Returns:
    A list indexed by code point: the code point itself (unchanged), None
    (dropped) or the replacement string.

  Example:
  >>> "Héllo, 世界!".translate(translate_table()).split()
  ['hello', ',', '世', '界', '!']
  """
  # The tokenizer's own tables (private to it), not a copy: one definition of the normalisation.
  tables = tokenizer_lib._build_tables(do_lower_case, do_lower_case and strip_accents)
  index, blocks = tables["image_index"], tables["image_blocks"]
  values, splits = tables["image_values"].tolist(), tables["image_splits"].tolist()
  code_points = np.arange(tokenizer_lib._MAX_CODE_POINT)
  image = blocks[
    index[code_points // tokenizer_lib._BLOCK] * tokenizer_lib._BLOCK
    + code_points % tokenizer_lib._BLOCK
  ]
  table = list(range(tokenizer_lib._MAX_CODE_POINT))
  changed = np.nonzero(image >= 0)[0]
  for cp, row in zip(changed.tolist(), image[changed].tolist()):
    start, end = splits[row], splits[row + 1]
    table[cp] = "".join(map(chr, values[start:end])) if end > start else None
  return table


class WordNormalizer:
  """Splits text into the words the builder's tokenizer makes of it, fast.

  `words(text)` equals the in-graph `ElectraTokenizer.normalize_words` of
  each line of `text` (tested on hard text: accents, NFD input, CJK,
  punctuation of every category, control characters): the characters go
  through `translate_table` and the result is split at spaces. Lines with a
  capital sigma (whose lower-case form depends on its neighbours) go
  through the in-graph tokenizer itself when lower-casing.

  Args:
    do_lower_case, strip_accents: the builder's normalisation flags.

  Example:
  >>> WordNormalizer().words("Crème brûlée, s'il vous plaît.\\nΟΔΟΣ")
  ['creme', 'brulee', ',', 's', "'", 'il', 'vous', 'plait', '.', 'οδος']
  """

  def __init__(self, do_lower_case=True, strip_accents=True):
    self.do_lower_case = do_lower_case
    self.strip_accents = strip_accents
    self.table = translate_table(do_lower_case, strip_accents)
    self._graph = None

  def graph_words(self, lines):
    """The in-graph tokenizer's words of `lines` (a list of str), in batches
    of bounded size (`_batches`)."""
    if self._graph is None:
      # Only its normalisation is used; the vocab just has to be valid.
      normalizer = ElectraTokenizer(
        vocabulary=list(SPECIAL_TOKENS) + ["a"],
        do_lower_case=self.do_lower_case,
        strip_accents=self.strip_accents,
      )
      self._graph = tf.function(
        normalizer.normalize_words, input_signature=[tf.TensorSpec([None], tf.string)]
      )
    words = []
    for batch in _batches(lines, MAX_BATCH_CELLS):
      flat = self._graph(tf.constant([line.encode("utf-8") for line in batch])).flat_values
      words += [w.decode("utf-8") for w in flat.numpy().tolist()]
    return words

  def words(self, text):
    """The normalised words of `text` (lines separated by "\\n"), a list."""
    sigma_words = []
    if self.do_lower_case and "\u03a3" in text:
      lines = text.split("\n")
      sigma_words = self.graph_words([line for line in lines if "\u03a3" in line])
      text = "\n".join(line for line in lines if "\u03a3" not in line)
    # After the table every kind of whitespace is a plain space, so `split()`
    # splits exactly at the tokenizer's word boundaries.
    return text.translate(self.table).split() + sigma_words


class CountProgress:
  """The progress line of a long count: MB read of the corpus's total,
  words counted, elapsed time and ETA, at most one line per `every`
  seconds (and one at the end) on stdout.

  Args:
    total_bytes: the corpus's size.
    every: seconds between two lines (default `PROGRESS_SECONDS`).
  """

  def __init__(self, total_bytes, every=None):
    self.total = max(total_bytes, 1)
    self.every = PROGRESS_SECONDS if every is None else every
    self.start = self.last = time.time()
    self.done = self.words = 0

  def line(self):
    elapsed = time.time() - self.start
    eta = elapsed / self.done * (self.total - self.done) if self.done else 0
    return (
      f"counting words: {self.done / 1e6:.1f}/{self.total / 1e6:.1f} MB read "
      f"({100.0 * self.done / self.total:.1f}%), {self.words:,} words, "
      f"ELAPSED: {int(elapsed)}s, ETA: {int(eta)}s"
    )

  def update(self, n_bytes=0, n_words=0):
    self.done += n_bytes
    self.words += n_words
    now = time.time()
    if now - self.last >= self.every:
      self.last = now
      sys.stdout.write(self.line() + "\n")
      sys.stdout.flush()

  def finish(self, distinct):
    sys.stdout.write(
      f"counted {self.words:,} words ({distinct:,} distinct) in {self.done / 1e6:.1f} MB, "
      f"ELAPSED: {int(time.time() - self.start)}s\n"
    )
    sys.stdout.flush()


def _cut_long_lines(text, report):
  """`text` with lines longer than `MAX_PIECE_CHARS` cut at spaces
  (`split_long_line`), the cuts counted in `report`."""
  lines = text.split("\n")
  if max(map(len, lines)) <= MAX_PIECE_CHARS:
    return text
  out = []
  for line in lines:
    if len(line) > MAX_PIECE_CHARS:
      # Tabs and carriage returns separate words like spaces do.
      line = line.replace("\t", " ").replace("\r", " ")
      pieces, skipped_words, skipped_chars = split_long_line(line, MAX_PIECE_CHARS)
      if len(pieces) > 1 or skipped_words:
        report.split_lines += 1
        report.skipped_words += skipped_words
        report.skipped_chars += skipped_chars
      out.extend(pieces)
    else:
      out.append(line)
  return "\n".join(out)


def _sample_words(text, report, sampled):
  """Adds the words of `text`'s first lines, as written, to
  `report.sample_words` until `sampled` reaches `text_checks.SAMPLE_WORDS`;
  returns the new `sampled`."""
  for line in text.split("\n"):
    if sampled >= text_checks.SAMPLE_WORDS:
      break
    words = line.split()
    report.sample_words.update(words)
    sampled += len(words)
  return sampled


def count_words(corpus_dir, do_lower_case=True, strip_accents=True, report=None, progress=None):
  """{word: count} over every file in `corpus_dir`, normalised as the builder.

  Words are those of the builder's tokenizer (`WordNormalizer`). Memory is
  bounded whatever the file and line sizes: files are read in pieces of
  `READ_CHUNK_BYTES`, long lines are cut at spaces (`split_long_line`), and
  past 2 × `MAX_DISTINCT_WORDS` distinct words only the most frequent
  `MAX_DISTINCT_WORDS` are kept. Bytes that are not UTF-8 are dropped with a
  warning per file, as the dataset builder does.

  Args:
    corpus_dir: directory of text files (one sentence or paragraph a line).
    do_lower_case, strip_accents: the builder's normalisation flags.
    report: a `CountReport` to add this corpus' changes to (optional).
    progress: a `CountProgress` to tell of each piece read (optional).

  Returns:
    A `collections.Counter` of normalised words.

  Example:
  >>> counts = count_words("corpus")  # doctest: +SKIP
  >>> counts.most_common(2)  # doctest: +SKIP
  [('the', 51234), ('.', 40321)]
  """
  report = report if report is not None else CountReport()
  normalizer = WordNormalizer(do_lower_case, strip_accents)
  counts = collections.Counter()
  sampled = sum(report.sample_words.values())
  for text, n_bytes in corpus_pieces(corpus_dir, report):
    if sampled < text_checks.SAMPLE_WORDS:
      sampled = _sample_words(text, report, sampled)
    words = normalizer.words(_cut_long_lines(text, report))
    del text
    counts.update(words)
    if len(counts) > 2 * MAX_DISTINCT_WORDS:
      kept = counts.most_common(MAX_DISTINCT_WORDS)
      report.pruned_words += len(counts) - len(kept)
      counts = collections.Counter(dict(kept))
    if progress is not None:
      progress.update(n_bytes, len(words))
  return counts


def _repeated_words(word_counts):
  """Strings of each word repeated its count times ("the the the ..."), at
  most about `FEED_CHARS` characters each: the `tokenizers` trainer counts
  words itself, so this hands it exactly `word_counts`."""
  for word, count in word_counts:
    per_string = max(1, FEED_CHARS // (len(word) + 1))
    while count > 0:
      n = min(count, per_string)
      yield (word + " ") * n
      count -= n


def _learn_with_tokenizers(word_counts, vocab_size, reserved, max_unique_chars):
  """The `tokenizers` package's WordPiece trainer on `word_counts` (a list
  of `(word, count)`): its BPE trainer with the "##" continuation prefix
  (what its `WordPieceTrainer` runs), the `reserved` tokens first, at most
  `max_unique_chars` characters and pieces of at most `MAX_PIECE_LENGTH`.
  Pairs seen equally often are merged in an order that can vary between
  runs, so two runs may differ in a few of the last pieces.

  Returns:
    The vocab, a list of tokens (the reserved ones first).
  """
  model = tokenizers.models.BPE(unk_token="[UNK]", continuing_subword_prefix="##")
  learner = tokenizers.Tokenizer(model)
  # The words come normalised and space-separated (`_repeated_words`).
  learner.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
  trainer = tokenizers.trainers.BpeTrainer(
    vocab_size=vocab_size,
    special_tokens=reserved,
    limit_alphabet=max_unique_chars,
    continuing_subword_prefix="##",
    max_token_length=MAX_PIECE_LENGTH,
    show_progress=False,
  )
  learner.train_from_iterator(_repeated_words(word_counts), trainer)
  return [t for t, _ in sorted(learner.get_vocab().items(), key=lambda item: item[1])]


def _learn_wordpieces(word_counts, vocab_size, reserved, max_unique_chars, tried):
  """tensorflow-text's `learn` with `lower_thresh=1` (the same steps, so the
  same vocab), recording each `(count threshold, vocab size)` its binary
  search tries in `tried`: why a vocab falls short of `vocab_size`."""
  from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner  # pylint: disable=g-import-not-at-top

  params = learner.Params(
    upper_thresh=int(1e7),
    lower_thresh=1,
    num_iterations=4,
    max_input_tokens=int(5e6),
    max_token_length=MAX_PIECE_LENGTH,
    max_unique_chars=max_unique_chars,
    vocab_size=vocab_size,
    slack_ratio=0.05,
    include_joiner_token=True,
    joiner="##",
    reserved_tokens=reserved,
  )
  upper, lower = learner.get_search_threshs(word_counts, params.upper_thresh, params.lower_thresh)
  all_counts = learner.get_input_words(word_counts, reserved, params.max_token_length)
  allowed = learner.get_allowed_chars(all_counts, max_unique_chars)
  counts = learner.filter_input_words(all_counts, allowed, params.max_input_tokens)
  slack = max(0, params.slack_ratio * vocab_size)
  while True:  # the library's `learn_binary_search`, as a loop
    thresh = (upper + lower) // 2
    vocab = learner.learn_with_thresh(counts, thresh, params)
    tried.append((thresh, len(vocab)))
    fits = len(vocab) <= vocab_size and vocab_size - len(vocab) <= slack
    if fits or lower >= upper or thresh <= 1:
      return vocab
    if len(vocab) > vocab_size:
      lower = thresh + 1
    else:
      upper = thresh - 1


def shortfall_reason(tried, vocab_size, num_words, decomposed_hangul=False):
  """Why the WordPiece learner gave fewer than `vocab_size` tokens, from the
  `(count threshold, vocab size)` pairs its search tried (the last one is
  the vocab written).

  Example:
  >>> shortfall_reason([(10, 900), (4, 3100), (5, 2600)], 3000, 5000)
  'the WordPiece learner keeps the pieces seen at least N times: N=5 gives 2600 tokens, N=4 already 3100, more than --vocab-size 3000'
  """
  thresh, size = tried[-1]
  over = [(t, n) for t, n in tried if n > vocab_size and t < thresh]
  if thresh <= 1 or not over:
    reason = (
      f"even the pieces seen once give only {size} tokens: that many already spell every word "
      f"of the corpus ({num_words} distinct words after normalisation), so only more text "
      "gives more"
    )
    if decomposed_hangul:
      reason += (
        "; accent stripping split its Hangul syllables into a few dozen jamo, which few "
        "pieces spell (--no-strip-accents keeps syllables)"
      )
    return reason
  t, n = max(over)
  return (
    f"the WordPiece learner keeps the pieces seen at least N times: N={thresh} gives {size} "
    f"tokens, N={t} already {n}, more than --vocab-size {vocab_size}"
  )


def learn_vocab(
  word_counts, vocab_size, num_unused=99, max_unique_chars=1000, tried=None, learner=LEARNERS[0]
):
  """The vocab list: reserved tokens first, then the learned pieces.

  Args:
    word_counts: {normalised word: count} (`count_words`).
    vocab_size: the most tokens, reserved ones included.
    num_unused: how many `[unusedN]` tokens follow `[PAD]`.
    max_unique_chars: the most distinct characters the pieces use (the
      rarest others become [UNK]).
    tried: a list that receives the learner's `(count threshold, vocab
      size)` steps (see `shortfall_reason`); the `tokenizers` trainer merges
      until every word is one piece, so it records one `(1, size)`.
    learner: one of `LEARNERS`.

  Returns:
    A list of distinct tokens, at most `vocab_size`.

  Example:
  >>> learn_vocab({"low": 5, "lower": 2, "newest": 6}, 120)[99:106]
  ['[unused98]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'e', 'l']
  """
  reserved = reserved_tokens(num_unused)
  if vocab_size <= len(reserved):
    raise ValueError(
      f"--vocab-size {vocab_size} leaves no room after the {len(reserved)} reserved tokens"
    )
  if not word_counts:
    raise ValueError("the corpus has no words to learn a vocab from")
  tried = [] if tried is None else tried
  if learner == "tokenizers":
    # The most frequent first: ties in the trainer's counts then go the same
    # way more often (the order of its own tables still varies).
    words = sorted(word_counts.items(), key=lambda item: (-item[1], item[0]))
    vocab = _learn_with_tokenizers(words, vocab_size, reserved, max_unique_chars)
    tried.append((1, len(vocab)))
  elif learner == "tensorflow-text":
    vocab = _learn_wordpieces(
      list(word_counts.items()), vocab_size, reserved, max_unique_chars, tried
    )
  else:
    raise ValueError(f"--learner {learner!r}: expected one of {', '.join(LEARNERS)}")
  # The learners list the reserved tokens first; keep each token once and
  # drop the bare joiner "##" (an empty suffix that is never produced).
  seen, result = set(), []
  for token in vocab:
    if token and token != "##" and token not in seen:
      seen.add(token)
      result.append(token)
  return result[:vocab_size]


def write_vocab(tokens, output):
  write_atomic(output, "".join(t + "\n" for t in tokens))


def _file_pieces(f, size=READ_CHUNK_BYTES):
  """The bytes of the open file `f` in pieces of about `size`, each but the
  last cut after a newline (or, in a line longer than `size`, after a
  space, else before a UTF-8 lead byte), so no line or character is split
  where it can be avoided."""
  rest = b""
  while True:
    data = f.read(size)
    if not data:
      if rest:
        yield rest
      return
    data = rest + data
    cut = data.rfind(b"\n") + 1 or data.rfind(b" ") + 1
    if not cut:
      # Before the last character's first byte (it may be incomplete).
      cut = len(data) - 1
      while cut > 0 and data[cut] & 0xC0 == 0x80:  # a continuation byte
        cut -= 1
      cut = cut or len(data)
    yield data[:cut]
    rest = data[cut:]


def list_corpus_files(corpus_dir):
  """`text_corpus.list_corpus_files`, refusing an entry that is not a
  regular file: build_vocab reads the corpus more than once (a sample for
  the character coverage and the unknown-token report, then the learner),
  so a named pipe would be read empty or block it forever."""
  names = text_corpus.list_corpus_files(corpus_dir)
  for name in names:
    path = os.path.join(corpus_dir, name)
    if tf.io.gfile.isdir(path):
      continue  # a sub-folder: skipped, as the builder does (`text_corpus.subfolder_note`)
    if "://" not in path and os.path.exists(path) and not os.path.isfile(path):
      raise ValueError(
        f"--corpus-dir {corpus_dir!r}: {name!r} is not a regular file (a named pipe, socket or "
        "device); expected text files only: move it out of the folder"
      )
  return names


def corpus_pieces(corpus_dir, report):
  """`(text, its size in bytes)` of every file in `corpus_dir`, in pieces of
  about `READ_CHUNK_BYTES` cut at line ends (`_file_pieces`). Bytes that are
  not UTF-8 are dropped and counted in `report` (a `CountReport`); a file
  whose first piece is mostly not text is skipped whole
  (`text_checks.is_not_text`)."""
  for name in list_corpus_files(corpus_dir):
    path = os.path.join(corpus_dir, name)
    if tf.io.gfile.isdir(path):
      continue
    with tf.io.gfile.GFile(path, "rb") as f:
      bad_in_file = 0
      for number, data in enumerate(_file_pieces(f)):
        text, bad = decode_utf8(data)
        report.total_bytes += len(data)
        if number == 0:
          text_checks.check_line_ends(path, data)
        if number == 0 and text_checks.is_not_text(data, bad):
          # Skipped whole and reported once (`CountReport.check_text`).
          size = tf.io.gfile.stat(path).length
          report.total_bytes += size - len(data)
          report.not_text_files += 1
          report.not_text_bytes += size
          report.not_text_example = report.not_text_example or path
          break
        if bad:
          # Reported once, in the summary.
          report.bad_bytes += bad
          bad_in_file += bad
          report.bad_bytes_example = report.bad_bytes_example or path
        yield text, len(data)
      report.bad_bytes_files += bool(bad_in_file)


def corpus_texts(corpus_dir, report):
  """The text of every file in `corpus_dir` in pieces (`corpus_pieces`)."""
  for text, _ in corpus_pieces(corpus_dir, report):
    yield text


def corpus_size(corpus_dir):
  """The bytes of the files in `corpus_dir` (for the progress line's ETA)."""
  paths = [os.path.join(corpus_dir, name) for name in list_corpus_files(corpus_dir)]
  return sum(tf.io.gfile.stat(p).length for p in paths if not tf.io.gfile.isdir(p))


def corpus_lines(corpus_dir, report):
  """The non-blank lines of every file in `corpus_dir`, stripped (see `corpus_texts`)."""
  for text in corpus_texts(corpus_dir, report):
    for line in text.split("\n"):
      line = line.strip()
      if line:
        yield line


def sentencepiece_sentences(corpus_dir, do_lower_case, strip_accents, report):
  """The corpus lines as a SentencePiece model will see them when
  tokenising (the tokenizer's own `normalize_text`); counts the lines
  SentencePiece's trainer will leave out as too long in `report.split_lines`."""
  normalize = tf.function(
    lambda lines: normalize_text(lines, do_lower_case, strip_accents),
    input_signature=[tf.TensorSpec([None], tf.string)],
  )
  batch = []

  def flush():
    if do_lower_case or strip_accents:
      out = [s.decode("utf-8") for s in normalize(tf.constant(batch)).numpy().tolist()]
    else:
      out = list(batch)
    batch.clear()
    for line in out:
      if len(line.encode("utf-8")) > MAX_SENTENCE_BYTES:
        report.long_sentences += 1
      yield line

  sampled = 0
  for line in corpus_lines(corpus_dir, report):
    if sampled < text_checks.SAMPLE_WORDS:
      words = line.split()
      report.sample_words.update(words)
      sampled += len(words)
    batch.append(line)
    if len(batch) >= NORMALIZE_BATCH_LINES:
      yield from flush()
  if batch:
    yield from flush()


def corpus_sample(corpus_dir, max_chars):
  """The corpus's first non-blank lines, about `max_chars` characters."""
  lines, size = [], 0
  for line in corpus_lines(corpus_dir, CountReport()):
    lines.append(line)
    size += len(line)
    if size >= max_chars:
      break
  return lines


def choose_character_coverage(lines, vocab_size):
  """SentencePiece's character coverage for a corpus sample (`lines`) when
  the user gives none: `(coverage, why)`, see `SMALL_ALPHABET_CHARS`.

  Example:
  >>> choose_character_coverage(["Nhấn để bằng"], 8000)[0]
  1.0
  >>> choose_character_coverage(["".join(chr(0x4E00 + i) for i in range(3000))], 32000)[0]
  0.9995
  """
  alphabet = len({c for line in lines for c in line if not c.isspace()})
  limit = min(SMALL_ALPHABET_CHARS, vocab_size // ALPHABET_SHARE_OF_VOCAB)
  if alphabet <= limit:
    return SMALL_ALPHABET_COVERAGE, (
      f"character coverage {SMALL_ALPHABET_COVERAGE}: the corpus has {alphabet} distinct "
      f"characters (a small alphabet, at most {limit}), so every one gets a piece"
    )
  return LARGE_ALPHABET_COVERAGE, (
    f"character coverage {LARGE_ALPHABET_COVERAGE}: the corpus has {alphabet} distinct "
    f"characters (more than {limit}), the rarest become [UNK]"
  )


def unknown_shares(vocab_file, lines):
  """What the vocab written to `vocab_file` (read back with its settings, as
  every reader will) maps to its unknown id in `lines`: `(unknown
  characters, distinct characters, [UNK] tokens, tokens)`, the characters
  as a sorted list; a character counts as unknown when, alone, it gives
  the unknown id."""
  tokenizer = tokenizer_for(vocab_file)
  unk = tokenizer.unk_id
  chars = sorted({c for line in lines for c in line if not c.isspace()})
  unknown = []
  for start in range(0, len(chars), 1024):
    batch = chars[start : start + 1024]
    rows = tokenizer(tf.constant([c.encode("utf-8") for c in batch])).to_list()
    unknown += [c for c, row in zip(batch, rows) if unk in row]
  unknown_tokens = tokens = 0
  for start in range(0, len(lines), 256):
    batch = [line.encode("utf-8") for line in lines[start : start + 256]]
    ids = tokenizer(tf.constant(batch)).flat_values.numpy()
    tokens += ids.size
    unknown_tokens += int((ids == unk).sum())
  return unknown, len(chars), unknown_tokens, tokens


def unknown_report(vocab_file, lines, coverage=None):
  """Two lines: the share of the sample's distinct characters and of its
  tokens that become [UNK] under the vocab in `vocab_file`; then, for a
  SentencePiece `coverage` below 1.0 that left characters of a small
  alphabet without a piece, a warning line (prefixed "warning: ")."""
  unknown, chars, unknown_tokens, tokens = unknown_shares(vocab_file, lines)
  example = f" (e.g. {' '.join(unknown[:8])})" if unknown else ""
  report = [
    f"[UNK] characters: {len(unknown)} of the {chars} distinct characters of a sample of "
    f"{len(lines)} corpus lines ({len(unknown) / max(chars, 1):.2%}) get no piece{example}",
    f"[UNK] tokens: {unknown_tokens} of the sample's {tokens} tokens "
    f"({unknown_tokens / max(tokens, 1):.2%})",
  ]
  if coverage is not None and coverage < 1 and unknown and chars <= SMALL_ALPHABET_CHARS:
    report.append(
      f"warning: --character-coverage {coverage} left {len(unknown)} of a small alphabet's "
      f"{chars} characters without a piece; 1.0 gives each one"
    )
  return report


def wordpiece_settings(args, tokens):
  """What a WordPiece vocab records beside it (`vocab_lib.write_vocab_settings`)."""
  return {
    "kind": vocab_lib.WORDPIECE,
    "vocab_size": len(tokens),
    "do_lower_case": args.do_lower_case,
    "strip_accents": args.strip_accents,
    "num_unused": args.num_unused,
    "special_tokens": ["[PAD]", *SPECIAL_TOKENS],
  }


def build_sentencepiece(args, report):
  """Trains the model, writes it and its settings file; returns the model's piece count."""
  sentences = sentencepiece_sentences(
    args.corpus_dir, args.do_lower_case, args.strip_accents, report
  )
  if args.character_coverage is None:
    sample = corpus_sample(args.corpus_dir, ALPHABET_SAMPLE_CHARS)
    args.character_coverage, why = choose_character_coverage(sample, args.vocab_size)
    print(f"{why} (pass --character-coverage to choose)")
  if args.input_sentence_size:
    print(
      f"SentencePiece trains on a random sample of at most {args.input_sentence_size:,} lines "
      "(--input-sentence-size)"
    )
  else:
    print("SentencePiece trains on every corpus line (--input-sentence-size 0)")
  try:
    model = vocab_lib.train_sentencepiece(
      sentences,
      args.vocab_size,
      model_type=args.model_type,
      character_coverage=args.character_coverage,
      input_sentence_size=args.input_sentence_size,
    )
  except ValueError:
    # A corpus that is not text (UTF-16, binary) leaves SentencePiece no
    # sentence: say that, not its internal check.
    report.check_text()
    raise
  report.check_text()  # nothing written when the corpus is mostly not text
  size = len(vocab_lib.sentencepiece_vocab_of(model, args.output))
  settings = {
    "kind": vocab_lib.SENTENCEPIECE,
    "model_type": args.model_type,
    "vocab_size": size,
    "do_lower_case": args.do_lower_case,
    "strip_accents": args.strip_accents,
    "character_coverage": args.character_coverage,
  }
  write_vocab_files(args.output, settings, lambda: write_atomic(args.output, model))
  return size


def write_vocab_files(output, settings, write):
  """Writes the settings file beside `output`, then the vocab or model
  (`write()`), together: the settings first, so that a vocab never stands
  without them, and with Ctrl-C (SIGTERM, SIGHUP) held back until both are
  written (with --overwrite, the old pair is never left half replaced). A
  stop received meanwhile is raised afterwards, marked `vocab_written` (see `main`).
  A write that fails (a full disk: one line, see `file_io.full_disk_as_bad_input`)
  puts the settings file back as it was, so none describes a vocab not written."""
  settings_file = vocab_lib.settings_path(output)
  old_settings = None
  if os.path.isfile(settings_file):
    with open(settings_file, "rb") as f:
      old_settings = f.read()
  try:
    with interrupts.stops_held(), file_io.full_disk_as_bad_input("--output", output):
      try:
        vocab_lib.write_vocab_settings(output, settings)
        write()
      except Exception:
        if old_settings is None:
          if os.path.lexists(settings_file):
            os.remove(settings_file)
        else:
          write_atomic(settings_file, old_settings)
        raise
  except KeyboardInterrupt as e:
    e.vocab_written = output
    raise


def _main(argv):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--corpus-dir", required=True)
  parser.add_argument("--vocab-size", required=True, type=int)
  parser.add_argument("--output", required=True)
  parser.add_argument(
    "--model-type",
    default="wordpiece",
    choices=MODEL_TYPES,
    help="wordpiece (a BERT-layout vocab.txt, the default) or a SentencePiece model (unigram, bpe).",
  )
  parser.add_argument(
    "--num-unused",
    default=None,
    type=int,
    help="How many [unusedN] tokens follow [PAD] (wordpiece; default 99).",
  )
  lower_help = "(default: on for wordpiece, off for SentencePiece)"
  parser.add_argument(
    "--do-lower-case", dest="do_lower_case", action="store_true", help=f"Lower-case {lower_help}."
  )
  parser.add_argument("--no-lower-case", dest="do_lower_case", action="store_false")
  parser.add_argument(
    "--do-strip-accents",
    dest="strip_accents",
    action="store_true",
    help=f"Strip accents {lower_help}.",
  )
  parser.add_argument("--no-strip-accents", dest="strip_accents", action="store_false")
  parser.add_argument(
    "--character-coverage",
    default=None,
    type=float,
    help="SentencePiece: share of the characters covered by pieces (default: 1.0 when the "
    f"corpus has at most {SMALL_ALPHABET_CHARS} distinct characters and an eighth of "
    f"--vocab-size, else {LARGE_ALPHABET_COVERAGE}).",
  )
  parser.add_argument(
    "--input-sentence-size",
    default=None,
    type=int,
    help="SentencePiece: train on a sample of this many lines (0: all).",
  )
  parser.add_argument(
    "--learner",
    default=None,
    choices=LEARNERS,
    help="wordpiece: the `tokenizers` package's WordPiece trainer (the default; minutes for "
    "gigabytes) or tensorflow-text's learner (deterministic; hours beyond ~20 MB).",
  )
  parser.add_argument(
    "--overwrite",
    action="store_true",
    help="Replace an existing --output (TFRecords and models built with it keep its ids).",
  )
  parser.set_defaults(do_lower_case=None, strip_accents=None)
  args = parser.parse_args(argv)
  wordpiece = args.model_type == "wordpiece"
  if args.learner is not None and not wordpiece:
    parser.error(
      f"--learner {args.learner} picks a WordPiece learner; --model-type {args.model_type} "
      "trains with SentencePiece (drop --learner)"
    )
  # Flags of the other model type: refused in one line, not silently ignored
  # (given or not is told by None; their defaults are set after this).
  for flag, value, applies in (
    ("--character-coverage", args.character_coverage, not wordpiece),
    ("--input-sentence-size", args.input_sentence_size, not wordpiece),
    ("--num-unused", args.num_unused, wordpiece),
  ):
    if value is not None and not applies:
      where = "wordpiece (the default)" if not wordpiece else "unigram or bpe"
      print(
        f"error: {flag} applies to --model-type {where}, not --model-type {args.model_type}; "
        f"drop {flag}",
        file=sys.stderr,
      )
      return exit_codes.BAD_INPUT
  args.learner = args.learner or LEARNERS[0]
  args.num_unused = DEFAULT_NUM_UNUSED if args.num_unused is None else args.num_unused
  if args.input_sentence_size is None:
    args.input_sentence_size = 0
  if args.do_lower_case is None:
    args.do_lower_case = wordpiece
  if args.strip_accents is None:
    args.strip_accents = wordpiece
  report = CountReport()
  try:
    if not 0 < args.vocab_size <= MAX_VOCAB_SIZE:
      # The trainers allocate for the size asked: a typo of a few zeros aborts the process.
      raise ValueError(
        f"--vocab-size {args.vocab_size}: expected 1 to {MAX_VOCAB_SIZE:,} (ELECTRA's is 30,522)"
      )
    if args.num_unused < 0:
      raise ValueError(f"--num-unused {args.num_unused}: expected 0 or more [unusedN] tokens")
    if args.output == "-":
      # Not standard output: the files would be "-" and "-.json" in the working directory.
      raise ValueError(
        "--output '-' (standard output) is not supported; give a file path (the vocab needs "
        "a settings file beside it)"
      )
    if args.output.endswith(".model" if wordpiece else ".txt"):
      # Other tools (Hugging Face, SentencePiece) tell the two kinds apart by the name.
      fix = "unigram or bpe, or name it vocab.txt" if wordpiece else "wordpiece, or name it *.model"
      raise ValueError(
        f"--output {args.output!r} is a {'SentencePiece' if wordpiece else 'WordPiece'} file's "
        f"name but --model-type is {args.model_type}: pass --model-type {fix}"
      )
    if os.path.isdir(args.output) or args.output.endswith(("/", os.sep)):
      # Checked before any work: the settings file would become "<dir>/.json".
      what = "is a directory" if os.path.isdir(args.output) else "ends in a path separator"
      raise ValueError(
        f"--output {args.output!r} {what}; expected a file path for the vocab (such as "
        f"{os.path.join(args.output, 'vocab.txt')!r})"
      )
    stem, suffix = os.path.splitext(args.output)
    if not wordpiece and suffix == ".vocab":  # SentencePiece's text list of pieces, not a model
      raise ValueError(
        f"--output {args.output!r}: --model-type {args.model_type} writes a SentencePiece model, "
        f"which other tools look for as *.model; name it {stem + '.model'!r}"
      )
    if os.path.exists(args.output) and not args.overwrite:
      # A vocab is what TFRecords and models index into: never replaced silently.
      raise ValueError(
        f"--output {args.output!r} exists; pass --overwrite to replace it (TFRecords and "
        "models built with it keep its ids)"
      )
    # Before counting the corpus (seconds to hours), not when writing the result.
    check_writable(args.output, "--output")
    if file_io.is_directly_in(args.output, args.corpus_dir):
      raise ValueError(
        f"--output {args.output!r} is in --corpus-dir {args.corpus_dir!r}: the vocab (and its "
        "settings file) would be read as text by the next build; write it outside the corpus "
        "folder"
      )
    names = list_corpus_files(args.corpus_dir)
    text_corpus.check_corpus_line_ends(args.corpus_dir, names)
    note = text_corpus.subfolder_note(args.corpus_dir, names)
    if note:
      print(note, file=sys.stderr, flush=True)
    export = text_corpus.export_format_line(args.corpus_dir, names)
    if export:
      print(f"warning: {export}", file=sys.stderr, flush=True)
    if not wordpiece:
      if args.character_coverage is not None and not 0 < args.character_coverage <= 1:
        raise ValueError(
          f"--character-coverage {args.character_coverage}: expected a share in (0, 1]"
        )
      if args.input_sentence_size < 0:
        raise ValueError(
          f"--input-sentence-size {args.input_sentence_size}: expected a number of lines, "
          "or 0 for every line"
        )
      size = build_sentencepiece(args, report)
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return exit_codes.BAD_INPUT
  if not wordpiece:
    try:
      _report_sentencepiece(args, size, report)
    except KeyboardInterrupt as e:
      e.vocab_written = args.output  # Ctrl-C during the report: the model is complete
      raise
    return 0
  tried = []
  try:
    progress = CountProgress(corpus_size(args.corpus_dir))
    counts = count_words(args.corpus_dir, args.do_lower_case, args.strip_accents, report, progress)
    report.check_text()
    progress.finish(len(counts))
    start = time.time()
    tokens = learn_vocab(
      counts, args.vocab_size, args.num_unused, tried=tried, learner=args.learner
    )
    print(
      f"learned {len(tokens)} tokens with the {args.learner} learner in {time.time() - start:.0f}s"
    )
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return exit_codes.BAD_INPUT
  try:
    write_vocab_files(
      args.output, wordpiece_settings(args, tokens), lambda: write_vocab(tokens, args.output)
    )
  except ValueError as e:  # a full disk
    print(f"error: {e}", file=sys.stderr)
    return exit_codes.BAD_INPUT
  try:
    _report_wordpiece(args, tokens, counts, report, tried)
  except KeyboardInterrupt as e:
    e.vocab_written = args.output  # Ctrl-C during the report: the vocab is complete
    raise
  return 0


def _print_corpus_warnings(args, report):
  """The corpus's warnings (what the count met, casing that loses words), on stderr."""
  for line in report.summary():
    print(f"warning: {args.corpus_dir}: {line}", file=sys.stderr)
  lost = text_checks.normalisation_warning(
    report.sample_words, args.do_lower_case, args.strip_accents
  )
  if lost:
    print(f"warning: {args.corpus_dir}: {lost}", file=sys.stderr)


def _report_sentencepiece(args, size, report):
  """What `_main` says once a SentencePiece model is written: warnings, the
  written line and the [UNK] shares."""
  _print_corpus_warnings(args, report)
  print(
    f"Wrote a SentencePiece {args.model_type} model of {size} pieces to {args.output} "
    f"(settings: {vocab_lib.settings_path(args.output)})"
  )
  sample = corpus_sample(args.corpus_dir, UNKNOWN_SAMPLE_CHARS)
  for line in unknown_report(args.output, sample, args.character_coverage):
    print(line, file=sys.stderr if line.startswith("warning: ") else sys.stdout)
  if size < args.vocab_size:
    print(
      f"warning: the model has {size} pieces, fewer than --vocab-size {args.vocab_size} "
      f"(a small corpus); set vocab_size to {size} in the pre-training hparams",
      file=sys.stderr,
    )


def _report_wordpiece(args, tokens, counts, report, tried):
  """What `_main` says once a WordPiece vocab is written: warnings, the
  written line and the [UNK] shares."""
  _print_corpus_warnings(args, report)
  print(
    f"Wrote {len(tokens)} tokens to {args.output} "
    f"(settings: {vocab_lib.settings_path(args.output)})"
  )
  for line in unknown_report(args.output, corpus_sample(args.corpus_dir, UNKNOWN_SAMPLE_CHARS)):
    print(line)
  if len(tokens) < args.vocab_size:
    decomposed = (
      args.do_lower_case
      and args.strip_accents
      and text_checks.hangul_share(report.sample_words) >= text_checks.ACCENT_WARNING_SHARE
    )
    print(
      f"warning: the vocab has {len(tokens)} tokens, fewer than --vocab-size {args.vocab_size}: "
      f"{shortfall_reason(tried, args.vocab_size, len(counts), decomposed)}; set vocab_size to "
      f"{len(tokens)} in the pre-training hparams (or use a larger corpus)",
      file=sys.stderr,
    )


def main(argv=None):
  """The command line; Ctrl-C (SIGTERM, SIGHUP) ends it in one line (exit
  128 + the signal: 130, 143, 129) that says what was written: nothing
  before the vocab and its settings file are written (they are written only
  once complete, together: `write_vocab_files`); after, both, complete (the
  report that follows is what is cut short)."""
  try:
    with interrupts.ctrl_c_remembered():
      return _main(argv)
  except KeyboardInterrupt as e:
    stopped = interrupts.stopped_phrase(interrupts.stop_signal_of(e))
    written = getattr(e, "vocab_written", None)
    if written is None:
      message = f"{stopped}; nothing written"
    else:
      message = (
        f"{stopped} after the vocab was written: {written} and its settings "
        f"{vocab_lib.settings_path(written)} are complete; the report that follows them was cut "
        "short"
      )
    print(message, file=sys.stderr, flush=True)
    return interrupts.stop_status(e)


if __name__ == "__main__":
  sys.exit(main())
