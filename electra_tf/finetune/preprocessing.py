"""Featurised tfrecords with batch-size padding and their input pipelines
(`finetune/preprocessing.py`). Cached records are reused only while every
setting and source file that shaped them is unchanged (`feature_stamp`);
the original reused them by task names and split alone (docs/differences.md).
"""

import collections
import datetime
import hashlib
import json
import os
import random
import sys

import numpy as np
import tensorflow as tf

from electra_tf.finetune import task as task_lib
from electra_tf.utils import file_io
from electra_tf.utils.file_io import atomic_path
from electra_tf.utils.file_io import dirs_made
from electra_tf.utils.file_io import write_atomic

# A metadata file without this `format` (written before the stamps) is never reused.
METADATA_FORMAT = "electra_tf.finetuning_features"
# Bump when the records' layout or featurisation changes.
FEATURES_VERSION = 2


def file_identity(path):
  """`file_io.content_identity` of a file (local or `scheme://`, read in
  chunks), or None when it does not exist.

  Example:
  >>> import tempfile
  >>> path = os.path.join(tempfile.mkdtemp(), "train.tsv")
  >>> with open(path, "w") as f:
  ...   _ = f.write("abcd")
  >>> file_identity(path)["size"]
  4
  """
  if not tf.io.gfile.exists(path):
    return None
  file_io.check_data_file(path)  # a named pipe would block the hash forever
  digest = hashlib.sha256()
  size = 0
  with tf.io.gfile.GFile(path, "rb") as f:
    while chunk := f.read(1 << 20):
      digest.update(chunk)
      size += len(chunk)
  return {"size": size, "sha256": digest.hexdigest()}


def _shown(value):
  if isinstance(value, str) and len(value) > 60:
    return repr(value[:40] + "…")
  return json.dumps(value)


def _file_change(path, old, new):
  if old is None:
    return f"{path} is new"
  if new is None:
    return f"{path} is gone"
  if old.get("size") != new["size"]:
    return f"{path} changed ({old.get('size')} → {new['size']} bytes)"
  return f"{path} changed (same size, sha256 {str(old.get('sha256'))[:12]} → {new['sha256'][:12]})"


def stamp_changes(old, new, vocab_file="the vocab"):
  """What differs between a cache's metadata `old` and the `new` stamp, as
  short phrases; empty when the cache matches.

  Example:
  >>> old = {"format": METADATA_FORMAT, "settings": {"max_seq_length": 64}, "sources": {}}
  >>> stamp_changes(old, {"settings": {"max_seq_length": 128}, "sources": {}})
  ['max_seq_length changed (64 → 128)']
  """
  if not isinstance(old, dict) or old.get("format") != METADATA_FORMAT:
    return ["it was written without the settings it was built with (an older electra_tf)"]
  changes = []
  old_settings = old.get("settings") or {}
  new_settings = new["settings"]
  for key in list(new_settings) + [k for k in old_settings if k not in new_settings]:
    before = old_settings.get(key)
    after = new_settings.get(key)
    if before == after:
      continue
    if key == "vocab":
      changes.append(_file_change(f"the vocab {vocab_file}", before, after))
    else:
      changes.append(f"{key} changed ({_shown(before)} → {_shown(after)})")
  old_sources = old.get("sources") or {}
  new_sources = new["sources"]
  for path in list(new_sources) + [p for p in old_sources if p not in new_sources]:
    if old_sources.get(path) != new_sources.get(path):
      changes.append(_file_change(path, old_sources.get(path), new_sources.get(path)))
  return changes


class NoExamplesError(ValueError):
  """A split gave no example (an empty TFDS split, every row unusable)."""


