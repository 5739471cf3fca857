"""Reading name-based TF1 checkpoints written by the original ELECTRA code:
pre-training checkpoints and the released models."""

import os

from absl import logging
import numpy as np
import tensorflow as tf

from electra_tf.models import official_names
from electra_tf.models.electra_pretrainer import built_pretrainer


def resolve_checkpoint_path(path):
  """The checkpoint prefix for `path`: a prefix (`.../model.ckpt-50`) or a
  directory with a `checkpoint` file (its latest checkpoint)."""
  path = os.fspath(path)
  if tf.io.gfile.isdir(path):
    prefix = tf.train.latest_checkpoint(path)
    if prefix is None:
      raise ValueError(
        f"checkpoint directory {path!r} has no usable `checkpoint` file "
        "(or the checkpoint it names is missing)"
      )
    return prefix
  if tf.io.gfile.exists(path + ".index"):
    return path
  raise ValueError(
    f"{path!r} is neither a checkpoint prefix (no {path + '.index'!r}) nor a "
    "directory with a `checkpoint` file"
  )


def describe_shape(shape):
  """`[2, 3]`-style text of a shape, for error messages."""
  return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def restore_from_name_map(name_map, path, allow_missing=False, allow_unexpected=False):
  """Assigns checkpoint tensors to `name_map`'s variables by official name.

  Args:
    name_map: `dict[official_name, keras.Variable]` (from `electra_tf.models.official_names`).
    path: checkpoint prefix or directory.
    allow_missing: if False, every variable of the map must be in the
      checkpoint.
    allow_unexpected: if False, every checkpoint entry must belong to a
      variable of the map, except optimizer slots and `global_step` (reported
      and ignored) and a fine-tuning run's resume state (ignored silently).

  Returns:
    dict with `"prefix"`, `"loaded"` (names), `"missing"` (names left at their
    current values), `"unexpected"` (unused checkpoint model entries),
    `"ignored"` (slots and global_step) and `"global_step"` (int or None).

  Raises:
    ValueError: listing every missing variable, shape mismatch (expected and
      found) and unexpected entry, before any variable is changed.
  """
  prefix = resolve_checkpoint_path(path)
  reader = tf.train.load_checkpoint(prefix)
  found_shapes = reader.get_variable_to_shape_map()
  ignored = sorted(
    n
    for n in found_shapes
    if official_names.is_non_model_entry(n) and not official_names.is_training_state_entry(n)
  )
  model_entries = {
    n: s for n, s in found_shapes.items() if not official_names.is_non_model_entry(n)
  }

  missing = sorted(n for n in name_map if n not in model_entries)
  unexpected = sorted(n for n in model_entries if n not in name_map)
  mismatched = []
  for name, variable in name_map.items():
    found = model_entries.get(name)
    if found is not None and [int(d) for d in variable.shape] != [int(d) for d in found]:
      mismatched.append(
        f"  {name}: model expects {describe_shape(variable.shape)}, "
        f"checkpoint has {describe_shape(found)}"
      )
  problems = []
  if mismatched:
    problems.append("shape mismatches:\n" + "\n".join(mismatched))
  if missing and not allow_missing:
    problems.append(
      "missing from the checkpoint (name, expected shape):\n"
      + "\n".join(f"  {n} {describe_shape(name_map[n].shape)}" for n in missing)
    )
  if unexpected and not allow_unexpected:
    problems.append(
      "checkpoint entries that belong to no model variable (name, shape):\n"
      + "\n".join(f"  {n} {describe_shape(model_entries[n])}" for n in unexpected)
    )
  if problems:
    raise ValueError(f"checkpoint {prefix!r} does not match the model:\n" + "\n".join(problems))

  loaded = [name for name in name_map if name in model_entries]
  for name in loaded:
    variable = name_map[name]
    variable.assign(np.asarray(reader.get_tensor(name), dtype=variable.dtype))
  global_step = None
  if official_names.GLOBAL_STEP_NAME in found_shapes:
    global_step = int(reader.get_tensor(official_names.GLOBAL_STEP_NAME))
  if ignored:
    logging.info(
      "Checkpoint %s: ignored %d optimizer-slot/global_step entries", prefix, len(ignored)
    )
  if unexpected:
    logging.info(
      "Checkpoint %s: %d entries not used by the model: %s", prefix, len(unexpected), unexpected
    )
  if missing:
    logging.info(
      "Checkpoint %s: %d model variables not in the checkpoint: %s", prefix, len(missing), missing
    )
  return {
    "prefix": prefix,
    "loaded": loaded,
    "missing": missing,
    "unexpected": unexpected,
    "ignored": ignored,
    "global_step": global_step,
  }


def load_official_checkpoint(path, config):
  """Builds an `ElectraPretrainer` for `config` and restores an original
  (name-based TF1) checkpoint into it, strictly.

  Args:
    path: checkpoint prefix (`.../model.ckpt-50`) or a directory holding a
      `checkpoint` file.
    config: the `PretrainingConfig` the checkpoint was trained with (layout
      options: model size/overrides, embedding_size, generator options,
      objectives).

  Returns:
    The `ElectraPretrainer` with every weight restored. The checkpoint's
    `global_step` (if any) is in `pretrainer.official_checkpoint_info`.

  Raises:
    ValueError: a missing variable, a wrong shape or a checkpoint entry that
      belongs to no model variable, with names and expected/found shapes.
  """
  pretrainer = built_pretrainer(config)
  name_map = official_names.official_name_map(pretrainer)
  info = restore_from_name_map(name_map, path)
  logging.info(
    "Restored %d variables from %s (global_step=%s)",
    len(info["loaded"]),
    info["prefix"],
    info["global_step"],
  )
  pretrainer.official_checkpoint_info = info
  return pretrainer
