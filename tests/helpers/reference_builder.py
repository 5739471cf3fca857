"""The original's example writing, written plainly from the original's `build_pretraining_dataset.py` behaviour,
with the reference FullTokenizer: the yardstick of the builder tests."""

import os
import random

import tensorflow as tf

from electra_tf.text import wordpiece as tokenization


class ReferenceWriter:
  """One job's ExampleBuilder + ExampleWriter, using the global `random`."""

  def __init__(
    self,
    vocab_file,
    max_length,
    num_jobs,
    job_id,
    num_out_files,
    blanks_separate_docs=True,
    lower=True,
    strip=True,
  ):
    self.tokenizer = tokenization.FullTokenizer(vocab_file, lower, strip)
    self.max_length = max_length
    self.blanks = blanks_separate_docs
    self.current, self.current_length = [], 0
    self.target = max_length
    self.out = {i: [] for i in range(num_out_files) if i % num_jobs == job_id}
    self.writers = sorted(self.out)
    self.n_written = 0

  def _create(self):
    vocab = self.tokenizer.vocab
    max_length = self.max_length
    first_target = 100000 if random.random() < 0.1 else (self.target - 3) // 2
    a, b = [], []
    for sentence in self.current:
      if (
        not a
        or len(a) + len(sentence) < first_target
        or (not b and len(a) < first_target and random.random() < 0.5)
      ):
        a += sentence
      else:
        b += sentence
    a = a[: max_length - 2]
    b = b[: max(0, max_length - len(a) - 3)]
    self.current, self.current_length = [], 0
    self.target = random.randint(5, max_length) if random.random() < 0.05 else max_length
    ids = [vocab["[CLS]"]] + a + [vocab["[SEP]"]]
    seg = [0] * len(ids)
    if b:
      ids += b + [vocab["[SEP]"]]
      seg += [1] * (len(b) + 1)
    pad = [0] * (max_length - len(ids))
    return {"input_ids": ids + pad, "input_mask": [1] * len(ids) + pad, "segment_ids": seg + pad}

  def _add_line(self, line):
    line = line.strip().replace("\n", " ")
    if not line and self.current_length != 0:
      return self._create()
    ids = self.tokenizer.convert_tokens_to_ids(self.tokenizer.tokenize(line))
    self.current.append(ids)
    self.current_length += len(ids)
    return self._create() if self.current_length >= self.target else None

  def _emit(self, example):
    if example:
      self.out[self.writers[self.n_written % len(self.writers)]].append(example)
      self.n_written += 1

  def write_lines(self, lines):
    """One file's lines."""
    for line in lines:
      line = line.strip()
      if line or self.blanks:
        self._emit(self._add_line(line))
    self._emit(self._add_line(""))


def reference_build(
  corpus_dir,
  vocab_file,
  max_length,
  num_jobs,
  job_id,
  seed,
  num_out_files,
  blanks_separate_docs=True,
  lower=True,
  strip=True,
  carriage_return_as_space=False,
):
  """The text builder's job `job_id`: {shard index: [feature dicts]}.

  Files are read as the original reads them, by iterating a `GFile` (its line
  reader drops every "\\r"), unless `carriage_return_as_space`: then split on
  "\\n" alone.
  """
  random.seed(seed)
  writer = ReferenceWriter(
    vocab_file, max_length, num_jobs, job_id, num_out_files, blanks_separate_docs, lower, strip
  )
  names = sorted(os.listdir(corpus_dir))
  names = [n for i, n in enumerate(names) if i % num_jobs == job_id]
  random.shuffle(names)
  for name in names:
    path = os.path.join(corpus_dir, name)
    if carriage_return_as_space:
      with open(path, "rb") as f:
        lines = f.read().decode("utf-8", "ignore").split("\n")
    else:
      with tf.io.gfile.GFile(path, "rb") as f:
        lines = [line.decode("utf-8", "ignore") for line in f]
    writer.write_lines(lines)
  return writer.out
