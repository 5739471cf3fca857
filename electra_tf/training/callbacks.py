"""Training callbacks: the original's ETA progress line
(`run_pretraining.py:train_or_eval`, `ETAHook`) and TensorBoard scalars at
the global step (the Estimator's summaries); and the steps of each `fit`
with `steps_per_execution` (`next_fit_steps`)."""

import contextlib
import datetime
import re
import time

import keras
import numpy as np
import tensorflow as tf

from electra_tf.checkpoints import checkpointing
from electra_tf.utils import keras_compat


@contextlib.contextmanager
def next_fit_steps(model, remaining):
  """Yields the steps of the next `fit` of a run with `remaining` steps left.

  Keras runs each execution whole (a `fit` of 3 steps at `steps_per_execution`
  10 trains 10), so a `fit` takes whole executions; fewer steps than one run
  as one shorter execution, and `steps_per_execution` is restored afterwards.
  """
  per_execution = int(model.steps_per_execution or 1)
  if remaining >= per_execution:
    yield remaining - remaining % per_execution
    return
  model.steps_per_execution = remaining
  model.train_function = None  # retraced with the shorter loop
  try:
    yield remaining
  finally:
    model.steps_per_execution = per_execution
    model.train_function = None


def secs_to_str(secs):
  """Formats seconds as the original does: `str(timedelta)` with a leading
  `0:` and `0` removed twice (5 → `5`, 65 → `1:05`, 3723 → `1:02:03`)."""
  text = str(datetime.timedelta(seconds=int(round(secs))))
  for _ in range(2):
    text = re.sub(r"^0:", "", text)
    text = re.sub(r"^0", "", text)
  return text


class ETALogger(keras.callbacks.Callback):
  """Prints `<step>/<n_steps> = <pct>%, SPS: <s/s>, ELAP: <t>, ETA: <t>`
  followed by ` - <name>: <value:.4f>` for each of `to_log` found in the
  batch logs, every `log_every` steps and once at the end. `step` is the
  global step when training (a resumed run continues from it), the eval
  batches run when evaluating; it advances once per execution.

  Args:
    n_steps: total steps (the target global step when training, the number
      of eval batches when evaluating).
    is_training: log training batches (True) or evaluation batches (False).
    log_every: log only when `step % log_every == 0`.
    to_log: names from the batch logs to append (the original logs `loss`;
      its TPU runs log nothing, here that is `to_log=()`).
    print_fn: where lines go.

  Example:
  >>> logger = ETALogger(n_steps=1000)
  >>> # model.fit(dataset, steps_per_epoch=1000, callbacks=[logger])
  """

  def __init__(self, n_steps, is_training=True, log_every=1, to_log=("loss",), print_fn=None):
    super().__init__()
    if n_steps <= 0:
      raise ValueError(f"ETALogger: n_steps must be positive, got {n_steps}")
    self.n_steps = int(n_steps)
    self.is_training = is_training
    self.log_every = max(1, int(log_every))
    self.to_log = tuple(to_log)
    self.print_fn = print_fn or (lambda line: print(line, flush=True))
    self._reset()

  def _reset(self):
    self._start_time = None
    self._start_step = None
    self._step = None
    self._logged_step = None

  def get_config(self):
    return {
      "n_steps": self.n_steps,
      "is_training": self.is_training,
      "log_every": self.log_every,
      "to_log": list(self.to_log),
    }

  # --- training ---
  def on_train_begin(self, logs=None):
    if self.is_training:
      self._reset()

  def on_train_batch_begin(self, batch, logs=None):
    if self.is_training and self._start_time is None:
      self._start_time = time.time()
      self._start_step = checkpointing.global_step(self.model)

  def on_train_batch_end(self, batch, logs=None):
    if self.is_training:
      self._step = checkpointing.global_step(self.model)
      self.log(logs)

  def on_train_end(self, logs=None):
    if self.is_training and self._start_time is not None:
      self._step = checkpointing.global_step(self.model)
      self.log(None, at_end=True)

  # --- evaluation ---
  def on_test_begin(self, logs=None):
    if not self.is_training:
      self._reset()
      self._start_time = time.time()
      self._start_step = 0

  def on_test_batch_end(self, batch, logs=None):
    if not self.is_training:
      # Keras passes the index of the last batch of the execution.
      self._step = batch + 1
      self.log(logs)

  def on_test_end(self, logs=None):
    if not self.is_training and self._step is not None:
      self.log(None, at_end=True)

  def format_line(self, step, elapsed, steps_done, logs=None):
    """The original's line for `step` after `elapsed` seconds in which
    `steps_done` steps ran."""
    line = f"{step}/{self.n_steps} = {100.0 * step / self.n_steps:.1f}%"
    secs_per_step = elapsed / steps_done if steps_done > 0 else 0.0
    sps = 1.0 / secs_per_step if secs_per_step > 0 else float("inf")
    line += f", SPS: {sps:.1f}"
    line += ", ELAP: " + secs_to_str(elapsed)
    line += ", ETA: " + secs_to_str(max(0, self.n_steps - step) * secs_per_step)
    for name in self.to_log:
      if logs and name in logs:
        line += f" - {name}: {float(logs[name]):.4f}"
    return line

  def log(self, logs=None, at_end=False):
    step = self._step
    if step is None or step == self._logged_step:
      return  # the end of a run adds its last step only when not yet logged
    if not at_end and step % self.log_every != 0:
      return
    elapsed = time.time() - self._start_time
    self.print_fn(self.format_line(step, elapsed, step - self._start_step, logs))
    self._logged_step = step