class Preprocessor:
  """Serialises tasks' examples to tfrecords and reads them back as batches.

  Args:
    config: a `FinetuningConfig`.
    tasks: the task objects, in `task_names` order.
    vocab: the `Vocab` of `config.vocab_file` when the run has read it
      (its identity is then not read from the file again).
  """

  def __init__(self, config, tasks, vocab=None):
    self._config = config
    self._tasks = tasks
    self._vocab = vocab
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

  def feature_stamp(self, tasks, is_training, split):
    """`{"settings": {...}, "sources": {path: identity}}`: everything that
    shapes the records of `tasks`' `split`."""
    return {
      "settings": self._settings(tasks, is_training, split),
      "sources": self._sources(tasks, split),
    }

  def _settings(self, tasks, is_training, split):
    config = self._config
    settings = {
      "features_version": FEATURES_VERSION,
      # Task ids are positions in task_names.
      "task_names": list(config.task_names),
      "tasks": sorted(task.name for task in tasks),
      "split": split,
      "max_seq_length": config.max_seq_length,
      # Its content: the same vocab elsewhere gives the same features.
      "vocab": self._vocab.identity() if self._vocab else file_identity(config.vocab_file),
      "do_lower_case": config.do_lower_case,
      "strip_accents": config.strip_accents,
      # Padding records fill the last batch of this size.
      "padding_batch_size": config.train_batch_size if is_training else config.eval_batch_size,
      "training": is_training,
      "shuffle_seed": config.seed if is_training else None,
      "debug": config.debug,
      "data_source": config.data_source,
    }
    if config.data_source != "files":
      settings["tfds_data_dir"] = config.tfds_data_dir
    for task in tasks:
      settings.update(task.feature_settings())
    return settings

  def _sources(self, tasks, split):
    # A file the task has read (or hashed) already is named by those bytes.
    sources = {}
    for task in tasks:
      for path in task.source_files(split):
        if path not in task.read_identities:
          task.read_identities[path] = file_identity(path)
        sources[path] = task.read_identities[path]
    return sources

  def cache_changes(self, tasks, is_training, split):
    """None when the cached records of `tasks`' `split` can be reused; else
    the phrases saying why not (empty when there is no cache to reuse)."""
    config = self._config
    tfrecords_path, metadata_path = self.dataset_paths(tasks, split)
    if not config.use_tfrecords_if_existing or not tf.io.gfile.exists(metadata_path):
      return []
    try:
      with tf.io.gfile.GFile(metadata_path, "r") as f:
        old = json.load(f)
    except (ValueError, UnicodeDecodeError):
      return [f"its metadata {metadata_path} is not valid JSON"]
    changes = stamp_changes(old, self.feature_stamp(tasks, is_training, split), config.vocab_file)
    if not changes:
      if not tf.io.gfile.exists(tfrecords_path):
        changes = [f"the records file {tfrecords_path} is missing"]
      elif tf.io.gfile.stat(tfrecords_path).length != old.get("records_bytes"):
        changes = [f"the records file {tfrecords_path} changed since it was written"]
    return changes or None

  def serialize(self, tasks, is_training, split):
    """Writes (or reuses) the records of `tasks`' `split`; returns
    `(tfrecord_path, n_records)`, padding records included. A rebuild prints
    one line naming what changed."""
    tfrecords_path, metadata_path = self.dataset_paths(tasks, split)
    changes = self.cache_changes(tasks, is_training, split)
    if changes is None:
      with tf.io.gfile.GFile(metadata_path, "r") as f:
        return tfrecords_path, json.load(f)["n_examples"]
    if changes:
      print(
        f"Rebuilding the fine-tuning features {tfrecords_path}: {'; '.join(changes)}", flush=True
      )
    # Records without metadata are never reused; a failed build removes them too.
    if tf.io.gfile.exists(metadata_path):
      tf.io.gfile.remove(metadata_path)
    try:
      # A first build that fails or is stopped leaves no empty cache folder.
      with dirs_made(self._config.preprocessed_data_dir):
        n_records = self._build(tasks, is_training, split, tfrecords_path, metadata_path)
    except BaseException:
      if tf.io.gfile.exists(tfrecords_path):
        tf.io.gfile.remove(tfrecords_path)
      raise
    return tfrecords_path, n_records

  def _build(self, tasks, is_training, split, tfrecords_path, metadata_path):
    config = self._config
    # Before reading: a file edited while it is read is rebuilt next time.
    sources = self._sources(tasks, split)
    batch_size = config.train_batch_size if is_training else config.eval_batch_size
    examples = []
    for task in tasks:
      examples += task.get_examples(split)
    if not examples:
      raise NoExamplesError(
        f"no {split} examples for task(s) {', '.join(t.name for t in tasks)} "
        f"(read from {', '.join(sources) or 'their example source'})"
      )
    if is_training:
      rng = random.Random(config.seed) if config.seed is not None else random
      rng.shuffle(examples)
    n_records = self._write_records(examples, is_training, tfrecords_path, batch_size)
    # Settings after the build: a tagging task's label mapping is written by it.
    metadata = {
      "format": METADATA_FORMAT,
      "n_examples": n_records,
      "records_bytes": tf.io.gfile.stat(tfrecords_path).length,
      "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
      "vocab_file": config.vocab_file,
      "settings": self._settings(tasks, is_training, split),
      "sources": sources,
    }
    write_atomic(metadata_path, json.dumps(metadata, indent=2))
    return n_records

  def _write_records(self, examples, is_training, path, batch_size):
    n_records = 0
    emptied = collections.Counter()  # examples a length cut left nothing, per task
    with atomic_path(path) as tmp, tf.io.TFRecordWriter(tmp) as writer:
      for index, example in enumerate(examples):
        task = self._name_to_task[example.task_name]
        log = self._config.log_examples and index < 1
        for features in task.featurize(example, is_training, log=log):
          writer.write(self.make_tf_example(**features).SerializeToString())
          n_records += 1
          emptied[task.name] += task.keeps_nothing(features)
      # padding records (task_id = n_tasks, all else zeros) up to a multiple of the batch size
      while n_records % batch_size != 0:
        writer.write(self.make_tf_example(task_id=len(self._config.task_names)).SerializeToString())
        n_records += 1
    for name, count in emptied.items():
      if count:
        total = sum(e.task_name == name for e in examples)
        print(
          self._name_to_task[name].keeps_nothing_warning(count, total), file=sys.stderr, flush=True
        )
    return n_records

  def make_tf_example(self, **features):
    """A `tf.train.Example` with every spec'd feature; absent ones are zeros
    (floats as plain floats: the original's 0-d arrays fail with protobuf >= 4)."""
    tf_features = {}
    for spec in self.feature_specs:
      if spec.name in features:
        values = np.asarray(features[spec.name]).reshape(-1)
      else:
        values = np.zeros([int(np.prod(spec.shape))] if spec.shape else [1])
      if spec.is_int_feature:
        feature = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))
      else:
        feature = tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))
      tf_features[spec.name] = feature
    return tf.train.Example(features=tf.train.Features(feature=tf_features))

  def decode(self, record):
    name_to_features = {
      spec.name: tf.io.FixedLenFeature(spec.shape, tf.int64 if spec.is_int_feature else tf.float32)
      for spec in self.feature_specs
    }
    example = tf.io.parse_single_example(record, name_to_features)
    return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in example.items()}

  def dataset(self, tfrecords_path, batch_size, is_training, seed=None, drop_remainder=True):
    """Batches; training repeats and shuffles with a buffer of 100 (as the original)."""
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
    """`(tfrecord_path, train_steps)`, as `prepare_train`."""
    config = self._config
    path, n_records = self.serialize(self._tasks, True, "train")
    return path, int(n_records // config.train_batch_size * config.num_train_epochs)

  def train_dataset(self, path, start_batch=0):
    """A new training pipeline over `path` that starts after `start_batch`
    batches (with a seed every new pipeline gives the same order, so a
    resumed run continues the order of one that did not stop)."""
    config = self._config
    return self.dataset(path, config.train_batch_size, True, config.seed).skip(start_batch)

  def prepare_predict(self, tasks, split):
    """`(dataset, n_records)` of a split, padded to `eval_batch_size` and
    batched by `predict_batch_size` (the last batch may be smaller). With
    `drop_predict_tail` the original's `drop_remainder=True` is kept; what
    it drops is printed."""
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
