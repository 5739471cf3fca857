"""Official → electra_tf: a name-based checkpoint becomes an electra_tf
training checkpoint (pretrainer, optimizer slots and step) or a `.keras`
model (pretrainer, discriminator, generator or fine-tuning model); and an
electra_tf training checkpoint becomes a `.keras` model in one hop.

Example:
  >>> PARTS
  ('pretrainer', 'discriminator', 'generator', 'finetuned')
"""

import json
import os

import keras

from electra_tf.checkpoints import checkpointing
from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.checkpoints.reader import assign_tensors
from electra_tf.checkpoints.reader import global_step_of
from electra_tf.checkpoints.reader import open_reader
from electra_tf.checkpoints.reader import read_name_based_checkpoint
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.convert.standalone import discriminator_model
from electra_tf.convert.standalone import generator_model
from electra_tf.convert.standalone import standalone_generator
from electra_tf.convert.to_official import load_training_checkpoint
from electra_tf.convert.writer import HPARAMS_FILE
from electra_tf.convert.writer import KERAS_SUFFIX
from electra_tf.convert.writer import check_output_dir
from electra_tf.convert.writer import save_keras
from electra_tf.convert.writer import write_training_checkpoint
from electra_tf.hparams_input import load_hparams
from electra_tf.models import official_names
from electra_tf.models.electra_pretrainer import built_pretrainer
from electra_tf.runtime import distribution
from electra_tf.sources.finetuned_heads import load_official_finetuning_model
from electra_tf.sources.finetuned_heads import task_groups
from electra_tf.sources.layout import build_encoder
from electra_tf.sources.layout import infer_config_and_model
from electra_tf.sources.layout import needs_pretrainer
from electra_tf.utils.file_io import write_atomic

PART_FINETUNED = "finetuned"
PARTS = ("pretrainer", "discriminator", "generator", PART_FINETUNED)


def _finetuned_to_keras(input_path, output_path, hparams):
  """`official_to_keras` for `--part finetuned`: the `.keras` fine-tuning
  model; slots and `global_step` are listed as not converted."""
  run = _trial_run_config(input_path, hparams)
  if run is not None:
    # An electra_tf trial dir: its config.json has what shapes cannot say
    # (attention heads, activation); --hparams still go over it.
    hparams = {**model_dir_lib.run_hparams(run, FinetuningConfig), **load_hparams(hparams)}
  model, tensors, info = load_official_finetuning_model(input_path, hparams)
  save_keras(model, output_path)
  converted = sorted(model.official_name_map())
  return {
    "input": info["prefix"],
    "output": os.fspath(output_path),
    "part": PART_FINETUNED,
    "layout": info["layout"],
    "notes": info["notes"],
    "tasks": info["tasks"],
    "converted": converted,
    "not_converted": sorted(set(tensors) - set(converted)),
    "global_step": global_step_of(tensors),
    "hparams": info["hparams"],
  }


def _trial_run_config(input_path, hparams):
  """The `config.json` of the electra_tf fine-tuning trial holding the
  name-based checkpoint `input_path`, or None. `hparams` that build another
  encoder than it records are refused, as run_finetuning refuses them."""
  run = model_dir_lib.read_run_config(input_path)
  if run is None or run.get("kind") != model_dir_lib.KIND_FINETUNING:
    return None
  user = load_hparams(hparams)
  if user:
    config = model_dir_lib.finetuning_config_from_run_config(run, user)
    model_dir_lib.check_finetuning_encoder(config, run, what="--hparams build")
  return run


def _check_slots(tensors, name_map, prefix):
  """The checkpoint's optimizer slot names (sorted; empty if it has none),
  which must be all-or-nothing and match their variables' shapes."""
  slots = sorted(n for n in tensors if n.endswith(official_names.OPTIMIZER_SLOT_SUFFIXES))
  if not slots:
    return slots
  problems = []
  for name in name_map:
    for suffix in official_names.OPTIMIZER_SLOT_SUFFIXES:
      slot = name + suffix
      if slot not in tensors:
        problems.append(f"  missing {slot}")
      elif tuple(tensors[slot].shape) != tuple(tensors[name].shape):
        problems.append(
          f"  {slot} has shape {official_checkpoint.describe_shape(tensors[slot].shape)}, "
          f"its variable {official_checkpoint.describe_shape(tensors[name].shape)}"
        )
  expected = {n + s for n in name_map for s in official_names.OPTIMIZER_SLOT_SUFFIXES}
  problems += [f"  {s} belongs to no model variable" for s in slots if s not in expected]
  if problems:
    raise ValueError(
      f"checkpoint {prefix!r} has incomplete optimizer slots:\n" + "\n".join(problems)
    )
  return slots


