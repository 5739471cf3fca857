"""Training checkpoints: periodic, atomic, resumable, multi-worker aware.

A checkpoint holds the model's weights, the optimizer's variables (its
slots and `iterations`, which is the global step, so the learning-rate
schedule continues from the restored step) and the input position: how many
batches training has consumed, so a seeded input pipeline resumes at the
next batch (`pretraining_dataset.get_dataset(start_batch=...)`). It usually
equals the global step; it differs where mixed_float16 skipped the update
of a batch with non-finite gradients. It also holds the state of the
model's random seed generators (dropout), so a resumed run draws the masks
an uninterrupted run would. Fine-tuning's name-based checkpoints
(`NameBasedCheckpointManager`) keep the same state, and the loss scale,
next to the original's names. Files are named like the
original's, `<model_dir>/model.ckpt-<step>.{index,data-*}`, with the
`checkpoint` state file next to them.

Why a kill never leaves the latest checkpoint unreadable: TensorFlow writes
the tensor data under temporary names and renames them into place, and only
afterwards rewrites the `checkpoint` state file, itself by write-to-temp and
rename. Until that rename the state file names the previous complete
checkpoint, which is what `restore_latest` reads. Old checkpoints are only
deleted after the new state file is in place. Both managers work this way.

A save that fails for a full disk (or quota) removes what it wrote (TF's
`model.ckpt-<step>_temp/` directory, which would otherwise keep the disk
full) and raises `CheckpointSaveError` with one line: where, how much, and
the last good checkpoint to resume from. Such temporary directories left by
a killed save are removed when a manager starts.

A checkpoint that cannot be read (a truncated `.data-*` file, a missing
`.index`) is skipped with one line naming it and what is wrong, and the
newest readable one is restored instead, as `tf.train.CheckpointManager`'s
users expect; a `checkpoint` state file that is not one is rewritten from
the checkpoints found beside it, with a line. Only when none is readable
does the run stop (`reader.UnreadableCheckpointError`, one line).

Multi-worker: every worker takes part in a save (saving distributed
variables may need all of them), but only the chief writes into `model_dir`;
the others write into a private temporary directory that is removed at once.

Usage (needs a compiled model and a dataset, so not run as a doctest):
  manager = TrainingCheckpointManager(model, "/tmp/model", keep_checkpoint_max=5)
  manager.restore_latest()  # None on a fresh model dir
  model.fit(dataset, steps_per_epoch=100, callbacks=[
      PretrainingCheckpoint(manager, save_checkpoints_steps=25,
                            num_train_steps=100)])
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
# The input position's key in the checkpoint.
INPUT_POSITION_KEY = "input_position/.ATTRIBUTES/VARIABLE_VALUE"
# ... and its name in fine-tuning's name-based checkpoints.
INPUT_POSITION_NAME = official_names.TRAINING_STATE_SCOPE + "/input_position"
# What an unfinished save leaves: TensorFlow writes a checkpoint's shards
# into `<prefix>_temp/` (or `<prefix>_temp_<id>/`) before merging them, and
# the state file through `checkpoint.tmp<id>`.
TEMPORARY_PATTERNS = (CHECKPOINT_NAME + "-*_temp*", "checkpoint.tmp*", CHECKPOINT_NAME + "-*_tmp.*")
# (fine-tuning's name-based saves write `<prefix>_tmp.*` and rename them.)


class CheckpointSaveError(RuntimeError):
  """A checkpoint could not be written (the disk or quota is full); the
  message says where, how much, and the last good checkpoint, in one line.
  Its partial files are removed, so a re-run resumes from that checkpoint."""


def _remove(path):
  if tf.io.gfile.isdir(path):
    tf.io.gfile.rmtree(path)
  elif tf.io.gfile.exists(path):
    tf.io.gfile.remove(path)


def remove_temporary_checkpoints(model_dir):
  """Removes what unfinished saves left in `model_dir` (a killed process
  leaves `model.ckpt-<step>_temp/` behind; nothing else ever removes it).
  Call it only where no other process saves into `model_dir`. Returns the
  names removed."""
  removed = []
  for pattern in TEMPORARY_PATTERNS:
    for path in sorted(tf.io.gfile.glob(os.path.join(model_dir, pattern))):
      _remove(path)
      removed.append(os.path.basename(path))
  return removed


def _checkpoint_bytes(prefix):
  """The size of the files of the checkpoint at `prefix`."""
  return sum(tf.io.gfile.stat(p).length for p in tf.io.gfile.glob(prefix + ".*"))


def _variables_bytes(checkpoint_variables):
  return sum(int(np.prod(v.shape)) * tf.as_dtype(v.dtype).size for v in checkpoint_variables)


# What restoring a damaged checkpoint raises (IndexError: "Read less bytes than requested").
_RESTORE_ERRORS = (tf.errors.OpError, IndexError, UnicodeDecodeError)


def state_file_text(paths):
  """The text of a `checkpoint` state file naming `paths` (oldest first;
  the last is the newest), relative to the directory as TensorFlow writes them."""
  lines = [f"model_checkpoint_path: {_quoted(paths[-1])}"]
  lines += [f"all_model_checkpoint_paths: {_quoted(p)}" for p in paths]
  return "\n".join(lines) + "\n"


def _quoted(path):
  return '"' + os.path.basename(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def recover_state_file(model_dir, log=print):
  """Rewrites `model_dir`'s `checkpoint` state file when it is not one
  (random bytes, other text) from the checkpoints found there (every
  `*.index`), or removes it when there are none, saying so in one line
  through `log`. Nothing is done to a readable state file. Returns whether
  it changed anything. Call it only where no other process saves into
  `model_dir` (the chief, holding the run's lock)."""
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
  returns the step) on the newest checkpoint of `manager.model_dir` without
  a `reader.checkpoint_problem` and that restores without a read error;
  the newer ones are recorded in `manager.unreadable` and named in one line
  through `log`, and the one restored is `manager.restored_checkpoint`.
  Returns the step, or None when there is no checkpoint.

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
  """Removes the partial files of the save of `step` in `model_dir`; returns
  the one-line `CheckpointSaveError` to raise (`variables`: what a checkpoint
  holds, to estimate its size when there is no earlier one)."""
  prefix = os.path.join(model_dir, f"{CHECKPOINT_NAME}-{step}")
  for path in tf.io.gfile.glob(prefix + ".*"):
    _remove(path)
  remove_temporary_checkpoints(model_dir)
  if latest is not None:
    needed = f"about {file_io.megabytes(_checkpoint_bytes(latest))} per checkpoint"
  else:
    needed = f"more than {file_io.megabytes(_variables_bytes(variables))}"
  happened, remedy = file_io.no_room_phrase(error)
  return CheckpointSaveError(
    f"{happened} saving the checkpoint of global step {step} to {prefix} "
    f"({needed}, {file_io.megabytes(file_io.free_bytes(model_dir))} free); its "
    f"partial files were removed; last good checkpoint: {latest or 'none'}; {remedy} "
    "and re-run to resume"
  )


