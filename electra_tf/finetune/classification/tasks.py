"""GLUE classification and regression tasks (`finetune/classification/classification_tasks.py`), read from the
original's tsv layouts under `<data_dir>/finetuning_data/<task>/`."""

import abc
import csv
import dataclasses
import io
import os

import tensorflow as tf

from electra_tf.finetune import task as task_lib
from electra_tf.finetune.classification import scorer as classification_scorers
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.utils import file_io

# csv fields of GLUE rows can be long (QQP, MNLI)
csv.field_size_limit(2**31 - 1)

# (file or task, split, row) of the skipped rows already reported in this process
_SKIPS_REPORTED = set()


@dataclasses.dataclass(eq=False)
class InputExample:
  """A sentence or sentence pair with a label (a string, or a float for
  regression); compared by identity. `where` names its file and line (for
  error messages), None where it did not come from a file."""

  eid: int
  task_name: str
  text_a: str
  text_b: str | None = None
  label: str | float | None = None
  where: str | None = None


def read_tsv(path, max_lines=None, identities=None):
  """Rows of a tsv file with quoting disabled (quotes stay literal).
  `identities`: a dict that gets `{path: {"size", "sha256"}}` of the bytes read."""
  file_io.check_data_file(path, "a tab-separated file")
  with tf.io.gfile.GFile(path, "rb") as f:
    data = f.read()
  if identities is not None:
    identities[path] = file_io.content_identity(data)
  text = file_io.line_text(data, path)
  lines = []
  # Rows end at "\n" only, as when the file is read line by line.
  reader = csv.reader(io.StringIO(text, newline="\n"), delimiter="\t", quotechar=None)
  try:
    for row in reader:
      lines.append(row)
      if max_lines and len(lines) >= max_lines:
        break
  except csv.Error as e:
    raise ValueError(f"{path}, line {reader.line_num}: not a tab-separated row ({e})") from None
  return lines


def _cells_at(cells, locs):
  """The cells at positions `locs` (negative ones from the end), None where `cells` has none."""
  return [cells[loc] if -len(cells) <= loc < len(cells) else None for loc in locs]


def truncate_seq_pair(tokens_a, tokens_b, max_length):
  """Pops the last token of the longer sequence (of `b` on ties) in place."""
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


