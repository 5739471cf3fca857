"""The pre-training input pipeline (`pretrain/pretrain_data.py:get_input_fn`) and a start-up check of the data.

`get_dataset` builds what the original's `input_fn` builds;
`validate_pretraining_files` fails early with an error that names the file
and what was expected, where the original fails late with an opaque parse
error (or, with only empty files, waits forever).
"""

import numbers
import os
import struct
import typing

import numpy as np
import tensorflow as tf

from electra_tf.data import record_check
from electra_tf.data import records_info
from electra_tf.utils import file_io

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")
# How far before a file's end `get_dataset` looks for its last record's header.
_TAIL_BYTES = 1 << 16


class PretrainingFiles(typing.NamedTuple):
  """The checked pre-training files and how many records each holds."""

  files: list
  record_counts: list


def _split_patterns(file_patterns):
  if isinstance(file_patterns, str):
    file_patterns = file_patterns.split(",")
  return [p.strip() for p in file_patterns if p and p.strip()]


def find_files(file_patterns):
  """Globs every pattern (a list, or one comma-separated string) into one
  sorted file list, without the builders' `records_info.json`; raises
  ValueError naming the patterns if none match."""
  patterns = _split_patterns(file_patterns)
  files = []
  for pattern in patterns:
    files.extend(tf.io.gfile.glob(pattern))
  files = sorted(f for f in set(files) if os.path.basename(f) != records_info.RECORDS_INFO)
  if not files:
    raise ValueError(f"no pre-training files match {patterns!r}")
  for f in files:
    broken = file_io.broken_link(f)
    if broken:
      raise ValueError(f"pre-training file {f!r} (of {patterns!r}) is {broken}")
  folders = [f for f in files if tf.io.gfile.isdir(f)]
  if folders:
    raise ValueError(
      f"pre-training file pattern {patterns!r} matches the directory {folders[0]!r}; give a "
      f"pattern of its record files, such as {os.path.join(folders[0], 'pretrain_data.tfrecord*')!r}"
    )
  return files


def decode_record(record, max_seq_length):
  """A serialized tf.train.Example → dict of int32 [max_seq_length] tensors."""
  features = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in FEATURE_NAMES}
  example = tf.io.parse_single_example(record, features)
  return {name: tf.cast(t, tf.int32) for name, t in example.items()}


def _seeded_records(files, seed, cycle_length, skip_records, num_records):
  """The records of `files` as a seeded stream that starts `skip_records` in.

  Epoch `e` reads every file once, in an order drawn from `(seed, e)`,
  interleaved in a fixed order, through a seeded 100-record shuffle. Every
  epoch has `num_records` records, so a resumed run starts at its epoch and
  skips at most one epoch's records.
  """
  paths = tf.constant(files, tf.string)
  base_seed = tf.constant(int(seed), tf.int64)

  def epoch_records(epoch):
    epoch_seed = tf.stack([base_seed, epoch])
    order = tf.random.experimental.stateless_shuffle(paths, seed=epoch_seed)
    records = tf.data.Dataset.from_tensor_slices(order).interleave(
      tf.data.TFRecordDataset,
      cycle_length=min(cycle_length, len(files)),
      num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=True,
    )
    # A Python seed (tf.data takes no tensor seed here).
    return records.shuffle(buffer_size=100, seed=int(seed))

  first_epoch, offset = divmod(int(skip_records), int(num_records))
  first = epoch_records(tf.constant(first_epoch, tf.int64)).skip(offset)
  later = tf.data.Dataset.range(first_epoch + 1, 2**62).flat_map(epoch_records)
  return first.concatenate(later)