def _write_scalar(name, value, step):
  """`tf.summary.scalar`'s event, without needing the `tensorboard` package."""
  tf.summary.write(name, tf.constant(value, tf.float32), step=step, metadata=_SCALAR_METADATA)


_SCALAR_METADATA = keras_compat.summary_pb2.SummaryMetadata(
  plugin_data=keras_compat.summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
).SerializeToString()


class TrainingSummaries(keras.callbacks.Callback):
  """TensorBoard scalars at the global step: the batch logs (losses) and the
  learning rate every `every_n_steps`; `write` for evaluation metrics.

  Args:
    log_dir: event file directory (the model dir, like the Estimator's).
    every_n_steps: write period in global steps; 0 writes no training
      scalars (the Estimator's `save_summary_steps=0`), evaluation's still.
    enabled: False on non-chief workers.
  """

  def __init__(self, log_dir, every_n_steps=100, enabled=True):
    super().__init__()
    self.log_dir = log_dir
    self.every_n_steps = int(every_n_steps or 0)
    if self.every_n_steps < 0:
      raise ValueError(f"every_n_steps={every_n_steps}; expected >= 0 (0: no training scalars)")
    self.enabled = enabled
    self._writer = None
    self._last_step = None
    self._pending = None

  def _learning_rate(self):
    lr = self.model.optimizer.learning_rate
    return float(lr.numpy() if hasattr(lr, "numpy") else lr)

  def on_train_batch_end(self, batch, logs=None):
    if not self.every_n_steps:
      return
    step = checkpointing.global_step(self.model)
    self._pending = (step, logs)
    if self._last_step is not None and step // self.every_n_steps <= (
      self._last_step // self.every_n_steps
    ):
      return
    self._last_step = step
    self._pending = None
    self.write(step, logs)

  def on_train_begin(self, logs=None):
    self._last_step = checkpointing.global_step(self.model)
    self._pending = None

  def on_train_end(self, logs=None):
    # The last step is always written, like the final checkpoint.
    if self._pending is not None:
      self.write(*self._pending)
      self._pending = None
    if self._writer is not None:
      self._writer.flush()

  def write(self, step, logs, learning_rate=True):
    if not self.enabled:
      return
    if self._writer is None:
      self._writer = tf.summary.create_file_writer(self.log_dir)
    with self._writer.as_default(step=step):
      for name, value in (logs or {}).items():
        try:
          value = float(value)
        except (TypeError, ValueError):
          continue
        _write_scalar(name, value, step)
      if learning_rate:
        _write_scalar("learning_rate", self._learning_rate(), step)
    self._writer.flush()


class TrainingDiverged(Exception):
  """The loss (or the weights) became NaN or Inf; nothing of it was saved."""


class DivergenceGuard(keras.callbacks.Callback):
  """Stops training when it diverges, before a checkpoint of broken weights
  is written (put it first among the callbacks): at a NaN or Inf loss, after
  `max_skipped_steps` consecutive float16 loss-scaling skips, or at NaN/Inf
  weights, checked every `check_weights_every` steps and at the end.

  Args:
    manager: the checkpoint manager, to name the last good checkpoint.
    max_skipped_steps: consecutive float16 skips tolerated.
    check_weights_every: steps between weight checks (0 or None: at the end only).

  Example:
  >>> guard = DivergenceGuard(max_skipped_steps=10)
  """

  def __init__(self, manager=None, max_skipped_steps=20, check_weights_every=None):
    super().__init__()
    self.manager = manager
    self.max_skipped_steps = int(max_skipped_steps)
    self.check_weights_every = int(check_weights_every or 0)
    self._last_step = None
    self._skipped = 0

  def _stop(self, step, what):
    latest = self.manager.latest_checkpoint if self.manager is not None else None
    saved = f"the last good checkpoint is {latest}" if latest else "no checkpoint was saved yet"
    raise TrainingDiverged(
      f"training diverged at global step {step}: {what}; no checkpoint of these weights was "
      f"written and {saved} (lower learning_rate, add warm-up or check the data, then re-run)"
    )

  def _weights_are_finite(self):
    return all(
      bool(tf.reduce_all(tf.math.is_finite(v.value)))
      for v in self.model.trainable_variables
      if "float" in str(v.dtype)
    )

  def on_train_batch_end(self, batch, logs=None):
    step = checkpointing.global_step(self.model)
    loss = (logs or {}).get("loss")
    if isinstance(self.model.optimizer, keras.optimizers.LossScaleOptimizer):
      self._skipped = self._skipped + 1 if step == self._last_step else 0
      if self._skipped >= self.max_skipped_steps:
        self._stop(step, f"float16 loss scaling skipped {self._skipped} steps in a row")
    elif loss is not None and not np.isfinite(float(loss)):
      self._stop(step, f"the loss is {float(loss)}")
    self._last_step = step
    if self.check_weights_every and step % self.check_weights_every == 0:
      if not self._weights_are_finite():
        self._stop(step, "a weight is NaN or Inf")

  def on_train_end(self, logs=None):
    if not self._weights_are_finite():
      self._stop(checkpointing.global_step(self.model), "a weight is NaN or Inf")
