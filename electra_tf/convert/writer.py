"""Writing converted checkpoints: `.keras` files, electra_tf training
checkpoints and name-based checkpoints with the original's names, all
atomically.

Example:
  >>> import tempfile
  >>> import numpy as np
  >>> prefix = write_official_checkpoint({"w": np.zeros(2, np.float32)}, tempfile.mkdtemp(), 5)
  >>> prefix.endswith("model.ckpt-5")
  True
"""

import os

import keras
import numpy as np

from electra_tf.checkpoints import checkpointing
from electra_tf.checkpoints import name_based
from electra_tf.models import official_names
from electra_tf.runtime import distribution
from electra_tf.sources.object_graph import HPARAMS_FILE  # noqa: F401  (re-exported)
from electra_tf.utils.file_io import atomic_path

KERAS_SUFFIX = ".keras"


def write_training_checkpoint(pretrainer, config, output_dir, step=0, slots=None):
  """Writes an electra_tf training checkpoint `<output_dir>/model.ckpt-<step>`
  (the format of `electra_tf.checkpoints.checkpointing`, which `run_pretraining` resumes
  from): the pretrainer compiled with the original's optimizer, its
  `iterations` set to `step` and, if given, its slots from `slots`
  (`{"<official name>/adam_m": array, ...}`)."""

  with distribution.dtype_policy(config.mixed_precision):
    pretrainer.compile(pretraining_config=config)
    checkpointing.build_optimizer(pretrainer)
    optimizer = pretrainer.optimizer
    optimizer.iterations.assign(int(step))
    if slots:
      name_map = official_names.official_name_map(pretrainer)
      for slot_name, slot in optimizer_slots(optimizer, name_map).items():
        slot.assign(np.asarray(slots[slot_name]))
    manager = checkpointing.TrainingCheckpointManager(
      pretrainer, output_dir, keep_checkpoint_max=None, chief=True
    )
    return manager.save(int(step))


def inner_optimizer(optimizer):
  """The optimizer inside a `LossScaleOptimizer` (mixed_float16), else `optimizer`."""
  return getattr(optimizer, "inner_optimizer", optimizer)


def optimizer_slots(optimizer, name_map):
  """`{"<official name>/adam_m" | "/adam_v": slot variable}` of the model's
  `AdamWeightDecay` for the variables of `name_map`."""
  inner = inner_optimizer(optimizer)
  if not hasattr(inner, "official_slots"):
    raise ValueError(
      f"the model's optimizer {type(inner).__name__} has no official slot "
      "names (expected electra_tf.optimization.adam_weight_decay.AdamWeightDecay)"
    )
  return inner.official_slots(name_map)


def check_output_dir(output_dir):
  """Refuses a directory that already holds checkpoints (a converted
  checkpoint next to others would not be the one that readers pick up), and
  a path that is a file."""
  output_dir = os.fspath(output_dir)
  if os.path.isfile(output_dir):
    raise ValueError(
      f"--output {output_dir!r} is a file; this conversion writes a checkpoint "
      "directory (give a new or empty directory)"
    )
  if os.path.exists(os.path.join(output_dir, "checkpoint")):
    raise ValueError(
      f"--output {output_dir!r} already holds checkpoints (it has a "
      "`checkpoint` file); choose a new or empty directory"
    )


def save_keras(model, output_path):
  """`model.save` to a temp name in the same directory, then rename."""
  with atomic_path(output_path, suffix=KERAS_SUFFIX, weights=model.weights) as tmp:
    model.save(tmp, overwrite=True)


def write_official_checkpoint(tensors, output_dir, step):
  """Writes `tensors` (`{name: array}`) as the name-based checkpoint
  `<output_dir>/model.ckpt-<step>` plus a `checkpoint` state file naming it,
  atomically (temp prefix, then rename). Returns the prefix."""
  # The format of electra_tf's own fine-tuning checkpoints: the same writer.
  return name_based.save_name_based(tensors, output_dir, int(step), max_to_keep=None)


def official_tensors(name_map, optimizer=None, global_step=0, with_optimizer_slots=False):
  """The tensors of an official checkpoint for `name_map`'s variables.

  Args:
    name_map: `{official name: variable}` (`official_names`).
    optimizer: the model's `AdamWeightDecay` (or a `LossScaleOptimizer` around
      it), or None.
    global_step: written as int64 `global_step`.
    with_optimizer_slots: add `<name>/adam_m`, `<name>/adam_v`.

  Returns:
    `(tensors, not_converted)`: `{name: numpy array}` and descriptions of the
    optimizer state left out.
  """
  tensors = {}
  for name, variable in name_map.items():
    value = np.asarray(keras.ops.convert_to_numpy(variable))
    if value.dtype != np.float32:
      raise ValueError(
        f"variable {variable.path} ({name}) is {value.dtype}; the original's "
        "checkpoints hold float32"
      )
    tensors[name] = value
  not_converted = []
  if optimizer is not None:
    slots = optimizer_slots(optimizer, name_map)
    if with_optimizer_slots:
      for slot_name, slot in slots.items():
        tensors[slot_name] = np.asarray(keras.ops.convert_to_numpy(slot), dtype=np.float32)
    else:
      not_converted.append(
        f"optimizer slots ({len(slots)} tensors; pass --with-optimizer-slots to write them)"
      )
    if inner_optimizer(optimizer) is not optimizer:
      not_converted.append("the LossScaleOptimizer's loss scale (the original has none)")
  elif with_optimizer_slots:
    raise ValueError("with_optimizer_slots needs the optimizer")
  tensors[official_names.GLOBAL_STEP_NAME] = np.int64(global_step)
  return tensors, not_converted
