"""`ElectraQuestionAnswerer`: keras-hub style span extraction on raw
(question, context) strings."""

import re

import keras
import numpy as np

from electra_tf.finetune.qa.head import QAHead
from electra_tf.finetune.qa.tasks import get_final_text
from electra_tf.finetune.qa.tasks import piece_range
from electra_tf.finetune.text_preprocessor import as_strings
from electra_tf.task_models.task_model import ElectraTaskModel
from electra_tf.task_models.task_model import check_count

_OUTPUTS = ("start_logits", "end_logits")


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraQuestionAnswerer(ElectraTaskModel):
  """ELECTRA encoder + the original's simple span head (start and end logits
  from one dense layer each, no joint beam, no answerable classifier), with
  an in-model preprocessor: `fit`, `predict` and `evaluate` take
  `(questions, contexts)` string pairs.

  Packing is the QA featuriser's, one window: `[CLS] question [SEP] context
  [SEP]`, the question cut to `max_query_length` wordpieces and the context
  to what is left of `max_seq_length` (no doc-stride windows: longer
  contexts are cut). Logits of positions outside the context (except
  `[CLS]`) are −1000, as in the original's head.

  Labels are token positions in that packed sequence, `(start_positions,
  end_positions)` int `[B]` each; `answer_positions` computes them from
  character offsets (an answer cut off by the truncation gets `(0, 0)`, as
  in the original's featuriser). The default loss is the original's:
  `(start cross-entropy + end cross-entropy) / 2`, summed over the batch.

  `predict_answers` returns answer text, a substring of the context. With
  WordPiece it maps the best span back as the original's SQuAD
  post-processing does (context words → `get_final_text`); a SentencePiece
  model's pieces carry their characters, so the answer is exactly as written.

  Variables: `electra/...` and `task_specific/<task_name>/dense` (start),
  `dense_1` (end); `export` writes the SavedModel of `export_saved_model
  --model task`. A SQuAD trial of `run_finetuning` has the original's joint
  head instead: `from_checkpoint` takes its encoder under a fresh span head
  (export the trial with `--task squad` to serve the joint head).

  Args:
    bert_config: dict of the encoder's `BertConfig` fields.
    task_name: the head's name (`task_specific/<task_name>/...`).
    max_answer_length: the longest answer (wordpieces) `predict_answers`
      returns (the original's 30).
    **kwargs: `preprocessor` (an `ElectraTextPreprocessor` with
      `packing="question_context"`, or its config; None takes packed
      `input_ids/input_mask/segment_ids` dicts), `embedding_size` (None: the
      hidden size) and the standard `keras.Model` arguments.

  Returns (call):
    dict of float32 `start_logits` and `end_logits`, `[B, S]`.

  Example (the labels; `fit`/`predict` as below):
  >>> from electra_tf.text.tokenizer import ElectraTokenizer
  >>> from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
  >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is", "the", "cat", "mat"]
  >>> preprocessor = ElectraTextPreprocessor(
  ...     ElectraTokenizer(vocabulary=vocab), max_seq_length=16, packing="question_context",
  ...     max_query_length=5)
  >>> qa = ElectraQuestionAnswerer({"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
  ...     "num_attention_heads": 1, "intermediate_size": 16}, preprocessor=preprocessor)
  >>> qa.answer_positions(["where is the cat"], ["the cat is on the mat"], [18], ["mat"])
  (array([11]), array([11]))

  Usage with a released checkpoint (not run as a doctest; tests run it on
  a tiny model):
    qa = ElectraQuestionAnswerer.from_checkpoint(
        "models/electra_small", vocab_file="models/electra_small/vocab.txt", max_seq_length=384)
    starts, ends = qa.answer_positions(questions, contexts, answer_char_starts, answer_texts)
    qa.compile(num_train_steps=1000)
    qa.fit(tf.data.Dataset.from_tensor_slices(((questions, contexts), (starts, ends))).batch(32))
    qa.predict_answers(["Who cooked?"], ["The chef cooked a meal."])
  """

  packing = "question_context"
  default_max_seq_length = 384  # the original's SQuAD setting
  preprocessor_args = ("max_query_length",)

  def __init__(self, bert_config, task_name="qa", max_answer_length=30, **kwargs):
    self.max_answer_length = check_count(max_answer_length, "max_answer_length")
    super().__init__(bert_config, task_name=task_name, **kwargs)

  def make_head(self):
    return QAHead(
      self.task_name,
      joint_prediction=False,
      answerable_classifier=False,
      name=f"task_specific_{self.task_name}",
    )

  def task_outputs(self, head_outputs):
    return {k: keras.ops.cast(head_outputs[k], "float32") for k in _OUTPUTS}

  def default_loss(self):
    """The original's: the mean of the start and end cross-entropies, summed
    over the batch."""
    return {
      k: keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")
      for k in _OUTPUTS
    }

  def default_loss_weights(self):
    return {k: 0.5 for k in _OUTPUTS}

  def default_metrics(self):
    """Accuracy of the start and of the end (`start_logits_accuracy`,
    `end_logits_accuracy`)."""
    return {k: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")] for k in _OUTPUTS}

  def prepare_labels(self, y):
    """`(start_positions, end_positions)` (or a dict with those keys) → the
    outputs' names; Keras would otherwise pair a tuple with the outputs in
    the sorted order of their names."""
    if y is None:
      return y
    if isinstance(y, dict):
      y = tuple(y.get(k, y.get(k.replace("logits", "positions"))) for k in _OUTPUTS)
    if not isinstance(y, (tuple, list)) or len(y) != 2 or any(t is None for t in y):
      raise ValueError(
        "ElectraQuestionAnswerer labels are (start_positions, end_positions), int [batch] "
        f"token positions each (see answer_positions); got {y!r}"
      )
    for name, t in zip(("start_positions", "end_positions"), y):
      if len(t.shape) > 1 and not (len(t.shape) == 2 and t.shape[-1] == 1):
        raise ValueError(
          f"ElectraQuestionAnswerer {name} is one token position per example, shape [batch]; "
          f"got {t.shape}"
        )
    return dict(zip(_OUTPUTS, y))

  # --- text ↔ token positions (Python, eager) -----------------------------------

  def _contexts_in_window(self, questions, contexts):
    """Per example: where the context starts in the packed sequence, how
    many of its wordpieces fit, and its words (with SentencePiece, each piece)."""
    if self.preprocessor is None:
      raise ValueError("this needs the model's preprocessor (its tokenizer and lengths)")
    pre = self.preprocessor
    questions = as_strings(questions)
    if len(questions) != len(as_strings(contexts)):
      raise ValueError(f"{len(questions)} questions but {len(contexts)} contexts")
    if pre.sentencepiece:
      words = [(spans, [[i] for i in ids]) for ids, spans in pre.piece_spans(as_strings(contexts))]
    else:
      words = pre.word_pieces(contexts)
    layouts = []
    for question, (spans, pieces) in zip(pre.token_ids(questions), words):
      q_len = min(len(question), pre.max_query_length)
      kept = min(sum(len(p) for p in pieces), pre.max_seq_length - 3 - q_len)
      layouts.append((q_len + 2, kept, spans, pieces))
    return layouts

  def answer_positions(self, questions, contexts, answer_starts, answers):
    """Token-position labels of answers given as text and character offset.

    As the original's featuriser: the context words the answer overlaps
    give the wordpiece span, narrowed to the answer's own wordpieces when
    they occur inside it; an answer beyond the window gets `(0, 0)`.
    With a SentencePiece model: the pieces whose characters overlap the
    answer's (`piece_range`: exactly the answer where piece boundaries fall
    on its ends, else the smallest run of whole pieces covering it).

    Args:
      questions, contexts, answers: lists of strings.
      answer_starts: the answers' character offsets in their contexts.

    Returns:
      `(start_positions, end_positions)`, int numpy arrays `[B]`.
    """
    layouts = self._contexts_in_window(questions, contexts)
    contexts, answers = as_strings(contexts), as_strings(answers)
    if not len(answers) == len(answer_starts) == len(contexts):
      raise ValueError(
        f"{len(contexts)} questions and contexts but {len(answers)} answers and "
        f"{len(answer_starts)} answer_starts; expected one of each per question"
      )
    answer_ids = self.preprocessor.token_ids(answers)
    starts, ends = [], []
    for i, (offset, kept, spans, pieces) in enumerate(layouts):
      begin = int(answer_starts[i])
      end = begin + len(answers[i])
      if not answers[i].strip() or contexts[i][begin:end] != answers[i]:
        raise ValueError(
          f"example {i}: the context does not hold the answer {answers[i]!r} at character "
          f"{begin} (it has {contexts[i][begin:end]!r})"
        )
      first_piece = np.cumsum([0] + [len(p) for p in pieces])
      words = piece_range(spans, begin, end)
      if words is None:  # only characters the model drops: as if cut off
        starts.append(0)
        ends.append(0)
        continue
      tok_start, tok_end = first_piece[words[0]], first_piece[words[1] + 1] - 1
      flat = [t for p in pieces for t in p]
      target = [] if self.preprocessor.sentencepiece else answer_ids[i]
      for s in range(tok_start, tok_end + 1):
        e = s + len(target) - 1
        if target and e <= tok_end and flat[s : e + 1] == target:
          tok_start, tok_end = s, e
          break
      if tok_end >= kept:
        starts.append(0)
        ends.append(0)
      else:
        starts.append(offset + tok_start)
        ends.append(offset + tok_end)
    return np.array(starts), np.array(ends)

  def predict_answers(self, questions, contexts, batch_size=None):
    """The best span's text for each (question, context): the highest
    `start_logit + end_logit` over context spans of at most
    `max_answer_length` wordpieces, mapped back to the context (see the
    class docstring). "" when no context wordpiece fits the window."""
    questions, contexts = as_strings(questions), as_strings(contexts)
    outputs = self.predict((questions, contexts), batch_size=batch_size, verbose=0)
    layouts = self._contexts_in_window(questions, contexts)
    tokenizer = self.preprocessor.tokenizer
    id_to_token = {i: t for t, i in tokenizer.vocab.items()}
    answers = []
    for i, (offset, kept, spans, pieces) in enumerate(layouts):
      context = contexts[i]
      if kept == 0:
        answers.append("")
        continue
      start = outputs["start_logits"][i, offset : offset + kept]
      end = outputs["end_logits"][i, offset : offset + kept]
      scores = start[:, None] + end[None, :]
      gap = np.arange(kept)[None, :] - np.arange(kept)[:, None]
      scores = np.where((gap >= 0) & (gap < self.max_answer_length), scores, -np.inf)
      s, e = np.unravel_index(np.argmax(scores), scores.shape)
      piece_word = [w for w, p in enumerate(pieces) for _ in p]
      flat = [t for p in pieces for t in p]
      raw = context[spans[piece_word[s]][0] : spans[piece_word[e]][1]]
      if self.preprocessor.sentencepiece:
        answers.append(raw)  # the pieces' own characters: exact already
        continue
      pred_text = " ".join(id_to_token[t] for t in flat[s : e + 1])
      pred_text = pred_text.replace(" ##", "").replace("##", "").strip()
      # get_final_text aligns on " "-separated text: other whitespace → " ",
      # one for one, so offsets into `spaced` are offsets into `raw`.
      spaced = re.sub(r"\s", " ", raw)
      final = get_final_text(pred_text, spaced, tokenizer.do_lower_case, tokenizer.strip_accents)
      at = spaced.find(final)
      answers.append(raw[at : at + len(final)] if at >= 0 else raw)
    return answers

  def get_config(self):
    config = super().get_config()
    config["max_answer_length"] = self.max_answer_length
    return config
