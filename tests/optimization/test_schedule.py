"""The original's learning-rate schedule (`model/optimization.py:create_optimizer`)."""

import keras
import numpy as np
import pytest

from electra_tf.optimization.schedule import ElectraLearningRateSchedule


def test_verified_values_of_the_spec():
  schedule = ElectraLearningRateSchedule(1.0, 100, warmup_steps=10)
  steps = [0, 1, 5, 10, 11, 50, 99, 100]
  expected = [
    0,
    0.099,
    0.475,
    0.9,
    0.89,
    0.5,
    0.01,
    0,
  ]  # `model/optimization.py:create_optimizer` [verified]
  got = [float(schedule(s)) for s in steps]
  np.testing.assert_allclose(got, expected, atol=1e-6)
  assert float(schedule(150)) == 0.0  # no cycling


def test_base_rate_power_and_warmup_proportion():
  schedule = ElectraLearningRateSchedule(2e-4, 100, warmup_proportion=0.2, lr_decay_power=2.0)
  # warmup = max(100 * 0.2, 0) = 20; lr = base (1 - s/T)^2 min(1, s/20)
  for step in (3, 20, 60):
    want = 2e-4 * (1 - step / 100) ** 2 * min(1.0, step / 20)
    np.testing.assert_allclose(float(schedule(step)), want, rtol=1e-5)
  # the larger of the two warmup definitions wins
  schedule = ElectraLearningRateSchedule(1.0, 100, warmup_steps=50, warmup_proportion=0.1)
  np.testing.assert_allclose(float(schedule(25)), (1 - 0.25) * 0.5, rtol=1e-6)


def test_serialisation_round_trip_and_bad_warmup():
  schedule = ElectraLearningRateSchedule(1e-3, 1000, warmup_steps=10, lr_decay_power=0.5)
  restored = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
  assert isinstance(restored, ElectraLearningRateSchedule)
  assert float(restored(500)) == pytest.approx(float(schedule(500)))
  with pytest.raises(ValueError, match="warmup"):
    ElectraLearningRateSchedule(1e-3, 1000)