def _standalone_part(pretrainer, config, part, tensors):
  """`(network, name_map)` of the discriminator or generator of `pretrainer`
  alone, its weights assigned from `tensors`."""
  if part == "discriminator":
    network = build_encoder(config, include_head=pretrainer.discriminator is not None)
    name_map = official_names.discriminator_name_map(network)
  else:
    network, name_map = standalone_generator(pretrainer)
  assign_tensors(name_map, tensors)
  return network, name_map


def _keras_model(part, network, pretrainer):
  """What a `.keras` output of `part` holds: the pretrainer, or `network`'s functional model."""
  if part == "pretrainer":
    return pretrainer
  if part == "discriminator":
    return discriminator_model(network)
  return generator_model(network, official_names.generator_scopes(pretrainer))


def official_to_keras(input_path, output_path, part=None, hparams=None):
  """Converts a name-based (original/released) checkpoint to electra_tf.

  Args:
    input_path: checkpoint prefix or directory.
    output_path: a directory (electra_tf training checkpoint; `part` must be
      "pretrainer"; optimizer slots and `global_step` are carried over) or a
      path ending in `.keras` (model only).
    part: "pretrainer", "discriminator", "generator", "finetuned" (the
      fine-tuning model with its task heads; `.keras` only) or None:
      "finetuned" when the checkpoint has `task_specific/` heads, else
      "pretrainer".
    hparams: optional hparams (dict / JSON / `.json` path), see
      `infer_config_from_checkpoint`; for "finetuned", fine-tuning hparams
      plus `task_types` (see `load_official_finetuning_model`).

  Returns:
    A report dict: `input`, `output`, `part`, `layout`, `notes`,
    `converted` (official names written), `not_converted` (checkpoint entries
    left out, e.g. slots in a `.keras` or the generator for the
    discriminator), `global_step`, `hparams`, and `tasks` for "finetuned".
  """
  if part is not None and part not in PARTS:
    raise ValueError(f"--part {part!r}; expected one of {PARTS}")
  to_keras_file = os.fspath(output_path).endswith(KERAS_SUFFIX)
  if part is None:
    prefix = official_checkpoint.resolve_checkpoint_path(input_path)
    has_heads = bool(task_groups(open_reader(prefix).get_variable_to_shape_map()))
    part = PART_FINETUNED if has_heads else "pretrainer"
  if part == PART_FINETUNED:
    if not to_keras_file:
      raise ValueError(
        f"--part {PART_FINETUNED}: the fine-tuning model is written as a .keras model only; give "
        f"an --output ending in {KERAS_SUFFIX} (electra_tf's run_finetuning reads and writes "
        "name-based checkpoints with the original's names, so they need no conversion)"
      )
    return _finetuned_to_keras(input_path, output_path, hparams)
  if not to_keras_file:
    if part != "pretrainer":
      raise ValueError(
        f"--part {part}: only the pretrainer is written as a training checkpoint; give an "
        f"--output ending in {KERAS_SUFFIX} for the {part} alone"
      )
    check_output_dir(output_path)
  run = _trial_run_config(input_path, hparams)
  if run is not None:
    # A trial dir's encoder (--part discriminator): its config.json records
    # the attention heads that shapes cannot say; --hparams still go over it.
    bert_config, embedding_size = model_dir_lib.encoder_config(run)
    recorded = {"model_hparam_overrides": bert_config, "embedding_size": embedding_size}
    hparams = {**recorded, **load_hparams(hparams)}
  prefix, tensors = read_name_based_checkpoint(input_path)
  shapes = {n: t.shape for n, t in tensors.items()}
  config, merged_hparams, layout, notes, layout_model = infer_config_and_model(
    shapes, hparams, source=prefix
  )
  step = global_step_of(tensors)

  if not needs_pretrainer(layout):
    if part != "discriminator":
      tasks = sorted(task_groups(tensors))
      heads = f" and task heads {tasks} (--part {PART_FINETUNED} converts both)" if tasks else ""
      raise ValueError(
        f"checkpoint {prefix!r} holds an encoder only (layout {layout}){heads}; "
        "--part discriminator converts the encoder alone"
      )
    pretrainer, model_part = None, layout_model
    name_map = official_names.discriminator_name_map(model_part, include_head=False)
    assign_tensors(name_map, tensors)
  else:
    pretrainer, model_part = layout_model, None
    name_map = official_names.official_name_map(pretrainer)
    assign_tensors(name_map, tensors)
    if part != "pretrainer":
      model_part, name_map = _standalone_part(pretrainer, config, part, tensors)

  converted = sorted(name_map)
  if to_keras_file:
    save_keras(_keras_model(part, model_part, pretrainer), output_path)
    written = ""
  else:
    slot_names = _check_slots(tensors, name_map, prefix)
    written = write_training_checkpoint(
      pretrainer, config, output_path, step or 0, {n: tensors[n] for n in slot_names}
    )
    write_atomic(
      os.path.join(output_path, HPARAMS_FILE),
      json.dumps(merged_hparams, indent=2, sort_keys=True) + "\n",
    )
    converted += slot_names
    if step is not None:
      converted.append(official_names.GLOBAL_STEP_NAME)
    if not slot_names:
      notes.append("no optimizer slots in the checkpoint: the optimizer starts with zero slots")
  not_converted = sorted(set(tensors) - set(converted))
  return {
    "input": prefix,
    "output": written or os.fspath(output_path),
    "part": part,
    "layout": layout,
    "notes": notes,
    "converted": converted,
    "not_converted": not_converted,
    "global_step": step,
    "hparams": merged_hparams,
  }


def training_checkpoint_to_keras(input_path, output_path, part=None, hparams=None):
  """An electra_tf training checkpoint (a run's model dir or a prefix) as a
  `.keras` model of its pretrainer, discriminator or generator, in one hop.

  The model comes from the model dir's `config.json` (attention heads
  included), with `hparams` over it; see `to_official.load_training_checkpoint`.
  The weights are written in float32, without optimizer state.

  Returns:
    A report dict as `official_to_keras` returns.
  """

  part = part or "pretrainer"
  if part not in PARTS or part == PART_FINETUNED:
    raise ValueError(
      f"--part {part!r}: an electra_tf pre-training checkpoint gives one of "
      f"{PARTS[:-1]} (fine-tuning runs write name-based checkpoints)"
    )
  if not os.fspath(output_path).endswith(KERAS_SUFFIX):
    raise ValueError(
      f"--input {os.fspath(input_path)!r} is already an electra_tf training checkpoint: give "
      f"an --output ending in {KERAS_SUFFIX} for a .keras {part}, or --direction to-official "
      "for the original's format"
    )
  prefix = official_checkpoint.resolve_checkpoint_path(input_path)
  trained, config, notes = load_training_checkpoint(prefix, hparams)
  tensors = {
    n: keras.ops.convert_to_numpy(v).astype("float32")
    for n, v in official_names.official_name_map(trained).items()
  }
  step = checkpointing.global_step(trained)
  with distribution.dtype_policy("float32"):
    pretrainer, model_part = built_pretrainer(config), None
    name_map = official_names.official_name_map(pretrainer)
    assign_tensors(name_map, tensors)
    if part == "discriminator" and pretrainer.discriminator is None:
      raise ValueError(
        f"checkpoint {prefix!r} has no discriminator (an MLM-only run); use --part generator"
      )
    if part != "pretrainer":
      model_part, name_map = _standalone_part(pretrainer, config, part, tensors)
    model = _keras_model(part, model_part, pretrainer)
  save_keras(model, output_path)
  return {
    "input": prefix,
    "output": os.fspath(output_path),
    "part": part,
    "notes": notes,
    "converted": sorted(name_map),
    "not_converted": sorted(set(tensors) - set(name_map)),
    "global_step": step,
  }