def get_dataset(
  file_patterns,
  max_seq_length,
  batch_size,
  is_training,
  input_context=None,
  seed=None,
  cycle_length=4,
  start_batch=0,
  record_counts=None,
  vocab_size=None,
):
  """The training/eval `tf.data.Dataset` of the original's `input_fn`.

  Without a seed this is the original's pipeline: files shuffled and
  repeated, read interleaved, a 100-record shuffle, batches that drop the
  remainder. With a seed the same steps run per epoch in an order drawn
  from `(seed, epoch)` (and TensorFlow's global seed), so `start_batch` can
  resume the stream exactly.

  Args:
    file_patterns: glob patterns (a list, or one comma-separated string).
    max_seq_length: S, the length of every feature in the records.
    batch_size: the global batch size; with `input_context` each pipeline
      yields `input_context.get_per_replica_batch_size(batch_size)`.
    is_training: only relaxes the interleave order (as `sloppy=is_training`);
      eval also repeats, shuffles and drops the remainder, as the original.
    input_context: a `tf.distribute.InputContext`; with several input
      pipelines, each reads only its share of the files (sharding by file).
    seed: seed of the order (None: nondeterministic, as the original).
    cycle_length: files read at once (the original's `num_cpu_threads`, 4).
    start_batch: with a seed, the number of batches already consumed (the
      input position saved with a checkpoint); the dataset starts after them.
    record_counts: with a seed, the record count of each matched file, as
      `validate_pretraining_files` returns them (None: counted here).
    vocab_size: the first record's ids must be below it (None: not checked).

  Returns:
    An infinite dataset of dicts `input_ids`, `input_mask`, `segment_ids`:
    int32 [B, S].

  Example:
  >>> import tensorflow as tf
  >>> ex = tf.train.Example(features=tf.train.Features(feature={
  ...     n: tf.train.Feature(int64_list=tf.train.Int64List(value=[1] * 4))
  ...     for n in FEATURE_NAMES}))
  >>> with tf.io.TFRecordWriter("p.tfrecord") as w:
  ...   for _ in range(3): w.write(ex.SerializeToString())
  >>> ds = get_dataset("p.tfrecord", 4, 2, True, seed=0, start_batch=5)
  >>> ds.element_spec["input_ids"].shape
  TensorShape([2, 4])
  """
  for name, value, low in (
    ("max_seq_length", max_seq_length, 1),
    ("batch_size", batch_size, 1),
    ("cycle_length", cycle_length, 1),
    ("start_batch", start_batch, 0),  # a negative one would wrap to the epoch's end
  ):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
      expected = "a positive integer" if low else "an integer >= 0"
      raise ValueError(f"get_dataset: {name}={value!r}; expected {expected}")
  files = find_files(file_patterns)
  # A cut file would fail only when read, naming no file; given
  # record_counts, the caller checked them.
  if seed is not None and record_counts is None:
    record_counts = record_check.check_tfrecord_files(files)
  elif record_counts is None:
    _check_file_ends(files)
  # One record, cheaply: records of another length would fail deep inside `fit`.
  for raw in tf.data.TFRecordDataset(files[0]).take(1).as_numpy_iterator():
    _check_example(raw, files[0], 0, max_seq_length, vocab_size)
  if input_context is not None:
    batch_size = input_context.get_per_replica_batch_size(batch_size)
  if input_context is not None and input_context.num_input_pipelines > 1:
    if len(files) < input_context.num_input_pipelines:
      raise ValueError(
        f"{len(files)} pre-training files cannot be sharded over "
        f"{input_context.num_input_pipelines} input pipelines"
      )
    shard = slice(input_context.input_pipeline_id, None, input_context.num_input_pipelines)
    files = files[shard]
    record_counts = None if record_counts is None else list(record_counts)[shard]
  if seed is not None:
    num_records = sum(record_counts)
    if num_records == 0:
      raise ValueError(f"the pre-training files {files!r} hold no records")
    dataset = _seeded_records(files, seed, cycle_length, int(start_batch) * batch_size, num_records)
  else:
    dataset = tf.data.Dataset.from_tensor_slices(tf.constant(files))
    dataset = dataset.repeat()
    dataset = dataset.shuffle(buffer_size=len(files))
    dataset = dataset.interleave(
      tf.data.TFRecordDataset,
      cycle_length=min(cycle_length, len(files)),
      num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=not is_training,
    )
    dataset = dataset.shuffle(buffer_size=100)
  dataset = dataset.map(
    lambda r: decode_record(r, max_seq_length), num_parallel_calls=tf.data.AUTOTUNE
  )
  dataset = dataset.batch(batch_size, drop_remainder=True)
  return dataset.prefetch(tf.data.AUTOTUNE)


