"""Rank statistics in NumPy, shared by the GLUE scorers and the held-out
pre-training evaluation."""

import numpy as np


def average_ranks(values):
  """1-based ranks; tied values share the mean of their ranks.

  >>> average_ranks([5, 6, 7, 8, 7]).tolist()
  [1.0, 2.0, 3.5, 5.0, 3.5]
  """
  values = np.asarray(values, dtype=np.float64)
  order = np.argsort(values, kind="mergesort")
  ranks = np.empty(len(values), dtype=np.float64)
  sorted_values = values[order]
  start = 0
  while start < len(values):
    end = start
    while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
      end += 1
    ranks[order[start : end + 1]] = (start + end) / 2.0 + 1.0
    start = end + 1
  return ranks
