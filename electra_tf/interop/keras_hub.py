"""Publishes an ELECTRA encoder as a keras-hub preset directory, which
`keras_hub.models.ElectraBackbone.from_preset(dir)` and the tokenizer's
`from_preset` load, and reads such presets back.

keras-hub's backbone differs from the original's model in two ways: its
tanh pooler (`pooled_dense`), which ELECTRA lacks, is set to the identity
kernel and a zero bias; and it computes the tanh GELU, the original the exact
one, so `sequence_output` is close to, not equal to, electra_tf's
(docs/publish.md gives the measured size). The heads are not converted.

Example:
>>> from electra_tf.models import ElectraDiscriminator
>>> disc = ElectraDiscriminator({"vocab_size": 100, "hidden_size": 16,
...     "num_hidden_layers": 1, "num_attention_heads": 2,
...     "intermediate_size": 64}, embedding_size=8)
>>> disc.build()
>>> part = huggingface.discriminator_part(disc)
>>> backbone, converted, not_converted = build_keras_hub_backbone(part)
>>> backbone.embedding_dim, not_converted[0]
(8, 'discriminator_predictions/dense/bias')
"""

import json
import os
import warnings

import h5py
import keras
import numpy as np

from electra_tf.interop import huggingface
from electra_tf.models import official_names
from electra_tf.models.electra_backbone import ElectraBackbone
from electra_tf.text import vocab as vocab_lib
from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.utils import keras_compat
from electra_tf.utils.file_io import atomic_path
from electra_tf.utils.file_io import json_error
from electra_tf.utils.file_io import write_atomic

POOLER_INITIALISATION = "pooled_dense: identity kernel, zero bias (ELECTRA has no pooler)"


def _scope(part):
  """The official scope of the part's encoder (`electra` or `generator`)."""
  prefix = "/encoder/layer_0/attention/self/query/kernel"
  scopes = [n[: -len(prefix)] for n in part.tensors if n.endswith(prefix)]
  if len(scopes) != 1:
    raise ValueError(f"expected one encoder tower in the {part.part}, found scopes {scopes}")
  return scopes[0]


def _embeddings_scope(part):
  scopes = [n.split("/")[0] for n in part.tensors if n.endswith("/embeddings/word_embeddings")]
  if len(scopes) != 1:
    raise ValueError(f"expected one embeddings block in the {part.part}, found {scopes}")
  return scopes[0]


def keras_hub_backbone_config(part):
  """`ElectraBackbone` constructor arguments for an `ElectraPart`."""
  c = part.bert_config
  return {
    "vocab_size": int(c["vocab_size"]),
    "num_layers": int(c["num_hidden_layers"]),
    "num_heads": int(c["num_attention_heads"]),
    "hidden_dim": int(c["hidden_size"]),
    "embedding_dim": int(part.embedding_size),
    "intermediate_dim": int(c["intermediate_size"]),
    "dropout": float(c["hidden_dropout_prob"]),
    "max_sequence_length": int(c["max_position_embeddings"]),
    "num_segments": int(c["type_vocab_size"]),
  }