class TrainingPreempted(Exception):
  """SIGTERM (preemption), SIGINT (Ctrl-C) or SIGHUP (terminal closed) stopped a run (pre-training or
  fine-tuning) after it saved the checkpoint of `step`; re-running resumes
  from it. `signum` is the signal (the exit status is 128 + it)."""

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
  """The state variables of the model's `keras.random.SeedGenerator`s
  (dropout), in model order: variables that are not weights."""
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
  """Creates the optimizer's slot variables so that a restore fills them
  instead of deferring (Keras 3 optimizers create slots lazily)."""
  optimizer = getattr(model, "optimizer", None)  # an uncompiled Keras 3 model has none
  if optimizer is None:
    raise ValueError("The model must be compiled (with its optimizer) before checkpointing")
  if not optimizer.built:
    strategy = tf.distribute.get_strategy()
    if not tf.distribute.has_strategy():
      strategy = getattr(model, "distribute_strategy", strategy)
    with strategy.scope():
      optimizer.build(model.trainable_variables)


class TrainingCheckpointManager:
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
    self.model = model
    self.model_dir = model_dir
    self.keep_checkpoint_max = keep_checkpoint_max or None
    if chief is None:
      chief = distribution.is_chief(tf.distribute.get_strategy())
    self.chief = chief
    build_optimizer(model)
    self.input_position = _input_position_variable()
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
      removed = remove_temporary_checkpoints(model_dir)
      if removed:
        print(
          f"Removed what an interrupted checkpoint save left in {model_dir}: " + ", ".join(removed),
          flush=True,
        )
      # tf.train.CheckpointManager reads the state file now, and fails on random bytes.
      recover_state_file(model_dir, lambda line: print(line, flush=True))
    # Checkpoints found unreadable (skipped by `restore_latest`) and the one restored.
    self.unreadable = {}
    self.restored_checkpoint = None
    self._manager = tf.train.CheckpointManager(
      self.checkpoint,
      model_dir,
      max_to_keep=self.keep_checkpoint_max,
      checkpoint_name=CHECKPOINT_NAME,
    )

  @property
  def latest_checkpoint(self):
    """Path prefix of the newest complete checkpoint in `model_dir`, or None
    (one `restore_latest` found unreadable does not count)."""
    latest = checkpoint_reader.latest_checkpoint(self.model_dir)
    if latest in self.unreadable:
      return self.restored_checkpoint
    return latest

  @property
  def checkpoints(self):
    """Path prefixes of the kept checkpoints, oldest first."""
    state, _ = checkpoint_reader.read_state(self.model_dir)
    return list(state.all_model_checkpoint_paths) if state else []

  def restore_latest(self, log=print):
    """Restores the newest readable checkpoint; returns its step, or None if
    there is none. Newer ones that cannot be read are skipped with one line
    through `log` naming each and what is wrong.

    Raises:
      reader.UnreadableCheckpointError: there are checkpoints, but none can
        be read (one line).
    """

    def restore(prefix):
      self.restore(prefix)
      return global_step(self.model)

    return restore_newest_readable(self, restore, log)

  def restore(self, path):
    """Restores the checkpoint at `path` (a prefix like `.../model.ckpt-25`)."""
    if not tf.io.gfile.exists(path + ".index"):
      raise ValueError(f"checkpoint {path!r} not found (no {path}.index)")
    if tf.train.load_checkpoint(path).has_tensor(INPUT_POSITION_KEY):
      status = self.checkpoint.restore(path)
    else:
      # Written before checkpoints held the input position (it was the step)
      # and the seed generators' states (they start again from the seed).
      status = tf.train.Checkpoint(model=self.model, optimizer=self.model.optimizer).restore(path)
    # Every variable of the model and optimizer must come from the file.
    status.assert_existing_objects_matched()
    if not tf.train.load_checkpoint(path).has_tensor(INPUT_POSITION_KEY):
      self.input_position.assign(global_step(self.model))
    return status

  def _disk_full_error(self, step, latest, error):
    variables = self.model.variables + list(self.model.optimizer.variables)
    return disk_full_error(self.model_dir, step, latest, variables, error)

  @property
  def batches_consumed(self):
    """The input position: batches training has consumed (restored with the
    checkpoint)."""
    return int(self.input_position.numpy())

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
        raise self._disk_full_error(step, latest, e) from None
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

  - On train begin it restores the newest checkpoint of the manager's
    `model_dir` (unless already restored), so re-running the same script
    continues where the last checkpoint left off; a fresh run writes the
    starting checkpoint, as the original does at step 0.
  - After each batch it saves when the global step reaches a multiple of
    `save_checkpoints_steps` and stops training once it reaches
    `num_train_steps` (an absolute target step, as in the original). A
    `fit` that starts at or past it (a finished run re-run) trains and saves
    nothing, and says so in one line, as `run_pretraining` does.
  - On SIGTERM (preemption), SIGHUP (the terminal closed: exit status 129)
    or a first SIGINT (Ctrl-C) it saves at the next
    batch end and stops; re-running resumes from there (the role of Keras'
    `BackupAndRestore`); `preempted` then tells the caller to exit non-zero
    and `stop_signal` which signal it was. A second Ctrl-C stops at once
    (`KeyboardInterrupt`), without saving.
  - It keeps the manager's input position (batches consumed) up to date, so
    every checkpoint records where the input pipeline stands.

  Args:
    manager: a `TrainingCheckpointManager`.
    save_checkpoints_steps: save every this many global steps; 0/None saves
      only at the start and the end.
    num_train_steps: the global step at which training stops; None: never.
    handle_sigterm: install the SIGTERM, SIGHUP and SIGINT handlers (main thread only). Leave
      it off with several workers: a signal reaching one worker only would
      make it save alone; there the periodic checkpoints are the backup.
    save_initial: write the starting checkpoint of a fresh model dir (the
      original's step-0 checkpoint). Off with several workers, where whether
      the dir is fresh could be seen differently by racing workers.

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
    for name, value, least in (
      ("save_checkpoints_steps", save_checkpoints_steps, 0),
      ("num_train_steps", num_train_steps, 0),
    ):
      if value is not None and (
        isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least
      ):
        raise ValueError(
          f"PretrainingCheckpoint: {name}={value!r}; expected None or an integer >= {least}"
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


def _inner_optimizer(optimizer):
  """The optimizer holding the slots (`LossScaleOptimizer` wraps it)."""
  return getattr(optimizer, "inner_optimizer", optimizer)


class NameBasedCheckpointManager:
  """Fine-tuning's training checkpoints, in the original's names.

  Same interface as `TrainingCheckpointManager`
  (so `PretrainingCheckpoint` drives it: resume, periodic saves, SIGTERM).
  Each checkpoint holds what the original's fine-tuning writes, the model
  under its official names, `<name>/adam_m|adam_v` and `global_step`, plus
  what an exact resume needs under `official_names.TRAINING_STATE_SCOPE`:
  the input position (batches consumed; ahead of the step once
  mixed_float16 skipped a batch), the state of each dropout seed generator
  (in model order) and, under mixed_float16, the dynamic loss scale and its
  growth counter. The original's code and every reader here skip that
  scope. A checkpoint without it (the original's, or an older one) resumes
  with the input position at the step, fresh seed generators and the
  initial loss scale.

  Args:
    model: a compiled, built `FinetuningModel`.
    model_dir: where the checkpoints live.
    keep_checkpoint_max: newest checkpoints kept; 0 or None keeps all.
    chief: whether this process writes (non-chief workers write nothing:
      reading mirrored variables needs no collective).

  Usage (needs a compiled model, so not run as a doctest):
    manager = NameBasedCheckpointManager(model, "/tmp/ft", keep_checkpoint_max=5)
    manager.restore_latest()  # None on a fresh model dir
  """

  def __init__(self, model, model_dir, keep_checkpoint_max=5, chief=True):
    self.model = model
    self.model_dir = model_dir
    self.keep_checkpoint_max = keep_checkpoint_max or None
    self.chief = chief
    build_optimizer(model)
    self._name_map = model.official_name_map()
    self._slots = _inner_optimizer(model.optimizer).official_slots(self._name_map)
    self.input_position = _input_position_variable()
    self._state = self._training_state()
    self.unreadable = {}
    self.restored_checkpoint = None
    if chief and tf.io.gfile.isdir(model_dir):
      removed = remove_temporary_checkpoints(model_dir)
      if removed:
        print(
          f"Removed what an interrupted checkpoint save left in {model_dir}: " + ", ".join(removed),
          flush=True,
        )
      recover_state_file(model_dir, lambda line: print(line, flush=True))

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

  def restore_latest(self, log=None):
    """Restores weights, Adam slots, the global step and the resume state
    of the newest readable checkpoint; returns the step, or None if there is
    none. Newer ones that cannot be read are named in one line through `log`
    (default: print)."""
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
    names = dict(self._name_map)
    names.update(self._slots)
    names.update(self._state)
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
