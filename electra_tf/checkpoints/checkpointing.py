"""Training checkpoints: periodic, atomic, resumable, multi-worker aware.

A checkpoint holds the model's weights, the optimizer's variables (its
`iterations` is the global step), the input position (batches consumed, so a
seeded input pipeline resumes at the next batch; it runs ahead of the step
where mixed_float16 skipped a batch) and the dropout seed generators' states.
Files are named like the original's, `<model_dir>/model.ckpt-<step>.*`.

A kill never leaves the latest checkpoint unreadable: the data is renamed into
place before the `checkpoint` state file (itself written to a temp file and
renamed) names it, and old checkpoints go only after that. A save that fails
for a full disk removes what it wrote and raises `CheckpointSaveError`. An
unreadable checkpoint is skipped with one line and the newest readable one is
restored. Non-chief workers save into a throwaway directory.
"""

import numbers
import os
import shutil
import signal
import sys
import tempfile

import keras
import numpy as np
import tensorflow as tf

from electra_tf.checkpoints import name_based
from electra_tf.checkpoints import reader as checkpoint_reader
from electra_tf.layers import layer_utils
from electra_tf.models import official_names
from electra_tf.runtime import distribution
from electra_tf.utils import file_io
from electra_tf.utils import interrupts

CHECKPOINT_NAME = "model.ckpt"
# The input position's key in the checkpoint, and its name in name-based ones.
INPUT_POSITION_KEY = "input_position/.ATTRIBUTES/VARIABLE_VALUE"
INPUT_POSITION_NAME = official_names.TRAINING_STATE_SCOPE + "/input_position"
# What unfinished saves leave: TensorFlow's `<prefix>_temp*/` shards and
# `checkpoint.tmp*` state file, name-based saves' `<prefix>_tmp.*`.
TEMPORARY_PATTERNS = (CHECKPOINT_NAME + "-*_temp*", "checkpoint.tmp*", CHECKPOINT_NAME + "-*_tmp.*")


class CheckpointSaveError(RuntimeError):
  """A checkpoint could not be written (disk or quota full); its partial
  files are removed, so a re-run resumes from the last good checkpoint."""


def _remove(path):
  if tf.io.gfile.isdir(path):
    tf.io.gfile.rmtree(path)
  elif tf.io.gfile.exists(path):
    tf.io.gfile.remove(path)


def remove_temporary_checkpoints(model_dir):
  """Removes what unfinished saves left in `model_dir` (only where no other
  process saves into it); returns the names removed."""
  removed = []
  for pattern in TEMPORARY_PATTERNS:
    for path in sorted(tf.io.gfile.glob(os.path.join(model_dir, pattern))):
      _remove(path)
      removed.append(os.path.basename(path))
  return removed


# What restoring a damaged checkpoint raises (IndexError: "Read less bytes than requested").
_RESTORE_ERRORS = (tf.errors.OpError, IndexError, UnicodeDecodeError)


def state_file_text(paths):
  """The text of a `checkpoint` state file naming `paths` (oldest first),
  relative to the directory as TensorFlow writes them."""
  lines = [f"model_checkpoint_path: {_quoted(paths[-1])}"]
  lines += [f"all_model_checkpoint_paths: {_quoted(p)}" for p in paths]
  return "\n".join(lines) + "\n"


