"""One door for models and checkpoints: whatever the format (see
`electra_tf.sources.formats`), `load(path, part)` gives part `part` of
it, and `initialize_finetuning_model(model, path)` starts fine-tuning from it.
The converter, the exporter, `run_finetuning`'s `init_checkpoint`, the task
models' `from_checkpoint` and publishing all come through here, so every
entry point reads every format it can make sense of, and a format it cannot
use stops with one line (`formats.wrong_format_error`).

| part | read from |
|---|---|
| `pretrainer` | official, training, keras |
| `discriminator` | official, training, keras, huggingface, keras_hub_preset |
| `generator` | official, training, keras, huggingface |
| `finetuned` | finetuned, keras, keras_hub_preset (an electra_tf task preset) |
| fine-tuning initialisation | official, finetuned, training, keras, huggingface, keras_hub_preset |

A keras-hub `ElectraBackbone` preset is an encoder without head: read as the
discriminator it has `include_head=False` (and says so in a warning), so an
export of its discriminator refuses; it holds no generator (a generator's
backbone is an encoder too, without its MLM head). A preset of another
family stops with one line.
An electra_tf training checkpoint is read one way, whatever its layout: the
model is built from its run's `config.json` (else the given hparams, else its
shapes) and its variables restored through the checkpoint's object graph,
which finds them under `model/` or under the optimizer's list of trainable
variables. (The converter's to-official direction restores the optimizer
state as well, see `convert.to_official.load_training_checkpoint`.)

What a model records about its inputs (vocab, casing, trained length) is
read here too, in one place (`recorded_inputs`): the exporter's defaults,
fine-tuning from a published directory and the task models' `from_checkpoint`
take it from there.

Example:
  >>> READABLE["finetuned"]
  ('finetuned', 'keras', 'keras_hub_preset')
  >>> recorded_inputs("/nonexistent").max_seq_length is None  # nothing there records a length
  True
  >>> # loaded = load("data/models/tiny", "discriminator"); loaded.model, loaded.config
"""

import dataclasses
import os

from absl import logging
import keras
import tensorflow as tf

from electra_tf.checkpoints import name_based
from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.configs import model_dir as model_dir_lib
from electra_tf.configs.hparams import RUN_CONFIG_FORMAT
from electra_tf.configs.hparams import load_hparams
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.finetune import task_builder
from electra_tf.finetune.model import FinetuningModel
from electra_tf.interop import huggingface
from electra_tf.interop import keras_hub
from electra_tf.models import official_names
from electra_tf.models.electra_backbone import ElectraBackbone
from electra_tf.models.electra_generator import ElectraGenerator
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.models.electra_pretrainer import built_pretrainer
from electra_tf.runtime import distribution
from electra_tf.sources import formats
from electra_tf.sources.finetuned_heads import load_official_finetuning_model
from electra_tf.sources.layout import NO_DATA_DIR
from electra_tf.sources.layout import load_official_pretrainer
from electra_tf.sources.object_graph import ObjectGraph
from electra_tf.sources.object_graph import infer_hparams_from_training_checkpoint
from electra_tf.sources.object_graph import training_checkpoint_config
from electra_tf.utils import keras_compat

PRETRAINER = "pretrainer"
DISCRIMINATOR = "discriminator"
GENERATOR = "generator"
FINETUNED = "finetuned"
PARTS = (PRETRAINER, DISCRIMINATOR, GENERATOR, FINETUNED)
_NETWORK_FORMATS = (formats.OFFICIAL, formats.TRAINING, formats.KERAS, formats.HUGGINGFACE)
READABLE = {
  PRETRAINER: (formats.OFFICIAL, formats.TRAINING, formats.KERAS),
  DISCRIMINATOR: _NETWORK_FORMATS + (formats.KERAS_HUB_PRESET,),
  GENERATOR: _NETWORK_FORMATS,
  FINETUNED: (formats.FINETUNED, formats.KERAS, formats.KERAS_HUB_PRESET),
}
INITIALIZES_FINETUNING = (
  formats.OFFICIAL,
  formats.FINETUNED,
  formats.TRAINING,
  formats.KERAS,
  formats.HUGGINGFACE,
  formats.KERAS_HUB_PRESET,
)


