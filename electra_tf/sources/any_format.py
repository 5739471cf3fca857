"""One door for models and checkpoints: `open_source(path)` detects the
format once (`electra_tf.sources.formats`) and gives that format's `Source`;
`load(path, part)` gives part `part`, `initialize_finetuning_model(model,
path)` starts fine-tuning from it and `recorded_inputs(path)` says what the
model records about its inputs (vocab, casing, trained length). Every entry
point loads through here; a format it cannot use stops with one line.

| part | read from |
|---|---|
| `pretrainer` | official, training, keras |
| `discriminator` | official, training, keras, huggingface, keras_hub_preset |
| `generator` | official, training, keras, huggingface |
| `finetuned` | finetuned, keras, keras_hub_preset (an electra_tf task preset) |
| fine-tuning initialisation | official, finetuned, training, keras, huggingface, keras_hub_preset |

Example:
  >>> READABLE["finetuned"]
  ('finetuned', 'keras', 'keras_hub_preset')
  >>> recorded_inputs("/nonexistent").max_seq_length is None  # nothing there records a length
  True
  >>> # loaded = load("data/models/tiny", "discriminator"); loaded.model, loaded.config
"""

import atexit
import dataclasses
import os
import shutil
import tempfile
import zipfile
import zlib

from absl import logging
import keras
import tensorflow as tf

from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.checkpoints import name_based
from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.configs.hparams import RUN_CONFIG_FORMAT
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.finetune import task_builder
from electra_tf.finetune.model import FinetuningModel
from electra_tf.hparams_input import load_hparams
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
from electra_tf.sources.layout import checkpoint_encoder_sizes
from electra_tf.sources.layout import load_official_pretrainer
from electra_tf.sources.object_graph import ObjectGraph
from electra_tf.sources.object_graph import infer_hparams_from_training_checkpoint
from electra_tf.sources.object_graph import training_checkpoint_config
from electra_tf.utils import file_io
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
INITIALIZES_FINETUNING = formats.FORMATS  # every format


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
    not_loaded: the checkpoint entries that are not the model's (Adam slots,
      `global_step`, the optimizer state).
  """

  model: object
  detected: formats.Detected
  config: object = None
  notes: list = dataclasses.field(default_factory=list)
  not_loaded: list = dataclasses.field(default_factory=list)


def find_network(model, kind):
  """The discriminator encoder (an `ElectraBackbone`, head or not) or the
  `ElectraGenerator` of `model`, for `kind`: the model itself, the
  pretrainer's, or the one inside a functional model; None when there is none."""
  cls = ElectraBackbone if kind == DISCRIMINATOR else ElectraGenerator
  if isinstance(model, cls):
    return model
  if isinstance(model, ElectraPretrainer):
    return getattr(model, kind)  # None for a pretrainer without that network
  for layer in keras_compat.flatten_layers(model, include_self=False):
    if isinstance(layer, cls):
      return layer
  return None


def missing_network_error(model, kind):
  """The ValueError for a `model` without its `kind` network, with the likely cause."""
  if isinstance(model, ElectraPretrainer):
    cause = (
      " (MLM-only pre-training); export --model generator"
      if kind == DISCRIMINATOR
      else " (uniform_generator=True?)"
    )
  else:
    other = GENERATOR if kind == DISCRIMINATOR else DISCRIMINATOR
    cause = f" (it holds one network, not a pre-trainer); export --model {other}"
  return ValueError(
    f"the model ({type(model).__name__} {model.name!r}) has no {kind} network{cause}"
  )


def load_keras_file(path):
  """The model of an electra_tf `.keras` file, uncompiled (a pretrainer comes
  back built, so that all its variables exist)."""
  if os.path.isfile(path) and zipfile.is_zipfile(path):
    with zipfile.ZipFile(path) as archive:
      if not any(name.startswith("model.weights.") for name in archive.namelist()):
        raise ValueError(
          f"{os.fspath(path)!r} holds no model.weights.h5 (its weights): damaged or only "
          "partly copied? copy it again"
        )
  try:
    model = keras.saving.load_model(os.fspath(path), compile=False)
  except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as e:
    if getattr(e, "errno", None) is not None:  # the file system's, not the content's
      raise ValueError(f"{os.fspath(path)!r}: {e.strerror}") from None
    # A .keras file is a zip archive: a cut or changed one fails in zipfile or h5py.
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    raise ValueError(
      f"{os.fspath(path)!r} cannot be read as a .keras file ({first}): damaged or only "
      "partly copied? copy it again"
    ) from None
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
    raise missing_network_error(model, part)
  return network


