"""Writes pre-training examples round-robin over a job's shards (`build_pretraining_dataset.py:ExampleWriter`).

Differences from the original, all on the side of safety: shards are written
through `electra_tf.utils.file_io.atomic_path` under a hidden temporary name
(`.pretrain_data.tfrecord-…tmp.<attempt>`, unique per attempt so that a retried
or duplicated job never writes into another attempt's file) and renamed when
the job finishes, so an interrupted run never leaves files that look complete; text is
tokenized in large batches with the in-graph tokenizer of the vocab's kind
(`electra_tf.text.tokenizer_for`: WordPiece or SentencePiece); records are
serialised by hand (same parsed content as the original's protos); bytes that
are not UTF-8 are ignored and counted.

Example:

```python
writer = ExampleWriter(job_id=0, vocab_file="vocab.txt", output_dir="out",
                       max_seq_length=128, num_jobs=1)
writer.write_file("corpus/a.txt")
writer.finish()
```
"""

import concurrent.futures
import contextlib
import logging
import os
import sys
import time
import uuid

import tensorflow as tf

from electra_tf.text import tokenizer_for
from electra_tf.utils import file_io
from electra_tf.utils.file_io import atomic_path
from tfrecords_tools.example_builder import ExampleBuilder
from tfrecords_tools.example_builder import examples_to_features
from tfrecords_tools.example_builder import serialize_examples
from tfrecords_tools.text_checks import is_not_text

SHARD_PREFIX = "pretrain_data.tfrecord"
# Every temporary shard name starts with this (`atomic_path` hides it behind a
# dot); earlier versions used ".incomplete-<name>".
TEMP_PREFIXES = ("." + SHARD_PREFIX, ".incomplete-")
# Lines tokenized per call of the in-graph tokenizer.
TOKENIZE_BATCH_LINES = 2048
# A line this many times longer (in characters) than an example (in tokens)
# cannot fit: the packing keeps at most max_seq_length - 2 of its tokens.
LONG_LINE_CHARS_PER_TOKEN = 100
# Long lines named one by one per job; the rest are counted in one line.
MAX_LONG_LINE_WARNINGS = 5


def shard_name(index, num_out_files):
  """`pretrain_data.tfrecord-<i>-of-<n>`, no zero padding (as the original)."""
  return f"{SHARD_PREFIX}-{index}-of-{num_out_files}"


def job_shard_indices(job_id, num_jobs, num_out_files):
  """The shards job `job_id` owns: those with `i % num_jobs == job_id`."""
  return [i for i in range(num_out_files) if i % num_jobs == job_id]


class OutputFullError(ValueError):
  """The output's file system (or quota) filled up while a job wrote its
  shards; the message says where and how much, in one line. A ValueError so
  that the command lines print it as their other one-line errors."""


def output_full_error(output_dir, written, read, corpus_bytes=None, error=None):
  """The `OutputFullError` of a job that had written `written` bytes of
  shards from `read` bytes of text when the disk filled (`error`: what the
  write raised). With the corpus's size known, the records' total size is
  estimated from that ratio."""
  if corpus_bytes and read and written:
    how_much = (
      f"about {file_io.megabytes(written * corpus_bytes / read)} needed for the "
      f"{file_io.megabytes(corpus_bytes)} of text, estimated from the part written"
    )
  elif written:
    how_much = f"a job had written {file_io.megabytes(written)}"
  else:
    # Not one shard could be created: with bytes free, the file system is out of inodes.
    how_much = (
      f"no shard could be created, {file_io.megabytes(file_io.free_bytes(output_dir))} free: "
      "out of space or of inodes"
    )
  happened, remedy = file_io.no_room_phrase(error)
  return OutputFullError(
    f"{happened} for the shards in --output-dir {output_dir!r} ({how_much}); "
    f"the temporary shards were removed; {remedy} (or choose another --output-dir) "
    "and run again"
  )


