"""SQuAD 1.1 / 2.0 and MRQA question answering (`finetune/qa/qa_tasks.py`): readers,
sliding-window featurisation, n-best span decoding and scoring."""

import collections
import dataclasses
import json
import os
import sys

import numpy as np
import tensorflow as tf

from electra_tf.finetune import scorer as scorer_lib
from electra_tf.finetune import task as task_lib
from electra_tf.finetune.qa import metrics as qa_metrics
from electra_tf.finetune.qa.head import QAHead
from electra_tf.text import wordpiece as tokenization
from electra_tf.text.vocab import SENTENCEPIECE
from electra_tf.utils.file_io import check_data_file
from electra_tf.utils.file_io import write_atomic


@dataclasses.dataclass(eq=False)
class QAExample:
  """One question over a whitespace-split context (compared by identity).
  `answer_span`: the answer's `(start, end)` characters in `context` (training,
  answerable only; SentencePiece featurises from these); `context_pieces`
  caches the context's pieces and their character spans."""

  task_name: str
  eid: int
  qas_id: str | None
  qid: str | None
  question_text: str
  doc_tokens: list
  orig_answer_text: str | None = None
  start_position: int | None = None
  end_position: int | None = None
  is_impossible: bool = False
  context: str | None = None
  answer_span: tuple | None = None
  context_pieces: tuple | None = None


def is_whitespace(c):
  return c in (" ", "\t", "\r", "\n") or ord(c) == 0x202F


def _improve_answer_span(doc_tokens, input_start, input_end, tokenizer, orig_answer_text):
  """The first sub-span (starts left→right, ends right→left) whose tokens
  equal the tokenized answer; else the input span."""
  tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
  for new_start in range(input_start, input_end + 1):
    for new_end in range(input_end, new_start - 1, -1):
      if " ".join(doc_tokens[new_start : new_end + 1]) == tok_answer_text:
        return new_start, new_end
  return input_start, input_end


def piece_range(spans, begin, end):
  """The first and last piece whose characters overlap `[begin, end)`, given
  each piece's `(start, end)` characters (`tokenize_with_offsets`); None when
  none does. A piece across the answer's edge is kept whole; a piece of only
  `▁` at either edge is left out.

  Example:
  >>> piece_range([(0, 2), (2, 2), (2, 4), (4, 6)], 2, 6)
  (2, 3)
  >>> piece_range([(0, 2), (2, 4)], 3, 4)
  (1, 1)
  """
  inside = [i for i, (a, b) in enumerate(spans) if a < end and b > begin]
  return (inside[0], inside[-1]) if inside else None


DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


def get_doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
  """Windows `(start, length)` over the document's sub-tokens."""
  spans = []
  start = 0
  while start < num_tokens:
    length = min(num_tokens - start, max_tokens_for_doc)
    spans.append(DocSpan(start, length))
    if start + length == num_tokens:
      break
    start += min(length, doc_stride)
  return spans


def _check_is_max_context(doc_spans, cur_span_index, position):
  """Whether window `cur_span_index` maximises min(left, right context) +
  0.01·length for the token at `position`."""
  best_score = None
  best_span_index = None
  for span_index, span in enumerate(doc_spans):
    end = span.start + span.length - 1
    if position < span.start or position > end:
      continue
    score = min(position - span.start, end - position) + 0.01 * span.length
    if best_score is None or score > best_score:
      best_score = score
      best_span_index = span_index
  return cur_span_index == best_span_index


