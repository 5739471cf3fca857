"""The description a model dir carries of itself: `<model_dir>/config.json`.

Training writes it next to the checkpoints, so that the converter and the
exporter rebuild the exact model (attention heads included) without the
run's `--hparams`: every hparam, each tower's architecture, and the vocab
with its normalisation.

Example:
  >>> import tempfile
  >>> from electra_tf.configs.pretraining import PretrainingConfig
  >>> model_dir = tempfile.mkdtemp()
  >>> config = PretrainingConfig("tiny", "/nonexistent", model_dir=model_dir, debug=True)
  >>> _ = write_run_config(config)
  >>> run_config = read_run_config(model_dir)
  >>> run_config["architecture"]["discriminator"]["num_attention_heads"]
  4
  >>> pretraining_config_from_run_config(run_config).debug
  True
"""

import dataclasses
import json
import os
import sys

import tensorflow as tf

from electra_tf.configs import pretraining as pretraining_lib
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.configs.hparams import RUN_CONFIG_FORMAT  # noqa: F401  (public here too)
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.text import vocab as vocab_lib
from electra_tf.utils import file_io
from electra_tf.utils import run_lock
from electra_tf.utils.file_io import write_atomic

RUN_CONFIG_FILE = "config.json"
RUN_CONFIG_VERSION = 1
KIND_PRETRAINING = "pretraining"
KIND_FINETUNING = "finetuning"
CONFIG_CLASSES = {"PretrainingConfig": PretrainingConfig, "FinetuningConfig": FinetuningConfig}

# The model's architecture (`architecture_of`): the `BertConfig` fields that
# change what a tower computes (not dropout: a resumed run may change it), the
# embedding size, and the hparams that decide which networks exist.
ARCHITECTURE_BERT_FIELDS = (
  "vocab_size",
  "hidden_size",
  "num_hidden_layers",
  "num_attention_heads",
  "intermediate_size",
  "hidden_act",
  "max_position_embeddings",
  "type_vocab_size",
)
STRUCTURE_HPARAMS = (
  "electra_objective",
  "electric_objective",
  "uniform_generator",
  "two_tower_generator",
  "untied_generator",
  "untied_generator_embeddings",
)
# Hparams that size a fine-tuning encoder / a pre-training model: taken from
# the run config of the model started from (evaluated) unless the user sets them.
ENCODER_HPARAMS = ("model_size", "model_hparam_overrides", "embedding_size", "vocab_size")
PRETRAINING_MODEL_HPARAMS = (
  ENCODER_HPARAMS + ("debug", "generator_layers", "generator_hidden_size") + STRUCTURE_HPARAMS
)


class ModelDirMismatch(ValueError):
  """The requested model is not the one a model dir (or the model a run
  starts from) holds; the message names every difference, old → new."""


def _vocab_description(vocab_file, do_lower_case, strip_accents, vocab=None):
  """Path, size, hashes and special ids of the vocab (`vocab`: its `Vocab`
  when read already) and how text is normalised for it."""
  description = {
    "file": None,
    "size": None,
    "special_ids": None,
    "do_lower_case": do_lower_case,
    "strip_accents": strip_accents,
  }
  if not vocab_file:
    return description
  local = "://" not in str(vocab_file)
  description["file"] = os.path.abspath(vocab_file) if local else str(vocab_file)
  if vocab is None and tf.io.gfile.exists(vocab_file):
    try:
      vocab = vocab_lib.Vocab.read(vocab_file)
    except ValueError:
      return description  # the run's own checks say what is wrong with it
  if vocab is not None:
    description["size"] = vocab.size
    description["sha256"] = vocab.sha256
    description["tokens_sha256"] = vocab.tokens_sha256
    description["special_ids"] = dict(vocab.special_ids)
    if vocab.kind == vocab_lib.SENTENCEPIECE or vocab.has_settings:
      # The text was normalised as the vocab was built (the builder refuses
      # other flags); the WordPiece-minded hparam defaults do not apply.
      if vocab.kind == vocab_lib.SENTENCEPIECE:
        description["kind"] = "sentencepiece"
      description["do_lower_case"] = vocab.do_lower_case
      description["strip_accents"] = vocab.strip_accents
  return description


