"""SQuAD v1.1 / v2.0 and MRQA evaluation (`finetune/qa/qa_tasks.py`), written from the
documented semantics of the official evaluation scripts (EM and F1 of normalised
answers, maxed over the gold answers)."""

import collections
import json
import re
import string

import tensorflow as tf

from electra_tf.utils import file_io

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
  """Lower-cases, drops punctuation and articles, and collapses whitespace."""
  text = text.lower()
  text = "".join(ch for ch in text if ch not in _PUNCTUATION)
  text = _ARTICLES.sub(" ", text)
  return " ".join(text.split())


def _tokens(text):
  return normalize_answer(text).split() if text else []


def _token_f1(prediction_tokens, truth_tokens):
  """Harmonic mean of token precision and recall; 0 when nothing is shared."""
  common = collections.Counter(prediction_tokens) & collections.Counter(truth_tokens)
  num_same = sum(common.values())
  if num_same == 0:
    return 0.0
  precision = num_same / len(prediction_tokens)
  recall = num_same / len(truth_tokens)
  return 2 * precision * recall / (precision + recall)


def exact_match_score(prediction, ground_truth):
  return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score_v1(prediction, ground_truth):
  """v1.1/MRQA token F1: 0 when nothing is shared (also for two empties)."""
  return _token_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def f1_score_v2(prediction, ground_truth):
  """v2.0 token F1: two empty answers score 1, one empty scores 0."""
  gold_tokens = _tokens(ground_truth)
  pred_tokens = _tokens(prediction)
  if not gold_tokens or not pred_tokens:
    return float(gold_tokens == pred_tokens)
  return _token_f1(pred_tokens, gold_tokens)


def _max_over_ground_truths(metric, prediction, ground_truths):
  return max(float(metric(prediction, gt)) for gt in ground_truths)


def _exact_and_f1(scored, total):
  """`exact_match` and `f1` (percent of `total`) over `(prediction, ground truths)` pairs."""
  exact = f1 = 0.0
  for prediction, ground_truths in scored:
    exact += _max_over_ground_truths(exact_match_score, prediction, ground_truths)
    f1 += _max_over_ground_truths(f1_score_v1, prediction, ground_truths)
  total = max(total, 1)
  return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def evaluate_v1(dataset, predictions):
  """SQuAD v1.1: `dataset` is the JSON's `data` list, `predictions` {id: text}.
  A question without a prediction scores 0 and still counts."""
  qas = [
    qa for article in dataset for paragraph in article["paragraphs"] for qa in paragraph["qas"]
  ]
  scored = [
    (predictions[qa["id"]], [a["text"] for a in qa["answers"]])
    for qa in qas
    if qa["id"] in predictions and qa["answers"]
  ]
  return _exact_and_f1(scored, len(qas))


def evaluate_mrqa(answers, predictions, skip_no_answer=False):
  """MRQA: `answers` {qid: [text, ...]}, `predictions` {qid: text}. With
  `skip_no_answer` questions without a prediction are left out of the total."""
  scored = [(predictions[qid], truths) for qid, truths in answers.items() if qid in predictions]
  return _exact_and_f1(scored, len(scored) if skip_no_answer else len(answers))


def _raw_scores_v2(dataset, predictions):
  exact_scores, f1_scores, qid_to_has_ans = {}, {}, {}
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        qid = qa["id"]
        qid_to_has_ans[qid] = bool(qa["answers"])
        gold = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
        if not gold:
          gold = [""]
        if qid not in predictions:
          continue
        exact_scores[qid] = _max_over_ground_truths(exact_match_score, predictions[qid], gold)
        f1_scores[qid] = _max_over_ground_truths(f1_score_v2, predictions[qid], gold)
  return exact_scores, f1_scores, qid_to_has_ans


def _apply_no_answer_threshold(scores, na_probs, qid_to_has_ans, threshold):
  return {
    qid: float(not qid_to_has_ans[qid]) if na_probs[qid] > threshold else score
    for qid, score in scores.items()
  }


