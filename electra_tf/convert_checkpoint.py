r"""Converts checkpoints between the original's name-based TF1 format (the variable names of the original's checkpoints)
and electra_tf, in both directions.

Official → Keras (`--direction to-keras`): a checkpoint written by the
original `run_pretraining.py` or released by Google (with or without
`adam_m`/`adam_v` slots) becomes
- an electra_tf training checkpoint (`--output` is a directory): the
  pretrainer and its `AdamWeightDecay` optimizer, slots and step restored
  from `<var>/adam_m`, `<var>/adam_v` and `global_step`, so `run_pretraining`
  continues from it; or
- a `.keras` model (`--output` ends in `.keras`) of the pretrainer, of the
  discriminator alone (fine-tuning, serving) or of the generator alone (MLM).

A fine-tuned checkpoint (`electra/...` plus one `task_specific/<task>/...`
group per task: what the original's `run_finetuning` writes, and what
electra_tf's writes under `finetuning_models/<tasks>_model_<trial>/`)
becomes a `.keras` `FinetuningModel` (encoder and task heads) with
`--part finetuned`, the default when the checkpoint has task heads
(`--part discriminator` still gives the encoder alone). Each head's type
comes from its task name (`rte` → classification, `sts` → regression,
`chunk` → tagging, `squad` → QA, ...; a task electra_tf does not know is QA
when it has layers besides `dense`, e.g. `qa_hidden`); the number of labels
and the QA variant come from the shapes. For that part `--hparams` takes fine-tuning hparams (as for
`run_finetuning`): `task_names` fixes the heads' order (the `task_id`s; the
checkpoint does not record it, the default is alphabetical), the QA options
(`beam_size`, ...), the model keys (`model_size`, `embedding_size`,
`vocab_size`, `model_hparam_overrides`, `debug`), and one key of the
converter's own, `task_types`: `{"<task>": "classification" | "regression" |
"tagging" | "qa"}` for tasks electra_tf does not know (classification,
regression and tagging heads have the same variables, so an unknown task
without a type is an error).

Keras → official (`--direction to-official`): an electra_tf training
checkpoint (or a `.keras` pretrainer/discriminator/generator or fine-tuning
model written here, or a `FinetuningModel` saved as `.keras`) becomes a
name-based TF1 checkpoint `<output>/model.ckpt-<step>` with exactly the
original's names, shapes and dtypes: both towers and heads, `global_step`
(int64) and, with `--with-optimizer-slots`, `<var>/adam_m`, `<var>/adam_v`.
electra_tf's fine-tuning runs need no conversion: they already write
name-based checkpoints with the original's names, slots and `global_step`.

Publishing (`--to huggingface` / `--to keras-hub`): the discriminator (or,
with `--part generator`, the generator) of any of these sources, or of a
Hugging Face ELECTRA directory, becomes a transformers directory
(`electra_tf.checkpoints.huggingface`) or a keras-hub preset
(`electra_tf.checkpoints.keras_hub`); `--input <Hugging Face dir>` without
`--to` writes a `.keras` discriminator or generator.

Names come from `electra_tf.checkpoint_names`, the one map used by both
directions and by the loader. Sizes and layout are read from the shapes
(`infer_config_from_checkpoint` for official checkpoints,
`infer_hparams_from_training_checkpoint` for electra_tf ones); `--hparams`
adds what shapes cannot tell (attention heads, which only matter for a
`.keras` model's outputs) and is checked against the shapes. Nothing is
skipped silently: every checkpoint entry that is not converted is listed.

Example:
  python -m electra_tf.convert_checkpoint --input models/tiny \
      --output /tmp/tiny_disc.keras --part discriminator \
      --hparams models/tiny_hparams.json
  python -m electra_tf.convert_checkpoint \
      --input models/tiny/finetuning_models/rte,chunk_model_1 --output /tmp/rte_chunk.keras \
      --hparams '{"task_names": ["rte", "chunk"]}'
  python -m electra_tf.convert_checkpoint --input /tmp/rte_chunk.keras \
      --output /tmp/rte_chunk_official --global-step 1000
"""

import argparse
import json
import os
import sys
import tempfile

import keras
import numpy as np
import tensorflow as tf

from electra_tf.checkpoints import finetuned as checkpoint_io
from electra_tf.checkpoints import huggingface
from electra_tf.checkpoints import keras_hub
from electra_tf.checkpoints import names as checkpoint_names
from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.configs import pretraining as pretraining_config_lib
from electra_tf.configs.hparams import load_hparams
from electra_tf.training import distribution
from electra_tf.utils import keras_compat
from electra_tf.utils.file_io import atomic_path
from electra_tf.utils.file_io import write_atomic

DIRECTIONS = ("to-keras", "to-official")
PART_FINETUNED = "finetuned"
PARTS = ("pretrainer", "discriminator", "generator", PART_FINETUNED)
# Head types of fine-tuning tasks, as `--hparams` `task_types` names them.
TASK_TYPES = ("classification", "regression", "tagging", "qa")
KERAS_SUFFIX = ".keras"
# Written next to a converted training checkpoint: the hparams its model was
# built with, read back by `to-official` when no --hparams is given (and
# usable as run_pretraining's --hparams).
HPARAMS_FILE = "converted_hparams.json"

# Layouts a name-based checkpoint can have (the variable names of the original's checkpoints–8.4).
LAYOUT_DEFAULT = "default"  # small untied generator, shared embeddings
LAYOUT_UNTIED_EMBEDDINGS = "untied_generator_embeddings"
LAYOUT_TIED = "tied"  # untied_generator=False
LAYOUT_MLM = "mlm"  # electra_objective=False
LAYOUT_UNIFORM = "uniform"
LAYOUT_TWO_TOWER = "two_tower"  # Electric (or two_tower_generator)
LAYOUT_ENCODER = "encoder"  # encoder only, possibly with task_specific heads

_KNOWN_SCOPES = (
  checkpoint_names.DISCRIMINATOR_SCOPE,
  checkpoint_names.GENERATOR_SCOPE,
  checkpoint_names.GENERATOR_LTR_SCOPE,
  checkpoint_names.GENERATOR_RTL_SCOPE,
  checkpoint_names.GENERATOR_HEAD_SCOPE,
  checkpoint_names.CLOZE_HEAD_SCOPE,
  checkpoint_names.DISCRIMINATOR_HEAD_SCOPE,
  checkpoint_names.TASK_SCOPE,
)

# Conversions read no data: the config's data paths point at a directory that
# does not exist, so special token ids fall back to the BERT-uncased layout
# unless the hparams name a `vocab_file`.
_NO_DATA_DIR = os.path.join(tempfile.gettempdir(), "electra_tf_convert_no_data_dir")

# The debug model's shrunk discriminator (`run_pretraining.py:PretrainingModel`): its 4 heads cannot be
# derived from H=144 by the size rule (which gives 2).
_DEBUG_SHAPE = {"hidden_size": 144, "num_hidden_layers": 3, "intermediate_size": 576}
_DEBUG_HEADS = 4


# -----------------------------------------------------------------------------
# Reading name-based checkpoints
# -----------------------------------------------------------------------------


# What the checkpoint reader raises on a damaged file (IndexError: "Read less
# bytes than requested" for a truncated data file).
_READ_ERRORS = (tf.errors.OpError, ValueError, IndexError, RuntimeError)


def _open_reader(prefix):
  try:
    return tf.train.load_checkpoint(prefix)
  except _READ_ERRORS as e:
    raise ValueError(
      f"checkpoint {prefix!r} cannot be opened (truncated or corrupt index/data "
      f"file?): {getattr(e, 'message', e)}"
    ) from e


def read_name_based_checkpoint(path):
  """Reads every entry of a name-based checkpoint.

  Args:
    path: checkpoint prefix or directory with a `checkpoint` file.

  Returns:
    `(prefix, tensors)`: `tensors` maps each name to its numpy value.

  Raises:
    ValueError: unreadable (e.g. truncated) file, naming the entry that failed.
  """
  prefix = official_checkpoint.resolve_checkpoint_path(path)
  reader = _open_reader(prefix)
  tensors = {}
  for name in sorted(reader.get_variable_to_shape_map()):
    try:
      tensors[name] = reader.get_tensor(name)
    except _READ_ERRORS as e:
      raise ValueError(
        f"checkpoint {prefix!r}: entry {name!r} cannot be read (truncated or corrupt data "
        f"file?): {getattr(e, 'message', e)}"
      ) from e
  return prefix, tensors


def _is_object_based(prefix):
  """True for an electra_tf (object-based `tf.train.Checkpoint`) checkpoint."""
  reader = _open_reader(prefix)
  return reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")


# -----------------------------------------------------------------------------
# Inferring the configuration from shapes
# -----------------------------------------------------------------------------