@dataclasses.dataclass
class Loaded:
  """What `load` read.

  Attributes:
    model: the part: an `ElectraPretrainer`, `ElectraDiscriminator`, `ElectraBackbone`,
      `ElectraGenerator` or `FinetuningModel`.
    detected: the `formats.Detected` of the path.
    config: the `PretrainingConfig` of a checkpoint's model (official and
      training checkpoints), else None.
    notes: what was inferred or ignored, one line each.
    not_loaded: the checkpoint entries that are not the model's (official
      checkpoints: Adam slots and `global_step`; training checkpoints: a
      description of the optimizer state).
  """

  model: object
  detected: formats.Detected
  config: object = None
  notes: list = dataclasses.field(default_factory=list)
  not_loaded: list = dataclasses.field(default_factory=list)


def find_network(model, kind):
  """The discriminator encoder (an `ElectraBackbone`, head or not) /
  `ElectraGenerator` of `model` for `kind`:
  the pretrainer's, the model itself, or the one inside a functional model
  (as `convert_checkpoint --part discriminator|generator` writes). None when
  there is none."""
  cls = ElectraBackbone if kind == DISCRIMINATOR else ElectraGenerator
  if isinstance(model, cls):
    return model
  if isinstance(model, ElectraPretrainer):
    return getattr(model, kind)  # None for a pretrainer without that network
  for layer in keras_compat.flatten_layers(model, include_self=False):
    if isinstance(layer, cls):
      return layer
  return None


def _missing_network_error(model, kind):
  hint = (
    " (MLM-only pre-training); export --model generator"
    if kind == DISCRIMINATOR
    else " (uniform_generator=True?)"
  )
  return ValueError(
    f"the model ({type(model).__name__} {model.name!r}) has no {kind} network{hint}"
  )


def load_keras_file(path):
  """The model of an electra_tf `.keras` file, uncompiled (a pretrainer comes
  back built, so that all its variables exist)."""
  model = keras.saving.load_model(os.fspath(path), compile=False)
  if isinstance(model, ElectraPretrainer) and not model.built:
    model.build()
  return model


def _part_of_keras_model(model, part, path):
  if part == PRETRAINER:
    if not isinstance(model, ElectraPretrainer):
      raise ValueError(
        f"{os.fspath(path)!r} holds a {type(model).__name__}, not an ElectraPretrainer; "
        "ask for its discriminator or generator"
      )
    return model
  if part == FINETUNED:
    inner = getattr(model, "finetuning_model", model)  # a Keras task model wraps one
    if not isinstance(inner, FinetuningModel):
      raise ValueError(
        f"{os.fspath(path)!r} holds a {type(model).__name__}, not a fine-tuned model"
      )
    return inner
  network = find_network(model, part)
  if network is None:
    raise _missing_network_error(model, part)
  return network


def restore_model_variables(model, prefix, source="the given hparams"):
  """Restores an electra_tf training checkpoint's model variables into `model`.

  Training checkpoints are `tf.train.Checkpoint(model=..., optimizer=...)`.
  Each variable is saved once, under the first path that reaches it: under
  `model/...`, or under the optimizer's `_trainable_variables` list (Keras 3
  leaves layers held in Python lists out of the model's own paths). A
  stand-in optimizer listing the model's trainable variables in build order
  reaches the second group; every model variable must be covered.
  """
  names = [
    n for n, _ in tf.train.list_variables(prefix) if n.endswith("/.ATTRIBUTES/VARIABLE_VALUE")
  ]
  n_model = sum(n.startswith("model/") for n in names)
  n_optimizer = sum(n.startswith("optimizer/_trainable_variables/") for n in names)
  roots = {"model": model}
  if n_optimizer:
    stand_in = keras_compat.AutoTrackable()
    stand_in._trainable_variables = list(model.trainable_variables)  # pylint: disable=protected-access
    roots["optimizer"] = stand_in
  if n_model + n_optimizer != len(model.weights):
    raise ValueError(
      f"checkpoint {prefix!r} holds {n_model} model variables and {n_optimizer} through its "
      f"optimizer, but the model built from {source} has {len(model.weights)}; "
      "it cannot restore the whole model (check the hparams)"
    )
  try:
    status = tf.train.Checkpoint(**roots).read(prefix)
  except (ValueError, tf.errors.OpError) as e:
    raise ValueError(
      f"checkpoint {prefix!r} does not fit the model built from {source}: {e}"
    ) from None
  status.expect_partial()
  try:
    status.assert_existing_objects_matched()
  except AssertionError as e:
    raise ValueError(
      f"checkpoint {prefix!r} does not hold this model's weights (built from {source}): {e}"
    ) from None


def read_training_checkpoint(prefix, hparams=None, model_name="converted", data_dir=None):
  """The float32 `ElectraPretrainer` of an electra_tf training checkpoint,
  its `PretrainingConfig` and notes (see `training_checkpoint_config`). The
  sizes are never guessed from the shapes here: a wrong number of attention
  heads would load and compute something else."""
  config, notes, described = training_checkpoint_config(
    prefix, hparams, model_name, data_dir, infer_from_shapes=False
  )
  with distribution.dtype_policy("float32"):
    model = built_pretrainer(config)
  restore_model_variables(model, prefix, described)
  return model, config, notes


def build_finetuning_model(config):
  """A built `FinetuningModel` with one head per task of a `FinetuningConfig`,
  sized as `run_finetuning` sizes it (debug mode shrinks the encoder)."""

  tasks = task_builder.get_tasks(config, tokenizer=None)
  return FinetuningModel.from_finetuning_config(config, [task.create_head() for task in tasks])


def read_finetuned_checkpoint(prefix, config, source="the given hparams"):
  """The `FinetuningModel` of `config` restored from a fine-tuned checkpoint;
  every model variable (encoder and heads) must be in it."""
  model = build_finetuning_model(config)
  if name_based.is_name_based(prefix):
    official_checkpoint.restore_from_name_map(
      model.official_name_map(), prefix, allow_unexpected=True
    )
  else:
    restore_model_variables(model, prefix, source)
  return model


def _read_finetuning_run(detected, hparams):
  """A fine-tuning run's trial dir: the model its `config.json` describes."""
  user = load_hparams(hparams)
  config = model_dir_lib.finetuning_config_from_run_config(detected.run_config, user)
  described = detected.run_config["path"] + (" with --hparams over it" if user else "")
  try:
    model = read_finetuned_checkpoint(detected.location, config, described)
  except ValueError as e:
    raise ValueError(f"{e} (the model built from {described})") from None
  return Loaded(model, detected, config, [f"model from {described}"])


def load_task_preset(path):
  """The electra_tf task model (`ElectraClassifier`, ...) of a preset that
  `save_to_preset` wrote, with every weight; None for a backbone preset."""
  task = keras_hub.preset_task(path)
  if task is None:
    return None
  config, weights = task
  try:
    model = keras.saving.deserialize_keras_object(config)
  except (TypeError, ValueError) as e:
    raise ValueError(
      f"{os.path.join(os.fspath(path), keras_hub.TASK_CONFIG_FILE)!r} does not build "
      f"{config.get('registered_name')}: {str(e).splitlines()[0][:300]}"
    ) from None
  model.build()
  keras_hub.load_weights_file(model, weights)
  return model


