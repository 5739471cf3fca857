"""NumPy versions of the original's activation and layer norm, for checking layers."""

import math

import numpy as np


def erf_gelu(x):
  """The exact (erf) GELU of `modeling.py:gelu`."""
  return x * 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def layer_norm(x, gamma, beta):
  """Layer normalization over the last axis with the original's epsilon 1e-12."""
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta
