"""electra_tf → official: an electra_tf training checkpoint or `.keras`
model becomes a name-based checkpoint with exactly the original's names,
shapes and dtypes (and, on request, its `adam_m`/`adam_v` slots).

Example:
  >>> # keras_to_official("models/tiny", "/tmp/tiny_official", with_optimizer_slots=True)
"""

import os

import tensorflow as tf

from electra_tf.checkpoints import checkpointing
from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.checkpoints.reader import is_object_based
from electra_tf.convert.standalone import GENERATOR_MODEL_PREFIX
from electra_tf.convert.writer import KERAS_SUFFIX
from electra_tf.convert.writer import check_output_dir
from electra_tf.convert.writer import official_tensors
from electra_tf.convert.writer import write_official_checkpoint
from electra_tf.finetune.model import FinetuningModel
from electra_tf.models import official_names
from electra_tf.models.electra_backbone import ElectraBackbone
from electra_tf.models.electra_generator import ElectraGenerator
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.models.electra_pretrainer import built_pretrainer
from electra_tf.runtime import distribution
from electra_tf.sources import any_format
from electra_tf.sources import formats
from electra_tf.sources.object_graph import ObjectGraph
from electra_tf.sources.object_graph import describe_shapes
from electra_tf.sources.object_graph import training_checkpoint_config


def find_layer(model, cls):
  return next((layer for layer in model.layers if isinstance(layer, cls)), None)


def standalone_generator_layout(model, generator):
  """`(scopes, shared_embeddings)` of a generator model written by
  `standalone_generator`: its name lists the scopes, and it was given its
  embeddings exactly when they are the shared `electra/embeddings` block."""
  scopes = model.name[len(GENERATOR_MODEL_PREFIX) :].split("__")
  shared = generator.get_config()["embeddings"] is not None
  return scopes, shared


def load_keras_source(input_path, hparams=None):
  """Reads an electra_tf checkpoint or `.keras` model for `to-official`.

  Args:
    input_path: a `.keras` file (a pretrainer or `FinetuningModel`, or a
      discriminator/generator written by `official_to_keras`), or an
      electra_tf training checkpoint (prefix or model dir).
    hparams: hparams (dict / JSON / `.json` path) for a training
      checkpoint, see `load_training_checkpoint`.

  Returns:
    `(name_map, optimizer_or_None, global_step_or_None, source, notes)`.
  """

  path = os.fspath(input_path)
  if path.endswith(KERAS_SUFFIX):
    model = any_format.load_keras_file(formats.require(path, (formats.KERAS,)).location)
    if isinstance(model, ElectraPretrainer):
      return official_names.official_name_map(model), None, None, path, []
    if isinstance(model, FinetuningModel):
      # Before the discriminator search below: its encoder is one, but the
      # heads must be written too.
      notes = [f"fine-tuning model with tasks {model.task_names}"]
      return model.official_name_map(), None, None, path, notes
    discriminator = find_layer(model, ElectraBackbone)  # head or not
    if discriminator is not None:
      return official_names.discriminator_name_map(discriminator), None, None, path, []
    generator = find_layer(model, ElectraGenerator)
    if generator is not None and model.name.startswith(GENERATOR_MODEL_PREFIX):
      scopes, shared = standalone_generator_layout(model, generator)
      name_map = official_names.generator_name_map(generator, scopes, shared)
      return name_map, None, None, path, []
    raise ValueError(
      f"--input {path!r} holds no ElectraPretrainer, FinetuningModel, "
      "ElectraDiscriminator or electra_tf generator model"
    )

  prefix = official_checkpoint.resolve_checkpoint_path(path)
  if not is_object_based(prefix):
    raise ValueError(
      f"--input {prefix!r} is a name-based (official) checkpoint, not an "
      "electra_tf one; use --direction to-keras"
    )

  pretrainer, _, notes = load_training_checkpoint(prefix, hparams)
  name_map = official_names.official_name_map(pretrainer)
  return name_map, pretrainer.optimizer, checkpointing.global_step(pretrainer), prefix, notes