def _encoder_dims(shapes, scope):
  """`(hidden, layers, ffn)` of the encoder under `scope`, checking the
  layer indices run 0…L-1 without gaps."""
  indices = set()
  prefix = f"{scope}/encoder/layer_"
  for name in shapes:
    if name.startswith(prefix):
      index = name[len(prefix) :].split("/", 1)[0]
      if not index.isdigit():
        raise ValueError(f"unexpected checkpoint entry {name!r} (layer index {index!r})")
      indices.add(int(index))
  if not indices:
    raise ValueError(f"the checkpoint has no {scope}/encoder/layer_0/* entries")
  num_layers = max(indices) + 1
  gaps = sorted(set(range(num_layers)) - indices)
  if gaps:
    raise ValueError(
      f"the checkpoint's {scope} encoder is incomplete: layers {gaps} are missing "
      f"(found layers up to layer_{num_layers - 1})"
    )
  layer0 = f"{scope}/encoder/layer_0"
  query = shapes.get(f"{layer0}/attention/self/query/kernel")
  ffn = shapes.get(f"{layer0}/intermediate/dense/kernel")
  if query is None or ffn is None:
    raise ValueError(
      f"the checkpoint lacks {layer0}/attention/self/query/kernel or "
      f"{layer0}/intermediate/dense/kernel"
    )
  return int(query[1]), num_layers, int(ffn[1])


def _model_overrides(hidden, layers, ffn, positions, types):
  """`model_hparam_overrides` for a discriminator of these sizes: H, L, FFN
  always, P and T when not the defaults (512, 2), and the debug model's
  attention heads when the sizes are its (which the size rule cannot give)."""
  overrides = {"hidden_size": hidden, "num_hidden_layers": layers, "intermediate_size": ffn}
  if positions != 512:
    overrides["max_position_embeddings"] = positions
  if types != 2:
    overrides["type_vocab_size"] = types
  if all(overrides.get(k) == v for k, v in _DEBUG_SHAPE.items()):
    overrides["num_attention_heads"] = _DEBUG_HEADS
  return overrides


def _generator_size_hparams(hidden, layers, gen_hidden, gen_layers, gen_ffn, source):
  """`generator_hidden_size` and `generator_layers` (fractions of the
  discriminator's H and L) of a generator tower with these sizes."""
  if gen_ffn != 4 * gen_hidden:
    raise ValueError(
      f"the generator of {source} has FFN size {gen_ffn} but hidden size {gen_hidden}; "
      f"get_generator_config always uses 4 * hidden = {4 * gen_hidden}"
    )
  return {"generator_hidden_size": gen_hidden / hidden, "generator_layers": gen_layers / layers}


def detect_layout(shapes):
  """The layout (one of the `LAYOUT_*` constants) of a name-based checkpoint
  from its model entries' names (the variable names of the original's checkpoints–8.4)."""
  scopes = {name.split("/", 1)[0] for name in shapes}
  unknown = sorted(scopes - set(_KNOWN_SCOPES))
  if "electra/embeddings/word_embeddings" not in shapes or unknown:
    sample = ", ".join(sorted(shapes)[:5]) or "(no entries)"
    why = (
      f"unknown top-level scopes {unknown}" if unknown else "no electra/embeddings/word_embeddings"
    )
    raise ValueError(
      f"not an ELECTRA checkpoint ({why}); expected the original's names "
      f"(electra/…, generator/…, generator_predictions/…, discriminator_predictions/…). "
      f"First entries: {sample}"
    )
  has = lambda scope: scope in scopes
  if has(checkpoint_names.GENERATOR_LTR_SCOPE) or has(checkpoint_names.GENERATOR_RTL_SCOPE):
    return LAYOUT_TWO_TOWER
  if has(checkpoint_names.GENERATOR_SCOPE):
    if "generator/embeddings/word_embeddings" in shapes:
      return LAYOUT_UNTIED_EMBEDDINGS
    return LAYOUT_DEFAULT
  if has(checkpoint_names.GENERATOR_HEAD_SCOPE):
    return LAYOUT_TIED if has(checkpoint_names.DISCRIMINATOR_HEAD_SCOPE) else LAYOUT_MLM
  if has(checkpoint_names.DISCRIMINATOR_HEAD_SCOPE):
    return LAYOUT_UNIFORM
  return LAYOUT_ENCODER


def infer_hparams_from_shapes(shapes):
  """Pre-training hparams implied by a name-based checkpoint's model entries.

  Reads V, E, P, T from `electra/embeddings/*`, H, L, I from the
  `electra` encoder, Hg, Lg from the generator tower, and the layout flags
  from which scopes exist. Attention heads cannot be read from shapes; they
  are left to the size rule unless the shapes are the debug model's.

  Args:
    shapes: `{name: shape}`; optimizer slots and `global_step` are ignored.

  Returns:
    `(hparams, layout, notes)`: a dict for `PretrainingConfig`, the
    `LAYOUT_*` value and human-readable notes on what was assumed.
  """
  shapes = {
    n: tuple(int(d) for d in s)
    for n, s in shapes.items()
    if not checkpoint_names.is_non_model_entry(n)
  }
  layout = detect_layout(shapes)
  notes = []
  vocab_size, embedding_size = shapes["electra/embeddings/word_embeddings"]
  hidden, layers, ffn = _encoder_dims(shapes, checkpoint_names.DISCRIMINATOR_SCOPE)
  overrides = _model_overrides(
    hidden,
    layers,
    ffn,
    positions=shapes.get("electra/embeddings/position_embeddings", (512,))[0],
    types=shapes.get("electra/embeddings/token_type_embeddings", (2,))[0],
  )
  if "num_attention_heads" in overrides:
    notes.append(f"shapes are the debug model's (H=144, L=3): {_DEBUG_HEADS} attention heads")
  hparams = {
    "vocab_size": vocab_size,
    "embedding_size": embedding_size,
    "model_hparam_overrides": overrides,
  }
  for size, (h, l) in pretraining_config_lib.MODEL_SIZES.items():
    if (h, l) == (hidden, layers):
      hparams["model_size"] = size

  if layout in (LAYOUT_DEFAULT, LAYOUT_UNTIED_EMBEDDINGS, LAYOUT_TWO_TOWER):
    if layout == LAYOUT_TWO_TOWER:
      scope = checkpoint_names.GENERATOR_LTR_SCOPE
      hparams.update(electra_objective=False, electric_objective=True)
      notes.append(
        "two-tower generator: assuming the Electric objective "
        "(electra_objective=False, electric_objective=True); weights are the same "
        "for two_tower_generator with the ELECTRA objective"
      )
    else:
      scope = checkpoint_names.GENERATOR_SCOPE
    hparams["untied_generator_embeddings"] = f"{scope}/embeddings/word_embeddings" in shapes
    gen_hidden, gen_layers, gen_ffn = _encoder_dims(shapes, scope)
    hparams.update(
      _generator_size_hparams(hidden, layers, gen_hidden, gen_layers, gen_ffn, "the checkpoint")
    )
  elif layout == LAYOUT_TIED:
    hparams["untied_generator"] = False
  elif layout == LAYOUT_MLM:
    hparams["electra_objective"] = False
  elif layout == LAYOUT_UNIFORM:
    hparams["uniform_generator"] = True
  else:
    tasks = sorted(
      {n.split("/")[1] for n in shapes if n.startswith(checkpoint_names.TASK_SCOPE + "/")}
    )
    notes.append("encoder-only checkpoint" + (f" with fine-tuning heads {tasks}" if tasks else ""))
  return hparams, layout, notes


def merge_hparams(inferred, user):
  """The user's hparams over the inferred ones.

  A user `model_size` (or `debug`) decides the discriminator's H, L, FFN
  (the inferred size overrides are dropped, so a wrong preset shows up as a
  shape mismatch); user `model_hparam_overrides` win key by key."""
  user = dict(user or {})
  merged = {k: v for k, v in inferred.items() if k != "model_hparam_overrides"}
  overrides = dict(inferred.get("model_hparam_overrides", {}))
  if "model_size" in user or user.get("debug"):
    for key in ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads"):
      overrides.pop(key, None)
  overrides.update(user.pop("model_hparam_overrides", None) or {})
  merged.update(user)
  merged["model_hparam_overrides"] = overrides
  return merged


def _layout_needs_pretrainer(layout):
  return layout != LAYOUT_ENCODER


def infer_config_from_checkpoint(path, hparams=None):
  """A `PretrainingConfig` that fits a name-based checkpoint.

  Args:
    path: checkpoint prefix or directory (or a `{name: shape}` dict).
    hparams: optional user hparams (dict, JSON string or `.json` path);
      they win over inferred values and are then checked against the shapes.

  Returns:
    `(config, layout, notes)`.

  Raises:
    ValueError: not an ELECTRA checkpoint, or the config (given or
      inferred) does not give the checkpoint's names and shapes — the message
      lists each tensor with the config's and the checkpoint's shape.
  """
  config, _, layout, notes, _ = _infer(path, hparams)
  return config, layout, notes


def _infer(path, hparams, source=None):
  """`infer_config_from_checkpoint` that also returns the merged hparams and
  the model built to check the shapes (`_layout_model`), for the caller to
  reuse: `(config, merged, layout, notes, model)`."""
  if isinstance(path, dict):
    shapes, source = path, repr(source) if source else "(given shapes)"
  else:
    prefix = official_checkpoint.resolve_checkpoint_path(path)
    shapes, source = _open_reader(prefix).get_variable_to_shape_map(), repr(prefix)
  user = load_hparams(hparams) if hparams is not None else {}
  inferred, layout, notes = infer_hparams_from_shapes(shapes)
  merged = merge_hparams(inferred, user)
  try:
    config = pretraining_config_lib.PretrainingConfig("converted", _NO_DATA_DIR, **merged)
  except ValueError as e:
    raise ValueError(f"hparams for {source} are invalid: {e}") from e
  if "num_attention_heads" not in merged["model_hparam_overrides"] and not config.debug:
    heads = pretraining_config_lib.get_bert_config(config).num_attention_heads
    notes.append(
      f"attention heads are not stored in checkpoints: using {heads} from the size "
      "rule max(1, H // 64); pass model_hparam_overrides.num_attention_heads in "
      "--hparams if the model had others"
    )
  model, name_map = _layout_model(config, layout)
  _check_shapes(checkpoint_names.official_shapes(name_map), shapes, source, user, layout)
  return config, merged, layout, notes, model


def _build_pretrainer(config):
  from electra_tf.models.electra_pretrainer import ElectraPretrainer  # avoid import cycle

  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  pretrainer.build()
  return pretrainer


def _build_encoder(config, include_head=False):
  from electra_tf.models.electra_discriminator import ElectraDiscriminator

  bert_config = pretraining_config_lib.get_pretraining_bert_config(config)
  encoder = ElectraDiscriminator(
    bert_config.to_dict(),
    embedding_size=config.embedding_size,
    include_head=include_head,
    name="discriminator",
  )
  encoder.build()
  return encoder


def _layout_model(config, layout):
  """`(model, name_map)`: the pretrainer a checkpoint of `layout` holds, or
  the encoder alone (no discriminator head) for `LAYOUT_ENCODER`."""
  if _layout_needs_pretrainer(layout):
    model = _build_pretrainer(config)
    return model, checkpoint_names.official_name_map(model)
  encoder = _build_encoder(config)
  return encoder, checkpoint_names.discriminator_name_map(encoder, include_head=False)


def _check_shapes(expected, shapes, source, user, layout, task_heads=False):
  """Raises unless the checkpoint's model entries are exactly `expected`
  (`{name: shape}`); `task_heads` False leaves `task_specific/*` out of the
  comparison (an encoder-only conversion lists them as not converted)."""
  found = {
    n: tuple(int(d) for d in s)
    for n, s in shapes.items()
    if not checkpoint_names.is_non_model_entry(n)
  }
  if layout == LAYOUT_ENCODER and not task_heads:
    # Fine-tuning heads are reported as not converted, not as errors.
    found = {n: s for n, s in found.items() if not n.startswith(checkpoint_names.TASK_SCOPE + "/")}
  describe = official_checkpoint.describe_shape
  mismatched = [
    f"  {n}: config gives {describe(expected[n])}, checkpoint has {describe(found[n])}"
    for n in sorted(expected)
    if n in found and expected[n] != found[n]
  ]
  missing = [f"  {n} {describe(expected[n])}" for n in sorted(expected) if n not in found]
  extra = [f"  {n} {describe(found[n])}" for n in sorted(found) if n not in expected]
  if not (mismatched or missing or extra):
    return
  problems = []
  if mismatched:
    problems.append("shape mismatches:\n" + "\n".join(mismatched))
  if missing:
    problems.append("in the config's model but not in the checkpoint:\n" + "\n".join(missing))
  if extra:
    problems.append("in the checkpoint but not in the config's model:\n" + "\n".join(extra))
  given = json.dumps(user, sort_keys=True) if user else "none (all inferred from shapes)"
  raise ValueError(
    f"checkpoint {source} does not match the configuration (layout {layout}; "
    f"--hparams: {given}):\n"
    + "\n".join(problems)
    + "\nFix --hparams, or check that the checkpoint is complete."
  )


# -----------------------------------------------------------------------------
# Standalone parts (discriminator / generator) and their official names
# -----------------------------------------------------------------------------


def _standalone_generator(pretrainer):
  """A fresh `ElectraGenerator` with the pretrainer's generator layout and
  its own copy of any shared embeddings; returns `(generator, name_map)`."""
  from electra_tf.layers.electra_embeddings import ElectraEmbeddings
  from electra_tf.models.electra_generator import ElectraGenerator

  source = pretrainer.generator
  if source is None:
    raise ValueError(
      "this checkpoint has no generator (uniform_generator: tokens are sampled "
      "uniformly, there are no generator weights); use --part discriminator"
    )
  scopes = checkpoint_names.generator_scopes(pretrainer)
  shared = source.embeddings is pretrainer.embeddings
  c = source.bert_config
  embeddings = None
  if shared:
    e = pretrainer.embeddings
    embeddings = ElectraEmbeddings(
      vocab_size=e.vocab_size,
      embedding_size=e.embedding_size,
      max_position_embeddings=e.max_position_embeddings,
      type_vocab_size=e.type_vocab_size,
      initializer_range=c["initializer_range"],
      dropout_rate=c["hidden_dropout_prob"],
      name="embeddings",
    )
  generator = ElectraGenerator(
    c,
    embedding_size=None if shared else source.embedding_size,
    embeddings=embeddings,
    two_tower=source.is_two_tower,
    name="generator",
  )
  generator.build()
  return generator, checkpoint_names.generator_name_map(generator, scopes, shared)


def _input_specs(with_positions):
  inputs = {
    k: keras.Input(shape=(None,), dtype="int32", name=k)
    for k in ("input_ids", "input_mask", "segment_ids")
  }
  if with_positions:
    inputs["masked_lm_positions"] = keras.Input(
      shape=(None,), dtype="int32", name="masked_lm_positions"
    )
  return inputs


def _discriminator_model(discriminator):
  """Functional `keras.Model` around a standalone discriminator (for `.keras`)."""
  inputs = _input_specs(False)
  outputs = discriminator(inputs)
  keys = ["embedding_output", "sequence_output", "pooled_output"]
  if discriminator.head is not None:
    keys.append("logits")
  return keras.Model(inputs, {k: outputs[k] for k in keys}, name="electra_discriminator")


def _generator_model(generator, scopes):
  """Functional `keras.Model` around a standalone generator. Its name records
  the official scope(s) so `to-official` can name the tower(s) again."""
  inputs = _input_specs(True)
  features = {k: inputs[k] for k in ("input_ids", "input_mask", "segment_ids")}
  outputs = generator(features, masked_lm_positions=inputs["masked_lm_positions"])
  keys = ["sequence_output", "mlm_logits"]
  return keras.Model(
    inputs, {k: outputs[k] for k in keys}, name="electra_generator__" + "__".join(scopes)
  )


# -----------------------------------------------------------------------------
# Fine-tuned models: the encoder plus task_specific/<task>/ heads (the variable names of the original's fine-tuned checkpoints)
# -----------------------------------------------------------------------------

# Fine-tuning hparams that set the encoder's shape: passed on to the shape
# inference (and so checked against the checkpoint) for --part finetuned.
_FINETUNING_MODEL_KEYS = (
  "model_size",
  "embedding_size",
  "vocab_size",
  "model_hparam_overrides",
  "debug",
)
# QA head options whose defaults come from the checkpoint's layer names; a
# value given in --hparams wins and is then checked against the shapes.
_QA_LAYOUT_KEYS = ("joint_prediction", "answerable_classifier", "answerable_uses_start_logits")
_TASK_TYPES_EXAMPLE = '--hparams \'{{"task_types": {{"{task}": "classification"}}}}\''


def task_groups(names):
  """`{task: set of layer names}` of the `task_specific/<task>/<layer>/...`
  entries among `names` (optimizer slots ignored)."""
  groups = {}
  for name in names:
    if checkpoint_names.is_non_model_entry(name):
      continue
    parts = name.split("/")
    if parts[0] == checkpoint_names.TASK_SCOPE:
      if len(parts) < 4:
        raise ValueError(
          f"unexpected checkpoint entry {name!r}: expected "
          f"{checkpoint_names.TASK_SCOPE}/<task>/<layer>/<kernel|bias>"
        )
      groups.setdefault(parts[1], set()).add(parts[2])
  return groups