def _read_preset(detected, part):
  where = detected.location
  if part == FINETUNED:
    task_model = load_task_preset(where)
    if task_model is None:
      raise ValueError(
        f"{where!r} is a keras-hub backbone preset (an encoder, no task head); expected a "
        "fine-tuned model (fine-tune from it instead)"
      )
    return Loaded(task_model.finetuning_model, detected)
  encoder, notes = keras_hub.read_keras_hub_preset(where)
  if keras_hub.preset_task(where) is None:
    logging.warning("%s: %s", where, keras_hub.UNTRAINED_HEAD)
  return Loaded(encoder, detected, None, notes)


def load(path, part=PRETRAINER, hparams=None, model_name="converted", data_dir=None):
  """Part `part` of the model at `path`, whatever its format.

  Args:
    path: a checkpoint prefix or directory, a `.keras` file or a Hugging
      Face directory (see `formats`).
    part: one of `PARTS`.
    hparams: pre-training hparams (dict, JSON string or `.json` path) over
      a run's `config.json` or the sizes a checkpoint's shapes give; for
      `finetuned`, the fine-tuning hparams of its heads (optional).
    model_name, data_dir: the `PretrainingConfig` arguments for a training
      checkpoint without `config.json`.

  Returns:
    A `Loaded`.

  Raises:
    ValueError: one line, for a path of a format `part` cannot be read from
      or that does not hold `part`.
  """
  if part not in PARTS:
    raise ValueError(f"part {part!r}; expected one of {PARTS}")
  detected = formats.require(path, READABLE[part])
  where = detected.location
  if detected.format == formats.KERAS:
    return Loaded(_part_of_keras_model(load_keras_file(where), part, path), detected)
  if detected.format == formats.KERAS_HUB_PRESET:
    return _read_preset(detected, part)
  if detected.format == formats.HUGGINGFACE:
    model, found, _, notes = huggingface.load_huggingface(where)
    if found != part:
      raise ValueError(f"{os.fspath(path)!r} holds the {found}; expected the {part}")
    return Loaded(model, detected, None, list(notes))
  if detected.format == formats.FINETUNED and detected.run_config is not None:
    return _read_finetuning_run(detected, hparams)
  if detected.format == formats.FINETUNED:
    model, _, info = load_official_finetuning_model(where, hparams)
    return Loaded(model, detected, None, list(info["notes"]))
  if detected.format == formats.OFFICIAL:
    pretrainer, config, tensors, info = load_official_pretrainer(where, hparams)
    notes = list(info["notes"])
    not_loaded = [n for n in tensors if official_names.is_non_model_entry(n)]
  else:
    pretrainer, config, notes = read_training_checkpoint(where, hparams, model_name, data_dir)
    not_loaded = ["optimizer state and step"]
  if part == PRETRAINER:
    return Loaded(pretrainer, detected, config, notes, not_loaded)
  network = getattr(pretrainer, part)
  if network is None:
    raise _missing_network_error(pretrainer, part)
  return Loaded(network, detected, config, notes, not_loaded)


# --- the run a model dir holds ----------------------------------------------------


def run_config(path):
  """The electra_tf run config (`config.json`) of the checkpoint at `path`
  (a model dir or a checkpoint prefix), or None: no checkpoint there (a
  `config.json` with no checkpoint describes nothing that was kept), not an
  electra_tf run, or a run older than `config.json`.

  A Hugging Face discriminator directory or a keras-hub preset (what
  `convert_checkpoint --to` publishes) gets a run config of kind
  `"published"` made from what it records (`published_run_config`), so
  that fine-tuning and the task models take its encoder's sizes, vocab and
  casing from it as from a pre-training run's."""
  if not tf.io.gfile.exists(os.fspath(path)) and not tf.io.gfile.exists(f"{path}.index"):
    return None
  try:
    detected = formats.detect(path)
  except ValueError:
    return None
  return run_config_of(detected)


def run_config_of(detected):
  """`run_config` of a path detected already (a `formats.Detected`)."""
  if detected.format in (formats.HUGGINGFACE, formats.KERAS_HUB_PRESET):
    try:
      return published_run_config(detected)
    except (OSError, ValueError):
      return None  # the loader then says what is wrong with it, in one line
  return detected.run_config if detected.format in (formats.TRAINING, formats.FINETUNED) else None