def restore_model_variables(model, prefix, source="the given hparams"):
  """Restores an electra_tf training checkpoint's model variables into `model`.

  Each variable is saved once, under `model/...` or under the optimizer's
  `_trainable_variables` list (Keras 3 leaves layers held in Python lists out
  of the model's paths), which a stand-in optimizer reaches; every model
  variable must be covered.
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
    keras_compat.quiet_failed_restore(e)
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
  its `PretrainingConfig` and notes (see `training_checkpoint_config`); sizes
  are never guessed from the shapes (attention heads would be wrong)."""
  config, notes, described = training_checkpoint_config(
    prefix, hparams, model_name, data_dir, infer_from_shapes=False
  )
  with distribution.dtype_policy("float32"):
    model = built_pretrainer(config)
  restore_model_variables(model, prefix, described)
  return model, config, notes


def build_finetuning_model(config):
  """A built `FinetuningModel` with one head per task of a `FinetuningConfig`."""
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


def load_task_preset(path):
  """The electra_tf task model (`ElectraClassifier`, ...) of a preset that
  `save_to_preset` wrote, with every weight; None for a backbone preset."""
  task = keras_hub.preset_task(path)
  if task is None:
    return None
  config, weights = task
  config_file = os.path.join(os.fspath(path), keras_hub.TASK_CONFIG_FILE)
  try:
    model = keras.saving.deserialize_keras_object(config)
  except (TypeError, ValueError) as e:
    raise ValueError(
      f"{config_file!r} does not build "
      f"{config.get('registered_name')}: {str(e).splitlines()[0][:300]}"
    ) from None
  model.build()
  keras_hub.load_weights_file(model, weights, config_file)
  return model


# --- the run a model dir holds ----------------------------------------------------


def run_config(path):
  """The electra_tf run config (`config.json`) of the checkpoint at `path`
  (a model dir or a checkpoint prefix), or None: no checkpoint there, not an
  electra_tf run, or a run older than `config.json`. A published directory
  gets one made from what it records (`PublishedSource.recorded_run`)."""
  if not tf.io.gfile.exists(os.fspath(path)) and not tf.io.gfile.exists(f"{path}.index"):
    return None
  try:
    return open_source(path).recorded_run()
  except ValueError:
    return None


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


def _keras_file_inputs(path, with_vocab):
  """`Recorded` fields from a Keras task model's preprocessor: its lengths and,
  `with_vocab`, its vocabulary (a temporary `vocab.txt`) and casing."""
  config = formats.keras_archive_config(path)
  preprocessor = ((config.get("config") or {}).get("preprocessor") or {}).get("config") or {}
  found = {
    k: int(preprocessor[k]) for k in ("max_seq_length", "max_query_length") if preprocessor.get(k)
  }
  tokenizer = (preprocessor.get("tokenizer") or {}).get("config") or {}
  tokens = tokenizer.get("vocabulary")
  if with_vocab and isinstance(tokens, list) and tokens:
    directory = tempfile.mkdtemp(prefix="electra_vocab_")
    atexit.register(shutil.rmtree, directory, True)
    found["vocab_file"] = os.path.join(directory, "vocab.txt")
    file_io.write_atomic(found["vocab_file"], "".join(f"{token}\n" for token in tokens))
    found["vocab_source"] = os.fspath(path)
    for key in ("do_lower_case", "strip_accents"):
      found[key] = tokenizer.get(key)
  return found


