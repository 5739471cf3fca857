"""The fine-tuning task interface and feature specs (`finetune/preprocessing.py`)."""

import abc
import collections

import numpy as np
import tensorflow as tf

FeatureSpec = collections.namedtuple("FeatureSpec", ["name", "shape", "is_int_feature"])


def shared_feature_specs(config):
  """Features every record has: ids, mask, segments and the task id."""
  s = config.max_seq_length
  return [
    FeatureSpec("input_ids", [s], True),
    FeatureSpec("input_mask", [s], True),
    FeatureSpec("segment_ids", [s], True),
    FeatureSpec("task_id", [], True),
  ]


def pad_to(values, length, value=0):
  return list(values) + [value] * (length - len(values))


class Task(abc.ABC):
  """One fine-tuning task: its examples, features, head and scorer.

  Args:
    config: a `FinetuningConfig`.
    name: the task name as in `task_names`.
    tokenizer: a `FullTokenizer` shared by all tasks.

  Attributes:
    example_source: None to read the original's data files; else a
      callable `(task, split)` giving the split's data in the form the task
      reads (GLUE: its `InputExample`s; SQuAD: the JSON `data` list).
    read_identities: `{path: {"size", "sha256"}}` of the bytes this task
      has read from its data files (the feature cache records them).
  """

  def __init__(self, config, name, tokenizer):
    self.config = config
    self.name = name
    self.tokenizer = tokenizer
    self.example_source = None
    self.read_identities = {}
    if name not in config.task_names:
      raise ValueError(f"task {name!r} is not in hparam task_names {config.task_names}")
    self.task_id = config.task_names.index(name)

  def get_test_splits(self):
    return ["test"]

  def source_files(self, split):
    """The files `split`'s examples are read from (the feature cache records
    their identity); none when an `example_source` gives them."""
    del split
    return []

  def feature_settings(self):
    """The task's own settings that shape its features (the feature cache records them)."""
    return {}

  def check_examples(self, split):
    """Reads (and checks) `split`, so that bad data fails before training."""
    self.get_examples(split)

  @abc.abstractmethod
  def get_examples(self, split):
    """The examples of a split ("train", "dev", "test", ...)."""

  @abc.abstractmethod
  def featurize(self, example, is_training, log=False):
    """One example → a list of feature dicts (several for QA windows)."""

  @abc.abstractmethod
  def get_feature_specs(self):
    """This task's `FeatureSpec`s (names prefixed with the task name)."""

  @abc.abstractmethod
  def create_head(self):
    """The Keras head layer (variables under `task_specific/<name>/`)."""

  @abc.abstractmethod
  def get_scorer(self, split="dev"):
    """A fresh scorer for a split."""

  def keeps_nothing(self, features):
    """Whether a featurised example kept nothing to train or score on (a length cut emptied it)."""
    del features
    return False

  def keeps_nothing_warning(self, count, total):
    """The one line said when `count` of `total` examples kept nothing."""
    return (
      f"warning: task {self.name}: {count} of {total} examples keep nothing to train or score on"
    )

  def log_features(self, features):
    lines = [
      f"  {k}: {v if np.ndim(v) == 0 else ' '.join(str(x) for x in v)}"
      for k, v in features.items()
      if k != "for_eval"
    ]
    tf.get_logger().info("Example features for %s:\n%s", self.name, "\n".join(lines))