# --- what a model records about its inputs ---------------------------------------

KIND_PUBLISHED = "published"
DEFAULT_MAX_SEQ_LENGTH = 128
DEFAULT_MAX_QUERY_LENGTH = 64


@dataclasses.dataclass(frozen=True)
class Recorded:
  """What a model records about the text it was trained on (None: not recorded).

  Attributes:
    vocab_file: its vocab (WordPiece `vocab.txt` or SentencePiece model).
    do_lower_case, strip_accents: its normalisation.
    max_seq_length: the length it was trained at.
    max_query_length, doc_stride: a QA trial's question budget and stride.
    source: the file the lengths come from.
    vocab_source: the file the vocab and casing come from.
  """

  vocab_file: str = None
  do_lower_case: bool = None
  strip_accents: bool = None
  max_seq_length: int = None
  max_query_length: int = None
  doc_stride: int = None
  source: str = None
  vocab_source: str = None


def _recorded_in_run_config(found):
  hparams = found.get("hparams") or {}
  vocab = found.get("vocab") or {}
  lengths = {k: hparams.get(k) for k in ("max_seq_length", "max_query_length", "doc_stride")}
  if found.get("kind") != model_dir_lib.KIND_FINETUNING:
    # Only fine-tuning trials (QA ones) were trained with a question budget.
    lengths.update(max_query_length=None, doc_stride=None)
  return Recorded(
    vocab_file=vocab.get("file"),
    do_lower_case=vocab.get("do_lower_case"),
    strip_accents=vocab.get("strip_accents"),
    source=found.get("path"),
    vocab_source=found.get("path"),
    **{k: int(v) if v else None for k, v in lengths.items()},
  )


def _keras_file_lengths(path):
  """The preprocessor lengths of a Keras task model saved as `.keras` (its
  archive's `config.json`), else {}."""
  config = formats.keras_archive_config(path)
  preprocessor = ((config.get("config") or {}).get("preprocessor") or {}).get("config") or {}
  return {
    k: int(preprocessor[k]) for k in ("max_seq_length", "max_query_length") if preprocessor.get(k)
  }


def recorded_inputs(path):
  """What the model at `path` records about its inputs (`Recorded`): the one
  place every entry point finds a model's vocab, casing and trained length.

  - an electra_tf run dir (pre-training or fine-tuning trial) or a
    checkpoint in it: its `config.json` (`max_seq_length`; a fine-tuning
    trial's `max_query_length` and `doc_stride`; the vocab and casing);
  - a `.keras` file: the `config.json` of the run dir that holds it, and a
    task model's preprocessor lengths;
  - a Hugging Face directory: its `vocab.txt` or `sentencepiece.model` and
    `tokenizer_config.json`'s casing (`huggingface.recorded_tokenizer`);
    no length (its `max_position_embeddings` is the position table, not a
    trained length);
  - a keras-hub preset: its tokenizer assets and lower-casing
    (`keras_hub.preset_vocab`), and an electra_tf task preset's
    preprocessor lengths;
  - an official checkpoint: nothing.

  Unreadable records give None fields (the loaders report them).
  """
  try:
    detected = formats.detect(path)
  except ValueError:
    return Recorded()
  where = detected.location
  if detected.format in (formats.TRAINING, formats.FINETUNED):
    found = detected.run_config
    return Recorded() if found is None else _recorded_in_run_config(found)
  if detected.format == formats.KERAS:
    try:
      found = model_dir_lib.read_run_config(os.path.dirname(os.path.abspath(where)))
    except ValueError:
      found = None
    recorded = Recorded() if found is None else _recorded_in_run_config(found)
    lengths = _keras_file_lengths(where)
    if lengths:  # the model's own preprocessor wins over the run's hparams
      recorded = dataclasses.replace(recorded, source=os.fspath(where), **lengths)
    return recorded
  if detected.format == formats.HUGGINGFACE:
    try:
      tokenizer = huggingface.recorded_tokenizer(where)
    except ValueError:
      tokenizer = None
    if tokenizer is None:
      return Recorded()
    vocab_file, do_lower_case, strip_accents = tokenizer
    return Recorded(vocab_file, do_lower_case, strip_accents, vocab_source=os.fspath(where))
  if detected.format == formats.KERAS_HUB_PRESET:
    try:
      vocab_file, do_lower_case, strip_accents = keras_hub.preset_vocab(where)
    except ValueError:
      vocab_file = do_lower_case = strip_accents = None
    try:
      lengths = keras_hub.preset_lengths(where)
    except ValueError:
      lengths = {}
    source = os.path.join(os.fspath(where), keras_hub.TASK_CONFIG_FILE) if lengths else None
    return Recorded(
      vocab_file,
      do_lower_case,
      strip_accents,
      source=source,
      vocab_source=os.fspath(where),
      **lengths,
    )
  return Recorded()