def run_config_beside(path):
  """The config (`PretrainingConfig` or `FinetuningConfig`) of the electra_tf
  run whose model dir holds the `.keras` file `path`, or None."""
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
  """What a model dir's newest checkpoint was trained as: `(run_config,
  ignored)` from its `config.json` (`ignored` empty) or, without one, inferred
  from its shapes (`ignored`: the fields shapes cannot tell). `(None, ())`
  when there is no readable electra_tf pre-training checkpoint; a damaged
  `config.json` is a ValueError naming it."""
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
  """`{official name: variable}` of a loaded model (from `path`): a fine-tuning
  model's (encoder and heads), else its discriminator encoder's."""
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
  """Assigns every variable of `source`'s name map that `model` has too; returns the names."""
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
  """Mirrors the attribute path of `ElectraPretrainer` to the network `part`
  that holds the encoder, so a training checkpoint restores into it alone."""

  def __init__(self, discriminator, part):
    super().__init__()
    self.embeddings = discriminator.embeddings
    setattr(self, part, discriminator)


def _restore_encoder(model, prefix):
  encoder = model.encoder
  # An MLM-only run has no discriminator: its full-size generator is the encoder.
  no_discriminator = ObjectGraph(prefix).node("model/discriminator") is None
  part = "generator" if no_discriminator else "discriminator"
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


# --- one loader per format --------------------------------------------------------


def _check_name_based_encoder(source, bert_config, embedding_size):
  """`Source.check_encoder_fits` for a name-based checkpoint (its index only)."""
  _check_encoder_sizes(
    source, checkpoint_encoder_sizes(source.location), bert_config, embedding_size
  )


def _keras_file_encoder_sizes(path):
  """The sizes `checkpoint_encoder_sizes` gives, of the discriminator encoder a
  `.keras` archive's config.json builds (no weights read), or None."""
  for node in formats.keras_archive_nodes(path):
    config = node.get("config") if isinstance(node.get("config"), dict) else {}
    bert = config.get("bert_config")
    if isinstance(bert, dict) and node.get("class_name") != "ElectraGenerator":
      keys = ("vocab_size", "hidden_size", "num_hidden_layers", "intermediate_size")
      embedding_size = config.get("embedding_size") or bert.get("hidden_size")
      return dict({k: bert.get(k) for k in keys}, embedding_size=embedding_size)
  return None


def _check_encoder_sizes(source, stored, bert_config, embedding_size):
  if stored is None:
    return
  built = {
    "vocab_size": bert_config.vocab_size,
    "embedding_size": embedding_size or bert_config.hidden_size,
    "hidden_size": bert_config.hidden_size,
    "num_hidden_layers": bert_config.num_hidden_layers,
    "intermediate_size": bert_config.intermediate_size,
  }
  differ = [f"{k} {built[k]} (checkpoint: {v})" for k, v in stored.items() if built[k] != v]
  if differ:
    hint = " (vocab_size is the vocab's size: the vocab it was trained with?)"
    raise ValueError(
      f"the checkpoint {source.location!r} does not fit the encoder the hparams build: "
      + ", ".join(differ)
      + (hint if built["vocab_size"] != stored["vocab_size"] else "")
    )