def _architecture(config, bert_config=None):
  """The `BertConfig` dicts of the towers a `PretrainingConfig` builds, or of
  the encoder a `FinetuningConfig` builds (`bert_config`: derived already)."""
  discriminator = bert_config or pretraining_lib.get_pretraining_bert_config(config)
  towers = {"embedding_size": config.embedding_size or discriminator.hidden_size}
  if not hasattr(config, "uniform_generator"):  # fine-tuning: the encoder alone
    towers["encoder"] = discriminator.to_dict()
    return towers
  has_discriminator = config.electra_objective or config.electric_objective
  if has_discriminator:
    towers["discriminator"] = discriminator.to_dict()
  if not config.uniform_generator:
    # As the pretrainer builds it: the small generator only beside a
    # discriminator; an MLM-only run's generator is the full-size encoder.
    if has_discriminator and config.untied_generator:
      generator = pretraining_lib.get_generator_config(config, discriminator)
    else:
      generator = discriminator
    towers["generator"] = generator.to_dict()
  return towers


def run_config_dict(config, kind=KIND_PRETRAINING, architecture=None, vocab=None, bert_config=None):
  """The `config.json` content of a run.

  Args:
    config: the run's `PretrainingConfig` (or `FinetuningConfig`).
    kind: "pretraining" or "finetuning".
    architecture: `{tower: BertConfig dict}`; None computes it from the
      config (the discriminator and generator of a `PretrainingConfig`, the
      encoder of a `FinetuningConfig`).

  Returns:
    A JSON-serialisable dict.

  Raises:
    ValueError: for a `kind` other than the two (readers would refuse the file).
  """
  if kind not in (KIND_PRETRAINING, KIND_FINETUNING):
    raise ValueError(
      f"run config kind={kind!r}; expected {KIND_PRETRAINING!r} or {KIND_FINETUNING!r}"
    )
  if architecture is None:
    architecture = _architecture(config, bert_config)
  data_dir = getattr(config, "data_dir", None)
  return {
    "format": RUN_CONFIG_FORMAT,
    "version": RUN_CONFIG_VERSION,
    "kind": kind,
    "config_class": type(config).__name__,
    "model_name": config.model_name,
    "data_dir": os.path.abspath(data_dir) if data_dir and "://" not in data_dir else data_dir,
    "hparams": config.to_dict(),
    "architecture": architecture,
    "vocab": _vocab_description(
      config.vocab_file, config.do_lower_case, config.strip_accents, vocab
    ),
  }


def write_run_config(
  config, model_dir=None, kind=KIND_PRETRAINING, architecture=None, vocab=None, bert_config=None
):
  """Writes `<model_dir>/config.json` atomically (`run_config_dict`).

  Args:
    config: the run's config.
    model_dir: default `config.model_dir`.
    kind, architecture, vocab, bert_config: see `run_config_dict`.

  Returns:
    The path written.
  """
  path = os.path.join(model_dir or config.model_dir, RUN_CONFIG_FILE)
  content = run_config_dict(config, kind, architecture, vocab, bert_config)
  write_atomic(path, json.dumps(content, indent=2, sort_keys=True) + "\n")
  return path


# Where a fine-tuning trial's config.json records its step count once known.
PLANNED_STEPS = "num_train_steps"


def record_planned_steps(model_dir, steps):
  """Adds a fine-tuning trial's planned step count to its `config.json`."""
  content = read_run_config(model_dir)
  if content is not None:
    content[PLANNED_STEPS] = int(steps)
    content.pop("path")  # where it was read from, not part of the file
    path = os.path.join(model_dir, RUN_CONFIG_FILE)
    write_atomic(path, json.dumps(content, indent=2, sort_keys=True) + "\n")