def published_run_config(detected):
  """A run config (kind `"published"`) describing the encoder of a Hugging
  Face discriminator directory or a keras-hub preset: its sizes as
  `model_hparam_overrides`, its embedding size, its vocab and casing and,
  for a task preset, its length. None for a Hugging Face generator (no
  encoder to fine-tune)."""
  where = os.fspath(detected.location)
  if detected.format == formats.HUGGINGFACE:
    part, bert_config, embedding_size, _ = huggingface.read_hf_config(where)
    if part != DISCRIMINATOR:
      return None
    config_path = os.path.join(where, huggingface.CONFIG_FILE)
  else:
    _, bert_config, embedding_size = keras_hub.preset_backbone_config(where)
    config_path = os.path.join(where, keras_hub.CONFIG_FILE)
  recorded = recorded_inputs(where)
  sizes = {k: bert_config[k] for k in model_dir_lib.ARCHITECTURE_BERT_FIELDS}
  hparams = {
    "model_size": "base",  # every size below overrides the table's
    "model_hparam_overrides": {k: v for k, v in sizes.items() if k != "vocab_size"},
    "vocab_size": bert_config["vocab_size"],
    "embedding_size": embedding_size,
  }
  if recorded.max_seq_length:
    hparams["max_seq_length"] = recorded.max_seq_length
  return {
    "format": RUN_CONFIG_FORMAT,
    "version": model_dir_lib.RUN_CONFIG_VERSION,
    "kind": KIND_PUBLISHED,
    "config_class": None,
    "model_name": os.path.basename(os.path.abspath(where)),
    "data_dir": None,
    "hparams": hparams,
    "architecture": {"encoder": dict(bert_config), "embedding_size": embedding_size},
    "vocab": {
      "file": recorded.vocab_file,
      "size": bert_config["vocab_size"],
      "do_lower_case": recorded.do_lower_case,
      "strip_accents": recorded.strip_accents,
    },
    "path": config_path,
  }


def run_config_beside(path):
  """The config (`PretrainingConfig` or `FinetuningConfig`) of the electra_tf
  run whose model dir holds the `.keras` file `path`, or None: what a
  `.keras` model does not record (its vocab file, `do_lower_case`)."""
  try:
    found = model_dir_lib.read_run_config(os.path.dirname(os.path.abspath(os.fspath(path))))
    if found is None:
      return None
    if found.get("kind") == model_dir_lib.KIND_FINETUNING:
      return model_dir_lib.finetuning_config_from_run_config(found)
    return model_dir_lib.pretraining_config_from_run_config(found)
  except ValueError:
    return None


