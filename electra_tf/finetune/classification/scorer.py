"""Scorers for GLUE classification and regression
(`finetune/classification/classification_metrics.py`), with sklearn's and
scipy's definitions of the statistics written out in numpy."""

import numpy as np

from electra_tf.finetune import scorer
from electra_tf.utils.statistics import average_ranks


def matthews_corrcoef(labels, predictions):
  """Multi-class MCC (Gorodkin's R_K, sklearn's definition); 0 when undefined."""
  labels = np.asarray(labels)
  predictions = np.asarray(predictions)
  classes = np.union1d(labels, predictions)
  index = {c: i for i, c in enumerate(classes)}
  confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
  for y, p in zip(labels, predictions):
    confusion[index[y], index[p]] += 1
  true_counts = confusion.sum(axis=1)
  pred_counts = confusion.sum(axis=0)
  n_correct = np.trace(confusion)
  n_samples = confusion.sum()
  cov_ytyp = n_correct * n_samples - np.dot(true_counts, pred_counts)
  cov_ypyp = n_samples**2 - np.dot(pred_counts, pred_counts)
  cov_ytyt = n_samples**2 - np.dot(true_counts, true_counts)
  if cov_ypyp * cov_ytyt == 0:
    return 0.0
  return float(cov_ytyp / np.sqrt(cov_ytyt * cov_ypyp))


def pearson_correlation(x, y):
  """Pearson's r; NaN when either input is constant (as scipy)."""
  x = np.asarray(x, dtype=np.float64)
  y = np.asarray(y, dtype=np.float64)
  xm = x - x.mean()
  ym = y - y.mean()
  denominator = np.sqrt(np.sum(xm * xm) * np.sum(ym * ym))
  if denominator == 0:
    return float("nan")
  return float(np.clip(np.sum(xm * ym) / denominator, -1.0, 1.0))


def spearman_correlation(x, y):
  return pearson_correlation(average_ranks(x), average_ranks(y))


class SentenceLevelScorer(scorer.Scorer):
  """Collects one label and one prediction per example plus the loss."""

  def __init__(self):
    super().__init__()
    self._total_loss = 0.0
    self._true_labels = []
    self._preds = []

  def update(self, results):
    super().update(results)
    self._total_loss += float(results["loss"])
    self._true_labels.append(results["label_ids"] if "label_ids" in results else results["targets"])
    self._preds.append(results["predictions"])

  def get_loss(self):
    return self._total_loss / max(1, len(self._true_labels))


class AccuracyScorer(SentenceLevelScorer):
  """`accuracy` (percent) and `loss`."""

  def _get_results(self):
    correct = sum(int(y == p) for y, p in zip(self._true_labels, self._preds))
    return [
      ("accuracy", 100.0 * correct / max(1, len(self._true_labels))),
      ("loss", self.get_loss()),
    ]

  def majority_baseline(self):
    """Accuracy (percent) of always predicting the most frequent true label."""
    if not self._true_labels:
      return 0.0
    _, counts = np.unique(np.asarray(self._true_labels), return_counts=True)
    return 100.0 * int(counts.max()) / len(self._true_labels)

  def results_str(self):
    """The metrics line with the majority-class baseline after accuracy (display only)."""
    parts = []
    for name, value in self.get_results():
      parts.append(f"{name}: {value:.2f}")
      if name == "accuracy":
        parts[-1] += f" (majority class: {self.majority_baseline():.2f})"
    return " - ".join(parts)


class MCCScorer(SentenceLevelScorer):
  """`mcc` (Matthews correlation × 100) and `loss`; used for CoLA."""

  def _get_results(self):
    return [
      ("mcc", 100.0 * matthews_corrcoef(self._true_labels, self._preds)),
      ("loss", self.get_loss()),
    ]

  def results_str(self):
    """The metrics line, saying MCC's scale (×100, as the original prints it)."""
    return super().results_str().replace("mcc: ", "mcc (x100, -100..100; 0 = chance): ", 1)


class RegressionScorer(SentenceLevelScorer):
  """`pearson`, `spearman` (× 100), `mse` (normalised units) and `loss`."""

  def _get_results(self):
    labels = np.asarray(self._true_labels, dtype=np.float64)
    preds = np.asarray(self._preds, dtype=np.float64)
    return [
      ("pearson", 100.0 * pearson_correlation(labels, preds)),
      ("spearman", 100.0 * spearman_correlation(labels, preds)),
      ("mse", float(np.mean(np.square(labels - preds)))),
      ("loss", self.get_loss()),
    ]