def unfinished_trial_warning(path, doing, run_config=None):
  """A one-line warning when the fine-tuning trial or pre-training run at
  `path` (a dir or a checkpoint prefix in one) stopped short of the steps its
  `config.json` (`run_config`, when the caller has read it) plans, else None;
  `doing` says what the caller goes on to do."""
  path = os.fspath(path).rstrip("/")
  try:
    content = run_config if run_config is not None else read_run_config(path) or {}
  except (ValueError, tf.errors.OpError):
    return None  # a damaged config.json or a path out of reach: loading the model names it
  kind = content.get("kind")
  if kind == KIND_PRETRAINING:
    planned = (content.get("hparams") or {}).get(PLANNED_STEPS)
  else:
    planned = content.get(PLANNED_STEPS) if kind == KIND_FINETUNING else None
  if not isinstance(planned, int):
    return None
  prefix = tf.train.latest_checkpoint(path) if tf.io.gfile.isdir(path) else path
  step = (prefix or "").rpartition("-")[2]
  if not step.isdigit() or int(step) >= planned:
    return None
  run = path if tf.io.gfile.isdir(path) else os.path.dirname(path)
  what = "fine-tuning" if kind == KIND_FINETUNING else "pre-training"
  holder = run_lock.live_holder(os.path.join(run, run_lock.LOCK_FILE))
  if holder is not None:
    return (
      f"{run!r} is at step {int(step)} of {planned}: it is still training, in "
      f"{run_lock.describe(holder)}; {doing} its newest checkpoint as it is"
    )
  return (
    f"{run!r} stopped at step {int(step)} of {planned} (an interrupted {what} "
    f"run): re-run run_{what.replace('-', '')} to finish it; {doing} it as it is"
  )


def warn_if_unfinished(path, doing, run_config=None):
  """Prints `unfinished_trial_warning` as a `warning:` line on stderr; returns it."""
  unfinished = unfinished_trial_warning(path, doing, run_config)
  if unfinished:
    print(f"warning: {unfinished}", file=sys.stderr, flush=True)
  return unfinished


def run_config_path(path):
  """`config.json` of the model dir `path`, or of the dir of the checkpoint prefix `path`."""
  path = os.fspath(path)
  directory = path if tf.io.gfile.isdir(path) else os.path.dirname(path)
  return os.path.join(directory, RUN_CONFIG_FILE)


def read_run_config(path):
  """The run config of a model dir (or of a checkpoint prefix in it), or None
  when there is no `config.json` (runs of older versions).

  Raises:
    ValueError: naming the file when it is not a run config.
  """
  config_path = run_config_path(path)
  if not tf.io.gfile.exists(config_path):
    return None
  with tf.io.gfile.GFile(config_path, "r") as f:
    text = f.read()
  try:
    content = json.loads(text, object_pairs_hook=file_io.object_with_unique_keys)
  except file_io.DuplicateKeyError as e:
    raise ValueError(f"run config {config_path!r}: {e}; give each key once") from None
  except json.JSONDecodeError as e:
    raise ValueError(
      f"run config {config_path!r} is not valid JSON: {file_io.json_error(e)}"
    ) from None
  return checked_run_config(content, config_path)


def checked_run_config(content, config_path):
  """`content`, the parsed `config_path`, as `read_run_config` returns it.

  Raises:
    ValueError: naming the file when it is not a run config this version reads.
  """
  if not isinstance(content, dict) or content.get("format") != RUN_CONFIG_FORMAT:
    raise ValueError(
      f"{config_path!r} is not an electra_tf run config (no \"format\": {RUN_CONFIG_FORMAT!r})"
    )
  if content.get("version", 0) > RUN_CONFIG_VERSION:
    raise ValueError(
      f"run config {config_path!r} has version {content['version']}; this electra_tf reads "
      f"up to {RUN_CONFIG_VERSION} (upgrade electra_tf)"
    )
  content = dict(content, path=config_path)
  config_class = CONFIG_CLASSES.get(content.get("config_class"))
  if config_class is not None and isinstance(content.get("hparams"), dict):
    _check_hparams_known(content, config_class)
  return content