class Source(formats.Detected):
  """A path whose format was detected once (`open_source`), with what every
  consumer asks of it; one subclass per format.

  Example:
    >>> # source = open_source("data/models/tiny"); source.load("discriminator").model
  """

  def __fspath__(self):
    return os.fspath(self.path)

  def load(self, part=PRETRAINER, hparams=None, model_name="converted", data_dir=None):
    """Part `part` (one of `PARTS`) as a `Loaded`.

    Args:
      part: one of `PARTS`.
      hparams: pre-training hparams (dict, JSON string or `.json` path) over
        a run's `config.json` or the sizes a checkpoint's shapes give; for
        `finetuned`, the fine-tuning hparams of its heads (optional).
      model_name, data_dir: the `PretrainingConfig` arguments for a training
        checkpoint without `config.json`.

    Raises:
      ValueError: one line, for a part this format cannot give or that the
        model does not hold.
    """
    if part not in PARTS:
      raise ValueError(f"part {part!r}; expected one of {PARTS}")
    formats.require(self, READABLE[part])
    return self._load(part, hparams, model_name, data_dir)

  def _load(self, part, hparams, model_name, data_dir):
    raise NotImplementedError

  def _part_of_pretrainer(self, part, pretrainer, config, notes, not_loaded):
    network = pretrainer if part == PRETRAINER else getattr(pretrainer, part)
    if network is None:
      raise missing_network_error(pretrainer, part)
    return Loaded(network, self, config, notes, not_loaded)

  def recorded_run(self):
    """The electra_tf run config (`config.json` content) that describes this
    model, or None."""
    return self.run_config

  def recorded_inputs(self, vocab_given=False):
    """What the model records about its inputs (a `Recorded`); `vocab_given`:
    the caller has a vocab of its own, so a vocab the model lacks is no error."""
    return Recorded() if self.run_config is None else _recorded_in_run_config(self.run_config)

  def check_starts_finetuning(self):
    """Refuses a model with no discriminator encoder to fine-tune (no weights read)."""

  def check_encoder_fits(self, bert_config, embedding_size):
    """Refuses, before any trial starts, a model no run config describes
    whose encoder another size builds (`bert_config`, `embedding_size`)."""

  def initialize_finetuning_model(self, model):
    """Initialises `model` (a `FinetuningModel`) from this model; returns the
    official names loaded. Name-based checkpoints load every entry named like
    one of the model's variables and ignore the rest, as the original's
    assignment map does; a shape mismatch is an error."""
    info = official_checkpoint.restore_from_name_map(
      model.official_name_map(), self.location, allow_missing=True, allow_unexpected=True
    )
    logging.info(
      "Loaded %d variables from %s (missing, left initialised: %s)",
      len(info["loaded"]),
      self.location,
      info["missing"],
    )
    return info["loaded"]


class OfficialSource(Source):
  """A name-based TF1 pre-training checkpoint: the model from its shapes
  (and the given hparams)."""

  def _load(self, part, hparams, model_name, data_dir):
    pretrainer, config, tensors, info = load_official_pretrainer(self.location, hparams)
    not_loaded = [n for n in tensors if official_names.is_non_model_entry(n)]
    return self._part_of_pretrainer(part, pretrainer, config, list(info["notes"]), not_loaded)

  def check_encoder_fits(self, bert_config, embedding_size):
    _check_name_based_encoder(self, bert_config, embedding_size)


class FinetunedSource(Source):
  """A name-based checkpoint with task heads: a `run_finetuning` trial (its
  `config.json` builds the model) or the original's (its shapes do)."""

  def _load(self, part, hparams, model_name, data_dir):
    if self.run_config is None:
      model, _, info = load_official_finetuning_model(self.location, hparams)
      return Loaded(model, self, None, list(info["notes"]))
    user = load_hparams(hparams)
    config = model_dir_lib.finetuning_config_from_run_config(self.run_config, user)
    if user:  # as run_finetuning refuses them: the trial's weights need its sizes
      model_dir_lib.check_finetuning_encoder(config, self.run_config, what="--hparams build")
    described = self.run_config["path"] + (" with --hparams over it" if user else "")
    try:
      model = read_finetuned_checkpoint(self.location, config, described)
    except ValueError as e:
      raise ValueError(f"{e} (the model built from {described})") from None
    return Loaded(model, self, config, [f"model from {described}"])

  def check_encoder_fits(self, bert_config, embedding_size):
    if self.run_config is None:  # a trial's config.json is checked where it is read
      _check_name_based_encoder(self, bert_config, embedding_size)


class TrainingSource(Source):
  """An electra_tf (object-based) training checkpoint: built from its run's
  `config.json` (else the given hparams), restored through its object graph."""

  def _load(self, part, hparams, model_name, data_dir):
    pretrainer, config, notes = read_training_checkpoint(
      self.location, hparams, model_name, data_dir
    )
    return self._part_of_pretrainer(part, pretrainer, config, notes, ["optimizer state and step"])

  def initialize_finetuning_model(self, model):
    """Restores the discriminator's (or an MLM-only run's generator's) encoder."""
    return _restore_encoder(model, self.location)