def _backbone_names(backbone, emb, scope, has_projection):
  """`[(keras variable, official name or None, reshape)]` for every backbone
  weight, used both ways. The name is None for weights ELECTRA does not have;
  `reshape` says keras-hub splits the weight by head."""
  out = []

  def add(variable, name, reshape=False):
    out.append((variable, name, reshape))

  add(backbone.token_embedding.embeddings, f"{emb}/word_embeddings")
  add(backbone.position_embedding.position_embeddings, f"{emb}/position_embeddings")
  add(backbone.segment_embedding.embeddings, f"{emb}/token_type_embeddings")
  add(backbone.embeddings_layer_norm.gamma, f"{emb}/LayerNorm/gamma")
  add(backbone.embeddings_layer_norm.beta, f"{emb}/LayerNorm/beta")
  if has_projection:
    add(backbone.embeddings_projection.kernel, f"{scope}/embeddings_project/kernel")
    add(backbone.embeddings_projection.bias, f"{scope}/embeddings_project/bias")
  for i, layer in enumerate(backbone.transformer_layers):
    p = f"{scope}/encoder/layer_{i}"
    parts = keras_compat.keras_hub_transformer_encoder_parts(layer)
    for key in ("query", "key", "value"):
      add(parts[key].kernel, f"{p}/attention/self/{key}/kernel", True)
      add(parts[key].bias, f"{p}/attention/self/{key}/bias", True)
    output = parts["attention_output"]
    add(output.kernel, f"{p}/attention/output/dense/kernel", True)
    add(output.bias, f"{p}/attention/output/dense/bias")
    for key, name in (
      ("attention_layer_norm", "attention/output/LayerNorm"),
      ("output_layer_norm", "output/LayerNorm"),
    ):
      add(parts[key].gamma, f"{p}/{name}/gamma")
      add(parts[key].beta, f"{p}/{name}/beta")
    for key, name in (("intermediate", "intermediate/dense"), ("output", "output/dense")):
      add(parts[key].kernel, f"{p}/{name}/kernel")
      add(parts[key].bias, f"{p}/{name}/bias")
  add(backbone.pooled_dense.kernel, None)
  add(backbone.pooled_dense.bias, None)
  return out


def _backbone_assignments(backbone, part):
  """`[(keras variable, official name or None, value)]` for every backbone weight."""
  t = part.tensors
  scope = _scope(part)
  hidden = int(part.bert_config["hidden_size"])
  names = _backbone_names(
    backbone,
    f"{_embeddings_scope(part)}/embeddings",
    scope,
    f"{scope}/embeddings_project/kernel" in t,
  )
  pooler = {
    id(backbone.pooled_dense.kernel): np.eye(hidden, dtype=np.float32),
    id(backbone.pooled_dense.bias): np.zeros((hidden,), np.float32),
  }
  assignments = []
  for variable, name, reshape in names:
    if name is None:
      value = pooler[id(variable)]
    else:
      value = t[name].reshape(tuple(variable.shape)) if reshape else t[name]
    assignments.append((variable, name, value))
  return assignments


def build_keras_hub_backbone(part):
  """A `keras_hub.models.ElectraBackbone` holding the part's encoder.

  Returns:
    `(backbone, converted, not_converted)`: the official names set into
    the backbone and those of the part that are not (its head).

  Raises:
    ValueError: a backbone weight left unset, or set twice.
  """
  import keras_hub  # pylint: disable=g-import-not-at-top

  backbone = keras_hub.models.ElectraBackbone(**keras_hub_backbone_config(part))
  assignments = _backbone_assignments(backbone, part)
  assigned = {id(v) for v, _, _ in assignments}
  unset = [v.path for v in backbone.weights if id(v) not in assigned]
  if unset or len(assigned) != len(assignments):
    raise ValueError(f"keras-hub's ElectraBackbone weights not set exactly once: {unset}")
  for variable, name, value in assignments:
    if tuple(variable.shape) != tuple(value.shape):
      raise ValueError(
        f"{name}: shape {tuple(value.shape)} does not fit keras-hub's {variable.path} "
        f"{tuple(variable.shape)}"
      )
    variable.assign(value)
  converted = sorted(name for _, name, _ in assignments if name is not None)
  not_converted = sorted(set(part.tensors) - set(converted))
  return backbone, converted, not_converted


def write_keras_hub_preset(part, output_dir, vocab_file, do_lower_case=True, strip_accents=True):
  """Writes a keras-hub preset directory (backbone and tokenizer).

  Args:
    part: a `huggingface.ElectraPart` (discriminator or generator encoder).
    output_dir: a new (or empty) directory; it appears complete or not at all.
    vocab_file: the vocab the model was trained with: a WordPiece vocab.txt or
      a SentencePiece model without lower-casing or accent stripping.
    do_lower_case, strip_accents: the tokenizer's normalisation.

  Returns:
    A report dict: `output`, `converted`, `not_converted`, `notes`.
  """
  import keras_hub  # pylint: disable=g-import-not-at-top

  output_dir = os.fspath(output_dir)
  huggingface.check_new_output_dir(output_dir)
  vocab_size = int(part.bert_config["vocab_size"])
  if vocab_lib.vocab_kind(vocab_file) == vocab_lib.SENTENCEPIECE:
    if do_lower_case or strip_accents:
      raise ValueError(
        f"--to keras-hub: vocab file {vocab_file!r} is a SentencePiece model built with "
        "lower-casing or accent stripping, which keras-hub's SentencePieceTokenizer cannot "
        "apply; publish it --to huggingface"
      )
    proto = huggingface.read_sentencepiece_vocab(vocab_file, vocab_size).proto
    # keras-hub's generic tokenizer runs the model as electra_tf does (docs/publish.md).
    tokenizer = keras_hub.tokenizers.SentencePieceTokenizer(proto=bytes(proto))
  else:
    tokenizer = keras_hub.models.ElectraTokenizer(
      vocabulary=huggingface.read_vocab(vocab_file, vocab_size),
      lowercase=bool(do_lower_case),
      strip_accents=bool(do_lower_case and strip_accents),
    )
  backbone, converted, not_converted = build_keras_hub_backbone(part)
  if os.path.isdir(output_dir):
    os.rmdir(output_dir)  # empty: atomic_path renames a new directory into place
  with atomic_path(output_dir, weights=backbone.weights) as tmp:
    backbone.save_to_preset(tmp)
    tokenizer.save_to_preset(tmp)
    if _scope(part) != "electra":
      # Said, so electra_tf never reads a generator's encoder as a discriminator to fine-tune.
      write_atomic(os.path.join(tmp, GENERATOR_MARKER_FILE), json.dumps({"part": "generator"}))
  notes = list(part.notes) + [
    POOLER_INITIALISATION,
    "keras-hub's ElectraBackbone uses the tanh GELU approximation; the original the exact one",
  ]
  return {
    "output": output_dir,
    "converted": converted,
    "not_converted": not_converted + list(part.not_converted),
    "notes": notes,
  }


# -----------------------------------------------------------------------------
# Presets in keras-hub's layout: electra_tf task models, and reading back
# -----------------------------------------------------------------------------

BACKBONE_REGISTERED_NAME = "keras_hub>ElectraBackbone"
CONFIG_FILE = "config.json"
MODEL_WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_CONFIG_FILE = "tokenizer.json"
VOCAB_ASSET = os.path.join("assets", "tokenizer", "vocabulary.txt")
SENTENCEPIECE_ASSET = os.path.join("assets", "tokenizer", "vocabulary.spm")
# keras-hub's names for a task's config and weights; here an electra_tf task model's.
TASK_CONFIG_FILE = "task.json"
# Beside a preset of a generator's encoder (`--part generator`).
GENERATOR_MARKER_FILE = "electra_tf_generator.json"
TASK_WEIGHTS_FILE = "task.weights.h5"
POOLER_NOT_READ = "pooled_dense (keras-hub's pooler; ELECTRA has none) is not read"
TANH_GELU_NOTE = (
  "keras-hub's ElectraBackbone computes the tanh GELU; electra_tf computes the exact one "
  "the original was trained with"
)
UNTRAINED_HEAD = (
  "a keras-hub backbone preset holds no replaced-token-detection head: this discriminator "
  "is an encoder only (fine-tune it, or export a model with a trained head)"
)


def _read_preset_json(preset_dir, name):
  path = os.path.join(preset_dir, name)
  try:
    with open(path, encoding="utf-8") as f:
      content = json.load(f)
  except FileNotFoundError:
    raise ValueError(f"keras-hub preset {preset_dir!r} has no {name}") from None
  except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
    raise ValueError(f"{path!r} is not readable JSON: {json_error(e)}") from None
  if not isinstance(content, dict):
    raise ValueError(f"{path!r} holds {type(content).__name__}; expected a JSON object")
  return content


def preset_backbone_config(preset_dir):
  """`(keras-hub backbone config, BertConfig dict, embedding size)` of a
  keras-hub `ElectraBackbone` preset."""
  preset_dir = os.fspath(preset_dir)
  if os.path.exists(os.path.join(preset_dir, GENERATOR_MARKER_FILE)):
    raise ValueError(
      f"keras-hub preset {preset_dir!r} holds a generator's encoder (published with --part "
      "generator); electra_tf reads a preset's discriminator encoder: publish the "
      "discriminator, or read the generator from its checkpoint"
    )
  content = _read_preset_json(preset_dir, CONFIG_FILE)
  name = content.get("registered_name") or content.get("class_name")
  if name != BACKBONE_REGISTERED_NAME or not isinstance(content.get("config"), dict):
    raise ValueError(
      f"keras-hub preset {preset_dir!r} holds a {name or 'model of no known class'}; "
      f"expected an ELECTRA backbone ({BACKBONE_REGISTERED_NAME})"
    )
  c = content["config"]
  keys = ("vocab_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim")
  missing = [k for k in keys if k not in c]
  if missing:
    raise ValueError(f"{os.path.join(preset_dir, CONFIG_FILE)!r}: missing keys {missing}")
  dropout = float(c.get("dropout", 0.1))
  bert_config = {
    "vocab_size": int(c["vocab_size"]),
    "hidden_size": int(c["hidden_dim"]),
    "num_hidden_layers": int(c["num_layers"]),
    "num_attention_heads": int(c["num_heads"]),
    "intermediate_size": int(c["intermediate_dim"]),
    "hidden_act": "gelu",
    "hidden_dropout_prob": dropout,
    "attention_probs_dropout_prob": dropout,
    "max_position_embeddings": int(c.get("max_sequence_length", 512)),
    "type_vocab_size": int(c.get("num_segments", 2)),
  }
  embedding_size = int(c.get("embedding_dim") or c["hidden_dim"])
  return c, bert_config, embedding_size


class MissingVocabulary(ValueError):
  """A preset whose `tokenizer.json` names a keras-hub tokenizer, without the
  vocabulary file under `assets/tokenizer/` that it reads."""


def _missing_vocabulary(preset_dir, tokenizer):
  """The line for a preset copied without its tokenizer's assets."""
  name = tokenizer.get("registered_name") or tokenizer.get("class_name")
  sentencepiece = "SentencePiece" in str(name)
  asset = os.path.join(preset_dir, SENTENCEPIECE_ASSET if sentencepiece else VOCAB_ASSET)
  return (
    f"{asset!r} is missing: the keras-hub preset {preset_dir!r} has no vocabulary (copied "
    "without its assets/?)"
  )


def preset_vocab(preset_dir):
  """`(vocab file, do_lower_case, strip_accents)` of a preset's tokenizer:
  keras-hub's `ElectraTokenizer` assets, or its `SentencePieceTokenizer`'s
  model (which keras-hub runs without lower-casing or accent stripping)."""
  preset_dir = os.fspath(preset_dir)
  tokenizer = _read_preset_json(preset_dir, TOKENIZER_CONFIG_FILE)
  config = tokenizer.get("config") or {}
  model_file = os.path.join(preset_dir, SENTENCEPIECE_ASSET)
  if os.path.isfile(model_file):
    return model_file, False, False
  vocab_file = os.path.join(preset_dir, VOCAB_ASSET)
  if not os.path.isfile(vocab_file):
    raise MissingVocabulary(_missing_vocabulary(preset_dir, tokenizer))
  lowercase = bool(config.get("lowercase", True))
  return vocab_file, lowercase, bool(config.get("strip_accents", lowercase))


def preset_lengths(preset_dir):
  """`{"max_seq_length", "max_query_length"}` an electra_tf task preset's
  preprocessor packs to (from `task.json`); empty for a backbone preset."""
  task = preset_task(preset_dir)
  if task is None:
    return {}
  preprocessor = (task[0].get("config") or {}).get("preprocessor") or {}
  config = preprocessor.get("config") or {}
  return {k: int(config[k]) for k in ("max_seq_length", "max_query_length") if config.get(k)}


def preset_task(preset_dir):
  """`(task config, task weights path)` of an electra_tf task preset, or None
  for a backbone preset."""
  preset_dir = os.fspath(preset_dir)
  if not os.path.exists(os.path.join(preset_dir, TASK_CONFIG_FILE)):
    return None
  config = _read_preset_json(preset_dir, TASK_CONFIG_FILE)
  if not str(config.get("registered_name", "")).startswith("electra_tf>"):
    raise ValueError(
      f"keras-hub preset {preset_dir!r} holds the task {config.get('registered_name')!r}; "
      "electra_tf reads its own task models and keras-hub's ElectraBackbone"
    )
  weights = os.path.join(preset_dir, TASK_WEIGHTS_FILE)
  if not os.path.isfile(weights):
    raise ValueError(
      f"keras-hub preset {preset_dir!r} has {TASK_CONFIG_FILE} but no {TASK_WEIGHTS_FILE}"
    )
  return config, weights


def _stored_variable_count(path):
  """How many variables a Keras `.weights.h5` file holds (None: unreadable)."""
  count = 0

  def visit(name, item):
    nonlocal count
    count += isinstance(item, h5py.Dataset) and "/vars/" in f"/{name}"

  try:
    with h5py.File(path, "r") as f:
      f.visititems(visit)
  except (OSError, ValueError):
    return None  # Keras's own error says what is wrong
  return count


def _first_sentence(error):
  """The first line of an error, with the next where it ends in a colon (Keras's
  load errors give the cause there)."""
  lines = [line.strip() for line in str(error).splitlines() if line.strip()]
  text = lines[0] if lines else type(error).__name__
  if text.endswith(":") and len(lines) > 1:
    text = f"{text} {lines[1]}"
  return text if len(text) <= 300 else text[:300] + "..."


def load_weights_file(model, path, config_path=None):
  """`model.load_weights(path)`, with one line when the file is corrupt or
  does not fit the model.

  Args:
    model: the built model.
    path: its `.weights.h5` file.
    config_path: the file `model` was built from (a preset's `config.json`),
      named when the weights do not fit it (Keras would fill an edited
      config's model in part, silently, or blame the Keras version).
  """
  # Keras's warnings for an edited config are held back until the load is known to work.
  with warnings.catch_warnings(record=True) as caught:
    try:
      model.load_weights(path)
      error = None
    except Exception as e:  # pylint: disable=broad-except  # h5py, Keras and OS errors alike
      error = e
  # A file h5py cannot read is damaged itself (the line below names it).
  stored = _stored_variable_count(path) if config_path else None
  if stored is not None and (error is not None or stored != len(model.weights)):
    cause = (
      _first_sentence(error)
      if error is not None
      else (f"the file holds {stored} variables, the config's model {len(model.weights)}")
    )
    raise ValueError(
      f"{path!r} does not fit the model {config_path!r} builds (was "
      f"{os.path.basename(config_path)} edited?): {cause}"
    )
  for w in caught:
    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
  if error is not None:
    raise ValueError(
      f"{path!r} does not hold this model's weights: {_first_sentence(error)}"
    ) from None


