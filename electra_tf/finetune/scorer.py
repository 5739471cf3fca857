"""Base class of the evaluation scorers (the original's `finetune/scorer.py`)."""

import abc


class Scorer(abc.ABC):
  """Accumulates per-example model outputs and computes metrics from them:
  `get_results()`, a list of `(metric_name, value)` cached until the next `update`."""

  def __init__(self):
    self._updated = False
    self._cached_results = []

  def update(self, results):
    """Adds one example's outputs (a dict of numpy values)."""
    del results
    self._updated = True

  @abc.abstractmethod
  def get_loss(self):
    """The mean loss over what was seen so far."""

  @abc.abstractmethod
  def _get_results(self):
    """The list of `(name, value)` pairs."""

  def get_results(self, prefix=""):
    if self._updated or not self._cached_results:
      self._cached_results = self._get_results()
      self._updated = False
    return [(prefix + name, value) for name, value in self._cached_results]

  def results_str(self):
    return " - ".join(f"{name}: {value:.2f}" for name, value in self.get_results())