def existing_architecture(model_dir):
  """What a model dir's newest checkpoint was trained as, for comparing a
  re-run's hparams with it: `(run_config, ignored)` from its `config.json`
  (`ignored` empty), or, for a pre-training checkpoint without one, a run
  config inferred from its variables' shapes with `ignored` the fields the
  shapes cannot tell (attention heads, activation). `(None, ())` when the
  dir holds no electra_tf pre-training checkpoint (or its shapes cannot be
  read: restoring then reports the mismatch). A damaged `config.json` is a
  one-line ValueError naming it: the checks it feeds must not be skipped."""
  model_dir = os.fspath(model_dir)
  if tf.io.gfile.isdir(model_dir):
    prefix = tf.train.latest_checkpoint(model_dir)
  else:  # a checkpoint prefix in it
    prefix = model_dir if tf.io.gfile.exists(model_dir + ".index") else None
  if prefix is None:
    return None, ()
  if tf.io.gfile.exists(model_dir_lib.run_config_path(prefix)):
    try:
      return model_dir_lib.read_run_config(prefix), ()
    except ValueError as e:
      raise ValueError(
        f"{e}; it records the model the checkpoints hold: restore it (or delete it to check "
        "the hparams against the checkpoint's shapes alone)"
      ) from None
  try:
    hparams, _ = infer_hparams_from_training_checkpoint(prefix)
    inferred = model_dir_lib.run_config_dict(PretrainingConfig("inferred", NO_DATA_DIR, **hparams))
  except (ValueError, KeyError, tf.errors.OpError):
    return None, ()
  inferred["path"] = f"{prefix} (its variables' shapes; no config.json)"
  return inferred, ("num_attention_heads", "hidden_act")


# --- fine-tuning initialisation --------------------------------------------------


def _source_name_map(source, path):
  """`{official name: variable}` of a loaded model (from `path`): a
  fine-tuning model (encoder and heads), a model wrapping one, a
  pretrainer's discriminator encoder, or a lone `ElectraBackbone` / discriminator."""
  if isinstance(source, FinetuningModel):
    return source.official_name_map()
  inner = getattr(source, "finetuning_model", None)
  if inner is not None:
    return inner.official_name_map()
  encoder = find_network(source, DISCRIMINATOR)
  if encoder is None:
    raise ValueError(no_discriminator_error(path, type(source).__name__))
  return official_names.discriminator_name_map(encoder, include_head=False)


def _assign_by_name(model, source, path):
  """Assigns every variable of `source`'s name map that `model` has too
  (encoder; heads of the same task name); returns the names."""
  target = model.official_name_map()
  names = sorted(n for n in target if n in source)
  mismatched = [
    f"{n}: {list(source[n].shape)} vs {list(target[n].shape)}"
    for n in names
    if list(source[n].shape) != list(target[n].shape)
  ]
  if mismatched or not any(n.startswith("electra/encoder/") for n in names):
    raise ValueError(
      f"{os.fspath(path)!r} does not fit the model (another size or vocab?): "
      + ("; ".join(mismatched[:5]) or "no encoder variables in common")
    )
  for name in names:
    target[name].assign(tf.cast(source[name], target[name].dtype))
  logging.info("Loaded %d variables from %s", len(names), path)
  return names


class _EncoderHolder(tf.Module):
  """Mirrors the attribute path of `ElectraPretrainer` to the network that
  holds the encoder to fine-tune (`part`: "discriminator" for ELECTRA and
  Electric runs, "generator" for an MLM-only run, whose full-size generator
  is the encoder), so an electra_tf training checkpoint restores into a
  lone encoder."""

  def __init__(self, discriminator, part):
    super().__init__()
    self.embeddings = discriminator.embeddings
    setattr(self, part, discriminator)


def _encoder_part(prefix):
  """The pretrainer attribute that holds the encoder in the training
  checkpoint at `prefix`: "discriminator", or "generator" for an MLM-only
  run (it has no discriminator)."""
  if ObjectGraph(prefix).node("model/discriminator") is None:
    return "generator"
  return "discriminator"


