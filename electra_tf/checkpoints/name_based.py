"""Name-based (TF1-style) checkpoints for fine-tuning: the fine-tuned model
is written with the original's variable names (`electra/...`,
`task_specific/<task>/...`, `<var>/adam_m|adam_v`, `global_step`), so the
original code, this package's loaders and converters all read it; and the
pre-trained encoder is read from an original/official checkpoint or from an
electra_tf pre-training checkpoint."""

import os

from absl import logging
import keras
import tensorflow as tf

from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.models import official_names
from electra_tf.models.electra_discriminator import ElectraDiscriminator
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


def _source_name_map(source):
  """`{official name: variable}` of a loaded model: a fine-tuning model
  (encoder and heads), a model wrapping one, a pretrainer's discriminator
  encoder, or a lone `ElectraDiscriminator`."""

  if hasattr(source, "official_name_map") and hasattr(source, "heads"):
    return source.official_name_map()
  inner = getattr(source, "finetuning_model", None)
  if inner is not None:
    return inner.official_name_map()
  encoder = getattr(source, "discriminator", source)
  if isinstance(encoder, ElectraDiscriminator):
    return official_names.discriminator_name_map(encoder, include_head=False)
  raise ValueError(
    f"{type(source).__name__} holds no ELECTRA discriminator encoder to fine-tune from"
  )


def load_from_keras_file(model, path):
  """Initialises `model` from a `.keras` file (`ElectraPretrainer`,
  `FinetuningModel`, the task models (`ElectraClassifier`...), `ElectraDiscriminator`): every
  variable whose official name both models have (encoder; heads of the
  same task name). Returns the names loaded."""

  if not tf.io.gfile.exists(path):
    raise ValueError(f"init_checkpoint {path!r} does not exist")
  source = _source_name_map(keras.saving.load_model(path, compile=False))
  target = model.official_name_map()
  names = sorted(n for n in target if n in source)
  mismatched = [
    f"{n}: {list(source[n].shape)} vs {list(target[n].shape)}"
    for n in names
    if list(source[n].shape) != list(target[n].shape)
  ]
  if mismatched or not any(n.startswith("electra/encoder/") for n in names):
    raise ValueError(
      f"{path!r} does not fit the model (another size or vocab?): "
      + ("; ".join(mismatched[:5]) or "no encoder variables in common")
    )
  for name in names:
    target[name].assign(tf.cast(source[name], target[name].dtype))
  logging.info("Loaded %d variables from %s", len(names), path)
  return names


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
  if os.fspath(path).endswith(".keras"):
    return load_from_keras_file(model, path)
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
  # Object-based: variables are matched through the checkpoint's object
  # graph (its keys may name them by another path, e.g. the optimizer's).
  try:
    status = tf.train.Checkpoint(model=_EncoderHolder(encoder)).restore(prefix)
    status.assert_existing_objects_matched()
  except (AssertionError, ValueError) as e:
    raise ValueError(
      f"checkpoint {prefix!r} has neither the original's variable names nor the "
      f"discriminator of an electra_tf pre-training checkpoint of this model size "
      f"({len(encoder.weights)} variables): {str(e).splitlines()[0][:200]}"
    ) from None
  status.expect_partial()
  encoder_names = official_names.discriminator_name_map(encoder, include_head=False)
  return sorted(encoder_names)