def _ends_after_a_record(path):
  """Whether some header (a length and its checksum) in the last `_TAIL_BYTES`
  of `path` frames a record that ends exactly at the end of the file."""
  # TensorBoard (installed with TensorFlow) computes TFRecord's masked CRC-32C.
  from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c  # pylint: disable=g-import-not-at-top

  size = tf.io.gfile.stat(path).length
  if size == 0:
    return True
  start = max(0, size - _TAIL_BYTES)
  with tf.io.gfile.GFile(path, "rb") as f:
    f.seek(start)
    tail = f.read()
  last = len(tail) - record_check.FRAMING_BYTES  # the last place a header can start
  if last < 0:
    return False
  # The uint64 at every byte offset, against the length that would end there.
  lengths = np.ndarray((last + 1,), "<u8", tail, strides=(1,))
  for i in np.flatnonzero(lengths == np.arange(last, -1, -1, dtype=np.uint64)):
    # Zero padding inside a record reads as a length 0: the checksum rules it out.
    if masked_crc32c(tail[i : i + 8]) == struct.unpack_from("<I", tail, i + 8)[0]:
      return True
  return False


def _check_file_ends(files):
  """Raises `record_check.CorruptRecordError` for a file cut short; only a
  file that does not end after a record is read in full."""
  for path in files:
    if not _ends_after_a_record(path):
      record_check.check_tfrecord_file(path)


def _check_example(raw, path, index, max_seq_length, vocab_size):
  where = f"pre-training file {path!r}, record {index}"
  try:
    example = tf.train.Example.FromString(raw)
  except Exception as e:  # pylint: disable=broad-except
    raise ValueError(f"{where}: not a tf.train.Example ({e})") from e
  features = example.features.feature
  for name in FEATURE_NAMES:
    if name not in features:
      raise ValueError(
        f"{where}: missing feature {name!r}; expected int64 features "
        f"{list(FEATURE_NAMES)} (found {sorted(features)})"
      )
    feature = features[name]
    if feature.WhichOneof("kind") != "int64_list":
      raise ValueError(
        f"{where}: feature {name!r} is a {feature.WhichOneof('kind')}, expected an int64_list"
      )
    values = feature.int64_list.value
    if len(values) != max_seq_length:
      raise ValueError(
        f"{where}: feature {name!r} has length {len(values)}, expected "
        f"max_seq_length={max_seq_length} (were the records built with "
        f"--max-seq-length {len(values)}?)"
      )
    if name == "input_ids" and vocab_size is not None and values:
      top = max(values)
      if top >= vocab_size or min(values) < 0:
        raise ValueError(
          f"{where}: input_ids holds id {top}, outside the vocab of size {vocab_size} "
          "(records built with another vocab?)"
        )


def validate_pretraining_files(
  file_patterns, max_seq_length, vocab_size=None, records_per_file=100, log=None
):
  """Checks the pre-training records before training starts.

  Verifies every record's framing and checksums (`record_check`), parses
  the first `records_per_file` records of each file, and raises ValueError
  naming the file for: no files matching, a corrupt or truncated record, a
  missing or non-int64 feature, a feature whose length is not
  `max_seq_length`, an id outside `[0, vocab_size)`, or no records at all.

  Args:
    file_patterns: glob patterns (a list, or one comma-separated string).
    max_seq_length: the length every feature must have.
    vocab_size: ids must be below it (None: not checked).
    records_per_file: how many records of each file are parsed.
    log: optional callable taking one progress line per file.

  Returns:
    A `PretrainingFiles`: the matched files and their record counts.
  """
  files = find_files(file_patterns)
  counts = record_check.check_tfrecord_files(files, log=log)
  # The first records of every file, in one pass.
  heads = tf.data.Dataset.from_tensor_slices(tf.range(len(files)))
  heads = heads.flat_map(
    lambda i: (
      tf.data.TFRecordDataset(tf.gather(files, i))
      .take(records_per_file)
      .enumerate()
      .map(lambda index, raw: (i, index, raw))
    )
  )
  for file_index, index, raw in heads.as_numpy_iterator():
    _check_example(raw, files[file_index], index, max_seq_length, vocab_size)
  if sum(counts) == 0:
    raise ValueError(
      f"the {len(files)} pre-training files matching "
      f"{_split_patterns(file_patterns)!r} hold no records"
    )
  return PretrainingFiles(files, counts)