class SingleOutputTask(task_lib.Task):
  """A task with one output per sentence (pair): classification or regression."""

  # MRPC and STS add swapped pairs to their training set (hparam `double_unordered`).
  doubles_unordered = False
  # The lower-case header of the train and dev files, where a task's layout is easy to
  # mistake for another's; None: not checked.
  train_header = None
  # GLUE's lower-case test-file header: the text columns must carry these names, so that
  # a copy of dev.tsv is not read with its label or ids as text. None: not checked.
  test_header = None

  def __init__(self, config, name, tokenizer):
    super().__init__(config, name, tokenizer)
    self._examples = {}
    # The file `_create_examples` is reading (named in its examples' `where`).
    self._reading = None
    # (line number, columns, columns needed, error) of the first row `_load_glue` skipped.
    self._first_skip = None

  def get_examples(self, split):
    if split not in self._examples:
      if self.example_source is not None:
        self._examples[split] = self.example_source(self, split)
      else:
        self._reading = self.source_files(split)[0]
        self._first_skip = None
        try:
          debug_lines = 100 if self.config.debug else None
          lines = read_tsv(self._reading, debug_lines, self.read_identities)
          examples = self._create_examples(lines, split)
          if not examples:
            raise ValueError(self._no_examples_message(lines))
          self._examples[split] = examples
        finally:
          self._reading = None
    return self._examples[split]

  def _no_examples_message(self, lines):
    """Why a TSV gave no example: empty, a header only, or every row skipped."""
    path = self._reading
    if not lines:
      return f"{path}: the file is empty; expected tab-separated rows (task {self.name})"
    if self._first_skip is None:
      return f"{path}: no rows after the header line (task {self.name})"
    line, columns, needed, error = self._first_skip
    if columns >= needed:
      return f"{path}, line {line}: {error}; every row was skipped (task {self.name})"
    return (
      f"{path}, line {line}: {columns} tab-separated column{'s' if columns != 1 else ''}, "
      f"task {self.name} needs at least {needed}; every row was skipped, none is usable"
    )

  def source_files(self, split):
    if self.example_source is not None:
      return []
    return [os.path.join(self.config.raw_data_dir(self.name), self.file_name(split))]

  def feature_settings(self):
    if self.doubles_unordered:
      return {"double_unordered": self.config.double_unordered}
    return {}

  def check_examples(self, split):
    """Reads `split` and checks every example's label (ValueError naming the first bad one)."""
    for example in self.get_examples(split):
      self._label_feature(example)

  def file_name(self, split):
    """The original's TSV file of a split."""
    return split + ".tsv"

  @abc.abstractmethod
  def _create_examples(self, lines, split):
    pass

  @abc.abstractmethod
  def _get_dummy_label(self):
    pass

  def _load_glue(
    self,
    lines,
    split,
    text_a_loc,
    text_b_loc,
    label_loc,
    skip_first_line=False,
    eid_offset=0,
    swap=False,
  ):
    examples = []
    header = lines[0] if skip_first_line and lines else None
    is_test = "test" in split
    unlabelled = is_test or "diagnostic" in split
    expected = self.test_header if is_test else self.train_header
    if header is not None and expected and self._reading and split != "diagnostic":
      cells = [cell.strip().lower() for cell in header]
      if is_test:
        text_locs = [loc for loc in (text_a_loc, text_b_loc) if loc is not None]
        if _cells_at(cells, text_locs) != _cells_at(expected, text_locs):
          raise ValueError(
            f"{self._reading}, line 1: header {chr(9).join(header)[:80]!r} is not task "
            f"{self.name}'s test header {chr(9).join(expected)[:120]!r} (GLUE's test layout, "
            "without labels; a copy of dev.tsv has another layout)"
          )
      elif cells[: len(expected)] != list(expected)[: len(cells)]:
        # Another task's files (CoLA's in sst/) would train on the wrong column.
        raise ValueError(
          f"{self._reading}, line 1: {chr(9).join(header)[:80]!r} is not task {self.name}'s "
          f"header {chr(9).join(expected)!r}; are these another task's files?"
        )
    for i, line in enumerate(lines):
      if i == 0 and skip_first_line:
        continue
      where = None
      if self._reading is not None:
        where = f"{self._reading}, line {i + 1}"
        if header is not None and len(line) != len(header):
          where += f" ({len(line)} tab-separated columns, the header has {len(header)})"
      try:
        eid = i - (1 if skip_first_line else 0) + eid_offset
        text_a = line[text_a_loc]
        text_b = None if text_b_loc is None else line[text_b_loc]
        label = self._get_dummy_label() if unlabelled else line[label_loc]
        if swap:
          text_a, text_b = text_b, text_a
        examples.append(InputExample(eid, self.name, text_a, text_b, label, where))
      except Exception as e:  # the original logs and skips bad rows
        if self._first_skip is None:
          locs = [text_a_loc, text_b_loc, None if unlabelled else label_loc]
          needed = max(loc + 1 if loc >= 0 else -loc for loc in locs if loc is not None)
          self._first_skip = (i + 1, len(line), needed, e)
        # A run reads a file more than once (checks, then featurising): say it once.
        key = (where or self.name, split, i)
        if key not in _SKIPS_REPORTED:
          _SKIPS_REPORTED.add(key)
          tf.get_logger().warning(
            "Skipping line %d of task %s (%s): %r", i + 1, where or self.name, e, line
          )
    if text_b_loc is not None and examples and not any((e.text_b or "").strip() for e in examples):
      # A pair task fed single texts: the wrong column, or another task's file.
      raise ValueError(
        f"{self._reading or self.name}: the second text (column {text_b_loc}) is empty in every "
        f"row; task {self.name} pairs two texts"
      )
    return examples

  def featurize(self, example, is_training, log=False):
    del is_training
    s = self.config.max_seq_length
    tokens_a = self.tokenizer.tokenize(example.text_a)
    tokens_b = self.tokenizer.tokenize(example.text_b) if example.text_b else None
    if tokens_b:
      truncate_seq_pair(tokens_a, tokens_b, s - 3)
    else:
      tokens_a = tokens_a[: s - 2]
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
      tokens += tokens_b + ["[SEP]"]
      segment_ids += [1] * (len(tokens_b) + 1)
    input_ids = self.tokenizer.convert_tokens_to_ids(tokens)
    label_name, label = self._label_feature(example)
    features = {
      "input_ids": task_lib.pad_to(input_ids, s),
      "input_mask": task_lib.pad_to([1] * len(input_ids), s),
      "segment_ids": task_lib.pad_to(segment_ids, s),
      "task_id": self.task_id,
      self.name + "_eid": example.eid,
      label_name: label,
    }
    if log:
      self.log_features(features)
    return [features]

  @abc.abstractmethod
  def _label_feature(self, example):
    """(feature name, value) of the example's label; ValueError if invalid."""

  def _bad_label(self, example, problem):
    where = example.where or f"example {example.eid}"
    return ValueError(f"{where}: {problem} (task {self.name})")


