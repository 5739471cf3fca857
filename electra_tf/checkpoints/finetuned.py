"""Name-based (TF1-style) checkpoints for fine-tuning: the fine-tuned model
is written with the original's variable names (`electra/...`,
`task_specific/<task>/...`, `<var>/adam_m|adam_v`, `global_step`), so the
original code, this package's loaders and converters all read it; and the
pre-trained encoder is read from an original/official checkpoint or from an
electra_tf pre-training checkpoint."""

import os

from absl import logging
import tensorflow as tf

from electra_tf.checkpoints import names as checkpoint_names
from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.utils.file_io import write_atomic

CHECKPOINT_NAME = "model.ckpt"


def save_name_based(name_to_variable, model_dir, step, max_to_keep=5):
  """Writes `<model_dir>/model.ckpt-<step>` with exactly the given names and
  updates the `checkpoint` state file; atomic (temp prefix + rename)."""
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
  if max_to_keep and len(paths) > max_to_keep:
    for old in paths[:-max_to_keep]:
      for f in tf.io.gfile.glob(old + ".*"):
        tf.io.gfile.remove(f)
    paths = paths[-max_to_keep:]
  _write_state_file(model_dir, prefix, paths)
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


class _EncoderHolder(tf.Module):
  """Mirrors the attribute path of `ElectraPretrainer` to its discriminator
  so an electra_tf object-based checkpoint restores into a lone encoder."""

  def __init__(self, discriminator):
    super().__init__()
    self.embeddings = discriminator.embeddings
    self.discriminator = discriminator


def load_pretrained(model, path):
  """Initialises `model` (a `FinetuningModel`) from a checkpoint dir/prefix.

  Name-based checkpoints (the original's, the released models, fine-tuned
  models written by this package) load every entry whose name equals one of
  the model's official names — encoder and, for a fine-tuned checkpoint, the
  heads — and ignore the rest (generator, discriminator head, Adam slots,
  global_step), as the original's assignment map (`run_finetuning.py` checkpoint loading). A variable
  missing from the checkpoint keeps its initial value; a shape mismatch is
  an error.

  An electra_tf pre-training checkpoint (object-based) restores the
  discriminator's embeddings and encoder.

  Returns:
    the list of official names loaded (object-based: those of the encoder).
  """
  prefix = official_checkpoint.resolve_checkpoint_path(path)
  if is_name_based(prefix):
    info = official_checkpoint.restore_from_name_map(
      model.official_name_map(), prefix, allow_missing=True, allow_unexpected=True
    )
    logging.info(
      "Loaded %d variables from %s (missing, left initialised: %s)",
      len(info["loaded"]),
      prefix,
      info["missing"],
    )
    return info["loaded"]
  encoder = model.encoder
  encoder_entries = [
    n
    for n, _ in tf.train.list_variables(prefix)
    if n.startswith(
      ("model/embeddings/", "model/discriminator/embeddings/", "model/discriminator/encoder/")
    )
    and n.endswith("/.ATTRIBUTES/VARIABLE_VALUE")
  ]
  n_encoder = len(encoder.weights)
  if (
    len(
      set(
        e.replace("model/discriminator/embeddings/", "model/embeddings/") for e in encoder_entries
      )
    )
    < n_encoder
  ):
    raise ValueError(
      f"checkpoint {prefix!r} has neither the original's variable names nor all "
      f"{n_encoder} variables of an electra_tf discriminator (found "
      f"{len(encoder_entries)} under model/embeddings and model/discriminator/encoder); "
      "convert it to the original's names first: python -m electra_tf.convert_checkpoint "
      "--direction to-official --input <model dir> --output <dir> --hparams <its hparams>"
    )
  status = tf.train.Checkpoint(model=_EncoderHolder(encoder)).restore(prefix)
  status.expect_partial()
  encoder_names = checkpoint_names.discriminator_name_map(encoder, include_head=False)
  return sorted(encoder_names)