def get_final_text(pred_text, orig_text, do_lower_case, strip_accents=True):
  """Projects the de-WordPieced prediction back onto the original words
  (BERT's alignment, normalising `orig_text` as the model's tokenizer
  does); returns `orig_text` when the alignment fails."""

  def strip_spaces(text):
    kept = [i for i, c in enumerate(text) if c != " "]
    return "".join(text[i] for i in kept), dict(enumerate(kept))

  tokenizer = tokenization.BasicTokenizer(do_lower_case=do_lower_case, strip_accents=strip_accents)
  tok_text = " ".join(tokenizer.tokenize(orig_text))
  start_position = tok_text.find(pred_text)
  if start_position == -1:
    return orig_text
  end_position = start_position + len(pred_text) - 1
  orig_ns_text, orig_ns_to_s = strip_spaces(orig_text)
  tok_ns_text, tok_ns_to_s = strip_spaces(tok_text)
  if len(orig_ns_text) != len(tok_ns_text):
    return orig_text
  tok_s_to_ns = {s: ns for ns, s in tok_ns_to_s.items()}
  orig_start = orig_ns_to_s.get(tok_s_to_ns.get(start_position, -1))
  orig_end = orig_ns_to_s.get(tok_s_to_ns.get(end_position, -1))
  if orig_start is None or orig_end is None:
    return orig_text
  return orig_text[orig_start : orig_end + 1]


def _best_indexes(logits, n_best_size):
  order = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
  return [i for i, _ in order[:n_best_size]]


def _check_unique_question_ids(examples, source, split):
  """A ValueError when two questions of an evaluated split share an id
  (predictions are kept by id)."""
  first = {}
  for number, example in enumerate(examples, 1):
    question_id = example.qas_id or example.qid
    if question_id is not None and question_id in first:
      raise ValueError(
        f"{source}: {split} questions {first[question_id]} and {number} share the id "
        f"{question_id!r}; expected each question's own id (predictions are kept by id)"
      )
    first[question_id] = number