class ClassificationTask(SingleOutputTask):
  """Classification: `<task>_label_ids`, softmax cross-entropy head."""

  def __init__(self, config, name, tokenizer, label_list):
    super().__init__(config, name, tokenizer)
    self.label_list = label_list
    self._label_map = {label: i for i, label in enumerate(label_list)}

  def _get_dummy_label(self):
    return self.label_list[0]

  def get_feature_specs(self):
    return [
      task_lib.FeatureSpec(self.name + "_eid", [], True),
      task_lib.FeatureSpec(self.name + "_label_ids", [], True),
    ]

  def _label_feature(self, example):
    if example.label not in self._label_map:
      raise self._bad_label(example, f"label {example.label!r} is not one of {self.label_list}")
    return self.name + "_label_ids", self._label_map[example.label]

  def create_head(self):
    return ClassificationHead(
      self.name, num_labels=len(self.label_list), name="task_specific_" + self.name
    )

  def get_scorer(self, split="dev"):
    return classification_scorers.AccuracyScorer()


class RegressionTask(SingleOutputTask):
  """Regression: `<task>_targets = (label - min) / max` (the original's
  scaling, see docs/differences.md), squared-error head."""

  def __init__(self, config, name, tokenizer, min_value, max_value):
    super().__init__(config, name, tokenizer)
    self.min_value = min_value
    self.max_value = max_value

  def _get_dummy_label(self):
    return 0.0

  def get_feature_specs(self):
    return [
      task_lib.FeatureSpec(self.name + "_eid", [], True),
      task_lib.FeatureSpec(self.name + "_targets", [], False),
    ]

  def _label_feature(self, example):
    try:
      label = float(example.label)
    except (TypeError, ValueError):
      raise self._bad_label(example, f"target {example.label!r} is not a number") from None
    if not self.min_value <= label <= self.max_value:
      raise self._bad_label(
        example, f"target {label} is outside [{self.min_value}, {self.max_value}]"
      )
    return self.name + "_targets", (label - self.min_value) / self.max_value

  def create_head(self):
    return ClassificationHead(
      self.name, num_labels=1, regression=True, name="task_specific_" + self.name
    )

  def get_scorer(self, split="dev"):
    return classification_scorers.RegressionScorer()


class CoLA(ClassificationTask):
  """Corpus of Linguistic Acceptability; Matthews correlation."""

  test_header = ("index", "sentence")

  def __init__(self, config, tokenizer):
    super().__init__(config, "cola", tokenizer, ["0", "1"])

  def _create_examples(self, lines, split):
    return self._load_glue(lines, split, 1 if split == "test" else 3, None, 1, split == "test")

  def get_scorer(self, split="dev"):
    return classification_scorers.MCCScorer()