class KerasFileSource(Source):
  """An electra_tf `.keras` file: the model it holds; its run's `config.json`
  beside it records the vocab, a task model's preprocessor its lengths."""

  def _load(self, part, hparams, model_name, data_dir):
    return Loaded(_part_of_keras_model(load_keras_file(self.location), part, self.path), self)

  def recorded_inputs(self, vocab_given=False):
    try:
      found = model_dir_lib.read_run_config(os.path.dirname(os.path.abspath(self.location)))
    except ValueError:
      found = None
    recorded = Recorded() if found is None else _recorded_in_run_config(found)
    without_vocab = not (
      vocab_given or (recorded.vocab_file and os.path.isfile(recorded.vocab_file))
    )
    kept = _keras_file_inputs(self.location, with_vocab=without_vocab)
    if kept:  # the model's own preprocessor wins over the run's hparams
      recorded = dataclasses.replace(recorded, source=os.fspath(self.location), **kept)
    return recorded

  def check_encoder_fits(self, bert_config, embedding_size):
    sizes = _keras_file_encoder_sizes(self.location)
    _check_encoder_sizes(self, sizes, bert_config, embedding_size)

  def check_starts_finetuning(self):
    names = formats.keras_archive_class_names(self.path)
    if names and not names & _HOLDS_A_DISCRIMINATOR:
      electra = sorted(n for n in names if n.startswith("Electra"))
      raise ValueError(no_discriminator_error(self.path, ", ".join(electra) or "no ELECTRA class"))

  def initialize_finetuning_model(self, model):
    """Assigns every variable whose official name both models have."""
    source = _source_name_map(load_keras_file(self.path), self.path)
    return _assign_by_name(model, source, self.path)


class PublishedSource(Source):
  """A directory `convert_checkpoint --to` publishes (Hugging Face or
  keras-hub): its run config (kind `"published"`) is made from what it records."""

  def _encoder_config(self):
    """`(bert_config, embedding_size, config_path)`, or None for a directory
    with no encoder to fine-tune."""
    raise NotImplementedError

  def recorded_run(self):
    try:
      found = self._encoder_config()
    except (OSError, ValueError):
      return None  # the loader then says what is wrong with it, in one line
    if found is None:
      return None
    bert_config, embedding_size, config_path = found
    where = os.fspath(self.location)
    recorded = self.recorded_inputs(vocab_given=True)  # run_finetuning's vocab_file stands
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


class HuggingFaceSource(PublishedSource):
  """A Hugging Face ELECTRA directory: the discriminator or the generator its
  `config.json` declares; its tokenizer files record vocab and casing."""

  def _load(self, part, hparams, model_name, data_dir):
    model, found, _, notes = huggingface.load_huggingface(self.location)
    if found != part:
      raise ValueError(f"{os.fspath(self.path)!r} holds the {found}; expected the {part}")
    return Loaded(model, self, None, list(notes))

  def _encoder_config(self):
    where = os.fspath(self.location)
    part, bert_config, embedding_size, _ = huggingface.read_hf_config(where)
    if part != DISCRIMINATOR:
      return None
    return bert_config, embedding_size, os.path.join(where, huggingface.CONFIG_FILE)

  def recorded_inputs(self, vocab_given=False):
    try:
      tokenizer = huggingface.recorded_tokenizer(self.location)
    except ValueError:
      if not vocab_given:
        raise  # a damaged tokenizer_config.json is named, not read as no vocab
      tokenizer = None
    if tokenizer is None:
      return Recorded()
    vocab_file, do_lower_case, strip_accents = tokenizer
    return Recorded(vocab_file, do_lower_case, strip_accents, vocab_source=os.fspath(self.location))

  def check_starts_finetuning(self):
    part = huggingface.read_hf_config(os.fspath(self.location))[0]
    if part != DISCRIMINATOR:
      raise ValueError(
        f"{os.fspath(self.path)!r} is a Hugging Face ELECTRA {part} directory; fine-tuning "
        "starts from a discriminator (ElectraForPreTraining or a task model)"
      )

  def initialize_finetuning_model(self, model):
    source = _source_name_map(self.load(DISCRIMINATOR).model, self.path)
    return _assign_by_name(model, source, self.path)


