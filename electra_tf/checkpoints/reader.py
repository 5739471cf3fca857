"""Reading name-based (TF1) checkpoints: every entry as numpy, with one clear
error for a damaged file, and assigning entries to a model's variables.

Example:
  >>> import tempfile
  >>> import numpy as np
  >>> from electra_tf.checkpoints.convert import writer
  >>> prefix = writer.write_official_checkpoint(
  ...   {"global_step": np.int64(3)}, tempfile.mkdtemp(), step=3)
  >>> _, tensors = read_name_based_checkpoint(prefix)
  >>> global_step_of(tensors)
  3
"""

import numpy as np
import tensorflow as tf

from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.models import official_names

# What the checkpoint reader raises on a damaged file (IndexError: "Read less
# bytes than requested" for a truncated data file).
_READ_ERRORS = (tf.errors.OpError, ValueError, IndexError, RuntimeError)


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
  """Reads every entry of a name-based checkpoint, except a fine-tuning
  run's resume state (`official_names.TRAINING_STATE_SCOPE`): it is no part
  of the model, so nothing converts, loads or reports it.

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
  reader = open_reader(prefix)
  return reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")


def assign_tensors(name_map, tensors):
  """Assigns `tensors[name]` to each variable of `name_map`
  (`{official name: variable}`)."""
  for name, variable in name_map.items():
    variable.assign(np.asarray(tensors[name]))


def global_step_of(tensors):
  """The checkpoint's `global_step` as an int, or None when it has none."""
  value = tensors.get(official_names.GLOBAL_STEP_NAME)
  return None if value is None else int(value)
