"""Publishing: the discriminator or generator of any checkpoint the converter
reads (official, electra_tf training checkpoint, `.keras`, or a Hugging Face
ELECTRA directory) as a Hugging Face transformers directory
(`electra_tf.interop.huggingface`) or a keras-hub preset
(`electra_tf.interop.keras_hub`); and a Hugging Face directory back to a
`.keras` model.

Example:
  >>> from electra_tf.convert.publish import TARGETS
  >>> TARGETS
  ('huggingface', 'keras-hub')
"""

import json
import os

from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.configs import pretraining as pretraining_config_lib
from electra_tf.convert.standalone import discriminator_model
from electra_tf.convert.standalone import generator_model
from electra_tf.convert.to_official import find_layer
from electra_tf.convert.to_official import standalone_generator_layout
from electra_tf.convert.writer import KERAS_SUFFIX
from electra_tf.convert.writer import save_keras
from electra_tf.hparams_input import load_hparams
from electra_tf.interop import huggingface
from electra_tf.interop import keras_hub
from electra_tf.models import official_names
from electra_tf.models.electra_backbone import ElectraBackbone
from electra_tf.models.electra_generator import ElectraGenerator
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.sources import any_format
from electra_tf.sources import finetuned_heads
from electra_tf.sources import formats
from electra_tf.sources.layout import NO_DATA_DIR
from electra_tf.text import vocab as vocab_lib

TARGETS = ("huggingface", "keras-hub")


def _publishing_hparams(hparams):
  """The user's hparams, validated as pre-training hparams (unknown keys raise)."""
  user = load_hparams(hparams) if hparams is not None else {}
  pretraining_config_lib.PretrainingConfig("converted", NO_DATA_DIR, **user)
  return user


def load_part_for_publishing(input_path, part, hparams=None):
  """`(huggingface.ElectraPart, normalisation, source)` of the discriminator or
  generator of any source; `normalisation` (`{"do_lower_case", "strip_accents"}`)
  is the user's hparams, else the run's or the Hugging Face tokenizer's, else True."""

  source = any_format.open_source(input_path)  # detected once (a Source given is kept)
  path = source.path
  user = _publishing_hparams(hparams)
  keys = ("do_lower_case", "strip_accents")

  def normalisation(recorded):
    values = {k: bool(recorded.get(k, True)) for k in keys}
    values.update({k: bool(user[k]) for k in keys if k in user})
    return values

  found = formats.require(source, any_format.READABLE[part]).format
  if found == formats.HUGGINGFACE:
    loaded = source.load(part)
    tokenizer_config = os.path.join(path, huggingface.TOKENIZER_CONFIG_FILE)
    recorded = {}
    if os.path.isfile(tokenizer_config):
      with open(tokenizer_config, encoding="utf-8") as f:
        recorded = json.load(f)
      if recorded.get("strip_accents") is None:  # Hugging Face's "follow lower-casing"
        recorded.pop("strip_accents", None)
    if part == huggingface.PART_DISCRIMINATOR:
      electra_part = huggingface.discriminator_part(loaded.model, notes=loaded.notes)
    else:
      scopes = [official_names.GENERATOR_SCOPE]
      electra_part = huggingface.generator_part(loaded.model, scopes, True, notes=loaded.notes)
    return electra_part, normalisation(recorded), path
  if found == formats.KERAS:
    model = any_format.load_keras_file(path)
    beside = any_format.run_config_beside(path)
    recorded = {k: getattr(beside, k) for k in keys} if beside is not None else {}
    if isinstance(model, ElectraPretrainer):
      return huggingface.pretrainer_part(model, part), normalisation(recorded), path
    discriminator = find_layer(model, ElectraBackbone)  # head or not
    generator = find_layer(model, ElectraGenerator)
    if part == huggingface.PART_DISCRIMINATOR and discriminator is not None:
      return huggingface.discriminator_part(discriminator), normalisation(recorded), path
    if part == huggingface.PART_GENERATOR and generator is not None:
      scopes, shared = standalone_generator_layout(model, generator)
      electra_part = huggingface.generator_part(generator, scopes, shared)
      return electra_part, normalisation(recorded), path
    raise ValueError(f"--input {path!r} holds no ElectraPretrainer or electra_tf {part} model")
  # Official and training checkpoints: the pretrainer, built as the run
  # built it (a run's config.json: attention heads included).
  loaded = source.load(any_format.PRETRAINER, hparams)
  not_loaded = loaded.not_loaded
  if found == formats.TRAINING:
    not_loaded = ["optimizer state and step (not part of a published model)"]
  result = huggingface.pretrainer_part(loaded.model, part, not_loaded, loaded.notes)
  recorded = {k: getattr(loaded.config, k) for k in keys}
  return result, normalisation(recorded), loaded.detected.location


