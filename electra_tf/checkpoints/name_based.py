"""Name-based (TF1-style) checkpoints for fine-tuning: the fine-tuned model
is written with the original's variable names (`electra/...`,
`task_specific/<task>/...`, `<var>/adam_m|adam_v`, `global_step`), so the
original code and this package's loaders all read it."""

import os

import tensorflow as tf

from electra_tf.utils.file_io import write_atomic

CHECKPOINT_NAME = "model.ckpt"


def save_name_based(name_to_variable, model_dir, step, max_to_keep=5):
  """Writes `<model_dir>/model.ckpt-<step>` with exactly the given names,
  atomically, and updates the `checkpoint` state file; returns the prefix."""
  tf.io.gfile.makedirs(model_dir)
  prefix = os.path.join(model_dir, f"{CHECKPOINT_NAME}-{step}")
  tmp_prefix = prefix + "_tmp"
  names = sorted(name_to_variable)
  tensors = [tf.convert_to_tensor(name_to_variable[n]) for n in names]
  tf.raw_ops.SaveV2(
    prefix=tmp_prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=tensors
  )
  for suffix in (".index", ".data-00000-of-00001"):
    tf.io.gfile.rename(tmp_prefix + suffix, prefix + suffix, overwrite=True)
  state = tf.train.get_checkpoint_state(model_dir)
  paths = [p for p in (state.all_model_checkpoint_paths if state else []) if p != prefix]
  paths.append(prefix)
  kept = paths[-max_to_keep:] if max_to_keep else paths
  # The state file names the new checkpoint before old ones go, so a kill in
  # between never leaves it naming deleted files.
  _write_state_file(model_dir, prefix, kept)
  for old in paths[: len(paths) - len(kept)]:
    for f in tf.io.gfile.glob(old + ".*"):
      tf.io.gfile.remove(f)
  return prefix


def _write_state_file(model_dir, latest, paths):
  """The `checkpoint` text proto (relative names), written atomically."""
  lines = [f'model_checkpoint_path: "{os.path.basename(latest)}"']
  lines += [f'all_model_checkpoint_paths: "{os.path.basename(p)}"' for p in paths]
  write_atomic(os.path.join(model_dir, "checkpoint"), "\n".join(lines) + "\n")


def is_name_based(prefix):
  """True when the checkpoint holds the original's names (`electra/...`)."""
  names = [n for n, _ in tf.train.list_variables(prefix)]
  return any(n.startswith(("electra/", "task_specific/")) for n in names)