def keras_to_official(
  input_path, output_dir, hparams=None, with_optimizer_slots=False, global_step=None
):
  """Converts an electra_tf checkpoint or `.keras` model to the original's
  name-based TF1 checkpoint `<output_dir>/model.ckpt-<step>`.

  Every tensor is float32 with the official name and shape; `global_step` is
  int64 (the optimizer's `iterations`; `global_step` or 0 for a `.keras`).
  With `with_optimizer_slots`, `<var>/adam_m` and `<var>/adam_v` are written
  from the `AdamWeightDecay` optimizer (a training checkpoint is needed).

  Returns:
    A report dict: `input`, `output` (the prefix), `converted` (names written),
    `not_converted` (what the source holds that the original has no name for),
    `global_step`.
  """
  check_output_dir(output_dir)
  name_map, optimizer, step, source, notes = load_keras_source(input_path, hparams)
  if global_step is not None:
    step = int(global_step)
  if with_optimizer_slots and optimizer is None:
    raise ValueError(
      f"--with-optimizer-slots: {source!r} is a .keras model without optimizer "
      "state; convert the training checkpoint instead"
    )
  tensors, not_converted = official_tensors(name_map, optimizer, step or 0, with_optimizer_slots)
  prefix = write_official_checkpoint(tensors, output_dir, step or 0)
  return {
    "input": source,
    "output": prefix,
    "converted": sorted(tensors),
    "not_converted": not_converted,
    "global_step": int(step or 0),
    "notes": notes,
  }


def load_training_checkpoint(prefix, hparams=None):
  """The `ElectraPretrainer` (with its optimizer) of an electra_tf training checkpoint.

  Unlike `any_format.load` (the model alone), this restores the whole training
  state (weights, Adam slots, step, precision) that the conversions carry over.

  Args:
    prefix: the checkpoint prefix.
    hparams: dict, JSON string or `.json` path, or None.

  Returns:
    `(pretrainer, config, notes)`.

  Raises:
    ValueError: when the model built does not match the checkpoint's shapes.
  """

  config, notes, described = training_checkpoint_config(prefix, hparams)
  # Infer precision from the object graph too: mixed_float16 runs save a
  # LossScaleOptimizer around the AdamWeightDecay.
  graph = ObjectGraph(prefix)
  if graph.node("optimizer/inner_optimizer") is not None:
    config.mixed_precision = "mixed_float16"
  elif config.mixed_precision == "mixed_float16":
    config.mixed_precision = "float32"
  with distribution.dtype_policy(config.mixed_precision):
    pretrainer = built_pretrainer(config)
    expected = [tuple(int(d) for d in v.shape) for v in pretrainer.trainable_variables]
    found = graph.trainable_shapes()
    if expected != found:
      first = next(
        (i for i, (a, b) in enumerate(zip(expected, found)) if a != b),
        min(len(expected), len(found)),
      )
      raise ValueError(
        f"electra_tf checkpoint {prefix!r} does not match the model built from "
        f"{described}: the model has {len(expected)} trainable variables, the checkpoint "
        f"{len(found)}; from variable #{first} the model's shapes are "
        f"{describe_shapes(expected[first:])}, the checkpoint's {describe_shapes(found[first:])}"
      )
    pretrainer.compile(pretraining_config=config)
    manager = checkpointing.TrainingCheckpointManager(
      pretrainer, os.path.dirname(prefix), keep_checkpoint_max=None, chief=True
    )
    try:
      manager.restore(prefix)
    except (AssertionError, ValueError, tf.errors.OpError) as e:
      raise ValueError(
        f"electra_tf checkpoint {prefix!r} does not match the model built from {described} "
        f"(or is truncated): {e}"
      ) from e
  return pretrainer, config, notes