def _default_vocab_file(input_path, hparams):
  user = load_hparams(hparams) if hparams is not None else {}
  if user.get("vocab_file"):
    return user["vocab_file"]
  source = any_format.open_source(input_path)
  if source.format in (formats.OFFICIAL, formats.TRAINING, formats.FINETUNED):
    run_config = source.run_config  # read with the detection; an official checkpoint has none
    if source.format == formats.OFFICIAL:
      run_config = model_dir_lib.read_run_config(source.location)  # one convert wrote may
    run_vocab = (run_config or {}).get("vocab", {}).get("file")
    if run_vocab and os.path.isfile(run_vocab):
      return run_vocab
  path = os.path.abspath(os.fspath(input_path))
  directory = path if os.path.isdir(path) else os.path.dirname(path)
  candidates = [os.path.join(directory, huggingface.VOCAB_FILE)]
  # A Hugging Face directory of a SentencePiece vocab holds its model.
  candidates.append(os.path.join(directory, huggingface.SENTENCEPIECE_FILE))
  models_dir = os.path.dirname(directory)
  if os.path.basename(models_dir) == "models":  # a run's <data_dir>/models/<model_name>
    candidates.append(os.path.join(os.path.dirname(models_dir), huggingface.VOCAB_FILE))
  return next((c for c in candidates if os.path.isfile(c)), None)


def _vocab_normalisation(vocab_file, user, run_defaults):
  """`{do_lower_case, strip_accents}` to publish `vocab_file`'s tokenizer with:
  its settings file's (the user's hparams must agree), else the user's hparams
  over a SentencePiece model's own settings, else over `run_defaults`."""
  keys = ("do_lower_case", "strip_accents")
  resolved = vocab_lib.normalisation_for_hparams(vocab_file, user)
  if resolved is not None:
    return dict(zip(keys, resolved))
  defaults = run_defaults
  if vocab_lib.vocab_kind(vocab_file) == vocab_lib.SENTENCEPIECE:
    defaults = vocab_lib.vocab_settings(vocab_file, vocab_lib.SENTENCEPIECE)
  return {k: bool(user[k]) if k in user else bool(defaults[k]) for k in keys}


def publish(input_path, output_dir, to, part=None, hparams=None, vocab_file=None):
  """Writes a Hugging Face directory (`to="huggingface"`) or keras-hub preset
  (`to="keras-hub"`) of the discriminator (default) or generator."""
  if to not in TARGETS:
    raise ValueError(f"--to {to!r}; expected one of {TARGETS}")
  source = any_format.open_source(input_path)  # detected once for every step below
  if part is None and source.format == formats.FINETUNED:
    part = any_format.FINETUNED
  if part == any_format.FINETUNED:
    report = publish_finetuned(source, output_dir, to, hparams, vocab_file)
    model_dir_lib.warn_if_unfinished(source.location, "published")
    return report
  part = part or huggingface.PART_DISCRIMINATOR
  if part not in (huggingface.PART_DISCRIMINATOR, huggingface.PART_GENERATOR):
    raise ValueError(f"--to {to}: --part {part!r}; expected discriminator or generator")
  huggingface.check_new_output_dir(os.fspath(output_dir))
  # The input first: one that cannot be published is refused as that, not
  # for a vocab it would not need.
  electra_part, normalisation, location = load_part_for_publishing(source, part, hparams)
  vocab_file = vocab_file or _default_vocab_file(source, hparams)
  if vocab_file is None:
    raise ValueError(
      f"--to {to}: give --vocab-file (the vocab the model was trained with; none in --hparams, "
      f"next to --input {os.fspath(input_path)!r} or in its run's data dir)"
    )
  normalisation = _vocab_normalisation(vocab_file, _publishing_hparams(hparams), normalisation)
  writer = (
    huggingface.write_huggingface if to == "huggingface" else keras_hub.write_keras_hub_preset
  )
  report = writer(
    electra_part,
    output_dir,
    vocab_file,
    normalisation["do_lower_case"],
    normalisation["strip_accents"],
  )
  report.update(input=location, part=part)
  report["notes"].append(
    f"tokenizer: do_lower_case={normalisation['do_lower_case']}, "
    f"strip_accents={normalisation['strip_accents']}, vocab {vocab_file}"
  )
  model_dir_lib.warn_if_unfinished(source.location, "published")
  return report


def _split_publishing_keys(hparams):
  """`(user hparams without the publishing keys, task, label_names)`."""
  user = dict(load_hparams(hparams)) if hparams is not None else {}
  task = user.pop("task", None)
  label_names = user.pop("label_names", None) or {}
  if not isinstance(label_names, dict):
    raise ValueError(
      f"--hparams label_names must be a JSON object {{task: [names]}}, got {label_names!r}"
    )
  return user, task, label_names