class QATask(task_lib.Task):
  """Span-extraction QA; `v2` adds unanswerable questions."""

  def __init__(self, config, name, tokenizer, v2=False):
    super().__init__(config, name, tokenizer)
    self.v2 = v2
    self._examples = {}

  def _add_examples(self, examples, failures, paragraph, split, source):
    """Appends the paragraph's questions to `examples`; a training question whose
    answer is not where its offset says is left out, described in `failures`."""
    text = paragraph["context"]
    doc_tokens = []
    char_to_word_offset = []
    prev_is_whitespace = True
    for c in text:
      if is_whitespace(c):
        prev_is_whitespace = True
      elif prev_is_whitespace:
        doc_tokens.append(c)
        prev_is_whitespace = False
      else:
        doc_tokens[-1] += c
      char_to_word_offset.append(len(doc_tokens) - 1)

    for qa in paragraph["qas"]:
      start_position = end_position = orig_answer_text = answer_span = None
      is_impossible = False
      if split == "train":
        if self.v2:
          if "is_impossible" not in qa:
            raise ValueError(
              f"task {self.name}: SQuAD 2.0 training question {qa.get('id')!r} "
              "lacks the 'is_impossible' field"
            )
          is_impossible = qa["is_impossible"]
          if not isinstance(is_impossible, bool):
            raise ValueError(
              f"task {self.name}: SQuAD 2.0 training question {qa.get('id')!r}: "
              f"'is_impossible' is {is_impossible!r}; expected true or false"
            )
        if not is_impossible:
          if "detected_answers" in qa:  # MRQA
            answer = qa["detected_answers"][0]
            answer_offset = answer["char_spans"][0][0]
          else:  # SQuAD
            if isinstance(qa.get("answers"), list) and not qa["answers"]:
              where = f"{source}: question {qa.get('id')!r} has no answer (\"answers\": [])"
              if self.v2:
                raise ValueError(
                  f"{where} but \"is_impossible\": false; task {self.name} (SQuAD 2.0) needs an "
                  "answer for every answerable question (mark unanswerable ones "
                  "\"is_impossible\": true)"
                )
              raise ValueError(
                f"{where}; task {self.name} (SQuAD 1.1) needs an answer for every question; "
                "unanswerable questions belong to task squad (SQuAD 2.0)"
              )
            answer = qa["answers"][0]
            answer_offset = answer["answer_start"]
          orig_answer_text = answer["text"]
          answer_span = (answer_offset, answer_offset + len(orig_answer_text))
          problem = None
          if answer_span[1] - 1 >= len(char_to_word_offset):
            tf.get_logger().info("End position is out of document!")
            problem = "ends past the context"
          elif self.sentencepiece and text[answer_offset : answer_span[1]] != orig_answer_text:
            # Its labels come from these characters: a shifted offset would mislabel.
            tf.get_logger().info(
              "Answer %r is not at character %d", orig_answer_text, answer_offset
            )
            problem = "is not in the context there"
          else:
            start_position = char_to_word_offset[answer_offset]
            end_position = char_to_word_offset[answer_span[1] - 1]
            actual_text = " ".join(doc_tokens[start_position : end_position + 1]).lower()
            cleaned_answer = " ".join(orig_answer_text.split()).lower()
            if actual_text.find(cleaned_answer) == -1:
              tf.get_logger().info("Could not find answer %r in %r", cleaned_answer, actual_text)
              problem = "is not in the context there"
          if problem:
            question = qa.get("id") or qa.get("qid")
            failures.append(
              f"question {question!r}: answer {orig_answer_text!r} at character "
              f"{answer_offset} {problem}"
            )
            continue
        else:
          start_position = end_position = -1
          orig_answer_text = ""
      examples.append(
        QAExample(
          self.name,
          len(examples),
          qa.get("id"),
          qa.get("qid"),
          qa["question"],
          doc_tokens,
          orig_answer_text,
          start_position,
          end_position,
          is_impossible,
          context=text,
          answer_span=answer_span,
        )
      )

  def _paragraphs(self, split):
    raise NotImplementedError

  def data_file(self, split):
    """The file `split` is read from."""
    raise NotImplementedError

  def source_files(self, split):
    return [] if self.example_source is not None else [self.data_file(split)]

  def feature_settings(self):
    return {"max_query_length": self.config.max_query_length, "doc_stride": self.config.doc_stride}

  def _source_name(self, split):
    """Where `split` is read from, for messages."""
    return self.data_file(split) if self.example_source is None else "its example_source"

  def check_examples(self, split):
    """Reads `split` and refuses, before training, the first question that
    leaves no room for a document in `max_seq_length`."""
    examples = self.get_examples(split)
    room = self.config.max_seq_length - 3  # [CLS] question [SEP] document [SEP]
    if room > self.config.max_query_length:
      return  # every question is cut to max_query_length: none can fill the window
    for example in examples:
      length = min(
        len(self.tokenizer.tokenize(example.question_text)), self.config.max_query_length
      )
      if length >= room:
        source = self._source_name(split)
        raise ValueError(
          f"{source}: {split} question {example.qas_id or example.qid!r} is {length} tokens, which leaves no "
          f"room for its document in hparam max_seq_length={self.config.max_seq_length}; raise "
          f"max_seq_length above {length + 3} or lower max_query_length "
          f"(now {self.config.max_query_length}) to cut questions shorter"
        )

  def get_examples(self, split):
    if split not in self._examples:
      examples = []
      failures = []  # the skipped questions, described
      source = self._source_name(split)
      for n, paragraph in enumerate(self._paragraphs(split)):
        try:
          self._add_examples(examples, failures, paragraph, split, source)
        except (KeyError, IndexError, TypeError) as e:
          raise ValueError(
            f"task {self.name}, {split} split, paragraph {n + 1} (of {source}): "
            f"a question or paragraph lacks a field or has the wrong type ({type(e).__name__}: {e})"
          ) from None
      tf.get_logger().info(
        "%s %s: %d examples created, %d failures", self.name, split, len(examples), len(failures)
      )
      if examples and failures:
        # The original skips them with an INFO line each; say it once, where it is seen.
        print(
          f"warning: {source}: {len(failures)} of {len(failures) + len(examples)} {split} "
          f"questions left out, their answer not where answer_start says in their context (e.g. "
          f"{failures[0]}); fix the offsets to train on them",
          file=sys.stderr,
          flush=True,
        )
      if not examples:
        skipped = (
          f"all {len(failures)} questions were skipped (their answer is not in their context)"
          if failures
          else "it has no question"
        )
        raise ValueError(f"{source}: no {split} example, {skipped} (task {self.name})")
      if split != "train":
        _check_unique_question_ids(examples, source, split)
      self._examples[split] = examples
    return self._examples[split]

  @property
  def sentencepiece(self):
    """Whether the vocab is a SentencePiece model (features from character offsets)."""
    return getattr(self.tokenizer, "kind", None) == SENTENCEPIECE

  def context_pieces(self, example, keep=True):
    """`(pieces, spans)` of the whole context with a SentencePiece vocab, and
    the characters each stands for; `keep` caches them on the example."""
    if example.context_pieces is not None:
      return example.context_pieces
    pieces = self.tokenizer.tokenize_with_offsets(example.context)
    if keep:
      example.context_pieces = pieces
    return pieces

  def _piece_document(self, example, keep):
    """The SentencePiece document: pieces, each its own "original token", and
    the answer's first and last piece."""
    pieces, spans = self.context_pieces(example, keep)
    tok_start = tok_end = None
    if example.is_impossible:
      tok_start = tok_end = -1
    elif example.answer_span is not None:
      found = piece_range(spans, *example.answer_span)
      # No piece overlaps (the model drops the answer's characters): outside every window.
      tok_start, tok_end = found if found else (len(pieces), len(pieces))
    return list(pieces), list(range(len(pieces))), tok_start, tok_end

  def featurize(self, example, is_training, log=False, for_eval=False):
    query_tokens = self.tokenizer.tokenize(example.question_text)[: self.config.max_query_length]
    if self.sentencepiece:
      document = self._piece_document(example, keep=for_eval)
    else:
      document = self._wordpiece_document(example, is_training)
    return self._window_features(example, query_tokens, document, is_training, log, for_eval)

  def _wordpiece_document(self, example, is_training):
    """The original's document: each whitespace word's WordPieces, the answer
    narrowed to the tokenized answer."""
    tok_to_orig_index = []
    orig_to_tok_index = []
    all_doc_tokens = []
    for i, token in enumerate(example.doc_tokens):
      orig_to_tok_index.append(len(all_doc_tokens))
      for sub_token in self.tokenizer.tokenize(token):
        tok_to_orig_index.append(i)
        all_doc_tokens.append(sub_token)

    tok_start = tok_end = None
    if is_training and example.is_impossible:
      tok_start = tok_end = -1
    if is_training and not example.is_impossible:
      tok_start = orig_to_tok_index[example.start_position]
      if example.end_position < len(example.doc_tokens) - 1:
        tok_end = orig_to_tok_index[example.end_position + 1] - 1
      else:
        tok_end = len(all_doc_tokens) - 1
      tok_start, tok_end = _improve_answer_span(
        all_doc_tokens, tok_start, tok_end, self.tokenizer, example.orig_answer_text
      )
    return all_doc_tokens, tok_to_orig_index, tok_start, tok_end

  def _window_features(self, example, query_tokens, document, is_training, log, for_eval):
    """One feature dict per doc-stride window over `document`, which is
    `(all_doc_tokens, tok_to_orig_index, tok_start, tok_end)`."""
    all_doc_tokens, tok_to_orig_index, tok_start, tok_end = document
    config = self.config
    name = self.name
    max_tokens_for_doc = config.max_seq_length - len(query_tokens) - 3
    if max_tokens_for_doc <= 0:
      raise ValueError(
        f"max_seq_length={config.max_seq_length} leaves no room for the document "
        f"after a {len(query_tokens)}-token question"
      )
    doc_spans = get_doc_spans(len(all_doc_tokens), max_tokens_for_doc, config.doc_stride)
    if len(doc_spans) > 1000:
      # eids are 1000 * example + window: the original would silently collide
      raise ValueError(
        f"{name} example {example.eid} needs {len(doc_spans)} windows (> 1000); "
        "raise max_seq_length or doc_stride"
      )
    all_features = []
    for span_index, span in enumerate(doc_spans):
      tokens = ["[CLS]"] + query_tokens + ["[SEP]"]
      segment_ids = [0] * len(tokens)
      token_to_orig_map = {}
      token_is_max_context = {}
      for i in range(span.length):
        split_token_index = span.start + i
        token_to_orig_map[len(tokens)] = tok_to_orig_index[split_token_index]
        token_is_max_context[len(tokens)] = _check_is_max_context(
          doc_spans, span_index, split_token_index
        )
        tokens.append(all_doc_tokens[split_token_index])
        segment_ids.append(1)
      tokens.append("[SEP]")
      segment_ids.append(1)
      input_ids = self.tokenizer.convert_tokens_to_ids(tokens)
      s = config.max_seq_length
      features = {
        "task_id": self.task_id,
        name + "_eid": 1000 * example.eid + span_index,
        "input_ids": task_lib.pad_to(input_ids, s),
        "input_mask": task_lib.pad_to([1] * len(input_ids), s),
        "segment_ids": task_lib.pad_to(segment_ids, s),
      }
      if for_eval:
        features[name + "_doc_span_index"] = span_index
        features[name + "_tokens"] = tokens
        features[name + "_token_to_orig_map"] = token_to_orig_map
        features[name + "_token_is_max_context"] = token_is_max_context
      if is_training:
        start_position = end_position = 0
        if not example.is_impossible:
          doc_end = span.start + span.length - 1
          if tok_start >= span.start and tok_end <= doc_end:
            offset = len(query_tokens) + 2
            start_position = tok_start - span.start + offset
            end_position = tok_end - span.start + offset
        features[name + "_start_positions"] = start_position
        features[name + "_end_positions"] = end_position
        features[name + "_is_impossible"] = int(example.is_impossible)
      if log and span_index == 0:
        self.log_features({k: v for k, v in features.items() if not isinstance(v, dict)})
      all_features.append(features)
    return all_features

  def get_feature_specs(self):
    return [
      task_lib.FeatureSpec(self.name + "_eid", [], True),
      task_lib.FeatureSpec(self.name + "_start_positions", [], True),
      task_lib.FeatureSpec(self.name + "_end_positions", [], True),
      task_lib.FeatureSpec(self.name + "_is_impossible", [], True),
    ]

  def create_head(self):
    c = self.config
    return QAHead(
      self.name,
      beam_size=c.beam_size,
      joint_prediction=c.joint_prediction,
      answerable_classifier=c.answerable_classifier,
      answerable_uses_start_logits=c.answerable_uses_start_logits,
      answerable_weight=c.answerable_weight,
      name="task_specific_" + self.name,
    )

  def get_scorer(self, split="dev"):
    return SpanBasedQAScorer(self.config, self, split, self.v2)

  def evaluate_predictions(self, split, predictions, null_odds):
    """The official metrics for this task's split."""
    raise NotImplementedError