def _quoted(path):
  return '"' + os.path.basename(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def recover_state_file(model_dir, log=print):
  """Rewrites `model_dir`'s `checkpoint` state file when it is not one from
  the `*.index` files there (or removes it when there are none), saying so
  through `log`; returns whether it changed anything. Chief only."""
  _, problem = checkpoint_reader.read_state(model_dir)
  if problem is None:
    return False
  path = os.path.join(model_dir, checkpoint_reader.STATE_FILE)
  found = list(reversed(checkpoint_reader.checkpoint_candidates(model_dir)))
  if found:
    file_io.write_atomic(path, state_file_text(found))
    done = "rewrote it from the checkpoints there: " + ", ".join(map(os.path.basename, found))
  else:
    tf.io.gfile.remove(path)
    done = "removed it (no checkpoint there)"
  log(f"WARNING: {model_dir}: {problem}; {done}")
  return True


def restore_newest_readable(manager, restore, log=print):
  """What both managers' `restore_latest` do: `restore(prefix)` (which
  returns the step) on the newest readable checkpoint of `manager.model_dir`;
  newer unreadable ones go to `manager.unreadable` and one line through
  `log`. Returns the step, or None when there is no checkpoint.

  Raises:
    reader.UnreadableCheckpointError: there are checkpoints, none readable.
  """
  skipped = []
  for prefix in checkpoint_reader.checkpoint_candidates(manager.model_dir):
    problem = checkpoint_reader.checkpoint_problem(prefix)
    if problem is None:
      try:
        step = restore(prefix)
      except _RESTORE_ERRORS as e:
        problem = f"restoring it failed: {' '.join(str(getattr(e, 'message', e)).split())}"
    if problem is not None:
      skipped.append((prefix, problem))
      manager.unreadable[prefix] = problem
      continue
    manager.restored_checkpoint = prefix
    if skipped:
      (log or print)(
        "WARNING: "
        + "; ".join(f"checkpoint {p} cannot be read ({why})" for p, why in skipped)
        + f"; falling back to {prefix}, the newest readable checkpoint (global step {step})"
      )
    return step
  if skipped:
    raise checkpoint_reader.UnreadableCheckpointError(
      f"no readable checkpoint in {manager.model_dir}: "
      + "; ".join(f"{p} ({why})" for p, why in skipped)
      + "; move them away to start over"
    )
  return None


def disk_full_error(model_dir, step, latest, variables, error=None):
  """Removes the partial files of the save of `step`; returns the
  `CheckpointSaveError` to raise (`variables` estimate the size when there
  is no `latest` checkpoint)."""
  prefix = os.path.join(model_dir, f"{CHECKPOINT_NAME}-{step}")
  for path in tf.io.gfile.glob(prefix + ".*"):
    _remove(path)
  remove_temporary_checkpoints(model_dir)
  if latest is not None:
    size = sum(tf.io.gfile.stat(p).length for p in tf.io.gfile.glob(latest + ".*"))
    needed = f"about {file_io.megabytes(size)} per checkpoint"
  else:
    size = sum(int(np.prod(v.shape)) * tf.as_dtype(v.dtype).size for v in variables)
    needed = f"more than {file_io.megabytes(size)}"
  happened, remedy = file_io.no_room_phrase(error)
  return CheckpointSaveError(
    f"{happened} saving the checkpoint of global step {step} to {prefix} "
    f"({needed}, {file_io.megabytes(file_io.free_bytes(model_dir))} free); its "
    f"partial files were removed; last good checkpoint: {latest or 'none'}; {remedy} "
    "and re-run to resume"
  )


class TrainingPreempted(Exception):
  """SIGTERM (preemption), SIGINT (Ctrl-C) or SIGHUP stopped a run after it
  saved the checkpoint of `step`; `signum` is the signal (exit status 128 + it)."""

  def __init__(self, step, checkpoint=None, signum=signal.SIGTERM):
    self.step = step
    self.checkpoint = checkpoint
    self.signum = int(signum if signum is not None else signal.SIGTERM)
    saved = f" ({checkpoint})" if checkpoint else ""
    if self.signum == signal.SIGINT:
      what = "interrupted (Ctrl-C)"
    elif self.signum == signal.SIGTERM:
      what = "preempted"
    else:
      what = f"stopped ({signal.Signals(self.signum).name})"  # SIGHUP: the terminal closed
    super().__init__(f"{what}: stopped at global step {step} after saving its checkpoint{saved}")


def global_step(model):
  """The global step: the optimizer's `iterations`."""
  return int(model.optimizer.iterations.numpy())


def seed_generator_states(model):
  """The state variables of the model's dropout seed generators, in model order."""
  return layer_utils.seed_generator_states(model)


def _input_position_variable():
  """Batches training has consumed; one value whatever the replicas."""
  return tf.Variable(
    tf.constant(0, tf.int64),
    trainable=False,
    name="input_position",
    synchronization=tf.VariableSynchronization.ON_WRITE,
    aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
  )


def build_optimizer(model):
  """Creates the optimizer's (lazily made) slot variables so a restore fills them."""
  optimizer = getattr(model, "optimizer", None)  # an uncompiled Keras 3 model has none
  if optimizer is None:
    raise ValueError("The model must be compiled (with its optimizer) before checkpointing")
  if not optimizer.built:
    strategy = tf.distribute.get_strategy()
    if not tf.distribute.has_strategy():
      strategy = getattr(model, "distribute_strategy", strategy)
    with strategy.scope():
      optimizer.build(model.trainable_variables)


def _tidy_model_dir(model_dir):
  """Removes what interrupted saves left and repairs a damaged state file."""
  removed = remove_temporary_checkpoints(model_dir)
  if removed:
    print(
      f"Removed what an interrupted checkpoint save left in {model_dir}: " + ", ".join(removed),
      flush=True,
    )
  recover_state_file(model_dir, lambda line: print(line, flush=True))


class _ManagerBase:
  """What both managers share: their arguments, the input position, the
  checkpoints `restore_latest` found unreadable and the one it restored."""

  def __init__(self, model, model_dir, keep_checkpoint_max, chief):
    self.model = model
    self.model_dir = model_dir
    self.keep_checkpoint_max = keep_checkpoint_max or None
    self.chief = chief
    build_optimizer(model)
    self.input_position = _input_position_variable()
    self.unreadable = {}
    self.restored_checkpoint = None

  @property
  def latest_checkpoint(self):
    """The newest checkpoint's prefix (one `restore_latest` found unreadable
    does not count), or None."""
    latest = checkpoint_reader.latest_checkpoint(self.model_dir)
    if latest in self.unreadable:
      return self.restored_checkpoint
    return latest

  @property
  def batches_consumed(self):
    """The input position: batches training has consumed (restored with the
    checkpoint)."""
    return int(self.input_position.numpy())


class TrainingCheckpointManager(_ManagerBase):
  """Saves and restores `model` and its optimizer under `model_dir`.

  Args:
    model: a compiled, built `keras.Model`.
    model_dir: where the checkpoints live.
    keep_checkpoint_max: how many of the newest checkpoints to keep; 0 or
      None keeps all (the original's rule).
    chief: whether this process writes the real checkpoints; None asks
      `TF_CONFIG` / the current strategy.
  """

  def __init__(self, model, model_dir, keep_checkpoint_max=5, chief=None):
    if keep_checkpoint_max is not None and keep_checkpoint_max < 0:
      raise ValueError(f"hparam keep_checkpoint_max={keep_checkpoint_max}; expected >= 0 or null")
    if not isinstance(model_dir, (str, os.PathLike)) or not os.fspath(model_dir).strip():
      # "" would put the checkpoint files in the working directory.
      raise ValueError(
        f"TrainingCheckpointManager: model_dir {model_dir!r}; expected the directory for checkpoints"
      )
    if chief is None:
      chief = distribution.is_chief(tf.distribute.get_strategy())
    super().__init__(model, model_dir, keep_checkpoint_max, chief)
    self.checkpoint = tf.train.Checkpoint(
      model=model,
      optimizer=model.optimizer,
      input_position=self.input_position,
      # Keras keeps these out of the model's checkpointed weights; in model
      # order, as their names depend on what else the process has built.
      seed_generator_states=seed_generator_states(model),
    )
    tf.io.gfile.makedirs(model_dir)
    if self.chief:
      # tf.train.CheckpointManager reads the state file now, and fails on random bytes.
      _tidy_model_dir(model_dir)
    self._manager = tf.train.CheckpointManager(
      self.checkpoint,
      model_dir,
      max_to_keep=self.keep_checkpoint_max,
      checkpoint_name=CHECKPOINT_NAME,
    )

  @property
  def checkpoints(self):
    """Path prefixes of the kept checkpoints, oldest first."""
    state, _ = checkpoint_reader.read_state(self.model_dir)
    return list(state.all_model_checkpoint_paths) if state else []

  def restore_latest(self, log=print):
    """Restores the newest readable checkpoint; returns its step, or None if
    there is none. Newer unreadable ones are named in one line through `log`.

    Raises:
      reader.UnreadableCheckpointError: there are checkpoints, none readable.
    """

    def restore(prefix):
      self.restore(prefix)
      return global_step(self.model)

    return restore_newest_readable(self, restore, log)

  def restore(self, path):
    """Restores the checkpoint at `path` (a prefix like `.../model.ckpt-25`)."""
    if not tf.io.gfile.exists(path + ".index"):
      raise ValueError(f"checkpoint {path!r} not found (no {path}.index)")
    has_position = tf.train.load_checkpoint(path).has_tensor(INPUT_POSITION_KEY)
    if has_position:
      status = self.checkpoint.restore(path)
    else:
      # Written before checkpoints held the input position (it was the step)
      # and the seed generators' states (they start again from the seed).
      status = tf.train.Checkpoint(model=self.model, optimizer=self.model.optimizer).restore(path)
    # Every variable of the model and optimizer must come from the file.
    status.assert_existing_objects_matched()
    if not has_position:
      self.input_position.assign(global_step(self.model))
    return status

  def save(self, step=None):
    """Writes a checkpoint for `step` (default: the global step) and returns
    its path; skips the write if the newest checkpoint already has that step."""
    step = global_step(self.model) if step is None else int(step)
    if self.chief:
      latest = self.latest_checkpoint
      if latest is not None and latest.endswith(f"-{step}"):
        return latest
      try:
        # (A save of the step of an unreadable checkpoint replaces its files.)
        saved = self._manager.save(checkpoint_number=step)
        self.unreadable.pop(saved, None)
        return saved
      except (tf.errors.OpError, OSError) as e:
        if not file_io.is_disk_full(e):
          raise
        variables = self.model.variables + list(self.model.optimizer.variables)
        raise disk_full_error(self.model_dir, step, latest, variables, e) from None
    # Non-chief: same save (it may run collectives), into a throwaway dir.
    tmp_dir = tempfile.mkdtemp(prefix="worker_ckpt_")
    try:
      tf.train.CheckpointManager(
        self.checkpoint, tmp_dir, max_to_keep=1, checkpoint_name=CHECKPOINT_NAME
      ).save(checkpoint_number=step)
    finally:
      shutil.rmtree(tmp_dir, ignore_errors=True)
    return None


class PretrainingCheckpoint(keras.callbacks.Callback):
  """Keras callback: resume, checkpoint every `save_checkpoints_steps` and at
  the end, stop at the target step, and save on preemption.

  - On train begin it restores the newest checkpoint (a fresh run writes
    the starting checkpoint, as the original does at step 0).
  - After each batch it saves when the global step reaches a multiple of
    `save_checkpoints_steps` and stops at `num_train_steps` (an absolute
    step); a `fit` that starts past it trains and saves nothing, with a line.
  - On SIGTERM, SIGHUP or a first SIGINT it saves at the next batch end and
    stops; `preempted` and `stop_signal` tell the caller. A second Ctrl-C
    stops at once (`KeyboardInterrupt`), without saving.
  - It keeps the manager's input position (batches consumed) up to date.

  Args:
    manager: a `TrainingCheckpointManager`.
    save_checkpoints_steps: save every this many global steps; 0/None saves
      only at the start and the end.
    num_train_steps: the global step at which training stops; None: never.
    handle_sigterm: install the SIGTERM, SIGHUP and SIGINT handlers (main
      thread only); off with several workers (one would save alone).
    save_initial: write the starting checkpoint of a fresh model dir; off
      with several workers (they could disagree on whether it is fresh).

  Usage (not run as a doctest):
    callback = PretrainingCheckpoint(manager, 1000, num_train_steps=10000)
    # model.fit(ds, steps_per_epoch=10000, callbacks=[callback])
  """

  def __init__(
    self,
    manager,
    save_checkpoints_steps,
    num_train_steps=None,
    handle_sigterm=True,
    save_initial=True,
  ):
    super().__init__()
    for name, value in (
      ("save_checkpoints_steps", save_checkpoints_steps),
      ("num_train_steps", num_train_steps),
    ):
      if value is not None and (
        isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0
      ):
        raise ValueError(
          f"PretrainingCheckpoint: {name}={value!r}; expected None or an integer >= 0"
        )
    self.manager = manager
    self.save_checkpoints_steps = save_checkpoints_steps or None
    self.num_train_steps = num_train_steps
    self.handle_sigterm = handle_sigterm
    self.save_initial = save_initial
    self.restored = False
    self.preempted = False
    self.stop_signal = None
    self._last_saved_step = None
    self._previous_handlers = {}
    self._position_at_fit_start = 0
    self._skipped_train_function = None  # the model's, while a finished run's `fit` runs

  def _on_signal(self, signum, frame):
    del frame
    self.preempted = True
    if self.stop_signal is None:  # the first signal is the one the run reports
      self.stop_signal = signum
    if signum == signal.SIGINT:
      # A second Ctrl-C stops at once.
      signal.signal(signal.SIGINT, signal.default_int_handler)
      print("Ctrl-C: saving a checkpoint at the end of this step (Ctrl-C again stops at once)",
            file=sys.stderr, flush=True)  # fmt: skip

  def restore(self):
    """Restores the newest readable checkpoint once; returns the global step."""
    if not self.restored:
      self.manager.restore_latest(lambda line: print(line, flush=True))
      self.restored = True
    return global_step(self.manager.model)

  def on_train_begin(self, logs=None):
    had_checkpoint = self.manager.latest_checkpoint is not None
    step = self.restore()
    self._position_at_fit_start = self.manager.batches_consumed
    if self.num_train_steps is not None and step >= self.num_train_steps:
      # A finished run (re-run of the same script): train and save nothing, as run_pretraining.
      print(
        f"Global step {step} >= num_train_steps={self.num_train_steps} in "
        f"{self.manager.model_dir}: nothing to train.",
        flush=True,
      )
      self._last_saved_step = step  # on_train_end writes nothing
      self.model.stop_training = True
      # Keras 3 checks `stop_training` only after a batch: make that batch a no-op.
      self._skipped_train_function = self.model.train_function
      self.model.train_function = lambda iterator: {}
      return
    if had_checkpoint or not self.save_initial:
      self._last_saved_step = step
    else:
      self._save(step)
    if self.handle_sigterm:
      self._previous_handlers = interrupts.install_stop_handler(self._on_signal)

  def on_train_batch_end(self, batch, logs=None):
    if self._skipped_train_function is not None:
      return  # the no-op batch of a finished run consumed no input
    # `batch` is the index (in this `fit`) of the last batch just trained.
    self.manager.input_position.assign(self._position_at_fit_start + batch + 1)
    step = global_step(self.manager.model)
    every = self.save_checkpoints_steps
    if (
      every
      and self._last_saved_step is not None
      and (step // every > self._last_saved_step // every)
    ):
      self._save(step)
    if self.num_train_steps is not None and step >= self.num_train_steps:
      self.model.stop_training = True
    if self.preempted:
      # The caller reports it (`TrainingPreempted`), once.
      self._save(step)
      self.model.stop_training = True

  def on_train_end(self, logs=None):
    if self._skipped_train_function is not None:
      self.model.train_function = self._skipped_train_function
      self._skipped_train_function = None
    self._save(global_step(self.manager.model))
    interrupts.restore_handlers(self._previous_handlers)
    self._previous_handlers = {}

  def _save(self, step):
    if step != self._last_saved_step:
      self.manager.save(step)
      self._last_saved_step = step


class NameBasedCheckpointManager(_ManagerBase):
  """Fine-tuning's training checkpoints, in the original's names.

  Same interface as `TrainingCheckpointManager` (so `PretrainingCheckpoint`
  drives it). Each checkpoint holds the model under its official names,
  `<name>/adam_m|adam_v` and `global_step`, plus the resume state under
  `official_names.TRAINING_STATE_SCOPE` (which every reader skips): the input
  position, the dropout seed generators' states and, under mixed_float16, the
  loss scale. A checkpoint without it resumes with the input position at the
  step, fresh seed generators and the initial loss scale.

  Args:
    model: a compiled, built `FinetuningModel`.
    model_dir: where the checkpoints live.
    keep_checkpoint_max: newest checkpoints kept; 0 or None keeps all.
    chief: whether this process writes (non-chief workers write nothing:
      reading mirrored variables needs no collective).
  """

  def __init__(self, model, model_dir, keep_checkpoint_max=5, chief=True):
    super().__init__(model, model_dir, keep_checkpoint_max, chief)
    self._name_map = model.official_name_map()
    # A LossScaleOptimizer wraps the optimizer holding the slots.
    optimizer = getattr(model.optimizer, "inner_optimizer", model.optimizer)
    self._slots = optimizer.official_slots(self._name_map)
    self._state = self._training_state()
    if chief and tf.io.gfile.isdir(model_dir):
      _tidy_model_dir(model_dir)

  def _training_state(self):
    """`{checkpoint name: variable}` of the resume state."""
    scope = official_names.TRAINING_STATE_SCOPE
    state = {INPUT_POSITION_NAME: self.input_position}
    for i, variable in enumerate(seed_generator_states(self.model)):
      state[f"{scope}/seed_generator_{i}"] = variable
    optimizer = self.model.optimizer
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
      state[f"{scope}/loss_scale/dynamic_scale"] = optimizer.dynamic_scale
      state[f"{scope}/loss_scale/step_counter"] = optimizer.step_counter
    return state

  def restore_latest(self, log=None):
    """`TrainingCheckpointManager.restore_latest` for weights, Adam slots, the
    global step and the resume state (`log` default: print)."""
    return restore_newest_readable(self, self._restore, log)

  def _restore(self, prefix):
    reader = tf.train.load_checkpoint(prefix)
    found = reader.get_variable_to_shape_map()
    wanted = {**self._name_map, **self._slots}
    has_state = INPUT_POSITION_NAME in found
    if has_state:
      # The loss scale only where both runs use it (a resume may change precision).
      wanted.update((n, v) for n, v in self._state.items() if "/loss_scale/" not in n or n in found)
    problems = [
      f"{name} (expected {list(var.shape)}, found {found.get(name, 'nothing')})"
      for name, var in wanted.items()
      if list(found.get(name, [None])) != list(var.shape)
    ]
    if official_names.GLOBAL_STEP_NAME not in found:
      problems.append(official_names.GLOBAL_STEP_NAME)
    if problems:
      raise ValueError(
        f"checkpoint {prefix!r} cannot resume this fine-tuning run (a different model or "
        f"tasks?; delete {self.model_dir} to start over); mismatched: " + ", ".join(problems[:5])
      )
    for name, var in wanted.items():
      var.assign(tf.cast(reader.get_tensor(name), var.dtype))
    step = int(reader.get_tensor(official_names.GLOBAL_STEP_NAME))
    self.model.optimizer.iterations.assign(step)
    if not has_state:
      self.input_position.assign(step)
    return step

  def save(self, step=None):
    """Writes `model.ckpt-<step>` (chief only); returns its prefix or None."""
    if step is None:
      step = int(self.model.optimizer.iterations.numpy())
    if not self.chief:
      return None
    names = {**self._name_map, **self._slots, **self._state}
    names[official_names.GLOBAL_STEP_NAME] = tf.constant(int(step), tf.int64)
    latest = self.latest_checkpoint
    try:
      saved = name_based.save_name_based(
        names, self.model_dir, step, max_to_keep=self.keep_checkpoint_max
      )
      self.unreadable.pop(saved, None)  # its files were replaced
      return saved
    except (tf.errors.OpError, OSError) as e:
      if not file_io.is_disk_full(e):
        raise
      variables = [v for v in names.values() if hasattr(v, "shape") and hasattr(v, "dtype")]
      raise disk_full_error(self.model_dir, step, latest, variables, e) from None
