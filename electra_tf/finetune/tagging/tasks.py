"""CoNLL-2000 chunking (`finetune/tagging/tagging_tasks.py`): CoNLL files, BIOES tags, word-aligned
features with the original's truncation rule."""

import collections
import dataclasses
import io
import json
import os

import tensorflow as tf

from electra_tf.finetune import task as task_lib
from electra_tf.finetune.tagging import labels as tagging_utils
from electra_tf.finetune.tagging import scorer as tagging_scorers
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.text import wordpiece as tokenization
from electra_tf.text.vocab import SENTENCEPIECE
from electra_tf.utils.file_io import check_data_file
from electra_tf.utils.file_io import line_text
from electra_tf.utils.file_io import write_atomic

LABEL_ENCODING = "BIOES"


@dataclasses.dataclass(eq=False)
class TaggingExample:
  """A sentence: words, (converted) tags and their label ids; compared by identity."""

  eid: int
  task_name: str
  words: list
  tags: list
  labels: list


def read_conll(path, debug=False, first_lines=None):
  """Sentences `(words, tags)` from a CoNLL file: word = first column, tag =
  last column, blank line ends a sentence, `-DOCSTART-` lines are skipped; a
  final sentence without a trailing blank line is read too (the original
  drops it). `first_lines`, a list, gets the line where each sentence starts.
  A word line with one column, or another number of columns than the first
  word line, is a ValueError naming the file and line."""
  check_data_file(path, "a CoNLL file")
  sentences = []
  sentence = []
  layout = None  # (line number, columns) of the first word line
  with tf.io.gfile.GFile(path, "rb") as f:
    text = line_text(f.read(), path)
  for number, line in enumerate(io.StringIO(text, newline="\n"), 1):
    columns = line.strip().split()
    if not columns:
      if sentence:
        sentences.append(sentence)
        sentence = []
        if debug and len(sentences) > 100:
          break
      continue
    if columns[0] == "-DOCSTART-":
      continue
    if len(columns) < 2:
      raise ValueError(
        f"{path}, line {number}: {line.strip()!r} has one column; expected the word, "
        "then the tag in the last column (columns separated by spaces or tabs)"
      )
    if layout is None:
      layout = (number, len(columns))
    elif len(columns) != layout[1]:
      # Another format's rows (a TSV of sentences) would be read as one long "sentence".
      raise ValueError(
        f"{path}, line {number}: {len(columns)} columns, but line {layout[0]} has "
        f"{layout[1]}; a CoNLL file has the same columns on every word line (the word "
        "first, the tag last)"
      )
    if not sentence and first_lines is not None:
      first_lines.append(number)
    sentence.append((columns[0], columns[-1]))
  if sentence:
    sentences.append(sentence)
  return [([word for word, _ in s], [tag for _, tag in s]) for s in sentences]


def tokenize_and_align(tokenizer, words):
  """WordPiece tokens of each word, with pseudo-words `[CLS]`/`[SEP]` around
  the sentence. Always lower-cases (the original never passes its `cased`
  flag), strips accents unless the tokenizer keeps them, splits punctuation.
  With a SentencePiece vocab each word is tokenised on its own, untouched
  (the model's own settings apply)."""
  if getattr(tokenizer, "kind", None) == SENTENCEPIECE:
    pieces = tokenizer.convert_ids_to_tokens
    return [["[CLS]"]] + [pieces(ids) for ids in tokenizer.encode_batch(words)] + [["[SEP]"]]
  words = ["[CLS]"] + list(words) + ["[SEP]"]
  tokenized_words = []
  for word in words:
    word = tokenization._clean_text(word)  # pylint: disable=protected-access
    if word in ("[CLS]", "[SEP]"):
      pieces = [word]
    else:
      word = word.lower()
      if tokenizer.basic_tokenizer.strip_accents:
        word = tokenization._run_strip_accents(word)  # pylint: disable=protected-access
      pieces = tokenization._run_split_on_punc(word)  # pylint: disable=protected-access
    tokens = []
    for piece in pieces:
      tokens += tokenizer.wordpiece_tokenizer.tokenize(piece)
    tokenized_words.append(tokens)
  return tokenized_words