class SQuADTask(QATask):
  """SQuAD JSON files `<raw>/<split>.json` (`<split>-debug.json` in debug)."""

  def __init__(self, config, name, tokenizer, v2=False):
    super().__init__(config, name, tokenizer, v2=v2)
    self._squad_data = {}

  def data_file(self, split):
    suffix = "-debug" if self.config.debug else ""
    return os.path.join(self.config.raw_data_dir(self.name), f"{split}{suffix}.json")

  def squad_data(self, split):
    """The split as SQuAD JSON's `data` list, from `example_source` or the file."""
    if split not in self._squad_data:
      if self.example_source is not None:
        self._squad_data[split] = self.example_source(self, split)
      else:
        path = self.data_file(split)
        check_data_file(path, "a SQuAD JSON file")
        content = qa_metrics.read_json(path)
        if not isinstance(content, dict) or "data" not in content:
          raise ValueError(f"{path}: no 'data' list (not a SQuAD file?)")
        _check_squad_entries(content["data"], path)
        self._squad_data[split] = content["data"]
    return self._squad_data[split]

  def _paragraphs(self, split):
    for entry in self.squad_data(split):
      yield from entry["paragraphs"]

  def evaluate_predictions(self, split, predictions, null_odds):
    dataset = self.squad_data(split)
    if self.v2:
      return qa_metrics.evaluate_v2(
        dataset, predictions, null_odds, na_prob_thresh=self.config.qa_na_threshold
      )
    return qa_metrics.evaluate_v1(dataset, predictions)


