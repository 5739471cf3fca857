"""Reading checkpoints safely: what is wrong with a damaged one in a few
words, the checkpoints of a directory newest first whatever its state file
says, and name-based (TF1) checkpoints' entries as numpy. Every reader of a
checkpoint a user hands over goes through here.

Example:
  >>> import tempfile
  >>> import numpy as np
  >>> from electra_tf.convert import writer
  >>> prefix = writer.write_official_checkpoint(
  ...   {"global_step": np.int64(3)}, tempfile.mkdtemp(), step=3)
  >>> _, tensors = read_name_based_checkpoint(prefix)
  >>> global_step_of(tensors)
  3
"""

import logging
import os
import re

import numpy as np
import tensorflow as tf

from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.models import official_names
from electra_tf.utils import file_io

# What the checkpoint reader raises on a damaged file (IndexError: truncated data).
_READ_ERRORS = (tf.errors.OpError, ValueError, IndexError, RuntimeError)
# TensorFlow's name of the state file that lists a directory's checkpoints.
STATE_FILE = "checkpoint"
_STEP = re.compile(r"-(\d+)$")


class UnreadableCheckpointError(ValueError):
  """A checkpoint (or state file) that cannot be read; the message names it
  and what is wrong, in one line."""


def step_of(prefix):
  """The step a prefix such as `.../model.ckpt-25` ends with, or None.

  Example:
  >>> step_of("/m/model.ckpt-25"), step_of("/m/weights")
  (25, None)
  """
  found = _STEP.search(os.fspath(prefix))
  return int(found.group(1)) if found else None


def _message(error):
  return " ".join(str(getattr(error, "message", error)).split())[:200]


def checkpoint_problem(prefix):
  """What is wrong with the checkpoint at `prefix`, in a few words, or None
  when its `.index` opens and its data shards are all there with at least the
  bytes the index lists. Reads the index and string entries, not the weights.

  Example:
  >>> import tempfile
  >>> checkpoint_problem(tempfile.mkdtemp() + "/model.ckpt-3")
  'its .index file is missing'
  """
  prefix = os.fspath(prefix)
  if not tf.io.gfile.exists(prefix + ".index"):
    return "its .index file is missing"
  found = file_io.glob_class(prefix)
  if found:
    # TensorFlow's reader globs the prefix: `run[1]` matches only `run1`.
    return (
      f"its path holds glob characters ({found!r}), which TensorFlow's checkpoint reader "
      "reads as a pattern, so it finds none of its files: rename the folder"
    )
  try:
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
  except _READ_ERRORS as e:
    return f"its .index file cannot be read ({_message(e)})"
  data = sorted(tf.io.gfile.glob(prefix + ".data-?????-of-?????"))
  if not data:
    return "its .data-* file is missing" if shapes else None
  total = int(data[0].rsplit("-of-", 1)[1])
  present = {int(p.rsplit(".data-", 1)[1][:5]) for p in data}
  missing = [i for i in range(total) if i not in present]
  if missing:
    return f"{len(missing)} of its {total} .data-* files are missing (shard {missing[0]} first)"
  found = sum(tf.io.gfile.stat(p).length for p in data)
  needed = 0
  strings = []
  for name, shape in shapes.items():
    if dtypes[name] == tf.string:
      strings.append(name)
    else:
      needed += int(np.prod(shape, dtype=np.int64)) * dtypes[name].size
  for name in strings if found >= needed else ():
    try:
      needed += sum(len(v) for v in np.ravel(reader.get_tensor(name)))
    except _READ_ERRORS as e:
      return (
        f"its .data-* file is truncated or damaged: entry {name!r} cannot be read ({_message(e)})"
      )
  if found < needed:
    what = "file is" if total == 1 else "files are"
    return (
      f"its .data-* {what} truncated: {found:,} bytes of the at least {needed:,} its index lists"
    )
  return None


def check_checkpoint(prefix):
  """Raises `UnreadableCheckpointError` (one line) when `checkpoint_problem`
  finds one, or when its files are Git LFS pointers; returns `prefix`."""
  path = os.fspath(prefix)
  for name in [path + ".index", *tf.io.gfile.glob(path + ".data-*")]:
    try:
      file_io.check_not_lfs_pointer(name)
    except ValueError as e:
      raise UnreadableCheckpointError(str(e)) from None
  problem = checkpoint_problem(prefix)
  if problem is not None:
    raise UnreadableCheckpointError(f"checkpoint {path!r} cannot be read: {problem}")
  return prefix


def read_state(directory):
  """`(state, problem)` of `directory`'s `checkpoint` state file: TensorFlow's
  `CheckpointState` (or None) and a few words when the file is not one (or None)."""
  directory = os.fspath(directory)
  path = os.path.join(directory, STATE_FILE)
  if not tf.io.gfile.exists(path):
    return None, None
  # TensorFlow logs a parse error as two warnings and returns None; say it once instead.
  tf_logger = tf.get_logger()
  level = tf_logger.level
  tf_logger.setLevel(logging.ERROR)
  try:
    state = tf.train.get_checkpoint_state(directory)
  except UnicodeDecodeError:
    return None, f"its `{STATE_FILE}` state file {path!r} is not text (random or binary bytes)"
  finally:
    tf_logger.setLevel(level)
  if state is None or not state.model_checkpoint_path:
    return None, f"its `{STATE_FILE}` state file {path!r} is not a checkpoint state"
  return state, None