def _restore_encoder(model, prefix):
  encoder = model.encoder
  part = _encoder_part(prefix)
  # Variables are matched through the checkpoint's object graph (its keys
  # may name them by another path, e.g. the optimizer's).
  try:
    status = tf.train.Checkpoint(model=_EncoderHolder(encoder, part)).restore(prefix)
    status.assert_existing_objects_matched()
  except (AssertionError, ValueError) as e:
    what = "discriminator" if part == "discriminator" else "masked-LM encoder"
    raise ValueError(
      f"checkpoint {prefix!r} does not hold the {what} of an electra_tf pre-training "
      f"checkpoint of this model size ({len(encoder.weights)} variables): "
      f"{str(e).splitlines()[0][:200]}"
    ) from None
  status.expect_partial()
  return sorted(official_names.discriminator_name_map(encoder, include_head=False))


# What a .keras file that can start fine-tuning holds somewhere in it.
_HOLDS_A_DISCRIMINATOR = {
  "ElectraBackbone", "ElectraDiscriminator", "ElectraPretrainer", "FinetuningModel", "ElectraClassifier",
  "ElectraQuestionAnswerer", "ElectraTokenTagger",
}  # fmt: skip


def no_discriminator_error(path, holds):
  return (
    f"{os.fspath(path)!r} is a .keras model ({holds}) with no ELECTRA discriminator encoder to "
    "fine-tune from; give a discriminator, pretrainer or fine-tuned model (a generator "
    "alone cannot start fine-tuning)"
  )


def check_starts_finetuning(detected):
  """Refuses, from its config alone (no weights read), a model that holds no
  discriminator encoder: a `.keras` standalone generator, say, or a Hugging
  Face generator directory."""
  path = detected.path
  if detected.format == formats.KERAS:
    names = formats.keras_archive_class_names(path)
    if names and not names & _HOLDS_A_DISCRIMINATOR:
      electra = sorted(n for n in names if n.startswith("Electra"))
      raise ValueError(no_discriminator_error(path, ", ".join(electra) or "no ELECTRA class"))
  elif detected.format == formats.HUGGINGFACE:
    part = huggingface.read_hf_config(os.fspath(detected.location))[0]
    if part != DISCRIMINATOR:
      raise ValueError(
        f"{os.fspath(path)!r} is a Hugging Face ELECTRA {part} directory; fine-tuning starts "
        "from a discriminator (ElectraForPreTraining or a task model)"
      )


def initialize_finetuning_model(model, path):
  """Initialises `model` (a `FinetuningModel`) from the model at `path` (or
  its `formats.Detected`, when the caller has detected it).

  Name-based checkpoints (the original's, the released models, fine-tuned
  models) load every entry whose name equals one of the model's official
  names — encoder and, for a fine-tuned checkpoint, the heads — and ignore
  the rest (generator, discriminator head, Adam slots, `global_step`), as
  the original's assignment map does. A variable missing from the
  checkpoint keeps its initial value; a shape mismatch is an error. An
  electra_tf training checkpoint restores the discriminator's embeddings and
  encoder; a `.keras` model or a Hugging Face discriminator gives every
  variable whose official name both models have.

  Returns:
    The official names loaded.
  """
  detected = formats.require(path, INITIALIZES_FINETUNING)
  path = detected.path
  if detected.format == formats.KERAS:
    return _assign_by_name(model, _source_name_map(load_keras_file(path), path), path)
  if detected.format == formats.HUGGINGFACE:
    return _assign_by_name(model, _source_name_map(load(path, DISCRIMINATOR).model, path), path)
  if detected.format == formats.KERAS_HUB_PRESET:
    # A task preset gives its heads too; a backbone preset its encoder.
    source = load_task_preset(path)
    if source is None:
      source = keras_hub.read_keras_hub_preset(path)[0]
    return _assign_by_name(model, _source_name_map(source, path), path)
  if detected.format == formats.TRAINING:
    return _restore_encoder(model, detected.location)
  info = official_checkpoint.restore_from_name_map(
    model.official_name_map(), detected.location, allow_missing=True, allow_unexpected=True
  )
  logging.info(
    "Loaded %d variables from %s (missing, left initialised: %s)",
    len(info["loaded"]),
    detected.location,
    info["missing"],
  )
  return info["loaded"]