def _check_hparams_known(run_config, config_class):
  fields = {f.name for f in dataclasses.fields(config_class)} | {"model_name", "data_dir"}
  for key in run_config["hparams"]:
    if key not in fields:
      raise ValueError(
        f"run config {run_config.get('path')!r}: hparam {key!r} is unknown to "
        f"{config_class.__name__} (written by another electra_tf version?)"
      )


def run_hparams(run_config, config_class=None):
  """The run's hparams as `config_class(model_name, data_dir, **hparams)`
  accepts them: without derived fields, None defaults, `model_name`, `data_dir`.

  Args:
    run_config: what `read_run_config` returns.
    config_class: default: the run's own (`config_class` in the file).
  """
  if config_class is None:
    config_class = CONFIG_CLASSES.get(run_config.get("config_class"), PretrainingConfig)
  _check_hparams_known(run_config, config_class)
  fields = {f.name: f for f in dataclasses.fields(config_class)}
  hparams = {}
  for key, value in run_config["hparams"].items():
    if key in ("model_name", "data_dir"):
      continue  # the --model-name and --data-dir flags, not hparams
    field = fields[key]
    if field.metadata.get("derived") or (value is None and field.default is None):
      continue
    hparams[key] = value
  vocab_file = (run_config.get("vocab") or {}).get("file")
  if vocab_file:
    hparams["vocab_file"] = vocab_file  # absolute, unlike a relative --data-dir's
  return hparams


def _check_kind(run_config, kind, what):
  if run_config.get("kind") != kind:
    raise ValueError(
      f"run config {run_config.get('path')!r} is of a {run_config.get('kind')} run, not {what}"
    )


def pretraining_config_from_run_config(run_config, hparams=None):
  """The `PretrainingConfig` of a pre-training run, with `hparams` (a dict)
  over the run's own."""
  _check_kind(run_config, KIND_PRETRAINING, "a pre-training run")
  values = run_hparams(run_config, PretrainingConfig)
  values.update(hparams or {})
  model_name = values.pop("model_name", None) or run_config.get("model_name") or "electra"
  data_dir = run_config.get("data_dir") or os.path.dirname(run_config["path"])
  return PretrainingConfig(model_name, data_dir, **values)


# --- the architecture a run config records, and what may not change -----------


def architecture_of(run_config):
  """The model's architecture as a flat dict (`"discriminator.num_attention_heads": 2`):
  each tower's `ARCHITECTURE_BERT_FIELDS`, the embedding size and, for
  pre-training, the `STRUCTURE_HPARAMS`; nothing else.

  Args:
    run_config: a run config (`read_run_config` or `run_config_dict`).
  """
  flat = {}
  for tower, value in sorted(run_config["architecture"].items()):
    if isinstance(value, dict):
      for key in ARCHITECTURE_BERT_FIELDS:
        flat[f"{tower}.{key}"] = value.get(key)
    else:
      flat[tower] = value
  if run_config.get("kind") == KIND_PRETRAINING:
    for key in STRUCTURE_HPARAMS:
      flat[key] = run_config["hparams"].get(key)
  return flat


def value_differences(old, new, keys, missing="absent"):
  """`["key old → new", ...]` for each of `keys` whose value differs
  between the dicts `old` and `new` (`missing` where one lacks it).

  Example:
  >>> value_differences({"a": 1, "b": 2}, {"a": 1, "b": 3}, ["a", "b"])
  ['b 2 → 3']
  """
  return [
    f"{key} {json.dumps(old.get(key, missing))} → {json.dumps(new.get(key, missing))}"
    for key in keys
    if old.get(key, missing) != new.get(key, missing)
  ]