def decode_utf8(data):
  """Returns (text, number of bytes dropped because they are not UTF-8)."""
  try:
    return data.decode("utf-8"), 0
  except UnicodeDecodeError:
    text = data.decode("utf-8", "ignore")
    return text, len(data) - len(text.encode("utf-8"))


class ExampleWriter:
  """Tokenizes text, packs it with `ExampleBuilder` and writes the shards.

  Args:
    job_id: this job's index.
    vocab_file: WordPiece vocab.txt or SentencePiece model (`tokenizer_for`).
    output_dir: where the shards go (must exist).
    max_seq_length: tokens per example.
    num_jobs: total number of jobs.
    blanks_separate_docs: whether an empty line ends a document (else empty
      lines are skipped).
    do_lower_case, strip_accents: tokenizer options; None applies what the
      vocab was built with (`electra_tf.text.vocab.vocab_settings`).
    num_out_files: total number of shards over all jobs.
    tokenizer: an already built tokenizer (`ElectraTokenizer` or
      `SentencePieceTokenizer`; optional).
    carriage_return_as_space: False (the original's behaviour) drops every
      "\r", as the original's line reader (`GFile`) does, so a lone one joins
      the words around it ("a\rb" is "ab"); True keeps it, and the tokenizer
      then splits words there, like any whitespace.
    rng: the job's random source (a `random.Random`); the module-level
      `random` when None.
  """

  def __init__(
    self,
    job_id,
    vocab_file,
    output_dir,
    max_seq_length,
    num_jobs=1,
    blanks_separate_docs=True,
    do_lower_case=None,
    strip_accents=None,
    num_out_files=1000,
    tokenizer=None,
    rng=None,
    carriage_return_as_space=False,
  ):
    self._blanks_separate_docs = blanks_separate_docs
    self._carriage_return_as_space = carriage_return_as_space
    self._max_seq_length = max_seq_length
    self._tokenizer = tokenizer or tokenizer_for(
      vocab_file, do_lower_case=do_lower_case, strip_accents=strip_accents
    )
    self._tokenize = tf.function(
      self._tokenizer.call, input_signature=[tf.TensorSpec([None], tf.string)]
    )
    # Trace and optimise the graph now (seconds), as part of the set-up.
    self._tokenize(tf.constant(["warm up", "réchauffer ΟΔΟΣ"]))
    self._builder = ExampleBuilder(
      None,
      max_seq_length,
      cls_id=self._tokenizer.cls_id,
      sep_id=self._tokenizer.sep_id,
      rng=rng,
    )
    indices = job_shard_indices(job_id, num_jobs, num_out_files)
    if not indices:
      raise ValueError(
        f"job {job_id} of {num_jobs} owns none of the {num_out_files} output "
        f"files: use at most --num-out-files={num_out_files} processes"
      )
    self._final_paths = [os.path.join(output_dir, shard_name(i, num_out_files)) for i in indices]
    # Closing the stack closes the record writers, then renames every shard
    # into place; unwinding it with an error removes the temporary files.
    self._files = contextlib.ExitStack()
    attempt = f".{uuid.uuid4().hex[:12]}"
    try:
      self._temp_paths = [
        self._files.enter_context(atomic_path(p, suffix=attempt)) for p in self._final_paths
      ]
      self._writers = [self._files.enter_context(tf.io.TFRecordWriter(p)) for p in self._temp_paths]
    except BaseException:
      self.abort()  # the shards opened so far
      raise
    self.n_written = 0
    self.bytes_read = 0
    self.bad_bytes = 0
    # Files with bytes that are not UTF-8, and files skipped whole as not text
    # (`text_checks`); the build reports both once, with an example file.
    self.bad_bytes_files = 0
    self.bad_bytes_example = ""
    self.not_text_files = 0
    self.not_text_bytes = 0
    self.not_text_example = ""
    self.lines_read = 0
    # Tokens of the text packed, and how many of them are [UNK]: a share far
    # above a vocab's own corpus says the vocab does not fit this text.
    self.tokens_read = 0
    self.unknown_tokens = 0
    # Long lines by their index in the stream of lines: (source, line number, characters).
    self._long_lines = {}
    self._lines_seen = 0
    self.long_lines = 0
    self.long_line_tokens_unused = 0
    self.chars_packed = 0
    # Bytes of whole chunks' records and text so far.
    self.bytes_written = 0

  def read_file(self, input_file):
    """A corpus file's text; bytes that are not UTF-8 are ignored and
    counted, and a file that is not text (`text_checks.is_not_text`) gives
    "" and is counted (the build warns once about both).

    Pass `(input_file, text)` to `write_texts` so that warnings name the file.
    """
    with tf.io.gfile.GFile(input_file, "rb") as f:
      data = f.read()
    text, bad = decode_utf8(data)
    self.bytes_read += len(data)
    if is_not_text(data, bad):
      self.not_text_files += 1
      self.not_text_bytes += len(data)
      self.not_text_example = self.not_text_example or input_file
      return ""
    if bad:
      self.bad_bytes += bad
      self.bad_bytes_files += 1
      self.bad_bytes_example = self.bad_bytes_example or input_file
    return text

  def write_file(self, input_file):
    """Adds every line of a text file; the end of the file ends a document."""
    self.write_texts([(input_file, self.read_file(input_file))])

  def write_document_text(self, text):
    """Adds `text` as the content of one file (ends with a document end)."""
    self.write_texts([text])

  def write_texts(self, texts):
    """Adds each text of an iterable as the content of one file.

    An item is a text or a `(source, text)` pair; the source (a file name)
    names the text in warnings.

    Tokenization of the next chunk of lines runs in a thread (TensorFlow
    releases the GIL) while this one packs and writes the current chunk; the
    packing, and so every random draw, stays in order.
    """
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
      pending = None
      for chunk in self._chunks(texts):
        future = pool.submit(self._tokenize_lines, chunk)
        if pending is not None:
          self._pack(*pending.result())
        pending = future
      if pending is not None:
        self._pack(*pending.result())

  def _chunks(self, texts):
    """Stripped lines in chunks; "" after each text (a document end)."""
    buffer = []
    long_line_chars = LONG_LINE_CHARS_PER_TOKEN * self._max_seq_length
    for item in texts:
      source, text = item if isinstance(item, tuple) else ("a document", item)
      if not self._carriage_return_as_space:
        text = text.replace("\r", "")
      # The original iterates a GFile, which splits on "\n" only.
      lines = text.split("\n")
      if len(text) > long_line_chars and max(map(len, lines)) > long_line_chars:
        # Numbered as the lines enter the buffer below (empty ones skipped
        # when blank lines are not document ends).
        position = self._lines_seen + len(buffer)
        for number, line in enumerate(lines, 1):
          length = len(line.strip())
          if length or self._blanks_separate_docs:
            if length > long_line_chars:
              self._long_lines[position] = (source, number, length)
            position += 1
      if self._blanks_separate_docs:
        buffer.extend(line.strip() for line in lines)
      else:
        buffer.extend(s for s in (line.strip() for line in lines) if s)
      buffer.append("")  # the end of a file always ends a document
      # Slice by an offset and drop the used lines once: a text of many
      # lines would otherwise re-copy the rest of the buffer per chunk.
      start = 0
      while len(buffer) - start >= TOKENIZE_BATCH_LINES:
        yield buffer[start : start + TOKENIZE_BATCH_LINES]
        start += TOKENIZE_BATCH_LINES
      del buffer[:start]
      self._lines_seen += start
    if buffer:
      yield buffer

  def _tokenize_lines(self, lines):
    ids = self._tokenize(tf.constant([line.encode("utf-8") for line in lines]))
    return lines, ids.flat_values.numpy(), ids.row_splits.numpy().tolist()

  def _pack(self, lines, flat, splits):
    if self._long_lines:
      self._warn_long_lines(self.lines_read, splits)
    self.lines_read += len(lines)
    self.tokens_read += len(flat)
    self.unknown_tokens += int((flat == self._tokenizer.unk_id).sum())
    builder = self._builder
    examples = []
    for i, line in enumerate(lines):
      example = builder.add_ids(flat[splits[i] : splits[i + 1]], is_blank=not line)
      if example is not None:
        examples.append(example)
    # Text and records of whole chunks (files are read ahead), counted before
    # the write: a job whose very first write meets a full disk (another job
    # filled it) still has a ratio for the estimate.
    self.chars_packed += sum(map(len, lines)) + len(lines)
    if examples:
      self._write(
        examples_to_features(examples, self._max_seq_length, builder.cls_id, builder.sep_id)
      )

  def _write(self, columns):
    records = list(serialize_examples(*columns))
    self.bytes_written += sum(len(record) + 16 for record in records)  # with the framing
    for record in records:
      self._writers[self.n_written % len(self._writers)].write(record)
      self.n_written += 1

  def _warn_long_lines(self, first, splits):
    """Warns about the long lines of the chunk whose first line is the
    stream's line `first`: how much of each was not used."""
    fits = self._max_seq_length - 2
    for index in range(first, first + len(splits) - 1):
      if index not in self._long_lines:
        continue
      source, number, chars = self._long_lines.pop(index)
      tokens = splits[index - first + 1] - splits[index - first]
      unused = max(0, tokens - fits)
      self.long_lines += 1
      self.long_line_tokens_unused += unused
      if self.long_lines > MAX_LONG_LINE_WARNINGS:
        continue
      if unused:
        lost = (
          f"{unused:,} of its tokens (about {chars * unused // tokens:,} characters) were not used"
        )
      else:
        lost = "most of its text became [UNK] (words over 200 characters)"
      logging.warning(
        "%s: line %d is %s characters long (%s tokens), but an example keeps at most %d tokens "
        "of one line: %s, as in the original. Put sentences or paragraphs on lines of their own.",
        source,
        number,
        f"{chars:,}",
        f"{tokens:,}",
        fits,
        lost,
      )

  def finish(self):
    """Closes the shards and gives them their final names."""
    if self.long_lines > MAX_LONG_LINE_WARNINGS:
      logging.warning(
        "%d more lines over %s characters; %s tokens of long lines were not used in all",
        self.long_lines - MAX_LONG_LINE_WARNINGS,
        f"{LONG_LINE_CHARS_PER_TOKEN * self._max_seq_length:,}",
        f"{self.long_line_tokens_unused:,}",
      )
    self._files.close()

  def abort(self):
    """Closes and deletes the temporary shards (after an error)."""
    error = sys.exc_info()
    if error[0] is None:
      error = (RuntimeError, RuntimeError("example writer aborted"), None)
    try:
      self._files.__exit__(*error)
    except Exception as e:  # pylint: disable=broad-except
      # Closing a writer on a full disk fails again; `atomic_path` has
      # removed the temporary files all the same, and the caller re-raises
      # the first error.
      if not file_io.is_disk_full(e):
        raise

  def output_full_error(self, output_dir, corpus_bytes=None, error=None):
    """After `abort` for a full disk: the one-line `OutputFullError`."""
    return output_full_error(output_dir, self.bytes_written, self.chars_packed, corpus_bytes, error)


class ProgressLog:
  """The original's per-job progress line with elapsed time and ETA."""

  def __init__(self, job_id, total, unit="files"):
    self.job_id = job_id
    self.total = total
    self.unit = unit
    self.start = time.time()

  def log(self, message):
    # One write of the whole line: `print` writes the text and the newline
    # separately, and with unbuffered output (PYTHONUNBUFFERED) the jobs'
    # lines then interleave on the shared stdout ("Job 1: ...Job 0: ...").
    sys.stdout.write(f"Job {self.job_id}: {message}\n")
    sys.stdout.flush()

  def update(self, done, n_written):
    elapsed = time.time() - self.start
    eta = elapsed / done * (self.total - done) if done else 0
    self.log(
      f"processed {done}/{self.total} {self.unit} "
      f"({100.0 * done / max(self.total, 1):.1f}%), ELAPSED: {int(elapsed)}s, "
      f"ETA: {int(eta)}s, {n_written} examples written"
    )
