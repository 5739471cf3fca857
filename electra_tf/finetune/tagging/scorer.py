"""Entity-level F1 for tagging tasks (`finetune/tagging/tagging_tasks.py`)."""

import numpy as np

from electra_tf.finetune import scorer
from electra_tf.finetune.tagging import labels as tagging_utils


class WordLevelScorer(scorer.Scorer):
  """Keeps the first `round(sum(labels_mask))` labels/predictions per example.
  As in the original, the reported `loss` is twice the per-word loss (docs/differences.md)."""

  def __init__(self):
    super().__init__()
    self._total_loss = 0.0
    self._total_words = 0
    self._labels = []
    self._preds = []

  def update(self, results):
    super().update(results)
    self._total_loss += float(np.sum(results["loss"]))
    n_words = int(round(float(np.sum(results["labels_mask"]))))
    self._labels.append(list(results["labels"][:n_words]))
    self._preds.append(list(results["predictions"][:n_words]))
    self._total_loss += float(np.sum(results["loss"]))
    self._total_words += n_words

  def get_loss(self):
    return self._total_loss / max(1, self._total_words)


class EntityLevelF1Scorer(WordLevelScorer):
  """Micro `precision`, `recall`, `f1` (percent) over exact span matches, and `loss`.

  Args:
    label_mapping: dict tag -> label id.

  Example:
  >>> s = EntityLevelF1Scorer({"B-NP": 0, "E-NP": 1, "O": 2})
  >>> s.update({"loss": 0.0, "labels": [0, 1, 2], "predictions": [0, 1, 2],
  ...           "labels_mask": [1.0, 1.0, 1.0]})
  >>> dict(s.get_results())["f1"]
  100.0
  """

  def __init__(self, label_mapping):
    super().__init__()
    self._inv_label_mapping = {v: k for k, v in label_mapping.items()}

  def _get_results(self):
    n_correct = n_predicted = n_gold = 0
    for labels, preds in zip(self._labels, self._preds):
      if not labels:
        continue
      gold_spans = set(tagging_utils.get_span_labels(labels, self._inv_label_mapping))
      pred_spans = set(tagging_utils.get_span_labels(preds, self._inv_label_mapping))
      n_correct += len(gold_spans & pred_spans)
      n_gold += len(gold_spans)
      n_predicted += len(pred_spans)
    if n_correct == 0:
      precision = recall = f1 = 0.0
    else:
      precision = 100.0 * n_correct / n_predicted
      recall = 100.0 * n_correct / n_gold
      f1 = 2 * precision * recall / (precision + recall)
    return [("precision", precision), ("recall", recall), ("f1", f1), ("loss", self.get_loss())]