def package_task_type(task_name):
  """The head type (one of `TASK_TYPES`) of a task electra_tf defines
  (`electra_tf.finetune.task_builder.TASK_CLASSES`), or None."""
  from electra_tf.finetune import task_builder  # pylint: disable=g-import-not-at-top
  from electra_tf.finetune.classification import tasks as classification_tasks  # pylint: disable=g-import-not-at-top
  from electra_tf.finetune.qa import tasks as qa_tasks  # pylint: disable=g-import-not-at-top
  from electra_tf.finetune.tagging import tasks as tagging_tasks  # pylint: disable=g-import-not-at-top

  task_class = task_builder.TASK_CLASSES.get(task_name)
  if task_class is None:
    return None
  for base, task_type in (
    (qa_tasks.QATask, "qa"),
    (classification_tasks.RegressionTask, "regression"),
    (classification_tasks.ClassificationTask, "classification"),
    (tagging_tasks.TaggingTask, "tagging"),
  ):
    if issubclass(task_class, base):
      return task_type
  raise ValueError(
    f"task {task_name!r}: {task_class.__name__} is none of the task kinds the "
    "converter knows (classification, regression, tagging, QA)"
  )


def _finetuning_hparams(hparams):
  """Splits `--hparams` for `--part finetuned`.

  Args:
    hparams: fine-tuning hparams (dict / JSON / `.json` path, as for
      `run_finetuning`) plus `task_types`, or None.

  Returns:
    `(user, model_hparams, finetuning_config, task_types)`: the whole dict
    (for messages), the keys that set the encoder's shape, a
    `FinetuningConfig` (validates the keys; QA defaults) and
    `{task: type}`.
  """
  from electra_tf.configs.finetuning import FinetuningConfig  # pylint: disable=g-import-not-at-top

  user = load_hparams(hparams)
  rest = dict(user)
  task_types = rest.pop("task_types", None) or {}
  if not isinstance(task_types, dict):
    raise ValueError(
      f"--hparams task_types must be a JSON object {{task: type}}, got {task_types!r}"
    )
  for task, task_type in task_types.items():
    if task_type not in TASK_TYPES:
      raise ValueError(
        f"--hparams task_types: {task!r} has type {task_type!r}; expected one of {TASK_TYPES}"
      )
  try:
    config = FinetuningConfig("converted", _NO_DATA_DIR, **rest)
  except ValueError as e:
    raise ValueError(
      f"--hparams for --part finetuned are fine-tuning hparams (as for "
      f"run_finetuning) plus task_types: {e}"
    ) from e
  model_hparams = {k: rest[k] for k in _FINETUNING_MODEL_KEYS if k in rest}
  return user, model_hparams, config, task_types


def _task_order(groups, user, notes):
  """The heads' order (it gives each task its `task_id`): `task_names` from
  --hparams, which must name exactly the checkpoint's tasks, else sorted."""
  found = sorted(groups)
  if "task_names" not in user:
    if len(found) > 1:
      notes.append(
        f"task order (task_id) {found} is alphabetical: the checkpoint does not "
        "record it; pass the run's task_names in --hparams if it differed"
      )
    return found
  given = list(user["task_names"])
  if sorted(given) != found:
    raise ValueError(
      f"--hparams task_names {given} do not name the checkpoint's tasks {found} (not in the "
      f"checkpoint: {sorted(set(given) - set(found))}; not in task_names: "
      f"{sorted(set(found) - set(given))})"
    )
  return given


def _task_type(task, layers, task_types, notes):
  """A task's head type: `task_types` from --hparams, else the package's
  task of that name, else QA when the layers are QA-only names."""
  known = package_task_type(task)
  if task in task_types:
    if known is not None and known != task_types[task]:
      notes.append(
        f"task {task}: --hparams task_types says {task_types[task]} (electra_tf's "
        f"{task} task is {known})"
      )
    return task_types[task]
  if known is not None:
    return known
  if layers - {"dense"}:
    notes.append(f"task {task}: not an electra_tf task; a QA head from its layers {sorted(layers)}")
    return "qa"
  raise ValueError(
    f"task {task!r} of the checkpoint is not a task electra_tf knows "
    f"({', '.join(_known_task_names())}), and classification, regression and tagging "
    f"heads have the same variables ({checkpoint_names.TASK_SCOPE}/{task}/dense/kernel, bias): "
    f"give its type with {_TASK_TYPES_EXAMPLE.format(task=task)} (one of "
    f"{', '.join(TASK_TYPES)})"
  )


def _known_task_names():
  from electra_tf.finetune import task_builder  # pylint: disable=g-import-not-at-top

  return sorted(task_builder.TASK_CLASSES)


def _build_task_head(task, task_type, layers, shapes, config, user):
  """The head layer of one task, sized from the checkpoint's shapes.

  Returns:
    `(head, description)`.
  """
  from electra_tf.finetune.classification.head import ClassificationHead  # pylint: disable=g-import-not-at-top
  from electra_tf.finetune.qa.head import QAHead  # pylint: disable=g-import-not-at-top
  from electra_tf.finetune.tagging.head import TaggingHead  # pylint: disable=g-import-not-at-top

  name = "task_specific_" + task  # as the tasks' create_head names them
  if task_type == "qa":
    # dense (start) always; qa_hidden only with joint prediction; dense_2 is
    # the answerable classifier, dense_3 its second layer when it also reads
    # the start probabilities (the variable names of the original's fine-tuned checkpoints).
    options = {
      "joint_prediction": "qa_hidden" in layers,
      "answerable_classifier": "dense_2" in layers,
      "answerable_uses_start_logits": "dense_3" in layers,
    }
    options.update({k: user[k] for k in _QA_LAYOUT_KEYS if k in user})
    head = QAHead(
      task,
      beam_size=config.beam_size,
      answerable_weight=config.answerable_weight,
      name=name,
      **options,
    )
    flags = ", ".join(k for k, v in options.items() if v) or "no joint prediction or answerable"
    return head, f"qa ({flags}; beam_size {config.beam_size})"
  kernel_name = f"{checkpoint_names.TASK_SCOPE}/{task}/dense/kernel"
  kernel = shapes.get(kernel_name)
  if kernel is None or len(kernel) != 2:
    found = (
      "no such entry" if kernel is None else f"shape {official_checkpoint.describe_shape(kernel)}"
    )
    raise ValueError(
      f"task {task!r} ({task_type}): expected {kernel_name} [H, num_labels], the "
      f"checkpoint has {found} (the task's layers: {sorted(layers)})"
    )
  num_labels = int(kernel[1])
  if task_type == "tagging":
    return TaggingHead(task, num_labels, name=name), f"tagging, {num_labels} tags"
  if task_type == "regression":
    if num_labels != 1:
      raise ValueError(
        f"task {task!r} is a regression task (one output) but {kernel_name} is "
        f"{official_checkpoint.describe_shape(kernel)}; if it is a classifier, say so with "
        f"{_TASK_TYPES_EXAMPLE.format(task=task)}"
      )
    return ClassificationHead(task, 1, regression=True, name=name), "regression"
  return ClassificationHead(task, num_labels, name=name), f"classification, {num_labels} labels"


def load_official_finetuning_model(path, hparams=None):
  """Reads a fine-tuned name-based checkpoint (`electra/...` and
  `task_specific/<task>/...`) into a `FinetuningModel`, strictly: every
  model entry must be a variable of the model with the same shape.

  Args:
    path: checkpoint prefix or directory.
    hparams: fine-tuning hparams (see `_finetuning_hparams`), or None.

  Returns:
    `(model, tensors, info)`: `tensors` holds every checkpoint entry; `info`
    has `prefix`, `layout`, `notes`, `hparams` (reusable as --hparams) and
    `tasks` (`[(task, description)]` in head order).
  """
  prefix, tensors = read_name_based_checkpoint(path)
  shapes = {n: tuple(int(d) for d in t.shape) for n, t in tensors.items()}
  groups = task_groups(shapes)
  if not groups:
    raise ValueError(
      f"checkpoint {prefix!r} has no {checkpoint_names.TASK_SCOPE}/<task>/ heads, "
      "so it is not a fine-tuned model; use --part pretrainer or discriminator"
    )
  others = sorted(
    {n.split("/", 1)[0] for n in shapes if not checkpoint_names.is_non_model_entry(n)}
    - {checkpoint_names.DISCRIMINATOR_SCOPE, checkpoint_names.TASK_SCOPE}
  )
  if others:
    raise ValueError(
      f"checkpoint {prefix!r} has task heads but also the scopes {others}; a "
      f"fine-tuned model holds only {checkpoint_names.DISCRIMINATOR_SCOPE}/... and "
      f"{checkpoint_names.TASK_SCOPE}/..."
    )
  user, model_hparams, ft_config, task_types = _finetuning_hparams(hparams)
  config, merged, layout, notes, _ = _infer(shapes, model_hparams, source=prefix)
  unknown = sorted(set(task_types) - set(groups))
  if unknown:
    raise ValueError(
      f"--hparams task_types names {unknown}, which the checkpoint has no heads "
      f"for (its tasks: {sorted(groups)})"
    )
  order = _task_order(groups, user, notes)
  heads, tasks, types = [], [], {}
  for task in order:
    types[task] = _task_type(task, groups[task], task_types, notes)
    head, description = _build_task_head(task, types[task], groups[task], shapes, ft_config, user)
    heads.append(head)
    tasks.append((task, description))
  from electra_tf.finetune.model import FinetuningModel  # pylint: disable=g-import-not-at-top

  model = FinetuningModel.from_finetuning_config(config, heads)
  name_map = model.official_name_map()
  _check_shapes(
    checkpoint_names.official_shapes(name_map), shapes, repr(prefix), user, layout, task_heads=True
  )
  _assign(name_map, tensors)
  used = dict(user)
  used.update(merged, task_names=order, task_types=types)
  return (
    model,
    tensors,
    {"prefix": prefix, "layout": layout, "notes": notes, "hparams": used, "tasks": tasks},
  )


