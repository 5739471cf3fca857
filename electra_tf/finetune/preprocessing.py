"""Featurised tfrecords with batch-size padding and their input pipelines
(`finetune/preprocessing.py`).

Records are cached in `<preprocessed_data_dir>/<sorted task names joined by
"_">_<split>.{tfrecord,metadata}` and reused when `use_tfrecords_if_existing`
and the metadata file exists. As in the original, the cache is keyed only by
task names and split (not by max_seq_length or batch size).
"""

import json
import os
import random

import numpy as np
import tensorflow as tf

from electra_tf.finetune import task as task_lib
from electra_tf.utils.file_io import atomic_path
from electra_tf.utils.file_io import write_atomic


def _int_feature(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _float_feature(values):
  return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


class Preprocessor:
  """Serialises tasks' examples to tfrecords and reads them back as batches.

  Args:
    config: a `FinetuningConfig`.
    tasks: the task objects, in `task_names` order.
  """

  def __init__(self, config, tasks):
    self._config = config
    self._tasks = tasks
    self._name_to_task = {task.name: task for task in tasks}
    specs = task_lib.shared_feature_specs(config)
    for task in tasks:
      specs += task.get_feature_specs()
    names = [spec.name for spec in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
      raise ValueError(f"feature names defined twice: {duplicates}")
    self.feature_specs = specs

  def dataset_paths(self, tasks, split):
    name = "_".join(sorted(task.name for task in tasks)) + "_" + split
    base = os.path.join(self._config.preprocessed_data_dir, name)
    return base + ".tfrecord", base + ".metadata"

  def serialize(self, tasks, is_training, split):
    """Writes (or reuses) the records of `tasks`' `split`; returns
    `(tfrecord_path, n_records)` where the count includes padding records."""
    config = self._config
    tfrecords_path, metadata_path = self.dataset_paths(tasks, split)
    batch_size = config.train_batch_size if is_training else config.eval_batch_size
    if config.use_tfrecords_if_existing and tf.io.gfile.exists(metadata_path):
      with tf.io.gfile.GFile(metadata_path, "r") as f:
        return tfrecords_path, json.load(f)["n_examples"]
    examples = []
    for task in tasks:
      examples += task.get_examples(split)
    if is_training:
      rng = random.Random(config.seed) if config.seed is not None else random
      rng.shuffle(examples)
    tf.io.gfile.makedirs(config.preprocessed_data_dir)
    n_records = self._write_records(examples, is_training, tfrecords_path, batch_size)
    write_atomic(metadata_path, json.dumps({"n_examples": n_records}))
    return tfrecords_path, n_records

  def _write_records(self, examples, is_training, path, batch_size):
    n_records = 0
    with atomic_path(path) as tmp, tf.io.TFRecordWriter(tmp) as writer:
      for index, example in enumerate(examples):
        task = self._name_to_task[example.task_name]
        log = self._config.log_examples and index < 1
        for features in task.featurize(example, is_training, log=log):
          writer.write(self.make_tf_example(**features).SerializeToString())
          n_records += 1
      # padding records (task_id = n_tasks, everything else zeros) up to a
      # multiple of the batch size
      while n_records % batch_size != 0:
        writer.write(self.make_tf_example(task_id=len(self._config.task_names)).SerializeToString())
        n_records += 1
    return n_records

  def make_tf_example(self, **features):
    """A `tf.train.Example` with every spec'd feature; absent ones are zeros.
    Float scalars are written as plain floats (the original's 0-d numpy
    arrays fail with protobuf >= 4, a quirk of the original, see docs/differences.md)."""
    tf_features = {}
    for spec in self.feature_specs:
      if spec.name in features:
        values = np.asarray(features[spec.name]).reshape(-1)
      else:
        values = np.zeros([int(np.prod(spec.shape))] if spec.shape else [1])
      if spec.is_int_feature:
        tf_features[spec.name] = _int_feature(int(v) for v in values)
      else:
        tf_features[spec.name] = _float_feature(float(v) for v in values)
    return tf.train.Example(features=tf.train.Features(feature=tf_features))

  def decode(self, record):
    name_to_features = {
      spec.name: tf.io.FixedLenFeature(spec.shape, tf.int64 if spec.is_int_feature else tf.float32)
      for spec in self.feature_specs
    }
    example = tf.io.parse_single_example(record, name_to_features)
    return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in example.items()}

  def dataset(self, tfrecords_path, batch_size, is_training, seed=None, drop_remainder=True):
    """Batches (with `drop_remainder`, as the original); training repeats
    and shuffles with a buffer of 100, as the original."""
    d = tf.data.TFRecordDataset(tfrecords_path)
    if is_training:
      d = d.repeat().shuffle(100, seed=seed)
    d = d.map(self.decode, num_parallel_calls=tf.data.AUTOTUNE)
    return d.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)

  def prepare_train(self):
    """`(dataset, train_steps)` with `train_steps = int(n_records //
    train_batch_size * num_train_epochs)` (padding records counted)."""
    path, steps = self.train_records()
    return self.train_dataset(path), steps

  def train_records(self):
    """`(tfrecord_path, train_steps)`: the training records, written or
    reused, and the step count `prepare_train` gives."""
    config = self._config
    path, n_records = self.serialize(self._tasks, True, "train")
    return path, int(n_records // config.train_batch_size * config.num_train_epochs)

  def train_dataset(self, path, start_batch=0):
    """A new training pipeline over `path` that starts after `start_batch`
    batches. With a seed every new pipeline gives the same order (each new
    iterator of one pipeline reshuffles), so a run that stops and starts
    again continues the order of one that did not."""
    config = self._config
    return self.dataset(path, config.train_batch_size, True, config.seed).skip(start_batch)

  def prepare_predict(self, tasks, split):
    """`(dataset, n_records)` of a split, padded to `eval_batch_size` and
    batched by `predict_batch_size`. Every record is scored: the last batch
    may be smaller. With `drop_predict_tail` the original's
    `drop_remainder=True` is kept, which loses the records past the last
    full batch when the two batch sizes differ; what is lost is printed."""
    config = self._config
    path, n_records = self.serialize(tasks, False, split)
    dropped = n_records % config.predict_batch_size if config.drop_predict_tail else 0
    if dropped:
      print(
        f"drop_predict_tail: the last {dropped} of {n_records} {split} records "
        f"(padding included) of {','.join(t.name for t in tasks)} are not scored "
        f"(predict_batch_size={config.predict_batch_size}, "
        f"eval_batch_size={config.eval_batch_size})",
        flush=True,
      )
    dataset = self.dataset(
      path, config.predict_batch_size, False, drop_remainder=config.drop_predict_tail
    )
    return dataset, n_records