def publish_finetuned(input_path, output_dir, to, hparams=None, vocab_file=None):
  """One task head of a fine-tuned model (a fine-tuned checkpoint or trial
  dir, a `.keras` fine-tuning or task model, a task preset) with its
  encoder, as `ElectraForSequenceClassification` (classification,
  regression) or `ElectraForTokenClassification` (tagging).

  `hparams` are the fine-tuning hparams of the source (as for `--part
  finetuned`) plus `task` (which head, when there are several) and
  `label_names` (`{task: [names]}` where the task does not give them).
  """
  if to != "huggingface":
    raise ValueError(
      f"--to {to} --part finetuned: keras-hub has no ELECTRA task class (only ElectraBackbone "
      "and ElectraTokenizer); save the task model as an electra_tf preset (save_to_preset) or "
      "publish it with --to huggingface"
    )
  huggingface.check_new_output_dir(os.fspath(output_dir))
  user, task, label_names = _split_publishing_keys(hparams)
  loaded = any_format.load(input_path, any_format.FINETUNED, user or None, doing=None)
  model, config = loaded.model, loaded.config
  tasks = [head.task_name for head in model.heads]
  if task is None and len(tasks) != 1:
    raise ValueError(
      f"--input {os.fspath(input_path)!r} has the heads {tasks}: name the one to publish with "
      f'--hparams \'{{"task": "{tasks[0]}"}}\''
    )
  task = task or tasks[0]
  if task not in tasks:
    raise ValueError(f"--hparams task {task!r}: the model's heads are {tasks}")
  unknown = sorted(set(label_names) - set(tasks))
  if unknown:  # names typed for another model's task would be dropped silently
    raise ValueError(
      f"--hparams label_names names task {unknown[0]!r}, but the model's heads are {tasks}"
    )
  head = model.heads[tasks.index(task)]
  labels, notes = finetuned_heads.head_label_names(
    task,
    finetuned_heads.head_type(head),
    getattr(head, "num_labels", 0),
    label_names.get(task),
    config,
    input_path,
  )
  electra_part = huggingface.task_part(model, task, labels, loaded.notes + notes)
  vocab_file = vocab_file or user.get("vocab_file")
  if vocab_file is None and config is not None and os.path.isfile(config.vocab_file):
    vocab_file = config.vocab_file
  vocab_file = vocab_file or _default_vocab_file(input_path, None)
  if vocab_file is None:
    raise ValueError(
      f"--to {to}: give --vocab-file (the vocab the model was trained with; none in --hparams, "
      f"in the run or next to --input {os.fspath(input_path)!r})"
    )
  run_defaults = {k: getattr(config, k, True) for k in ("do_lower_case", "strip_accents")}
  normalisation = _vocab_normalisation(vocab_file, user, run_defaults)
  report = huggingface.write_huggingface(
    electra_part,
    output_dir,
    vocab_file,
    normalisation["do_lower_case"],
    normalisation["strip_accents"],
  )
  report.update(input=os.fspath(input_path), part=any_format.FINETUNED, task=task)
  report["notes"].append(
    f"task {task}: labels {labels}; tokenizer: do_lower_case="
    f"{normalisation['do_lower_case']}, strip_accents={normalisation['strip_accents']}, "
    f"vocab {vocab_file}"
  )
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
    keras_model = discriminator_model(model)
  else:
    keras_model = generator_model(model, [official_names.GENERATOR_SCOPE])
  save_keras(keras_model, output_path)
  return {
    "input": os.fspath(input_dir),
    "output": os.fspath(output_path),
    "part": part,
    "notes": notes,
    "converted": sorted(name_map),
    "not_converted": [],
  }


def keras_hub_preset_to_keras(input_dir, output_path, part=None):
  """A keras-hub `ElectraBackbone` preset's encoder as a `.keras`
  discriminator without head (`--part discriminator`; a backbone holds no
  head and no generator)."""
  if part not in (None, huggingface.PART_DISCRIMINATOR):
    raise ValueError(
      f"--part {part!r}: a keras-hub preset holds an encoder only; use --part discriminator"
    )
  if not os.fspath(output_path).endswith(KERAS_SUFFIX):
    raise ValueError(
      f"--input {os.fspath(input_dir)!r} is a keras-hub preset: give an --output ending in "
      f"{KERAS_SUFFIX}"
    )
  loaded = any_format.load(input_dir, any_format.DISCRIMINATOR)
  save_keras(discriminator_model(loaded.model), output_path)
  return {
    "input": os.fspath(input_dir),
    "output": os.fspath(output_path),
    "part": huggingface.PART_DISCRIMINATOR,
    "notes": loaded.notes,
    "converted": sorted(official_names.discriminator_name_map(loaded.model, include_head=False)),
    "not_converted": ["pooled_dense/kernel", "pooled_dense/bias"],
  }