def _check_squad_entries(data, path):
  """A one-line ValueError unless `data` is SQuAD's list of articles, each
  with a `paragraphs` list."""
  if not isinstance(data, list):
    raise ValueError(
      f"{path}: 'data' is a JSON {type(data).__name__}; expected a list of articles, each "
      "with a 'paragraphs' list (SQuAD's layout)"
    )
  for number, entry in enumerate(data, 1):
    if not isinstance(entry, dict) or not isinstance(entry.get("paragraphs"), list):
      raise ValueError(
        f"{path}: article {number} of 'data' has no 'paragraphs' list (SQuAD's layout)"
      )


class SQuAD(SQuADTask):
  """SQuAD 2.0 (`squad`)."""

  def __init__(self, config, tokenizer):
    super().__init__(config, "squad", tokenizer, v2=True)


class SQuADv1(SQuADTask):
  """SQuAD 1.1 (`squadv1`)."""

  def __init__(self, config, tokenizer):
    super().__init__(config, "squadv1", tokenizer, v2=False)


class MRQATask(QATask):
  """An MRQA task: one paragraph per line of `<raw>/<split>.jsonl`; header
  lines are skipped; debug reads lines 0–10 only."""

  def data_file(self, split):
    return os.path.join(self.config.raw_data_dir(self.name), split + ".jsonl")

  def _paragraphs(self, split):
    path = self.data_file(split)
    check_data_file(path, "an MRQA .jsonl file")
    for _, paragraph in qa_metrics.read_jsonl(path, 11 if self.config.debug else None):
      if "header" not in paragraph:
        yield paragraph

  def evaluate_predictions(self, split, predictions, null_odds):
    answers = qa_metrics.read_mrqa_answers(self.data_file(split))
    return qa_metrics.evaluate_mrqa(answers, predictions, skip_no_answer=True)


