"""The diagnosis helpers: the linear probe and the spread measure (no model)."""

import numpy as np
import pytest

from bench import pretraining_diagnosis


def test_ridge_probe_reads_a_linear_signal_and_not_noise():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(400, 8))
  y = (x[:, 0] > 0).astype("int64")
  assert pretraining_diagnosis.ridge_probe(x[:300], y[:300], x[300:], y[300:]) > 0.9
  noise = rng.normal(size=(400, 8))
  assert 0.35 < pretraining_diagnosis.ridge_probe(noise[:300], y[:300], noise[300:], y[300:]) < 0.65


def test_spread_and_cosine_say_how_alike_vectors_are():
  same = np.ones((5, 4))
  assert pretraining_diagnosis._spread(same) == 0.0
  assert pretraining_diagnosis._mean_offdiag_cosine(same) == pytest.approx(1.0)
  apart = np.eye(4)
  assert pretraining_diagnosis._mean_offdiag_cosine(apart) == 0.0
  assert pretraining_diagnosis._spread(apart) > 1.0