def _finetuned_to_keras(input_path, output_path, hparams):
  """`official_to_keras` for `--part finetuned`: the `.keras` fine-tuning
  model; slots and `global_step` are listed as not converted."""
  model, tensors, info = load_official_finetuning_model(input_path, hparams)
  _save_keras(model, output_path)
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
    "global_step": _global_step(tensors),
    "hparams": info["hparams"],
  }


# -----------------------------------------------------------------------------
# Official → Keras
# -----------------------------------------------------------------------------


def _assign(name_map, tensors):
  for name, variable in name_map.items():
    variable.assign(np.asarray(tensors[name]))


def _global_step(tensors):
  value = tensors.get(checkpoint_names.GLOBAL_STEP_NAME)
  return None if value is None else int(value)


def load_official_pretrainer(path, hparams=None):
  """Reads a name-based checkpoint into an `ElectraPretrainer` (strictly).

  Returns:
    `(pretrainer, config, tensors, info)`: `tensors` holds every checkpoint
    entry (slots and `global_step` too); `info` has `prefix`, `layout`,
    `notes`.
  """
  prefix, tensors = read_name_based_checkpoint(path)
  shapes = {n: t.shape for n, t in tensors.items()}
  config, _, layout, notes, pretrainer = _infer(shapes, hparams, source=prefix)
  if not _layout_needs_pretrainer(layout):
    raise ValueError(
      f"checkpoint {prefix!r} holds an encoder only (no generator or discriminator head, "
      f"e.g. a fine-tuned model): convert it with --part {PART_FINETUNED} (with its task "
      "heads, see load_official_finetuning_model) or --part discriminator"
    )
  _assign(checkpoint_names.official_name_map(pretrainer), tensors)
  return pretrainer, config, tensors, {"prefix": prefix, "layout": layout, "notes": notes}


def _check_slots(tensors, name_map, prefix):
  """The checkpoint's optimizer slot names (sorted; empty if it has none),
  which must be all-or-nothing and match their variables' shapes."""
  slots = sorted(n for n in tensors if n.endswith(checkpoint_names.OPTIMIZER_SLOT_SUFFIXES))
  if not slots:
    return slots
  problems = []
  for name in name_map:
    for suffix in checkpoint_names.OPTIMIZER_SLOT_SUFFIXES:
      slot = name + suffix
      if slot not in tensors:
        problems.append(f"  missing {slot}")
      elif tuple(tensors[slot].shape) != tuple(tensors[name].shape):
        problems.append(
          f"  {slot} has shape {official_checkpoint.describe_shape(tensors[slot].shape)}, "
          f"its variable {official_checkpoint.describe_shape(tensors[name].shape)}"
        )
  expected = {n + s for n in name_map for s in checkpoint_names.OPTIMIZER_SLOT_SUFFIXES}
  problems += [f"  {s} belongs to no model variable" for s in slots if s not in expected]
  if problems:
    raise ValueError(
      f"checkpoint {prefix!r} has incomplete optimizer slots:\n" + "\n".join(problems)
    )
  return slots


def write_training_checkpoint(pretrainer, config, output_dir, step=0, slots=None):
  """Writes an electra_tf training checkpoint `<output_dir>/model.ckpt-<step>`
  (the format of `electra_tf.checkpointing`, which `run_pretraining` resumes
  from): the pretrainer compiled with the original's optimizer, its
  `iterations` set to `step` and, if given, its slots from `slots`
  (`{"<official name>/adam_m": array, ...}`)."""
  from electra_tf.training import checkpointing  # pylint: disable=g-import-not-at-top

  with distribution.dtype_policy(config.mixed_precision):
    pretrainer.compile(pretraining_config=config)
    checkpointing.build_optimizer(pretrainer)
    optimizer = pretrainer.optimizer
    optimizer.iterations.assign(int(step))
    if slots:
      name_map = checkpoint_names.official_name_map(pretrainer)
      for slot_name, slot in _optimizer_slots(optimizer, name_map).items():
        slot.assign(np.asarray(slots[slot_name]))
    manager = checkpointing.TrainingCheckpointManager(
      pretrainer, output_dir, keep_checkpoint_max=None, chief=True
    )
    return manager.save(int(step))


def _inner_optimizer(optimizer):
  return getattr(optimizer, "inner_optimizer", optimizer)


def _optimizer_slots(optimizer, name_map):
  inner = _inner_optimizer(optimizer)
  if not hasattr(inner, "official_slots"):
    raise ValueError(
      f"the model's optimizer {type(inner).__name__} has no official slot "
      "names (expected electra_tf.adam_weight_decay.AdamWeightDecay)"
    )
  return inner.official_slots(name_map)


def _check_output_dir(output_dir):
  """Refuses a directory that already holds checkpoints: a converted
  checkpoint next to others would not be the one that readers pick up."""
  if os.path.exists(os.path.join(os.fspath(output_dir), "checkpoint")):
    raise ValueError(
      f"--output {os.fspath(output_dir)!r} already holds checkpoints (it has a "
      "`checkpoint` file); choose a new or empty directory"
    )


def _save_keras(model, output_path):
  """`model.save` to a temp name in the same directory, then rename."""
  with atomic_path(output_path, suffix=KERAS_SUFFIX) as tmp:
    model.save(tmp, overwrite=True)


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
    has_heads = bool(task_groups(_open_reader(prefix).get_variable_to_shape_map()))
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
    _check_output_dir(output_path)
  prefix, tensors = read_name_based_checkpoint(input_path)
  shapes = {n: t.shape for n, t in tensors.items()}
  config, merged_hparams, layout, notes, layout_model = _infer(shapes, hparams, source=prefix)
  step = _global_step(tensors)

  if not _layout_needs_pretrainer(layout):
    if part != "discriminator":
      tasks = sorted(task_groups(tensors))
      heads = f" and task heads {tasks} (--part {PART_FINETUNED} converts both)" if tasks else ""
      raise ValueError(
        f"checkpoint {prefix!r} holds an encoder only (layout {layout}){heads}; "
        "--part discriminator converts the encoder alone"
      )
    model_part = layout_model
    name_map = checkpoint_names.discriminator_name_map(model_part, include_head=False)
    pretrainer = None
  else:
    pretrainer = layout_model
    full_map = checkpoint_names.official_name_map(pretrainer)
    _assign(full_map, tensors)
    if part == "pretrainer":
      name_map = full_map
    elif part == "discriminator":
      model_part = _build_encoder(config, include_head=pretrainer.discriminator is not None)
      name_map = checkpoint_names.discriminator_name_map(model_part)
    else:
      model_part, name_map = _standalone_generator(pretrainer)
  if part != "pretrainer":
    _assign(name_map, tensors)

  converted = sorted(name_map)
  if to_keras_file:
    if part == "pretrainer":
      model = pretrainer
    elif part == "discriminator":
      model = _discriminator_model(model_part)
    else:
      model = _generator_model(model_part, checkpoint_names.generator_scopes(pretrainer))
    _save_keras(model, output_path)
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
      converted.append(checkpoint_names.GLOBAL_STEP_NAME)
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


# -----------------------------------------------------------------------------
# Keras → official
# -----------------------------------------------------------------------------


def _find_layer(model, cls):
  for layer in model.layers:
    if isinstance(layer, cls):
      return layer
  return None