class NewsQA(MRQATask):
  def __init__(self, config, tokenizer):
    super().__init__(config, "newsqa", tokenizer)


class NaturalQuestions(MRQATask):
  def __init__(self, config, tokenizer):
    super().__init__(config, "naturalqs", tokenizer)


class TriviaQA(MRQATask):
  def __init__(self, config, tokenizer):
    super().__init__(config, "triviaqa", tokenizer)


class SearchQA(MRQATask):
  def __init__(self, config, tokenizer):
    super().__init__(config, "searchqa", tokenizer)


_RESULT_KEYS = (
  "start_logits",
  "end_logits",
  "answerable_logit",
  "start_top_log_probs",
  "start_top_index",
  "end_top_log_probs",
  "end_top_index",
)


class SpanBasedQAScorer(scorer_lib.Scorer):
  """Decodes n-best spans per question, writes the prediction (and v2
  null-odds) JSON files and scores them with the official semantics (results
  sorted by name, no loss)."""

  def __init__(self, config, task, split="dev", v2=False):
    super().__init__()
    self._config = config
    self._task = task
    self._name = task.name
    self._split = split
    self._v2 = v2
    self._results = {}
    self._total_loss = 0.0

  def update(self, results):
    super().update(results)
    self._results[int(results["eid"])] = {k: np.asarray(results[k]) for k in _RESULT_KEYS}
    self._total_loss += float(results["loss"])

  def get_loss(self):
    return self._total_loss / max(1, len(self._results))

  def write_predictions(self, preds_file=None, na_file=None):
    """Returns `(predictions, null_odds)` and writes them as JSON to
    `preds_file` / `na_file` (default: the config's; the null odds for v2 only)."""
    config = self._config
    name = self._name
    predictions = collections.OrderedDict()
    null_odds = collections.OrderedDict()
    for example in self._task.get_examples(self._split):
      example_id = example.qas_id if "squad" in name else example.qid
      features = self._task.featurize(example, False, for_eval=True)
      prelim = []
      score_null = 1000000.0
      for feature_index, feature in enumerate(features):
        eid = feature[name + "_eid"]
        if eid not in self._results:
          raise ValueError(
            f"{name} {self._split}: no model output for window eid {eid} (example "
            f"{example_id!r}); records were dropped, e.g. because predict_batch_size "
            f"({config.predict_batch_size}) differs from eval_batch_size "
            f"({config.eval_batch_size}), or the records are stale (use_tfrecords_if_existing)"
          )
        result = self._results[eid]
        tokens = feature[name + "_tokens"]
        token_to_orig_map = feature[name + "_token_to_orig_map"]
        is_max_context = feature[name + "_token_is_max_context"]
        if config.joint_prediction:
          start_indexes = result["start_top_index"]
          end_indexes = result["end_top_index"]
        else:
          start_indexes = _best_indexes(result["start_logits"], config.n_best_size)
          end_indexes = _best_indexes(result["end_logits"], config.n_best_size)
        if self._v2:
          if config.answerable_classifier:
            feature_null_score = float(result["answerable_logit"])
          else:
            feature_null_score = float(result["start_logits"][0] + result["end_logits"][0])
          score_null = min(score_null, feature_null_score)
        for i, start_index in enumerate(start_indexes):
          start_index = int(start_index)
          ends = end_indexes[i] if config.joint_prediction else end_indexes
          for j, end_index in enumerate(ends):
            end_index = int(end_index)
            if start_index >= len(tokens) or end_index >= len(tokens) or start_index == 0:
              continue
            if start_index not in token_to_orig_map or end_index not in token_to_orig_map:
              continue
            if not is_max_context.get(start_index, False) or end_index < start_index:
              continue
            if end_index - start_index + 1 > config.max_answer_length:
              continue
            if config.joint_prediction:
              start_logit = float(result["start_top_log_probs"][i])
              end_logit = float(result["end_top_log_probs"][i, j])
            else:
              start_logit = float(result["start_logits"][start_index])
              end_logit = float(result["end_logits"][end_index])
            prelim.append((feature_index, start_index, end_index, start_logit, end_logit))
      prelim.sort(key=lambda p: p[3] + p[4], reverse=True)

      seen = set()
      nbest = []
      for feature_index, start_index, end_index, start_logit, end_logit in prelim:
        if len(nbest) >= config.n_best_size:
          break
        feature = features[feature_index]
        orig_start = feature[name + "_token_to_orig_map"][start_index]
        orig_end = feature[name + "_token_to_orig_map"][end_index]
        if self._task.sentencepiece:
          final_text = self._piece_text(example, orig_start, orig_end)
        else:
          tok_text = " ".join(feature[name + "_tokens"][start_index : end_index + 1])
          tok_text = " ".join(tok_text.replace(" ##", "").replace("##", "").strip().split())
          orig_text = " ".join(example.doc_tokens[orig_start : orig_end + 1])
          final_text = get_final_text(
            tok_text, orig_text, config.do_lower_case, config.strip_accents
          )
        if final_text in seen:
          continue
        seen.add(final_text)
        nbest.append((final_text, start_logit, end_logit))
      if not nbest:
        nbest.append(("empty", 0.0, 0.0))
      best_non_null = next((entry for entry in nbest if entry[0]), ("", 0.0, 0.0))
      if not self._v2:
        predictions[example_id] = nbest[0][0]
      else:
        if config.answerable_classifier:
          score_diff = score_null
        else:
          score_diff = score_null - best_non_null[1] - best_non_null[2]
        null_odds[example_id] = float(score_diff)
        predictions[example_id] = best_non_null[0]
    write_atomic(preds_file or config.qa_preds_file(name), json.dumps(dict(predictions), indent=2))
    if self._v2:
      write_atomic(na_file or config.qa_na_file(name), json.dumps(dict(null_odds), indent=2))
    return predictions, null_odds

  def _piece_text(self, example, first, last):
    """The context's own characters from piece `first` to piece `last` (SentencePiece)."""
    _, spans = self._task.context_pieces(example)
    return example.context[spans[first][0] : max(spans[first][0], spans[last][1])]

  def _get_results(self):
    predictions, null_odds = self.write_predictions()
    results = self._task.evaluate_predictions(
      self._split, predictions, null_odds if self._v2 else None
    )
    write_atomic(self._config.qa_eval_file(self._name), json.dumps(results, indent=2))
    return sorted(results.items())