def architecture_differences(old, new, ignore=()):
  """`["discriminator.num_attention_heads 2 → 4", ...]` between two run
  configs' architectures (`architecture_of`), but the `BertConfig` fields `ignore`."""
  old_flat, new_flat = architecture_of(old), architecture_of(new)
  keys = [
    key
    for key in sorted(set(old_flat) | set(new_flat))
    if not ("." in key and key.rsplit(".", 1)[-1] in ignore)
  ]
  return value_differences(old_flat, new_flat, keys)


def check_same_architecture(existing, requested, what="the model dir", ignore=()):
  """Raises `ModelDirMismatch` (one line) when `requested` (a run config
  dict) builds another model than `existing` (a run config read from
  `what`), naming every difference (but those of the fields `ignore`)."""
  differences = architecture_differences(existing, requested, ignore)
  if differences:
    raise ModelDirMismatch(
      f"{existing.get('path', what)}: the hparams ask for another model than {what} holds: "
      + "; ".join(differences)
      + " (architecture hparams cannot change on a model dir: start a new one with another "
      "--model-name, or keep its sizes)"
    )


def model_hparams(run_config, user_hparams):
  """The hparams of a pre-training run that evaluating its model dir needs
  (`PRETRAINING_MODEL_HPARAMS`, vocab, casing, `max_seq_length`), under the user's."""
  hparams = run_hparams(run_config, PretrainingConfig)
  vocab_keys = ("vocab_file", "do_lower_case", "strip_accents", "max_seq_length")
  keep = PRETRAINING_MODEL_HPARAMS + vocab_keys
  values = {k: v for k, v in hparams.items() if k in keep and k not in user_hparams}
  values.update(user_hparams)
  return values


def encoder_hparams(run_config):
  """The fine-tuning hparams that rebuild the encoder of a run and its vocab:
  `ENCODER_HPARAMS`, `vocab_file`, `do_lower_case` and `strip_accents`. A
  debug run's shrunk sizes become `model_hparam_overrides`."""
  hparams = run_config["hparams"]
  values = {k: hparams[k] for k in ENCODER_HPARAMS if k in hparams}
  encoder = _encoder_of(run_config)
  if hparams.get("debug") and encoder is not None:
    values["model_hparam_overrides"] = {k: encoder[k] for k in ARCHITECTURE_BERT_FIELDS}
  values["embedding_size"] = run_config["architecture"].get("embedding_size")
  vocab = run_config.get("vocab") or {}
  if vocab.get("file"):
    values["vocab_file"] = vocab["file"]
  for key in ("do_lower_case", "strip_accents"):
    if vocab.get(key) is not None:
      values[key] = vocab[key]
  return values


def check_recorded_vocab(run_config, vocab_file, user_hparams):
  """Raises, naming the run config, when the vocab it recorded (the user
  set no vocab_file) is gone (the data dir moved?)."""
  recorded = (run_config.get("vocab") or {}).get("file")
  if "vocab_file" in user_hparams or not recorded or vocab_file != recorded:
    return
  if not tf.io.gfile.exists(recorded):
    raise ValueError(
      f"vocab file {recorded!r}, recorded in {run_config.get('path')!r}, {file_io.not_there(recorded)} (was the "
      "data dir moved?); pass hparam vocab_file with its place now"
    )


def _encoder_of(run_config):
  """A fine-tuning run's encoder, a pre-training run's discriminator or an
  MLM-only run's (full-size) generator."""
  architecture = run_config["architecture"]
  encoder = architecture.get("encoder") or architecture.get("discriminator")
  if encoder is None and not run_config.get("hparams", {}).get("electra_objective", True):
    encoder = architecture.get("generator")
  return encoder


