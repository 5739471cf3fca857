"""Scorers and metrics on hand-computed cases (`finetune/classification/classification_metrics.py`–12.7)."""

import math

import numpy as np
import pytest

from electra_tf.finetune.classification import scorer as cs
from electra_tf.finetune.qa import metrics as qa_metrics
from electra_tf.finetune.tagging import labels as tagging_utils
from electra_tf.finetune.tagging import scorer as tagging_scorers


def test_mcc_binary_and_degenerate():
  # tp=2 tn=2 fp=1 fn=1 -> (4 - 1) / sqrt(3^4) = 1/3
  assert cs.matthews_corrcoef([1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 1]) == pytest.approx(1 / 3)
  assert cs.matthews_corrcoef([0, 1, 0, 1], [0, 1, 0, 1]) == pytest.approx(1.0)
  assert cs.matthews_corrcoef([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)
  assert cs.matthews_corrcoef([0, 1, 1], [1, 1, 1]) == 0.0  # constant predictions


def test_pearson_spearman_with_ties():
  assert cs.pearson_correlation([1, 2, 3], [1, 2, 4]) == pytest.approx(3 / math.sqrt(2 * 42 / 9))
  np.testing.assert_allclose(cs.average_ranks([5, 6, 7, 8, 7]), [1, 2, 3.5, 5, 3.5])
  assert cs.spearman_correlation([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(
    8 / math.sqrt(95)
  )
  assert math.isnan(cs.pearson_correlation([1, 1, 1], [1, 2, 3]))


def test_sentence_scorers():
  acc = cs.AccuracyScorer()
  for label, pred, loss in [(1, 1, 0.5), (0, 1, 1.5), (2, 2, 1.0), (0, 0, 1.0)]:
    acc.update({"label_ids": label, "predictions": pred, "loss": loss})
  assert acc.get_results() == [("accuracy", 75.0), ("loss", 1.0)]
  # labels 1, 0, 2, 0: always answering 0 is right half the time
  assert acc.majority_baseline() == 50.0
  assert acc.results_str() == "accuracy: 75.00 (majority class: 50.00) - loss: 1.00"
  mcc = cs.MCCScorer()
  for label, pred in zip([1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 1]):
    mcc.update({"label_ids": label, "predictions": pred, "loss": 0.0})
  assert [k for k, _ in mcc.get_results()] == ["mcc", "loss"]
  assert dict(mcc.get_results())["mcc"] == pytest.approx(100 / 3)
  # The console line says MCC's scale (the results files keep the original's key).
  assert mcc.results_str() == "mcc (x100, -100..100; 0 = chance): 33.33 - loss: 0.00"
  reg = cs.RegressionScorer()
  for target, pred in [(0.2, 0.1), (0.4, 0.4), (0.6, 0.8)]:
    reg.update({"targets": target, "predictions": pred, "loss": (target - pred) ** 2})
  results = dict(reg.get_results())
  assert list(results) == ["pearson", "spearman", "mse", "loss"]
  assert results["spearman"] == pytest.approx(100.0)
  assert results["mse"] == pytest.approx((0.01 + 0 + 0.04) / 3)


def test_span_labels_verified_example():
  tags = ["B-NP", "I-NP", "I-VP", "O", "I-NP", "S-PP", "E-NP"]
  assert tagging_utils.get_span_labels(tags) == [(0, 2, "VP"), (4, 4, "NP"), (5, 6, "NP")]
  with pytest.raises(ValueError):
    tagging_utils.get_span_labels([])


def test_bioes_round_trip():
  bio = ["B-NP", "I-NP", "I-NP", "B-VP", "O", "B-PP", "B-NP", "I-NP"]
  spans = tagging_utils.get_span_labels(bio)
  assert spans == [(0, 2, "NP"), (3, 3, "VP"), (5, 5, "PP"), (6, 7, "NP")]
  assert tagging_utils.get_tags(spans, len(bio), "BIOES") == [
    "B-NP",
    "I-NP",
    "E-NP",
    "S-VP",
    "O",
    "S-PP",
    "B-NP",
    "E-NP",
  ]
  assert tagging_utils.get_tags(spans, len(bio), "BIO") == bio


def test_entity_f1_and_doubled_loss():
  mapping = {"B-NP": 0, "E-NP": 1, "O": 2, "S-VP": 3}
  scorer = tagging_scorers.EntityLevelF1Scorer(mapping)
  # gold (0,1,NP), (3,3,VP); predicted (0,1,NP), (2,2,VP); the 5th position is masked out
  scorer.update(
    {
      "loss": 1.0,
      "labels": np.array([0, 1, 2, 3, 2]),
      "predictions": np.array([0, 1, 3, 2, 0]),
      "labels_mask": np.array([1, 1, 1, 1, 0], np.float32),
    }
  )
  assert scorer.get_results() == [
    ("precision", 50.0),
    ("recall", 50.0),
    ("f1", 50.0),
    ("loss", 0.5),
  ]


def test_normalize_and_v1_scores():
  assert qa_metrics.normalize_answer("  The Big, CAT!  an  apple ") == "big cat apple"
  assert qa_metrics.f1_score_v1("fox jumps", "red fox") == pytest.approx(0.5)
  assert qa_metrics.f1_score_v1("", "") == 0.0
  assert qa_metrics.f1_score_v2("", "") == 1.0
  assert qa_metrics.f1_score_v2("a", "") == 1.0  # "a" normalises to empty
  data = [
    {
      "paragraphs": [
        {
          "context": "x",
          "qas": [
            {"id": "q1", "answers": [{"text": "the Big Cat"}, {"text": "cat"}]},
            {"id": "q2", "answers": [{"text": "red fox"}]},
            {"id": "q3", "answers": [{"text": "x"}]},
          ],
        }
      ]
    }
  ]
  result = qa_metrics.evaluate_v1(data, {"q1": "big cat", "q2": "fox jumps"})
  # q3 has no prediction: counts as 0
  assert result["exact_match"] == pytest.approx(100 / 3)
  assert result["f1"] == pytest.approx(100 * 1.5 / 3)


def test_mrqa_skips_unanswered():
  answers = {"a": ["Paris", "paris france"], "b": ["blue"], "c": ["x"]}
  preds = {"a": "paris", "b": "the blue sky"}
  skip = qa_metrics.evaluate_mrqa(answers, preds, skip_no_answer=True)
  assert skip["exact_match"] == pytest.approx(50.0)
  assert skip["f1"] == pytest.approx(100 * (1 + 2 * 0.5 * 1 / 1.5) / 2)
  keep = qa_metrics.evaluate_mrqa(answers, preds)
  assert keep["exact_match"] == pytest.approx(100 / 3)


def test_v2_threshold_and_best_threshold():
  data = [
    {
      "paragraphs": [
        {
          "context": "x",
          "qas": [
            {"id": "q1", "answers": [{"text": "the Big Cat"}]},
            {"id": "q2", "answers": [{"text": "red fox"}]},
            {"id": "q3", "answers": []},
          ],
        }
      ]
    }
  ]
  preds = {"q1": "big cat", "q2": "fox jumps", "q3": "something"}
  na = {"q1": -5.0, "q2": -3.0, "q3": -1.0}
  r = qa_metrics.evaluate_v2(data, preds, na, na_prob_thresh=-2.75)
  assert r["exact"] == pytest.approx(200 / 3) and r["f1"] == pytest.approx(250 / 3)
  assert r["total"] == 3
  assert (r["HasAns_exact"], r["HasAns_f1"], r["HasAns_total"]) == (50.0, 75.0, 2)
  assert (r["NoAns_exact"], r["NoAns_f1"], r["NoAns_total"]) == (100.0, 100.0, 1)
  assert r["best_exact"] == pytest.approx(200 / 3) and r["best_exact_thresh"] == -5.0
  assert r["best_f1"] == pytest.approx(250 / 3) and r["best_f1_thresh"] == -3.0
  # a high threshold answers everything: q3's non-empty answer is wrong
  r2 = qa_metrics.evaluate_v2(data, preds, na, na_prob_thresh=10.0)
  assert r2["NoAns_exact"] == 0.0 and r2["exact"] == pytest.approx(100 / 3)