class KerasHubPresetSource(PublishedSource):
  """A keras-hub preset directory: an ELECTRA backbone (read as a headless
  discriminator, with a warning) or an electra_tf task preset with its heads."""

  def _load(self, part, hparams, model_name, data_dir):
    where = self.location
    if part == FINETUNED:
      task_model = load_task_preset(where)
      if task_model is None:
        raise ValueError(
          f"{where!r} is a keras-hub backbone preset (an encoder, no task head); expected a "
          "fine-tuned model (fine-tune from it instead)"
        )
      return Loaded(task_model.finetuning_model, self)
    encoder, notes = keras_hub.read_keras_hub_preset(where)
    if keras_hub.preset_task(where) is None:
      logging.warning("%s: %s", where, keras_hub.UNTRAINED_HEAD)
    return Loaded(encoder, self, None, notes)

  def _encoder_config(self):
    where = os.fspath(self.location)
    _, bert_config, embedding_size = keras_hub.preset_backbone_config(where)
    return bert_config, embedding_size, os.path.join(where, keras_hub.CONFIG_FILE)

  def check_starts_finetuning(self):
    keras_hub.preset_backbone_config(self.location)  # one line for a generator's encoder

  def recorded_inputs(self, vocab_given=False):
    """Its tokenizer's vocab and casing, and a task preset's lengths."""
    where = self.location
    try:
      vocab_file, do_lower_case, strip_accents = keras_hub.preset_vocab(where)
    except ValueError as e:
      if isinstance(e, keras_hub.MissingVocabulary) and not vocab_given:
        raise  # a preset copied without its vocabulary file is named
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

  def initialize_finetuning_model(self, model):
    # A task preset gives its heads too; a backbone preset its encoder.
    source = load_task_preset(self.path)
    if source is None:
      source = keras_hub.read_keras_hub_preset(self.path)[0]
    return _assign_by_name(model, _source_name_map(source, self.path), self.path)


_SOURCE_CLASSES = {
  formats.OFFICIAL: OfficialSource,
  formats.FINETUNED: FinetunedSource,
  formats.TRAINING: TrainingSource,
  formats.KERAS: KerasFileSource,
  formats.HUGGINGFACE: HuggingFaceSource,
  formats.KERAS_HUB_PRESET: KerasHubPresetSource,
}


def open_source(path):
  """The `Source` of `path` (its format detected once; a `formats.Detected`
  or a `Source` is taken as it is)."""
  if isinstance(path, Source):
    return path
  detected = path if isinstance(path, formats.Detected) else formats.detect(path)
  return _SOURCE_CLASSES[detected.format](**dataclasses.asdict(detected))


def load(
  path, part=PRETRAINER, hparams=None, model_name="converted", data_dir=None, doing="loading"
):
  """Part `part` of the model at `path`, whatever its format (`Source.load`);
  a run stopped short of its planned steps gets a `warning:` line naming
  `doing` (`model_dir.warn_if_unfinished`; None: the caller gives it)."""
  source = open_source(path)
  loaded = source.load(part, hparams, model_name, data_dir)
  if doing:  # the run config detection read: no second read of config.json
    model_dir_lib.warn_if_unfinished(source.path, doing, source.run_config or {})
  return loaded


def recorded_inputs(path):
  """What the model at `path` records about its inputs (`Source.recorded_inputs`);
  an empty `Recorded` where nothing readable is there."""
  try:
    return open_source(path).recorded_inputs()
  except ValueError:
    return Recorded()


def initialize_finetuning_model(model, path):
  """Initialises `model` (a `FinetuningModel`) from the model at `path` (or
  its `Source`), see `Source.initialize_finetuning_model`; returns the
  official names loaded."""
  source = open_source(formats.require(path, INITIALIZES_FINETUNING))
  return source.initialize_finetuning_model(model)