class SST(ClassificationTask):
  """Stanford Sentiment Treebank."""

  train_header = ("sentence", "label")
  test_header = ("index", "sentence")

  def __init__(self, config, tokenizer):
    super().__init__(config, "sst", tokenizer, ["0", "1"])

  def _create_examples(self, lines, split):
    if "test" in split:
      return self._load_glue(lines, split, 1, None, None, True)
    return self._load_glue(lines, split, 0, None, 1, True)


class MRPC(ClassificationTask):
  """Microsoft Research Paraphrase Corpus; train doubled with swapped pairs."""

  test_header = ("index", "#1 id", "#2 id", "#1 string", "#2 string")

  doubles_unordered = True

  def __init__(self, config, tokenizer):
    super().__init__(config, "mrpc", tokenizer, ["0", "1"])

  def _create_examples(self, lines, split):
    examples = self._load_glue(lines, split, 3, 4, 0, True)
    if self.config.double_unordered and split == "train":
      examples += self._load_glue(lines, split, 3, 4, 0, True, len(examples), True)
    return examples


class QQP(ClassificationTask):
  """Quora Question Pairs."""

  test_header = ("id", "question1", "question2")

  def __init__(self, config, tokenizer):
    super().__init__(config, "qqp", tokenizer, ["0", "1"])

  def _create_examples(self, lines, split):
    return self._load_glue(
      lines, split, 1 if split == "test" else 3, 2 if split == "test" else 4, 5, True
    )


class RTE(ClassificationTask):
  """Recognising Textual Entailment."""

  test_header = ("index", "sentence1", "sentence2")

  def __init__(self, config, tokenizer):
    super().__init__(config, "rte", tokenizer, ["entailment", "not_entailment"])

  def _create_examples(self, lines, split):
    return self._load_glue(lines, split, 1, 2, 3, True)


class QNLI(ClassificationTask):
  """Question NLI."""

  test_header = ("index", "question", "sentence")

  def __init__(self, config, tokenizer):
    super().__init__(config, "qnli", tokenizer, ["entailment", "not_entailment"])

  def _create_examples(self, lines, split):
    return self._load_glue(lines, split, 1, 2, 3, True)


class MNLI(ClassificationTask):
  """Multi-genre NLI; "dev" means dev_matched (dev_mismatched is never
  evaluated, as in the original)."""

  test_header = (
    "index", "promptid", "pairid", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
    "sentence1_parse", "sentence2_parse", "sentence1", "sentence2",
  )  # fmt: skip

  def __init__(self, config, tokenizer):
    super().__init__(config, "mnli", tokenizer, ["contradiction", "entailment", "neutral"])

  def file_name(self, split):
    return ("dev_matched" if split == "dev" else split) + ".tsv"

  def _create_examples(self, lines, split):
    if split == "diagnostic":
      return self._load_glue(lines, split, 1, 2, None, True)
    return self._load_glue(lines, split, 8, 9, -1, True)

  def get_test_splits(self):
    return ["test_matched", "test_mismatched", "diagnostic"]


class STS(RegressionTask):
  """Semantic Textual Similarity, [0, 5]; train doubled with swapped pairs."""

  test_header = (
    "index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
    "sentence2",
  )  # fmt: skip

  doubles_unordered = True

  def __init__(self, config, tokenizer):
    super().__init__(config, "sts", tokenizer, 0.0, 5.0)

  def _create_examples(self, lines, split):
    if split == "test":
      return self._load_glue(lines, split, -2, -1, None, True)
    examples = self._load_glue(lines, split, -3, -2, -1, True)
    if self.config.double_unordered and split == "train":
      examples += self._load_glue(lines, split, -3, -2, -1, True, len(examples), True)
    return examples