class TaggingTask(task_lib.Task):
  """A word-level tagging task (`chunk`); `is_token_level=False` means tags
  are converted to BIOES spans and scored by entity-level F1."""

  def __init__(self, config, name, tokenizer, is_token_level=False):
    super().__init__(config, name, tokenizer)
    self.is_token_level = is_token_level
    self._label_mapping = None
    self._examples = {}

  @property
  def label_mapping_path(self):
    prefix = "debug_" if self.config.debug else ""
    return os.path.join(
      self.config.preprocessed_data_dir, f"{prefix}{self.name}_label_mapping.json"
    )

  def _convert_tags(self, tags):
    if self.is_token_level:
      return list(tags)
    return tagging_utils.get_tags(tagging_utils.get_span_labels(tags), len(tags), LABEL_ENCODING)

  def _split_path(self, split):
    return os.path.join(self.config.raw_data_dir(self.name), split + ".txt")

  def source_files(self, split):
    return [self._split_path(split)]

  def feature_settings(self):
    # The label ids of the features come from the saved mapping.
    path = self.label_mapping_path
    mapping = None
    if tf.io.gfile.exists(path):
      with tf.io.gfile.GFile(path, "r") as f:
        mapping = f.read()
    return {f"{self.name}_label_mapping": mapping}

  def _read_split(self, split, first_lines=None):
    return read_conll(self._split_path(split), self.config.debug, first_lines)

  def get_label_mapping(self, provided_split=None, provided_sentences=None):
    """Sorted set of converted tags over train/dev/test (whichever exist),
    saved next to the tfrecords and reused when present."""
    if self._label_mapping is not None:
      return self._label_mapping
    path = self.label_mapping_path
    if tf.io.gfile.exists(path):
      with tf.io.gfile.GFile(path, "r") as f:
        self._label_mapping = json.load(f)
      return self._label_mapping
    tag_counts = collections.Counter()
    for split in ("train", "dev", "test"):
      if not tf.io.gfile.exists(self._split_path(split)):
        continue
      sentences = provided_sentences if split == provided_split else self._read_split(split)
      for _, tags in sentences:
        tag_counts.update(self._convert_tags(tags))
    self._label_mapping = {tag: i for i, tag in enumerate(sorted(tag_counts))}
    write_atomic(path, json.dumps(self._label_mapping))
    return self._label_mapping

  def get_examples(self, split):
    if split not in self._examples:
      first_lines = []
      sentences = self._read_split(split, first_lines)
      if not sentences:
        raise ValueError(
          f"{self._split_path(split)}: no sentence; expected lines of `word ... tag` with a blank "
          f"line after each sentence (task {self.name})"
        )
      mapping = self.get_label_mapping(split, sentences)
      examples = []
      for i, (words, tags) in enumerate(sentences):
        tags = self._convert_tags(tags)
        unknown = [t for t in tags if t not in mapping]
        if unknown:
          # Only a mapping saved by an earlier run can lack a tag of the data.
          raise ValueError(
            f"{self._split_path(split)}, line {first_lines[i]}: tag {unknown[0]!r} is not in "
            f"the label mapping {self.label_mapping_path} ({len(mapping)} tags, saved by an "
            "earlier run; delete it to rebuild it from the data)"
          )
        examples.append(TaggingExample(i, self.name, words, tags, [mapping[t] for t in tags]))
      self._examples[split] = examples
    return self._examples[split]

  def featurize(self, example, is_training, log=False):
    del is_training
    s = self.config.max_seq_length
    words_to_tokens = tokenize_and_align(self.tokenizer, example.words)
    vocab = self.tokenizer.vocab
    input_ids = []
    tagged_positions = []
    for word_tokens in words_to_tokens:
      # As the original: the *total* word count plus the tokens so far against the limit.
      if len(words_to_tokens) + len(input_ids) + 1 > s:
        input_ids.append(vocab["[SEP]"])
        break
      if "[CLS]" not in word_tokens and "[SEP]" not in word_tokens:
        tagged_positions.append(len(input_ids))
      input_ids += [vocab[t] for t in word_tokens]
    features = {
      "input_ids": task_lib.pad_to(input_ids, s),
      "input_mask": task_lib.pad_to([1] * len(input_ids), s),
      "segment_ids": task_lib.pad_to([1] * len(input_ids), s),  # 1s, as the original
      "task_id": self.task_id,
      self.name + "_eid": example.eid,
      self.name + "_labels": task_lib.pad_to(example.labels[:s], s),
      self.name + "_labels_mask": task_lib.pad_to([1.0] * len(tagged_positions), s, 0.0),
      self.name + "_labeled_positions": task_lib.pad_to(tagged_positions, s),
    }
    if log:
      self.log_features(features)
    return [features]

  def keeps_nothing(self, features):
    return not any(features[self.name + "_labels_mask"])

  def keeps_nothing_warning(self, count, total):
    # The original's cut is kept, so results match; it is said once, not silently.
    return (
      f"warning: task {self.name}: {count} of {total} examples keep no tagged word within "
      f"max_seq_length={self.config.max_seq_length} (the original's cut empties a sentence "
      "of max_seq_length - 3 words or more); raise max_seq_length to train and score them"
    )

  def get_feature_specs(self):
    s = self.config.max_seq_length
    return [
      task_lib.FeatureSpec(self.name + "_eid", [], True),
      task_lib.FeatureSpec(self.name + "_labels", [s], True),
      task_lib.FeatureSpec(self.name + "_labels_mask", [s], False),
      task_lib.FeatureSpec(self.name + "_labeled_positions", [s], True),
    ]

  def create_head(self):
    return TaggingHead(
      self.name, num_labels=len(self.get_label_mapping()), name="task_specific_" + self.name
    )

  def get_scorer(self, split="dev"):
    return tagging_scorers.EntityLevelF1Scorer(self.get_label_mapping())


class Chunking(TaggingTask):
  """CoNLL-2000 text chunking."""

  def __init__(self, config, tokenizer):
    super().__init__(config, "chunk", tokenizer, is_token_level=False)