def read_keras_hub_preset(preset_dir):
  """The encoder of a keras-hub `ElectraBackbone` preset, bit-exact.

  Returns:
    `(encoder, notes)`: an electra_tf `ElectraBackbone` whose every
    variable comes from the preset, and notes.

  Raises:
    ValueError: one line, for a preset of another family, or a corrupt or
      inconsistent one.
  """
  import keras_hub  # pylint: disable=g-import-not-at-top

  preset_dir = os.fspath(preset_dir)
  config, bert_config, embedding_size = preset_backbone_config(preset_dir)
  try:
    backbone = keras_hub.models.ElectraBackbone.from_config(config)
  except (TypeError, ValueError) as e:
    raise ValueError(
      f"{os.path.join(preset_dir, CONFIG_FILE)!r} does not build an ElectraBackbone: "
      f"{str(e).splitlines()[0]}"
    ) from None
  load_weights_file(
    backbone,
    os.path.join(preset_dir, MODEL_WEIGHTS_FILE),
    os.path.join(preset_dir, CONFIG_FILE),
  )
  encoder = ElectraBackbone(bert_config, embedding_size=embedding_size, name="discriminator")
  encoder.build()
  target = official_names.discriminator_name_map(encoder, include_head=False)
  names = _backbone_names(
    backbone,
    "electra/embeddings",
    "electra",
    "electra/embeddings_project/kernel" in target,
  )
  used = [name for _, name, _ in names if name is not None]
  if sorted(used) != sorted(target):
    raise ValueError(
      f"keras-hub preset {preset_dir!r} does not map onto an ELECTRA encoder: "
      f"unset {sorted(set(target) - set(used))[:5]}"
    )
  for variable, name, _ in names:
    if name is not None:
      value = np.asarray(keras.ops.convert_to_numpy(variable), dtype=np.float32)
      target[name].assign(value.reshape(tuple(target[name].shape)))
  return encoder, [POOLER_NOT_READ, TANH_GELU_NOTE, UNTRAINED_HEAD]


def encoder_part(encoder):
  """An `ElectraPart` of an `ElectraBackbone` (or a discriminator without its head)."""
  name_map = official_names.discriminator_name_map(encoder, include_head=False)
  return huggingface.model_part(huggingface.PART_DISCRIMINATOR, encoder, name_map)


def write_task_preset(task_model, encoder, tokenizer, output_dir):
  """Writes a preset in keras-hub's layout: the encoder as a keras-hub
  `ElectraBackbone`, the tokenizer and, for a task model, its electra_tf
  config (`task.json`) and every weight (`task.weights.h5`).

  Args:
    task_model: a Keras task model, or None for a backbone preset.
    encoder: its `ElectraBackbone` (or discriminator).
    tokenizer: its electra_tf `ElectraTokenizer` or `SentencePieceTokenizer`
      (none in the preset where keras-hub's cannot lower-case or strip accents).
    output_dir: a new (or empty) directory; it appears complete or not at all.

  Returns:
    `output_dir`.
  """
  import keras_hub  # pylint: disable=g-import-not-at-top

  output_dir = os.fspath(output_dir)
  if encoder.bert_config.get("hidden_act", "gelu") != "gelu":
    raise ValueError(
      f"hidden_act {encoder.bert_config['hidden_act']!r}: keras-hub's ElectraBackbone "
      "computes GELU only"
    )
  huggingface.check_new_output_dir(output_dir, "save_to_preset: preset_dir")
  backbone, _, _ = build_keras_hub_backbone(encoder_part(encoder))
  if isinstance(tokenizer, SentencePieceTokenizer):
    # keras-hub's cannot lower-case or strip accents: then none (task.json holds electra_tf's).
    hub_tokenizer = None
    if not (tokenizer.do_lower_case or tokenizer.strip_accents):
      hub_tokenizer = keras_hub.tokenizers.SentencePieceTokenizer(proto=tokenizer.model_bytes)
  else:
    hub_tokenizer = keras_hub.models.ElectraTokenizer(
      vocabulary=tokenizer.id_tokens(),
      lowercase=bool(tokenizer.do_lower_case),
      strip_accents=bool(tokenizer.do_lower_case and tokenizer.strip_accents),
    )
  if os.path.isdir(output_dir):
    os.rmdir(output_dir)  # empty: atomic_path renames a new directory into place
  task_weights = task_model.weights if task_model is not None else []
  with atomic_path(output_dir, weights=backbone.weights + task_weights) as tmp:
    backbone.save_to_preset(tmp)
    if hub_tokenizer is not None:
      hub_tokenizer.save_to_preset(tmp)
    if task_model is not None:
      with open(os.path.join(tmp, TASK_CONFIG_FILE), "w", encoding="utf-8") as f:
        json.dump(keras.saving.serialize_keras_object(task_model), f, indent=2)
      task_model.save_weights(os.path.join(tmp, TASK_WEIGHTS_FILE))
  return output_dir