class _ObjectGraph:
  """The object graph of an electra_tf (object-based) training checkpoint:
  which sub-objects the pretrainer has, and the shapes of its variables."""

  def __init__(self, prefix):

    self.reader = _open_reader(prefix)
    self.graph = keras_compat.trackable_object_graph_pb2.TrackableObjectGraph()
    self.graph.ParseFromString(self.reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    self.shapes = self.reader.get_variable_to_shape_map()

  def node(self, path):
    """Node id at a `/`-separated path of attribute names from the root, or None."""
    node_id = 0
    for part in path.split("/"):
      children = {c.local_name: c.node_id for c in self.graph.nodes[node_id].children}
      if part not in children:
        return None
      node_id = children[part]
    return node_id

  def shape(self, path_or_node):
    node_id = self.node(path_or_node) if isinstance(path_or_node, str) else path_or_node
    if node_id is None:
      return None
    for attribute in self.graph.nodes[node_id].attributes:
      if attribute.name == "VARIABLE_VALUE":
        return tuple(int(d) for d in self.shapes[attribute.checkpoint_key])
    return None

  def subtree_shapes(self, path):
    """Shapes of every variable at or below `path` (each node once)."""
    start = self.node(path)
    seen, stack, shapes = set(), [start] if start is not None else [], []
    while stack:
      node_id = stack.pop()
      if node_id in seen:
        continue
      seen.add(node_id)
      shape = self.shape(node_id)
      if shape is not None:
        shapes.append(shape)
      stack.extend(c.node_id for c in self.graph.nodes[node_id].children)
    return shapes

  def trainable_shapes(self):
    """Shapes of the optimizer's trainable variables (the model's, in order)."""
    optimizer = (
      "optimizer/inner_optimizer" if self.node("optimizer/inner_optimizer") else ("optimizer")
    )
    root = self.node(f"{optimizer}/_trainable_variables")
    if root is None:
      raise ValueError("the electra_tf checkpoint has no optimizer state")
    children = sorted(self.graph.nodes[root].children, key=lambda c: int(c.local_name))
    return [self.shape(c.node_id) for c in children]


def _shape_list(shapes, limit=6):
  """A short description of a list of shapes."""
  text = ", ".join(official_checkpoint.describe_shape(s) for s in shapes[:limit])
  return f"[{text}{', …' if len(shapes) > limit else ''}]"


def _block_pattern(h, x):
  """Shapes of one transformer block's trainable variables, in the order the
  block creates them (query, key, value, attention output, LayerNorm,
  intermediate, output, LayerNorm)."""
  return [(h, h), (h,)] * 4 + [(h,), (h,)] + [(h, x), (x,), (x, h), (h,), (h,), (h,)]


def _find_block_runs(shapes):
  """Runs of consecutive transformer blocks in a trainable-shape list:
  `[(width, ffn, number_of_blocks), ...]` in order."""
  runs, i, size = [], 0, len(_block_pattern(1, 1))
  while i + size <= len(shapes):
    first = shapes[i]
    window = shapes[i : i + size]
    if (
      len(first) == 2
      and first[0] == first[1]
      and len(window[10]) == 2
      and window == _block_pattern(first[0], window[10][1])
    ):
      h, x = first[0], window[10][1]
      if runs and runs[-1][3] == i and runs[-1][:2] == (h, x):
        runs[-1] = (h, x, runs[-1][2] + 1, i + size)
      else:
        runs.append((h, x, 1, i + size))
      i += size
    else:
      i += 1
  return [r[:3] for r in runs]


def infer_hparams_from_training_checkpoint(path):
  """Pre-training hparams of an electra_tf training checkpoint, from its
  object graph (which networks exist, embedding and head shapes) and the
  shapes of the optimizer's variables (runs of transformer blocks give the
  layer counts and FFN sizes).

  Attention heads are not stored: they follow the size rule (they do not
  change the converted weights). The caller verifies the result against
  the checkpoint before restoring.

  Returns:
    `(hparams, notes)`.
  """
  prefix = official_checkpoint.resolve_checkpoint_path(path)
  graph = _ObjectGraph(prefix)
  word = graph.shape("model/embeddings/word_embeddings")
  if word is None:
    raise ValueError(
      f"{prefix!r} is not an electra_tf pre-training checkpoint "
      "(no model/embeddings/word_embeddings in its object graph)"
    )
  vocab_size, embedding_size = word
  # The other two tables are [P, E] and [T, E] (T < P); their attribute
  # names are the embedding layer's business, so only shapes are used.
  tables = sorted(
    s[0] for s in graph.subtree_shapes("model/embeddings") if len(s) == 2 and s != word
  )
  if len(tables) != 2:
    raise ValueError(
      f"{prefix!r}: expected position and token-type tables next to the word "
      f"embeddings, found first dims {tables}; pass --hparams"
    )
  types, positions = tables
  runs = _find_block_runs(graph.trainable_shapes())
  has_discriminator = graph.node("model/discriminator") is not None
  has_generator = graph.node("model/generator") is not None
  two_tower = graph.node("model/generator/rtl_encoder") is not None
  if not runs:
    raise ValueError(
      f"{prefix!r}: no transformer blocks found among the optimizer's variables; pass --hparams"
    )
  # The pretrainer creates the discriminator (or the full-size generator)
  # first: its blocks are the first run.
  hidden, ffn, layers = runs[0]
  notes = []
  hparams = {"vocab_size": vocab_size, "embedding_size": embedding_size}
  if not has_discriminator:
    hparams["electra_objective"] = False
  elif not has_generator:
    hparams["uniform_generator"] = True
  elif graph.node("model/generator/encoder") == graph.node("model/discriminator/encoder"):
    hparams["untied_generator"] = False
  else:
    towers = 2 if two_tower else 1
    if two_tower:
      hparams.update(electra_objective=False, electric_objective=True)
      notes.append("two-tower generator: assuming the Electric objective")
    hparams["untied_generator_embeddings"] = graph.node("model/generator/embeddings") != graph.node(
      "model/embeddings"
    )
    generator_runs = runs[1:]
    if len(runs) == 1 and runs[0][2] % (1 + towers) == 0:
      # Same block shapes and no variable in between: split evenly.
      layers = runs[0][2] // (1 + towers)
      generator_runs = [(hidden, ffn, layers * towers)]
      notes.append(
        "generator blocks follow the discriminator's with the same shapes: "
        "assuming generator_layers 1.0"
      )
    widths = {(h, x) for h, x, _ in generator_runs}
    if len(widths) != 1:
      raise ValueError(
        f"{prefix!r}: cannot tell the generator's blocks apart (runs of "
        f"(width, ffn, count): {runs}); pass --hparams"
      )
    ((gen_hidden, gen_ffn),) = widths
    gen_layers = sum(n for _, _, n in generator_runs)
    if gen_layers % towers:
      raise ValueError(
        f"{prefix!r}: {gen_layers} generator blocks for {towers} towers; pass --hparams"
      )
    gen_layers //= towers
    hparams.update(
      _generator_size_hparams(hidden, layers, gen_hidden, gen_layers, gen_ffn, repr(prefix))
    )
  hparams["model_hparam_overrides"] = _model_overrides(hidden, layers, ffn, positions, types)
  notes.append(
    "hparams inferred from the checkpoint's shapes (attention heads by the size "
    "rule; they do not change the converted weights)"
  )
  return hparams, notes


def load_keras_source(input_path, hparams=None):
  """Reads an electra_tf checkpoint or `.keras` model for `to-official`.

  Args:
    input_path: a `.keras` file (a pretrainer or `FinetuningModel`, or a
      discriminator/generator written by `official_to_keras`), or an
      electra_tf training checkpoint (prefix or model dir).
    hparams: the training run's hparams (dict / JSON / `.json` path) for a
      training checkpoint; None reads `converted_hparams.json` next to it
      (written by `official_to_keras`) or infers them from its shapes.

  Returns:
    `(name_map, optimizer_or_None, global_step_or_None, source, notes)`.
  """
  from electra_tf.finetune.model import FinetuningModel
  from electra_tf.models.electra_discriminator import ElectraDiscriminator
  from electra_tf.models.electra_generator import ElectraGenerator
  from electra_tf.models.electra_pretrainer import ElectraPretrainer

  path = os.fspath(input_path)
  if path.endswith(KERAS_SUFFIX):
    if not os.path.isfile(path):
      raise ValueError(f"--input {path!r}: no such .keras file")
    model = keras.saving.load_model(path, compile=False)
    if isinstance(model, ElectraPretrainer):
      model.build()
      return checkpoint_names.official_name_map(model), None, None, path, []
    if isinstance(model, FinetuningModel):
      # Before the discriminator search below: its encoder is one, but the
      # heads must be written too.
      return (
        model.official_name_map(),
        None,
        None,
        path,
        [f"fine-tuning model with tasks {model.task_names}"],
      )
    discriminator = _find_layer(model, ElectraDiscriminator)
    if discriminator is not None:
      return checkpoint_names.discriminator_name_map(discriminator), None, None, path, []
    generator = _find_layer(model, ElectraGenerator)
    if generator is not None and model.name.startswith("electra_generator__"):
      scopes = model.name[len("electra_generator__") :].split("__")
      # `_standalone_generator` passes the embeddings in exactly when they
      # are the shared `electra/embeddings` block.
      shared = generator.get_config()["embeddings"] is not None
      name_map = checkpoint_names.generator_name_map(generator, scopes, shared)
      return name_map, None, None, path, []
    raise ValueError(
      f"--input {path!r} holds no ElectraPretrainer, FinetuningModel, "
      "ElectraDiscriminator or electra_tf generator model"
    )

  prefix = official_checkpoint.resolve_checkpoint_path(path)
  if not _is_object_based(prefix):
    raise ValueError(
      f"--input {prefix!r} is a name-based (official) checkpoint, not an "
      "electra_tf one; use --direction to-keras"
    )
  notes = []
  if hparams is None:
    saved = os.path.join(os.path.dirname(prefix), HPARAMS_FILE)
    if os.path.isfile(saved):
      hparams = saved
      notes.append(f"hparams from {saved}")
    else:
      hparams, inferred_notes = infer_hparams_from_training_checkpoint(prefix)
      notes += inferred_notes
  from electra_tf.training import checkpointing  # pylint: disable=g-import-not-at-top

  hparams = load_hparams(hparams)
  config = pretraining_config_lib.PretrainingConfig("converted", _NO_DATA_DIR, **hparams)
  # Infer precision from the object graph too: mixed_float16 runs save a
  # LossScaleOptimizer around the AdamWeightDecay.
  graph = _ObjectGraph(prefix)
  if graph.node("optimizer/inner_optimizer") is not None:
    config.mixed_precision = "mixed_float16"
  elif config.mixed_precision == "mixed_float16":
    config.mixed_precision = "float32"
  with distribution.dtype_policy(config.mixed_precision):
    pretrainer = _build_pretrainer(config)
    expected = [tuple(int(d) for d in v.shape) for v in pretrainer.trainable_variables]
    found = graph.trainable_shapes()
    if expected != found:
      first = next(
        (i for i, (a, b) in enumerate(zip(expected, found)) if a != b),
        min(len(expected), len(found)),
      )
      given = json.dumps(hparams, sort_keys=True)
      raise ValueError(
        f"electra_tf checkpoint {prefix!r} does not match the model built from the hparams "
        f"{given}: the model has {len(expected)} trainable variables, the checkpoint "
        f"{len(found)}; from variable #{first} the model's shapes are "
        f"{_shape_list(expected[first:])}, the checkpoint's {_shape_list(found[first:])}"
      )
    pretrainer.compile(pretraining_config=config)
    manager = checkpointing.TrainingCheckpointManager(
      pretrainer, os.path.dirname(prefix), keep_checkpoint_max=None, chief=True
    )
    try:
      manager.restore(prefix)
    except (AssertionError, ValueError, tf.errors.OpError) as e:
      raise ValueError(
        f"electra_tf checkpoint {prefix!r} does not match the model built from --hparams "
        f"(or is truncated): {e}"
      ) from e
  name_map = checkpoint_names.official_name_map(pretrainer)
  return name_map, pretrainer.optimizer, checkpointing.global_step(pretrainer), prefix, notes


def write_official_checkpoint(tensors, output_dir, step):
  """Writes `tensors` (`{name: array}`) as the name-based checkpoint
  `<output_dir>/model.ckpt-<step>` plus a `checkpoint` state file naming it,
  atomically (temp prefix, then rename). Returns the prefix."""
  # The format of electra_tf's own fine-tuning checkpoints: the same writer.
  return checkpoint_io.save_name_based(tensors, output_dir, int(step), max_to_keep=None)


def official_tensors(name_map, optimizer=None, global_step=0, with_optimizer_slots=False):
  """The tensors of an official checkpoint for `name_map`'s variables.

  Args:
    name_map: `{official name: variable}` (`checkpoint_names`).
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
    slots = _optimizer_slots(optimizer, name_map)
    if with_optimizer_slots:
      for slot_name, slot in slots.items():
        tensors[slot_name] = np.asarray(keras.ops.convert_to_numpy(slot), dtype=np.float32)
    else:
      not_converted.append(
        f"optimizer slots ({len(slots)} tensors; pass --with-optimizer-slots to write them)"
      )
    if _inner_optimizer(optimizer) is not optimizer:
      not_converted.append("the LossScaleOptimizer's loss scale (the original has none)")
  elif with_optimizer_slots:
    raise ValueError("with_optimizer_slots needs the optimizer")
  tensors[checkpoint_names.GLOBAL_STEP_NAME] = np.int64(global_step)
  return tensors, not_converted


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
  _check_output_dir(output_dir)
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


# -----------------------------------------------------------------------------
# Publishing to Hugging Face / keras-hub, and reading Hugging Face directories
# -----------------------------------------------------------------------------

TARGETS = ("huggingface", "keras-hub")


def _publishing_hparams(hparams):
  """The user's hparams, validated as pre-training hparams (unknown keys raise)."""
  user = load_hparams(hparams) if hparams is not None else {}
  pretraining_config_lib.PretrainingConfig("converted", _NO_DATA_DIR, **user)
  return user


def load_part_for_publishing(input_path, part, hparams=None):
  """The discriminator or generator of any source as a `huggingface.ElectraPart`.

  Sources: an official (name-based) checkpoint, an electra_tf training
  checkpoint, a `.keras` model written by electra_tf, or a Hugging Face
  ELECTRA directory. Returns `(part, do_lower_case, source)`; `do_lower_case`
  is the run's (hparams) or the Hugging Face tokenizer's, else True.
  """
  from electra_tf.models.electra_discriminator import ElectraDiscriminator
  from electra_tf.models.electra_generator import ElectraGenerator
  from electra_tf.models.electra_pretrainer import ElectraPretrainer

  path = os.fspath(input_path)
  user = _publishing_hparams(hparams)
  do_lower_case = bool(user.get("do_lower_case", True))
  if huggingface.is_huggingface_dir(path):
    model, found, _, notes = huggingface.load_huggingface(path)
    if found != part:
      raise ValueError(f"--input {path!r} holds the {found}; use --part {found}")
    tokenizer_config = os.path.join(path, huggingface.TOKENIZER_CONFIG_FILE)
    if os.path.isfile(tokenizer_config) and "do_lower_case" not in user:
      with open(tokenizer_config, encoding="utf-8") as f:
        do_lower_case = bool(json.load(f).get("do_lower_case", True))
    if found == huggingface.PART_DISCRIMINATOR:
      return huggingface.discriminator_part(model, notes=notes), do_lower_case, path
    scopes = [checkpoint_names.GENERATOR_SCOPE]
    return huggingface.generator_part(model, scopes, True, notes=notes), do_lower_case, path
  if path.endswith(KERAS_SUFFIX):
    if not os.path.isfile(path):
      raise ValueError(f"--input {path!r}: no such .keras file")
    model = keras.saving.load_model(path, compile=False)
    if isinstance(model, ElectraPretrainer):
      model.build()
      return huggingface.pretrainer_part(model, part), do_lower_case, path
    discriminator = _find_layer(model, ElectraDiscriminator)
    generator = _find_layer(model, ElectraGenerator)
    if part == huggingface.PART_DISCRIMINATOR and discriminator is not None:
      return huggingface.discriminator_part(discriminator), do_lower_case, path
    if part == huggingface.PART_GENERATOR and generator is not None:
      scopes = model.name[len("electra_generator__") :].split("__")
      shared = generator.get_config()["embeddings"] is not None
      return huggingface.generator_part(generator, scopes, shared), do_lower_case, path
    raise ValueError(f"--input {path!r} holds no ElectraPretrainer or electra_tf {part} model")
  prefix = official_checkpoint.resolve_checkpoint_path(path)
  if _is_object_based(prefix):
    name_map, _, _, prefix, notes = load_keras_source(prefix, hparams)
    tensors = {n: keras.ops.convert_to_numpy(v) for n, v in name_map.items()}
    saved = os.path.join(os.path.dirname(prefix), HPARAMS_FILE)
    if hparams is None and os.path.isfile(saved):
      hparams = saved
    shapes = {n: t.shape for n, t in tensors.items()}
    config, _, _, more_notes, pretrainer = _infer(shapes, hparams, source=prefix)
    _assign(checkpoint_names.official_name_map(pretrainer), tensors)
    other = ["optimizer state and step (not part of a published model)"]
  else:
    pretrainer, config, tensors, info = load_official_pretrainer(prefix, hparams)
    notes, more_notes = [], info["notes"]
    other = [n for n in tensors if checkpoint_names.is_non_model_entry(n)]
  result = huggingface.pretrainer_part(pretrainer, part, other, notes + more_notes)
  return result, config.do_lower_case, prefix


def _default_vocab_file(input_path, hparams):
  user = load_hparams(hparams) if hparams is not None else {}
  if user.get("vocab_file"):
    return user["vocab_file"]
  path = os.path.abspath(os.fspath(input_path))
  directory = path if os.path.isdir(path) else os.path.dirname(path)
  candidates = [os.path.join(directory, huggingface.VOCAB_FILE)]
  models_dir = os.path.dirname(directory)
  if os.path.basename(models_dir) == "models":  # a run's <data_dir>/models/<model_name>
    candidates.append(os.path.join(os.path.dirname(models_dir), huggingface.VOCAB_FILE))
  return next((c for c in candidates if os.path.isfile(c)), None)


def publish(input_path, output_dir, to, part=None, hparams=None, vocab_file=None):
  """Writes a Hugging Face directory (`to="huggingface"`) or keras-hub preset
  (`to="keras-hub"`) of the discriminator (default) or generator."""
  if to not in TARGETS:
    raise ValueError(f"--to {to!r}; expected one of {TARGETS}")
  part = part or huggingface.PART_DISCRIMINATOR
  if part not in (huggingface.PART_DISCRIMINATOR, huggingface.PART_GENERATOR):
    raise ValueError(f"--to {to}: --part {part!r}; expected discriminator or generator")
  huggingface.check_new_output_dir(os.fspath(output_dir))
  vocab_file = vocab_file or _default_vocab_file(input_path, hparams)
  if vocab_file is None:
    raise ValueError(
      f"--to {to}: give --vocab-file (the vocab the model was trained with; none in --hparams, "
      f"next to --input {os.fspath(input_path)!r} or in its run's data dir)"
    )
  electra_part, do_lower_case, source = load_part_for_publishing(input_path, part, hparams)
  writer = (
    huggingface.write_huggingface if to == "huggingface" else keras_hub.write_keras_hub_preset
  )
  report = writer(electra_part, output_dir, vocab_file, do_lower_case, do_lower_case)
  report.update(input=source, part=part)
  report["notes"].append(f"tokenizer: do_lower_case={do_lower_case}, vocab {vocab_file}")
  return report


def huggingface_to_keras(input_dir, output_path):
  """A Hugging Face ELECTRA directory as a `.keras` discriminator or generator
  (what `--part discriminator|generator` writes; `--direction to-official`
  turns it into the original's checkpoint)."""
  if not os.fspath(output_path).endswith(KERAS_SUFFIX):
    raise ValueError(
      f"--input {os.fspath(input_dir)!r} is a Hugging Face directory: give an --output "
      f"ending in {KERAS_SUFFIX}"
    )
  model, part, name_map, notes = huggingface.load_huggingface(input_dir)
  if part == huggingface.PART_DISCRIMINATOR:
    keras_model = _discriminator_model(model)
  else:
    keras_model = _generator_model(model, [checkpoint_names.GENERATOR_SCOPE])
  _save_keras(keras_model, output_path)
  return {
    "input": os.fspath(input_dir),
    "output": os.fspath(output_path),
    "part": part,
    "notes": notes,
    "converted": sorted(name_map),
    "not_converted": [],
  }


# -----------------------------------------------------------------------------
# CLI
# -----------------------------------------------------------------------------


def _detect_direction(input_path):
  path = os.fspath(input_path)
  if path.endswith(KERAS_SUFFIX):
    return "to-official"
  prefix = official_checkpoint.resolve_checkpoint_path(path)
  return "to-official" if _is_object_based(prefix) else "to-keras"


def convert(
  input_path,
  output_path,
  direction=None,
  part=None,
  hparams=None,
  with_optimizer_slots=False,
  global_step=None,
):
  """Runs one conversion; `direction` None detects it from the input, `part`
  None (to-keras) picks "finetuned" for a checkpoint with task heads, else
  "pretrainer". A Hugging Face ELECTRA directory becomes a `.keras` model."""
  if huggingface.is_huggingface_dir(input_path):
    if direction not in (None, "to-keras") or part is not None or hparams is not None:
      raise ValueError(
        f"--input {os.fspath(input_path)!r} is a Hugging Face directory: it becomes a "
        ".keras discriminator or generator (as its architecture says); --direction, --part "
        "and --hparams do not apply"
      )
    return huggingface_to_keras(input_path, output_path)
  detected = _detect_direction(input_path)
  if direction is None:
    direction = detected
  elif direction not in DIRECTIONS:
    raise ValueError(f"--direction {direction!r}; expected one of {DIRECTIONS}")
  elif direction != detected:
    kind = (
      "an electra_tf checkpoint/.keras model"
      if detected == "to-official"
      else ("a name-based (official) checkpoint")
    )
    hint = ""
    if detected == "to-keras":
      prefix = official_checkpoint.resolve_checkpoint_path(input_path)
      if task_groups(_open_reader(prefix).get_variable_to_shape_map()):
        hint = (
          "; a fine-tuned checkpoint written by run_finetuning already has the original's "
          "names, shapes, dtypes, slots and global_step"
        )
    raise ValueError(
      f"--direction {direction}, but --input {input_path!r} is {kind} "
      f"(use --direction {detected}){hint}"
    )
  if direction == "to-keras":
    if with_optimizer_slots or global_step is not None:
      raise ValueError(
        "--with-optimizer-slots and --global-step apply to --direction "
        "to-official; to-keras carries the slots and step over whenever the "
        "output is a training checkpoint"
      )
    return official_to_keras(input_path, output_path, part=part, hparams=hparams)
  if part is not None:
    raise ValueError(
      "--part applies to --direction to-keras; to-official writes whatever the input holds"
    )
  return keras_to_official(
    input_path,
    output_path,
    hparams=hparams,
    with_optimizer_slots=with_optimizer_slots,
    global_step=global_step,
  )


def format_report(report):
  lines = [f"Converted {report['input']} -> {report['output']}"]
  for key in ("part", "layout", "global_step"):
    if key in report:
      lines.append(f"  {key}: {report[key]}")
  for task, description in report.get("tasks", []):
    lines.append(f"  task {task}: {description}")
  if report.get("hparams") is not None:
    lines.append(f"  hparams: {json.dumps(report['hparams'], sort_keys=True)}")
  for note in report.get("notes", []):
    lines.append(f"  note: {note}")
  lines.append(f"  converted: {len(report['converted'])} entries")
  not_converted = report["not_converted"]
  lines.append(f"  not converted: {len(not_converted)} entries" + (":" if not_converted else ""))
  slots = [n for n in not_converted if n.endswith(checkpoint_names.OPTIMIZER_SLOT_SUFFIXES)]
  if slots:
    lines.append(f"    {len(slots)} optimizer slots (<variable>/adam_m, <variable>/adam_v)")
  lines += [f"    {n}" for n in not_converted if n not in set(slots)]
  return "\n".join(lines)


def main(argv=None):
  parser = argparse.ArgumentParser(
    prog="python -m electra_tf.convert_checkpoint",
    description="Convert ELECTRA checkpoints between the original's name-based TF1 format "
    "and electra_tf (training checkpoints and .keras models).",
  )
  parser.add_argument(
    "--input",
    required=True,
    help="checkpoint prefix or directory (official or electra_tf), or a .keras file",
  )
  parser.add_argument(
    "--output",
    required=True,
    help="to-keras: a directory (training checkpoint) or a .keras path; "
    "to-official: the directory for model.ckpt-<step>",
  )
  parser.add_argument(
    "--direction", choices=DIRECTIONS, default=None, help="default: detected from --input"
  )
  parser.add_argument(
    "--part",
    choices=PARTS,
    default=None,
    help="to-keras: what to convert. finetuned: a fine-tuned checkpoint's "
    "encoder and task_specific/<task>/ heads as a .keras FinetuningModel. "
    "Default: finetuned when the checkpoint has task heads, else "
    "pretrainer",
  )
  parser.add_argument(
    "--hparams",
    default=None,
    help="JSON dict or .json path of pre-training hparams (as for "
    "run_pretraining); for a fine-tuned checkpoint (--part finetuned), "
    "fine-tuning hparams (as for "
    "run_finetuning: task_names gives the heads' order, beam_size, ...) "
    "plus task_types, e.g. {\"task_types\": {\"mytask\": "
    "\"classification\"}} (classification, regression, tagging or qa) "
    "for tasks electra_tf does not know; checked against the "
    "checkpoint's shapes",
  )
  parser.add_argument(
    "--with-optimizer-slots",
    action="store_true",
    help="to-official: also write <var>/adam_m and <var>/adam_v",
  )
  parser.add_argument(
    "--global-step",
    type=int,
    default=None,
    help="to-official: the global_step to write (default: the training "
    "checkpoint's step; 0 for a .keras model)",
  )
  parser.add_argument(
    "--to",
    choices=TARGETS,
    default=None,
    help="publish the discriminator (or, with --part generator, the generator) as a "
    "Hugging Face transformers directory or a keras-hub preset directory (--output)",
  )
  parser.add_argument(
    "--vocab-file",
    default=None,
    help="--to: the vocab the model was trained with (default: vocab_file in --hparams, "
    "else vocab.txt beside --input, else <data_dir>/vocab.txt for a run's "
    "<data_dir>/models/<model_name>)",
  )
  args = parser.parse_args(argv)
  try:
    if args.to is not None:
      if args.direction or args.with_optimizer_slots or args.global_step is not None:
        raise ValueError(
          "--to publishes a model; --direction, --with-optimizer-slots and "
          "--global-step do not apply"
        )
      report = publish(args.input, args.output, args.to, args.part, args.hparams, args.vocab_file)
      print(format_report(report))
      return 0
    report = convert(
      args.input,
      args.output,
      direction=args.direction,
      part=args.part,
      hparams=args.hparams,
      with_optimizer_slots=args.with_optimizer_slots,
      global_step=args.global_step,
    )
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return 1
  print(format_report(report))
  return 0


if __name__ == "__main__":
  sys.exit(main())