def checkpoint_candidates(directory):
  """The checkpoint prefixes of `directory`, newest (highest step) first:
  those its state file lists or, without a usable one, every `*.index` there."""
  directory = os.fspath(directory)
  if not tf.io.gfile.isdir(directory):
    return []
  state, _ = read_state(directory)
  if state is not None:
    # (TensorFlow has put relative paths under `directory`.)
    found = {*state.all_model_checkpoint_paths, state.model_checkpoint_path}
  else:
    found = {p[: -len(".index")] for p in tf.io.gfile.glob(os.path.join(directory, "*.index"))}
  return sorted(found, key=lambda p: (step_of(p) is not None, step_of(p) or 0, p), reverse=True)


def newest_readable(directory):
  """`(prefix, skipped)`: the newest checkpoint of `directory` without a
  `checkpoint_problem` (None if there is none) and `[(prefix, problem)]` of
  the newer ones that cannot be read."""
  skipped = []
  for prefix in checkpoint_candidates(directory):
    problem = checkpoint_problem(prefix)
    if problem is None:
      return prefix, skipped
    skipped.append((prefix, problem))
  return None, skipped


def latest_checkpoint(directory):
  """`tf.train.latest_checkpoint`, but never an error for a damaged state
  file: the newest checkpoint with an `.index` then. None when there is none."""
  directory = os.fspath(directory)
  state, _ = read_state(directory)
  if state is not None and tf.io.gfile.exists(state.model_checkpoint_path + ".index"):
    return state.model_checkpoint_path
  candidates = checkpoint_candidates(directory)
  return next((p for p in candidates if tf.io.gfile.exists(p + ".index")), None)


def readable_prefix(path):
  """The prefix of the checkpoint `path` names (a prefix, or a directory:
  its state file's newest checkpoint), checked by `checkpoint_problem`.

  Raises:
    UnreadableCheckpointError: one line naming the file and what is wrong.
    ValueError: nothing that looks like a checkpoint there.
  """
  path = os.fspath(path)
  if tf.io.gfile.isdir(path):
    state, problem = read_state(path)
    if problem is not None:
      raise UnreadableCheckpointError(
        f"checkpoint directory {path!r} cannot be read: {problem}; give a checkpoint "
        "prefix (such as <dir>/model.ckpt-<step>) or delete the state file"
      )
    if state is not None:
      prefix = state.model_checkpoint_path
      if not tf.io.gfile.exists(prefix + ".index"):
        others = [p for p in checkpoint_candidates(path) if p != prefix]
        hint = f" (older ones there: {os.path.basename(others[0])})" if others else ""
        raise UnreadableCheckpointError(
          f"checkpoint directory {path!r}: its `{STATE_FILE}` state file names "
          f"{os.path.basename(prefix)}, but {prefix + '.index'!r} is missing{hint}"
        )
      return check_checkpoint(prefix)
  elif not tf.io.gfile.exists(path + ".index") and tf.io.gfile.glob(path + ".data-*"):
    check_checkpoint(path)  # its data without its index
  prefix = official_checkpoint.resolve_checkpoint_path(path)
  return check_checkpoint(prefix)


def open_reader(prefix):
  """`tf.train.load_checkpoint(prefix)`, with one clear error for a damaged
  index or data file."""
  try:
    return tf.train.load_checkpoint(prefix)
  except _READ_ERRORS as e:
    raise ValueError(
      f"checkpoint {prefix!r} cannot be opened (truncated or corrupt index/data "
      f"file?): {getattr(e, 'message', e)}"
    ) from e


def read_name_based_checkpoint(path):
  """Reads every entry of a name-based checkpoint but a fine-tuning run's
  resume state (`official_names.TRAINING_STATE_SCOPE`).

  Args:
    path: checkpoint prefix or directory with a `checkpoint` file.

  Returns:
    `(prefix, tensors)`: `tensors` maps each name to its numpy value.

  Raises:
    ValueError: unreadable (e.g. truncated) file, naming the entry that failed.
  """
  prefix = official_checkpoint.resolve_checkpoint_path(path)
  reader = open_reader(prefix)
  tensors = {}
  for name in sorted(reader.get_variable_to_shape_map()):
    if official_names.is_training_state_entry(name):
      continue
    try:
      tensors[name] = reader.get_tensor(name)
    except _READ_ERRORS as e:
      raise ValueError(
        f"checkpoint {prefix!r}: entry {name!r} cannot be read (truncated or corrupt data "
        f"file?): {getattr(e, 'message', e)}"
      ) from e
  return prefix, tensors


def is_object_based(prefix):
  """True for an electra_tf (object-based `tf.train.Checkpoint`) checkpoint."""
  return open_reader(prefix).has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")


def assign_tensors(name_map, tensors):
  """Assigns `tensors[name]` to each variable of `name_map` (`{name: variable}`)."""
  for name, variable in name_map.items():
    variable.assign(np.asarray(tensors[name]))


def global_step_of(tensors):
  """The checkpoint's `global_step` as an int, or None when it has none."""
  value = tensors.get(official_names.GLOBAL_STEP_NAME)
  return None if value is None else int(value)
