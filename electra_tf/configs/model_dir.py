"""The description a model dir carries of itself: `<model_dir>/config.json`.

`run_pretraining` writes it next to the checkpoints (and fine-tuning can call
`write_run_config` the same way), so that the converter and the exporter
rebuild the exact model, attention heads included, without the run's
`--hparams`. It holds every hparam of the run, the architecture of the
discriminator and the generator, the vocab (path, size, special-token ids)
and `do_lower_case`.

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

import tensorflow as tf

from electra_tf.configs import pretraining as pretraining_lib
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.text import vocab as vocab_lib
from electra_tf.utils.file_io import write_atomic

RUN_CONFIG_FILE = "config.json"
RUN_CONFIG_FORMAT = "electra_tf.run_config"
RUN_CONFIG_VERSION = 1
KIND_PRETRAINING = "pretraining"
KIND_FINETUNING = "finetuning"


def _vocab_description(vocab_file, do_lower_case):
  """Path (absolute), size and special ids of the vocab, or what is missing."""

  description = {"file": None, "size": None, "special_ids": None, "do_lower_case": do_lower_case}
  if not vocab_file:
    return description
  local = "://" not in str(vocab_file)
  description["file"] = os.path.abspath(vocab_file) if local else str(vocab_file)
  if tf.io.gfile.exists(vocab_file):
    vocab = vocab_lib.load_vocab(vocab_file)
    description["size"] = len(vocab)
    try:
      description["special_ids"] = vocab_lib.special_ids_of(vocab, vocab_file)
    except ValueError:
      pass  # the run's own checks report a vocab without special tokens
  return description


def _architecture(config):
  """The `BertConfig` dicts of the towers a `PretrainingConfig` builds, or of
  the encoder a `FinetuningConfig` builds (sized by the same rules)."""

  discriminator = pretraining_lib.get_pretraining_bert_config(config)
  towers = {"embedding_size": config.embedding_size or discriminator.hidden_size}
  if not hasattr(config, "uniform_generator"):  # fine-tuning: the encoder alone
    towers["encoder"] = discriminator.to_dict()
    return towers
  if config.electra_objective or config.electric_objective:
    towers["discriminator"] = discriminator.to_dict()
  if not config.uniform_generator:
    if config.untied_generator:
      generator = pretraining_lib.get_generator_config(config, discriminator)
    else:
      generator = discriminator
    towers["generator"] = generator.to_dict()
  return towers


def run_config_dict(config, kind=KIND_PRETRAINING, architecture=None):
  """The `config.json` content of a run.

  Args:
    config: the run's `PretrainingConfig` (or `FinetuningConfig`).
    kind: "pretraining" or "finetuning".
    architecture: `{tower: BertConfig dict}`; None computes it from the
      config (the discriminator and generator of a `PretrainingConfig`, the
      encoder of a `FinetuningConfig`).

  Returns:
    A JSON-serialisable dict.
  """
  if architecture is None:
    architecture = _architecture(config)
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
    "vocab": _vocab_description(config.vocab_file, config.do_lower_case),
  }


def write_run_config(config, model_dir=None, kind=KIND_PRETRAINING, architecture=None):
  """Writes `<model_dir>/config.json` atomically (`run_config_dict`).

  Args:
    config: the run's config.
    model_dir: default `config.model_dir`.
    kind, architecture: see `run_config_dict`.

  Returns:
    The path written.
  """
  model_dir = model_dir or config.model_dir
  path = os.path.join(model_dir, RUN_CONFIG_FILE)
  content = run_config_dict(config, kind, architecture)
  write_atomic(path, json.dumps(content, indent=2, sort_keys=True) + "\n")
  return path


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
    content = json.loads(text)
  except json.JSONDecodeError as e:
    raise ValueError(f"run config {config_path!r} is not valid JSON: {e}") from None
  if not isinstance(content, dict) or content.get("format") != RUN_CONFIG_FORMAT:
    raise ValueError(
      f"{config_path!r} is not an electra_tf run config (no \"format\": {RUN_CONFIG_FORMAT!r})"
    )
  if content.get("version", 0) > RUN_CONFIG_VERSION:
    raise ValueError(
      f"run config {config_path!r} has version {content['version']}; this electra_tf reads "
      f"up to {RUN_CONFIG_VERSION} (upgrade electra_tf)"
    )
  content["path"] = config_path
  return content


def run_hparams(run_config, config_class=None):
  """The run's hparams as `config_class(model_name, data_dir, **hparams)`
  accepts them: without derived fields and unset (None) defaults.

  Args:
    run_config: what `read_run_config` returns.
    config_class: default `PretrainingConfig` for a pre-training run.
  """
  if config_class is None:
    config_class = PretrainingConfig
  fields = {f.name: f for f in dataclasses.fields(config_class)}
  hparams = {}
  for key, value in run_config["hparams"].items():
    field = fields.get(key)
    if field is None:
      raise ValueError(
        f"run config {run_config.get('path')!r}: hparam {key!r} is unknown to "
        f"{config_class.__name__} (written by another electra_tf version?)"
      )
    if field.metadata.get("derived") or (value is None and field.default is None):
      continue
    hparams[key] = value
  vocab_file = (run_config.get("vocab") or {}).get("file")
  if vocab_file:
    hparams["vocab_file"] = vocab_file  # absolute, unlike a relative --data-dir's
  return hparams


def pretraining_config_from_run_config(run_config, hparams=None):
  """The `PretrainingConfig` of a pre-training run, with `hparams` (a dict)
  over the run's own."""

  if run_config.get("kind") != KIND_PRETRAINING:
    raise ValueError(
      f"run config {run_config.get('path')!r} is of a {run_config.get('kind')} run, "
      "not a pre-training run"
    )
  values = run_hparams(run_config, PretrainingConfig)
  values.update(hparams or {})
  model_name = values.pop("model_name", None) or run_config.get("model_name") or "electra"
  data_dir = run_config.get("data_dir") or os.path.dirname(run_config["path"])
  return PretrainingConfig(model_name, data_dir, **values)