def _eval_dict(exact_scores, f1_scores, qids):
  total = len(qids)
  if total == 0:
    return {"exact": 0.0, "f1": 0.0, "total": 0}
  return {
    "exact": 100.0 * sum(exact_scores[q] for q in qids) / total,
    "f1": 100.0 * sum(f1_scores[q] for q in qids) / total,
    "total": total,
  }


def find_best_threshold(predictions, scores, na_probs, qid_to_has_ans):
  """Sweeps the no-answer threshold over the sorted null odds, from every
  question predicted unanswerable; returns `(best score in percent, threshold)`."""
  current = sum(1 for q in scores if not qid_to_has_ans[q])
  best_score, best_threshold = current, 0.0
  for qid in sorted(na_probs, key=lambda q: na_probs[q]):
    if qid not in scores:
      continue
    if qid_to_has_ans[qid]:
      diff = scores[qid]
    else:
      diff = -1 if predictions[qid] else 0
    current += diff
    if current > best_score:
      best_score, best_threshold = current, na_probs[qid]
  return 100.0 * best_score / max(1, len(scores)), best_threshold


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
  """SQuAD v2.0 with a null-odds file: a question is predicted unanswerable
  when its null odds exceed `na_prob_thresh`.

  Returns a dict with `exact`, `f1`, `total`, `HasAns_{exact,f1,total}`,
  `NoAns_{exact,f1,total}` (when such questions exist) and `best_exact`,
  `best_exact_thresh`, `best_f1`, `best_f1_thresh`.
  """
  exact_raw, f1_raw, qid_to_has_ans = _raw_scores_v2(dataset, predictions)
  if na_probs is None:
    na_probs = {q: 0.0 for q in predictions}
  na_probs = {q: v for q, v in na_probs.items() if q in exact_raw}
  na_probs.update({q: 0.0 for q in exact_raw if q not in na_probs})
  exact_thresh = _apply_no_answer_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
  f1_thresh = _apply_no_answer_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
  qids = list(exact_raw)
  result = _eval_dict(exact_thresh, f1_thresh, qids)
  has_ans = [q for q in qids if qid_to_has_ans[q]]
  no_ans = [q for q in qids if not qid_to_has_ans[q]]
  for prefix, subset in (("HasAns", has_ans), ("NoAns", no_ans)):
    if subset:
      for key, value in _eval_dict(exact_thresh, f1_thresh, subset).items():
        result[f"{prefix}_{key}"] = value
  for metric, raw in (("exact", exact_raw), ("f1", f1_raw)):
    best, threshold = find_best_threshold(predictions, raw, na_probs, qid_to_has_ans)
    result.update({f"best_{metric}": best, f"best_{metric}_thresh": threshold})
  return result


def read_json(path):
  """The JSON content of `path`; ValueError naming the file and line if it
  is not JSON."""
  with tf.io.gfile.GFile(path, "rb") as f:
    text = file_io.utf8_text(f.read(), path)  # a byte-order mark is dropped, not JSON's error
  try:
    return json.loads(text)
  except json.JSONDecodeError as e:
    raise ValueError(f"{path}, line {e.lineno}: not valid JSON ({e.msg})") from None


def read_jsonl(path, max_lines=None):
  """`(line number, value)` of each non-blank line of a JSON-lines file (the
  first `max_lines` lines if given); ValueError naming the file and line for
  text that is not UTF-8 or a line that is not JSON."""
  with tf.io.gfile.GFile(path, "rb") as f:
    text = file_io.line_text(f.read(), path)
  for number, line in enumerate(text.split("\n"), 1):
    if max_lines is not None and number > max_lines:
      break
    if not line.strip():
      continue
    try:
      yield number, json.loads(line)
    except json.JSONDecodeError as e:
      raise ValueError(f"{path}, line {number}: not valid JSON ({e.msg})") from None


def read_mrqa_answers(path):
  """`{qid: [answer text, ...]}` from an MRQA `.jsonl` file (header lines skipped)."""
  answers = {}
  for _, example in read_jsonl(path):
    if "header" in example:
      continue
    for qa in example["qas"]:
      answers[qa["qid"]] = qa["answers"]
  return answers
