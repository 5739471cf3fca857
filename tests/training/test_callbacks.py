"""The original's ETA line (`run_pretraining.py:train_or_eval`) from a Keras callback."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.training import callbacks as eta_logger
from electra_tf.training.callbacks import ETALogger

LINE = re.compile(
  r"^(\d+)/(\d+) = (\d+\.\d)%, SPS: (\d+\.\d|inf), ELAP: ([\d:]+), ETA: ([\d:]+)"
  r"( - loss: -?\d+\.\d{4})?$"
)


@pytest.mark.parametrize(
  "secs, text",
  [
    (0, "0"),
    (5, "5"),
    (5.4, "5"),
    (59.6, "1:00"),
    (65, "1:05"),
    (600, "10:00"),
    (3723, "1:02:03"),
    (36000, "10:00:00"),
    (90061, "1 day, 1:01:01"),
  ],
)
def test_secs_to_str(secs, text):
  assert eta_logger.secs_to_str(secs) == text


def test_format_line_matches_the_original_layout():
  logger = ETALogger(n_steps=200)
  line = logger.format_line(step=50, elapsed=25.0, steps_done=50, logs={"loss": 1.234567})
  # 2 steps/s; 150 steps left at 0.5 s each.
  assert line == "50/200 = 25.0%, SPS: 2.0, ELAP: 25, ETA: 1:15 - loss: 1.2346"
  assert logger.format_line(10, 3.0, 10, {}) == "10/200 = 5.0%, SPS: 3.3, ELAP: 3, ETA: 57"


def _toy_model(steps_per_execution=1):
  model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
  model.compile(
    optimizer=keras.optimizers.SGD(0.01), loss="mse", steps_per_execution=steps_per_execution
  )
  return model


def _data(n):
  rng = np.random.default_rng(0)
  return rng.normal(size=(n, 3)).astype("float32"), rng.normal(size=(n, 1)).astype("float32")


def test_training_logs_every_step_with_the_global_step_and_once_at_end():
  lines = []
  model = _toy_model()
  x, y = _data(12)
  model.fit(
    x,
    y,
    batch_size=2,
    epochs=1,
    verbose=0,
    callbacks=[ETALogger(n_steps=10, print_fn=lines.append)],
  )
  # Second run continues the global step (as after a resume).
  model.fit(
    x[:8],
    y[:8],
    batch_size=2,
    epochs=1,
    verbose=0,
    callbacks=[ETALogger(n_steps=10, print_fn=lines.append)],
  )
  matches = [LINE.match(line) for line in lines]
  assert all(matches), lines
  steps = [int(m.group(1)) for m in matches]
  # The end of a run logs nothing new when its last step was logged.
  assert steps == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  assert all(m.group(7) is not None for m in matches)  # batch lines carry the loss
  assert matches[2].group(3) == "30.0"
  assert all(m.group(2) == "10" for m in matches)


def test_log_every_and_steps_per_execution():
  lines = []
  model = _toy_model(steps_per_execution=2)
  x, y = _data(16)
  model.fit(
    x,
    y,
    batch_size=2,
    epochs=1,
    verbose=0,
    callbacks=[ETALogger(n_steps=8, log_every=4, print_fn=lines.append)],
  )
  steps = [int(LINE.match(line).group(1)) for line in lines]
  assert steps == [4, 8]
  # A last step between log_every multiples is logged at the end, without a loss.
  lines.clear()
  model.fit(
    x[:12],
    y[:12],
    batch_size=2,
    epochs=1,
    verbose=0,
    callbacks=[ETALogger(n_steps=14, log_every=4, print_fn=lines.append)],
  )
  matches = [LINE.match(line) for line in lines]
  assert [int(m.group(1)) for m in matches] == [12, 14]
  assert [m.group(7) is not None for m in matches] == [True, False]


def test_eval_counts_batches_run():
  lines = []
  model = _toy_model()
  x, y = _data(6)
  model.fit(x, y, batch_size=2, epochs=1, verbose=0)  # global step 3
  model.evaluate(
    x,
    y,
    batch_size=2,
    verbose=0,
    callbacks=[ETALogger(n_steps=3, is_training=False, print_fn=lines.append)],
  )
  steps = [int(LINE.match(line).group(1)) for line in lines]
  assert steps == [1, 2, 3]
  assert lines[-1].startswith("3/3 = 100.0%") and "ETA: 0" in lines[-1]


def test_bad_n_steps():
  with pytest.raises(ValueError, match="n_steps"):
    ETALogger(n_steps=0)


class _Steps(keras.callbacks.Callback):
  """Stands in for the checkpointing: records the steps it was shown."""

  def __init__(self):
    super().__init__()
    self.steps = []

  def on_train_batch_end(self, batch, logs=None):
    self.steps.append(int(self.model.optimizer.iterations.numpy()))


def test_divergence_guard_stops_at_a_nan_loss_before_later_callbacks_see_it():
  model = _toy_model()
  x, y = _data(12)
  x[5, 0] = np.nan  # the 3rd batch of 2
  seen = _Steps()
  with pytest.raises(eta_logger.TrainingDiverged, match=r"global step 3: the loss is nan"):
    model.fit(
      x,
      y,
      batch_size=2,
      epochs=1,
      verbose=0,
      shuffle=False,
      callbacks=[eta_logger.DivergenceGuard(), seen],
    )
  assert seen.steps == [1, 2]  # the checkpointing never saw the broken step


def test_divergence_guard_counts_float16_skipped_steps():
  model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
  model.compile(
    optimizer=keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.01)), loss="mse"
  )
  x, y = _data(20)
  x[4:, 0] = np.inf  # from the 3rd batch on, every step is skipped
  guard = eta_logger.DivergenceGuard(max_skipped_steps=3)
  with pytest.raises(eta_logger.TrainingDiverged, match="skipped 3 steps in a row"):
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, shuffle=False, callbacks=[guard])
  assert int(model.optimizer.iterations.numpy()) == 2


def test_divergence_guard_checks_the_weights_at_the_end():
  model = _toy_model()
  x, y = _data(4)
  model.fit(x, y, batch_size=2, epochs=1, verbose=0)
  guard = eta_logger.DivergenceGuard()
  guard.set_model(model)
  guard.on_train_end()  # finite: nothing happens
  kernel = model.layers[0].kernel
  kernel.assign(np.full(kernel.shape, np.inf, np.float32))
  with pytest.raises(eta_logger.TrainingDiverged, match="a weight is NaN or Inf"):
    guard.on_train_end()


@pytest.mark.parametrize("per_execution, total", [(10, 3), (4, 10), (3, 9), (1, 5)])
def test_next_fit_steps_trains_exactly_the_steps_asked(per_execution, total):
  """Keras runs executions whole: 3 steps at steps_per_execution 10 trained 10."""
  model = _toy_model(steps_per_execution=per_execution)
  x, y = _data(64)
  data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(2)
  fits = 0
  while int(model.optimizer.iterations.numpy()) < total:
    with eta_logger.next_fit_steps(model, total - int(model.optimizer.iterations.numpy())) as steps:
      model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0)
    fits += 1
  assert int(model.optimizer.iterations.numpy()) == total
  assert int(model.steps_per_execution) == per_execution  # given back after a short execution
  assert fits == (1 if total % per_execution == 0 or total < per_execution else 2)
