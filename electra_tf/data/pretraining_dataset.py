"""The pre-training input pipeline (`pretrain/pretrain_data.py:get_input_fn`) and a start-up check of the data.

`get_dataset` builds what the original's `input_fn` builds: the matched files,
repeated and shuffled; up to 4 files read interleaved (order not guaranteed
when training, like `sloppy=is_training`); a 100-record shuffle; batches that
drop the remainder (for eval too); int64 features cast to int32. Eval reads
the same files as training, as in the original.

`validate_pretraining_files` fails early with an error that names the file
and what was expected, where the original fails late with an opaque parse
error (or, with only empty files, waits forever).

Example:

```python
validate_pretraining_files("data/pretrain_tfrecords/pretrain_data.tfrecord*", 128,
                           vocab_size=30522)
dataset = get_dataset("data/pretrain_tfrecords/pretrain_data.tfrecord*", 128,
                      batch_size=128, is_training=True)
```
"""

import tensorflow as tf

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")


def _split_patterns(file_patterns):
  if isinstance(file_patterns, str):
    file_patterns = file_patterns.split(",")
  return [p.strip() for p in file_patterns if p and p.strip()]


def find_files(file_patterns):
  """Globs every pattern (a list, or one comma-separated string) into one
  sorted file list; raises ValueError naming the patterns if none match."""
  patterns = _split_patterns(file_patterns)
  files = []
  for pattern in patterns:
    files.extend(tf.io.gfile.glob(pattern))
  files = sorted(set(files))
  if not files:
    raise ValueError(f"no pre-training files match {patterns!r}")
  return files


def decode_record(record, max_seq_length):
  """A serialized tf.train.Example → dict of int32 [max_seq_length] tensors."""
  features = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in FEATURE_NAMES}
  example = tf.io.parse_single_example(record, features)
  return {name: tf.cast(t, tf.int32) for name, t in example.items()}


def get_dataset(
  file_patterns,
  max_seq_length,
  batch_size,
  is_training,
  input_context=None,
  seed=None,
  cycle_length=4,
):
  """The training/eval `tf.data.Dataset` of the original's `input_fn`.

  Args:
    file_patterns: glob patterns (a list, or one comma-separated string).
    max_seq_length: S, the length of every feature in the records.
    batch_size: the global batch size; with `input_context` each pipeline
      yields `input_context.get_per_replica_batch_size(batch_size)`.
    is_training: only relaxes the interleave order (as `sloppy=is_training`);
      eval also repeats, shuffles and drops the remainder, as the original.
    input_context: a `tf.distribute.InputContext`; with several input
      pipelines, each reads only its share of the files (sharding by file).
    seed: seed for the two shuffles (None: nondeterministic, as the original).
    cycle_length: files read at once (the original's `num_cpu_threads`, 4).

  Returns:
    An infinite dataset of dicts `input_ids`, `input_mask`, `segment_ids`:
    int32 [B, S].
  """
  files = find_files(file_patterns)
  if input_context is not None:
    batch_size = input_context.get_per_replica_batch_size(batch_size)
  dataset = tf.data.Dataset.from_tensor_slices(tf.constant(files))
  if input_context is not None and input_context.num_input_pipelines > 1:
    if len(files) < input_context.num_input_pipelines:
      raise ValueError(
        f"{len(files)} pre-training files cannot be sharded over "
        f"{input_context.num_input_pipelines} input pipelines"
      )
    dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    n_files = len(files[input_context.input_pipeline_id :: input_context.num_input_pipelines])
  else:
    n_files = len(files)
  dataset = dataset.repeat()
  dataset = dataset.shuffle(buffer_size=n_files, seed=seed)
  dataset = dataset.interleave(
    tf.data.TFRecordDataset,
    cycle_length=min(cycle_length, n_files),
    num_parallel_calls=tf.data.AUTOTUNE,
    deterministic=not is_training,
  )
  dataset = dataset.shuffle(buffer_size=100, seed=seed)
  dataset = dataset.map(
    lambda r: decode_record(r, max_seq_length), num_parallel_calls=tf.data.AUTOTUNE
  )
  dataset = dataset.batch(batch_size, drop_remainder=True)
  return dataset.prefetch(tf.data.AUTOTUNE)


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
          f"{where}: input_ids holds id {top}, outside the vocab of size {vocab_size}"
        )


def validate_pretraining_files(
  file_patterns, max_seq_length, vocab_size=None, records_per_file=100
):
  """Checks the pre-training records before training starts.

  Reads the first `records_per_file` records of every matched file and
  raises ValueError naming the file for: no files matching, a corrupt or
  truncated record, a missing or non-int64 feature, a feature whose length
  is not `max_seq_length`, an id outside `[0, vocab_size)`, or no records
  at all (an infinite repeat of nothing would hang).

  Returns:
    The matched files.
  """
  files = find_files(file_patterns)
  total = 0
  for path in files:
    index = 0
    try:
      for raw in tf.compat.v1.io.tf_record_iterator(path):
        _check_example(raw, path, index, max_seq_length, vocab_size)
        index += 1
        if index >= records_per_file:
          break
    except tf.errors.OpError as e:
      raise ValueError(
        f"pre-training file {path!r}: corrupt or truncated TFRecord "
        f"data after {index} good records ({e.message})"
      ) from e
    total += index
  if total == 0:
    raise ValueError(
      f"the {len(files)} pre-training files matching "
      f"{_split_patterns(file_patterns)!r} hold no records"
    )
  return files