def encoder_config(run_config, given=None):
  """`(bert_config_dict, embedding_size)` of the encoder of a run (a
  pre-training run's discriminator, a fine-tuning run's encoder).

  Args:
    run_config: the run's config.
    given: `(bert_config_dict, embedding_size)` the caller's size arguments
      build, or None; it must agree with the run's (`ModelDirMismatch`).
  """
  encoder = _encoder_of(run_config)
  if encoder is None:
    raise ModelDirMismatch(
      f"{run_config.get('path')}: the run has no encoder to fine-tune (no discriminator, no "
      "masked-LM generator)"
    )
  embedding_size = run_config["architecture"].get("embedding_size")
  if given is not None:
    theirs = _encoder_sizes(encoder, embedding_size)
    ours = _encoder_sizes(given[0], given[1] or given[0].get("hidden_size"))
    _raise_if_differs(theirs, ours, run_config, "the size arguments build")
  return dict(encoder), embedding_size


def _encoder_sizes(encoder, embedding_size):
  sizes = {f"encoder.{k}": encoder.get(k) for k in ARCHITECTURE_BERT_FIELDS}
  return dict(sizes, embedding_size=embedding_size)


def _raise_if_differs(theirs, ours, run_config, what):
  differences = value_differences(theirs, ours, sorted(theirs))
  if differences:
    raise ModelDirMismatch(
      f"the model at {run_config.get('path')} has another encoder than {what}: "
      + "; ".join(differences)
      + " (leave the sizes out to take the run's, or use another model)"
    )


def finetuning_hparams_over(run_config, user_hparams):
  """Fine-tuning hparams for a run that starts from the run of `run_config`:
  its `encoder_hparams` under the user's.

  Example:
    hparams = finetuning_hparams_over(read_run_config("data/models/demo"), {"task_names": ["rte"]})
  """
  values = {k: v for k, v in encoder_hparams(run_config).items() if k not in user_hparams}
  values.update(user_hparams)
  return values


def check_finetuning_encoder(
  config, run_config, bert_config=None, what="the fine-tuning hparams build (init_checkpoint)"
):
  """Raises `ModelDirMismatch` when the encoder `config` (a `FinetuningConfig`;
  `bert_config` when derived already) builds differs from `run_config`'s."""
  source = _encoder_of(run_config)
  if source is None:
    return
  built = _architecture(config, bert_config)
  theirs = _encoder_sizes(source, run_config["architecture"].get("embedding_size"))
  ours = _encoder_sizes(built["encoder"], built["embedding_size"])
  # The size name also picks fine-tuning defaults (learning rate, layer-wise
  # decay): another name over the run's sizes is a contradiction too.
  recorded_size = run_config.get("hparams", {}).get("model_size")
  if recorded_size is not None:
    theirs["model_size"], ours["model_size"] = recorded_size, config.model_size
  _raise_if_differs(theirs, ours, run_config, what)


def with_found_vocab_file(config):
  """`config` (a `FinetuningConfig`) with `vocab_file` the first of its
  `default_vocab_files` that exists (else the last, for the error)."""
  candidates = config.default_vocab_files
  if candidates:
    config.vocab_file = next((p for p in candidates if tf.io.gfile.exists(p)), candidates[-1])
  return config


def finetuning_config_from_run_config(run_config, hparams=None):
  """The `FinetuningConfig` of a fine-tuning run (its trial dir's
  `config.json`), with `hparams` (a dict) over the run's own."""
  _check_kind(run_config, KIND_FINETUNING, "a fine-tuning run")
  values = run_hparams(run_config, FinetuningConfig)
  # The trial dir, not the run's generic model dir; paths are not needed to rebuild it.
  values.pop("model_dir", None)
  values.update(hparams or {})
  model_name = run_config.get("model_name") or "electra"
  data_dir = run_config.get("data_dir") or os.path.dirname(run_config["path"])
  return with_found_vocab_file(FinetuningConfig(model_name, data_dir, **values))
