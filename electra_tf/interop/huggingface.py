"""Publishes electra_tf / official ELECTRA weights in Hugging Face transformers'
format and reads them back, without PyTorch: a discriminator as
`ElectraForPreTraining`, a generator as `ElectraForMaskedLM`, a fine-tuned
encoder with one task head as `ElectraForSequenceClassification` or
`ElectraForTokenClassification` (QA heads have no transformers class), with
the vocab and `tokenizer.json` that give electra_tf's ids.

Hugging Face names derive from the original's (`electra_tf.models.official_names`)
by one table, `_HF_NAME_TABLE`; PyTorch's `Linear` stores `[out, in]`, so
every `kernel` is transposed.

>>> hf_name("electra/encoder/layer_3/attention/self/query/kernel")
'electra.encoder.layer.3.attention.self.query.weight'
>>> hf_name("discriminator_predictions/dense_1/bias")
'discriminator_predictions.dense_prediction.bias'
"""

import collections
import json
import os
import re

import keras
import numpy as np

from electra_tf.configs.bert_config import SHAPE_FIELDS
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.layers.electra_embeddings import ElectraEmbeddings
from electra_tf.models import official_names
from electra_tf.models.electra_discriminator import ElectraDiscriminator
from electra_tf.models.electra_generator import ElectraGenerator
from electra_tf.text import hf_sentencepiece_tokenizer
from electra_tf.text import hf_tokenizer
from electra_tf.text import vocab as vocab_lib
from electra_tf.utils.file_io import atomic_path
from electra_tf.utils.file_io import check_not_lfs_pointer
from electra_tf.utils.file_io import json_error

PART_DISCRIMINATOR = "discriminator"
PART_GENERATOR = "generator"
ARCHITECTURES = {PART_DISCRIMINATOR: "ElectraForPreTraining", PART_GENERATOR: "ElectraForMaskedLM"}
# transformers' classes of fine-tuned heads (`task_part`).
SEQUENCE_CLASSIFICATION = "ElectraForSequenceClassification"
TOKEN_CLASSIFICATION = "ElectraForTokenClassification"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_INDEX_FILE = "model.safetensors.index.json"  # a sharded save's
VOCAB_FILE = "vocab.txt"
# A SentencePiece vocab's model, copied as the exported SavedModels name it.
SENTENCEPIECE_FILE = "sentencepiece.model"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
TOKENIZER_FILE = "tokenizer.json"
# contrib's layer_norm epsilon, which the original's checkpoints were trained with.
LAYER_NORM_EPS = 1e-12
# The `BertConfig` fields an `ElectraConfig` holds under the same names.
_INT_FIELDS = ("vocab_size",) + SHAPE_FIELDS
_FLOAT_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range")
SPECIAL_TOKENS = {
  "unk_token": "[UNK]",
  "sep_token": "[SEP]",
  "pad_token": "[PAD]",
  "cls_token": "[CLS]",
  "mask_token": "[MASK]",
}

_TOWER = r"(?:electra|generator)"
# (pattern on the official name, template); "/" then becomes "." and `_HF_LEAF`
# renames the last part. ElectraForMaskedLM's tower is `electra.` too.
_HF_NAME_TABLE = (
  (rf"^{_TOWER}/embeddings/(\w+_embeddings)$", r"electra/embeddings/\1/weight"),
  (rf"^{_TOWER}/(embeddings/LayerNorm|embeddings_project)/(\w+)$", r"electra/\1/\2"),
  (rf"^{_TOWER}/encoder/layer_(\d+)/([\w/]+)$", r"electra/encoder/layer/\1/\2"),
  (r"^discriminator_predictions/dense_1/(\w+)$", r"discriminator_predictions/dense_prediction/\1"),
  (r"^(discriminator_predictions|generator_predictions)/(\w+/\w+)$", r"\1/\2"),
  (r"^generator_predictions/output_bias$", r"generator_lm_head/bias"),
)
_HF_LEAF = {
  "kernel": "weight",
  "gamma": "weight",
  "beta": "bias",
  "bias": "bias",
  "weight": "weight",
}
# The LM head tied to the word embeddings (never stored by transformers 5).
_HF_TIED_OUTPUT = "generator_lm_head.weight"


def hf_name(official_name):
  """The Hugging Face state-dict name of an official variable name; a
  ValueError for one Hugging Face's ELECTRA has no place for."""
  for pattern, template in _HF_NAME_TABLE:
    match = re.match(pattern, official_name)
    if match:
      parts = match.expand(template).split("/")
      parts[-1] = _HF_LEAF[parts[-1]]
      return ".".join(parts)
  raise ValueError(f"{official_name!r} has no Hugging Face ELECTRA name")


def is_transposed(official_name):
  """Dense kernels are `[in, out]` here and `[out, in]` in PyTorch."""
  return official_name.endswith("/kernel")


def hf_tensors(official_tensors):
  """`{official name: array}` -> `{hf name: float32 C-contiguous array}`."""
  tensors = {}
  for name, value in official_tensors.items():
    value = np.asarray(value, dtype=np.float32)
    tensors[hf_name(name)] = np.ascontiguousarray(value.T if is_transposed(name) else value)
  if len(tensors) != len(official_tensors):
    raise ValueError("two official names map to one Hugging Face name")
  return tensors


# -----------------------------------------------------------------------------
# One part (discriminator or generator) of a model, whatever it came from
# -----------------------------------------------------------------------------

ElectraPart = collections.namedtuple(
  "ElectraPart",
  ["part", "bert_config", "embedding_size", "tensors", "not_converted", "notes", "task_head"],
  defaults=(None,),
)
ElectraPart.__doc__ = """A discriminator or generator (with its head) ready to publish:
its `BertConfig` dict, embedding width, `{official name: float32 array}`, the
source's entries left out, notes and, for a fine-tuned encoder, the `TaskHead`."""

TaskHead = collections.namedtuple(
  "TaskHead", ["task", "architecture", "labels", "problem_type", "hf_tensors", "official_names"]
)
TaskHead.__doc__ = """A fine-tuned head as transformers holds it: task name, class,
label names (index = id), `problem_type`, `{hf name: array}` and the official names."""


def model_part(part, model, name_map, not_converted=(), notes=(), task_head=None):
  """An `ElectraPart` of `model` holding the variables of its official `name_map`."""
  return ElectraPart(
    part,
    dict(model.bert_config),
    model.embeddings.embedding_size,
    {n: np.asarray(keras.ops.convert_to_numpy(v), dtype=np.float32) for n, v in name_map.items()},
    list(not_converted),
    list(notes),
    task_head,
  )


def discriminator_part(discriminator, not_converted=(), notes=()):
  """An `ElectraPart` of an `ElectraDiscriminator` with its head."""
  if getattr(discriminator, "head", None) is None:  # an ElectraBackbone has none
    raise ValueError(
      "the model's discriminator has no replaced-token-detection head (an encoder only, e.g. "
      "from a fine-tuned checkpoint); ElectraForPreTraining needs it (a fine-tuned model "
      "publishes with --part finetuned)"
    )
  name_map = official_names.discriminator_name_map(discriminator)
  return model_part(PART_DISCRIMINATOR, discriminator, name_map, not_converted, notes)


def generator_part(generator, scopes, shared_embeddings, not_converted=(), notes=()):
  """An `ElectraPart` of an `ElectraGenerator` (one tower) with its MLM head."""
  if generator.is_two_tower:
    raise ValueError(
      "two-tower (Electric / two_tower_generator) generators have no Hugging Face "
      "ELECTRA class; publish the discriminator"
    )
  name_map = official_names.generator_name_map(generator, scopes, shared_embeddings)
  return model_part(PART_GENERATOR, generator, name_map, not_converted, notes)


def pretrainer_part(pretrainer, part, other_entries=(), notes=()):
  """The `part` of an `ElectraPretrainer`; the rest of its variables and
  `other_entries` are listed as not converted."""
  all_names = set(official_names.official_name_map(pretrainer))
  if part == PART_DISCRIMINATOR:
    if pretrainer.discriminator is None:
      raise ValueError(
        "this model has no discriminator (electra_objective=False, an MLM model); "
        "use --part generator"
      )
    result = discriminator_part(pretrainer.discriminator, notes=notes)
  elif part == PART_GENERATOR:
    if pretrainer.generator is None:
      raise ValueError(
        "this model has no generator weights (uniform_generator); use --part discriminator"
      )
    generator = pretrainer.generator
    result = generator_part(
      generator,
      official_names.generator_scopes(pretrainer),
      shared_embeddings=generator.embeddings is pretrainer.embeddings,
      notes=notes,
    )
  else:
    raise ValueError(f"--part {part!r}; expected {PART_DISCRIMINATOR} or {PART_GENERATOR}")
  rest = all_names - set(result.tensors)
  other_part = PART_GENERATOR if part == PART_DISCRIMINATOR else PART_DISCRIMINATOR
  left_out = [f"the {other_part}: {len(rest)} tensors"] if rest else []
  left_out += sorted(other_entries)
  return result._replace(not_converted=left_out)


def sequence_classification_tensors(kernel, bias):
  """`ElectraForSequenceClassification`'s head computing electra_tf's logits.

  electra_tf's head is `h @ kernel + bias`; transformers' computes
  `out_proj(gelu(dense(h)))`. Since `gelu(u) - gelu(-u) = u` (exact and tanh
  GELU alike), `dense` writes `h @ kernel` and `-(h @ kernel)` into its first
  `2 * num_labels` units and `out_proj` takes the difference and adds `bias`:
  the same logits up to float rounding, for `2 * num_labels <= hidden_size`.

  Args:
    kernel: `[H, num_labels]`; bias: `[num_labels]`.

  Returns:
    `{hf name: float32 array}` of `classifier.dense` and `classifier.out_proj`.

  Example:
  >>> import numpy as np
  >>> t = sequence_classification_tensors(np.ones((4, 2)), np.zeros(2))
  >>> t["classifier.dense.weight"].shape, t["classifier.out_proj.weight"].shape
  ((4, 4), (2, 4))
  """
  kernel = np.asarray(kernel, np.float32)
  hidden, num_labels = kernel.shape
  if 2 * num_labels > hidden:
    raise ValueError(
      f"{num_labels} labels over hidden size {hidden}: {SEQUENCE_CLASSIFICATION} reproduces "
      "electra_tf's one dense layer exactly only with 2 x num_labels <= hidden_size (its head "
      "adds a hidden layer with a fixed GELU)"
    )
  dense = np.zeros((hidden, hidden), np.float32)  # PyTorch's [out, in]
  dense[:num_labels] = kernel.T
  dense[num_labels : 2 * num_labels] = -kernel.T
  out_proj = np.zeros((num_labels, hidden), np.float32)
  out_proj[:, :num_labels] = np.eye(num_labels, dtype=np.float32)
  out_proj[:, num_labels : 2 * num_labels] = -np.eye(num_labels, dtype=np.float32)
  return {
    "classifier.dense.weight": dense,
    "classifier.dense.bias": np.zeros((hidden,), np.float32),
    "classifier.out_proj.weight": out_proj,
    "classifier.out_proj.bias": np.asarray(bias, np.float32).copy(),
  }


def task_part(model, task, labels, notes=()):
  """An `ElectraPart` of a fine-tuned model's encoder and one task head.

  Args:
    model: a `FinetuningModel`.
    task: the name of one of its heads: a classification or regression
      head becomes `ElectraForSequenceClassification`, a tagging head
      `ElectraForTokenClassification`.
    labels: the label names, one per output (a regression head's one name).
    notes: lines for the report.

  Raises:
    ValueError: a head transformers has no ELECTRA class for (QA), or label
      names that do not match the head's outputs.
  """
  heads = {head.task_name: head for head in model.heads}
  if task not in heads:
    raise ValueError(f"task {task!r}: the model's heads are {sorted(heads)}")
  head = heads[task]
  if not isinstance(head, (ClassificationHead, TaggingHead)):
    raise ValueError(
      f"task {task!r} is a question-answering head: the joint start/end prediction (and "
      "answerable classifier) of ELECTRA's QA head has no transformers class "
      "(ElectraForQuestionAnswering predicts start and end independently)"
    )
  labels = [str(label) for label in labels]
  if len(labels) != head.num_labels or len(set(labels)) != len(labels):
    raise ValueError(
      f"task {task!r}: {len(labels)} label names {labels} for a head of {head.num_labels} "
      "outputs; expected one distinct name per output"
    )
  kernel = np.asarray(keras.ops.convert_to_numpy(head.dense.kernel), np.float32)
  bias = np.asarray(keras.ops.convert_to_numpy(head.dense.bias), np.float32)
  if isinstance(head, TaggingHead):
    architecture, problem_type = TOKEN_CLASSIFICATION, None
    hf = {"classifier.weight": np.ascontiguousarray(kernel.T), "classifier.bias": bias}
  else:
    architecture = SEQUENCE_CLASSIFICATION
    problem_type = "regression" if head.regression else "single_label_classification"
    hf = sequence_classification_tensors(kernel, bias)
  name_map = official_names.discriminator_name_map(model.encoder, include_head=False)
  head_names = sorted(official_names.task_head_names(task, head.dense_layers()))
  others = [h for h in heads if h != task]
  return model_part(
    PART_DISCRIMINATOR,
    model.encoder,
    name_map,
    [f"the heads of the other tasks {others}"] if others else [],
    notes,
    TaskHead(task, architecture, labels, problem_type, hf, head_names),
  )


# -----------------------------------------------------------------------------
# electra_tf -> Hugging Face
# -----------------------------------------------------------------------------


def hf_config(part, pad_token_id=0):
  """The `config.json` dict (an `ElectraConfig`) of an `ElectraPart`."""
  c = part.bert_config
  if c["hidden_act"] != "gelu":
    raise ValueError(
      f"hidden_act {c['hidden_act']!r}: only the original's exact GELU ('gelu') is published"
    )
  head = part.task_head
  config = {
    "architectures": [head.architecture if head else ARCHITECTURES[part.part]],
    "model_type": "electra",
    **{k: int(c[k]) for k in _INT_FIELDS},
    **{k: float(c[k]) for k in _FLOAT_FIELDS},
    "embedding_size": int(part.embedding_size),
    "hidden_act": "gelu",
    "layer_norm_eps": LAYER_NORM_EPS,
    "pad_token_id": int(pad_token_id),
    "tie_word_embeddings": True,
    "dtype": "float32",
  }
  if head is not None:
    config["num_labels"] = len(head.labels)
    config["id2label"] = {str(i): label for i, label in enumerate(head.labels)}
    config["label2id"] = {label: i for i, label in enumerate(head.labels)}
    if head.problem_type:
      config["problem_type"] = head.problem_type
  return config


def read_vocab(vocab_file, vocab_size):
  """The vocab's tokens; raises unless there are exactly `vocab_size` of them."""
  if not vocab_file or not os.path.isfile(vocab_file):
    raise ValueError(
      f"--vocab-file {vocab_file!r}: no such file (the vocab the model was trained with is "
      "needed for the tokenizer files)"
    )
  with open(vocab_file, encoding="utf-8") as f:
    tokens = [line.rstrip("\r\n") for line in f]
  while tokens and not tokens[-1]:
    tokens.pop()
  if len(tokens) != vocab_size:
    raise ValueError(
      f"--vocab-file {vocab_file!r} has {len(tokens)} tokens; the model's word embeddings "
      f"have {vocab_size} rows"
    )
  missing = [t for t in SPECIAL_TOKENS.values() if t not in tokens]
  if missing:
    raise ValueError(f"--vocab-file {vocab_file!r} lacks the special tokens {missing}")
  return tokens


def read_sentencepiece_vocab(vocab_file, vocab_size):
  """A SentencePiece model's vocab (`.proto`, its bytes; `.special_ids`);
  raises unless it has exactly `vocab_size` pieces and the special ones."""
  vocab = vocab_lib.load_vocab(vocab_file)
  if len(vocab) != vocab_size:
    raise ValueError(
      f"--vocab-file {vocab_file!r} has {len(vocab)} pieces; the model's word embeddings "
      f"have {vocab_size} rows"
    )
  vocab_lib.check_special_tokens(vocab, vocab_file)
  return vocab


def hf_tokenizer_config(do_lower_case, strip_accents, model_max_length):
  """`tokenizer_config.json`, naming `PreTrainedTokenizerFast`, which runs
  `tokenizer.json` unchanged (transformers' `ElectraTokenizer` would rebuild its
  own normaliser from the settings, kept here for readers)."""
  return {
    "tokenizer_class": "PreTrainedTokenizerFast",
    # The original splits "[MASK]" etc. in raw text like any other text.
    "split_special_tokens": True,
    "do_lower_case": bool(do_lower_case),
    # The original strips accents only while lower-casing.
    "strip_accents": bool(do_lower_case and strip_accents),
    "tokenize_chinese_chars": True,
    "model_max_length": int(model_max_length),
    # The generic tokenizer returns no segment ids unless named; ELECTRA needs them for pairs.
    "model_input_names": ["input_ids", "token_type_ids", "attention_mask"],
    **SPECIAL_TOKENS,
  }


def check_new_output_dir(output_dir, what="--output"):
  """Refuses an existing non-empty directory; `what` names it (a flag or an argument)."""
  if os.path.exists(output_dir) and (not os.path.isdir(output_dir) or os.listdir(output_dir)):
    raise ValueError(f"{what} {output_dir!r} exists and is not empty; choose a new directory")


def _write_json(path, data):
  with open(path, "w", encoding="utf-8") as f:
    f.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_hf_tokenizer_files(directory, tokens, do_lower_case, strip_accents, model_max_length):
  """Writes `vocab.txt`, `tokenizer.json` and `tokenizer_config.json` into `directory`."""
  with open(os.path.join(directory, VOCAB_FILE), "w", encoding="utf-8") as f:
    f.write("".join(t + "\n" for t in tokens))
  hf_tokenizer.write_tokenizer_json(
    os.path.join(directory, TOKENIZER_FILE), tokens, do_lower_case, strip_accents
  )
  _write_json(
    os.path.join(directory, TOKENIZER_CONFIG_FILE),
    hf_tokenizer_config(do_lower_case, strip_accents, model_max_length),
  )


def write_hf_sentencepiece_files(
  directory, proto, do_lower_case, strip_accents, model_max_length, source="<proto>"
):
  """Writes `sentencepiece.model` (with its settings file), `tokenizer.json`
  and `tokenizer_config.json` into `directory` for the model's bytes `proto`."""
  model_path = os.path.join(directory, SENTENCEPIECE_FILE)
  with open(model_path, "wb") as f:
    f.write(bytes(proto))
  settings = {"do_lower_case": bool(do_lower_case), "strip_accents": bool(strip_accents)}
  vocab_lib.write_vocab_settings(model_path, settings)
  hf_sentencepiece_tokenizer.write_tokenizer_json(
    os.path.join(directory, TOKENIZER_FILE), proto, do_lower_case, strip_accents, source
  )
  config = hf_tokenizer_config(do_lower_case, strip_accents, model_max_length)
  # electra_tf strips accents of a SentencePiece vocab whether or not it lower-cases.
  config.update(settings, tokenize_chinese_chars=False)
  config.update(hf_sentencepiece_tokenizer.special_tokens(proto, source))
  _write_json(os.path.join(directory, TOKENIZER_CONFIG_FILE), config)


def write_huggingface(part, output_dir, vocab_file, do_lower_case=True, strip_accents=True):
  """Writes a Hugging Face ELECTRA directory for an `ElectraPart`.

  Args:
    part: the `ElectraPart` (`discriminator_part`, `generator_part`,
      `pretrainer_part`).
    output_dir: a new (or empty) directory; it appears complete or not at all.
    vocab_file: the vocab the model was trained with: a WordPiece vocab.txt
      (written as `vocab.txt`) or a SentencePiece model (written as
      `sentencepiece.model`, with its settings file).
    do_lower_case, strip_accents: the tokenizer's normalisation.

  Returns:
    `{"output", "architecture", "converted" (official names), "not_converted"}`.
  """
  from safetensors.numpy import save_file  # pylint: disable=g-import-not-at-top

  output_dir = os.fspath(output_dir)
  check_new_output_dir(output_dir)
  vocab_size = int(part.bert_config["vocab_size"])
  max_length = int(part.bert_config["max_position_embeddings"])
  if vocab_lib.vocab_kind(vocab_file) == vocab_lib.SENTENCEPIECE:
    vocab = read_sentencepiece_vocab(vocab_file, vocab_size)
    proto, pad_token_id = vocab.proto, vocab.special_ids["pad"]
    # Checked before anything is written.
    hf_sentencepiece_tokenizer.build_tokenizer(proto, do_lower_case, strip_accents, vocab_file)
    write_tokenizer = write_hf_sentencepiece_files
    tokenizer_args = (proto, do_lower_case, strip_accents, max_length, vocab_file)
  else:
    tokens = read_vocab(vocab_file, vocab_size)
    pad_token_id = tokens.index(SPECIAL_TOKENS["pad_token"])
    write_tokenizer = write_hf_tokenizer_files
    tokenizer_args = (tokens, do_lower_case, strip_accents, max_length)
  config = hf_config(part, pad_token_id=pad_token_id)
  tensors = hf_tensors(part.tensors)
  converted = sorted(part.tensors)
  if part.task_head is not None:
    tensors.update(part.task_head.hf_tensors)
    converted += part.task_head.official_names
  if os.path.isdir(output_dir):
    os.rmdir(output_dir)  # empty: atomic_path renames a new directory into place
  with atomic_path(output_dir, weights=list(tensors.values())) as tmp:
    os.makedirs(tmp)
    _write_json(os.path.join(tmp, CONFIG_FILE), config)
    save_file(tensors, os.path.join(tmp, WEIGHTS_FILE), metadata={"format": "pt"})
    write_tokenizer(tmp, *tokenizer_args)
  return {
    "output": output_dir,
    "architecture": config["architectures"][0],
    "converted": converted,
    "not_converted": list(part.not_converted),
    "notes": list(part.notes),
  }


# -----------------------------------------------------------------------------
# Hugging Face -> electra_tf
# -----------------------------------------------------------------------------


def _bert_config_from_hf(config, source):
  if config.get("model_type") != "electra":
    raise ValueError(
      f"{source}: model_type {config.get('model_type')!r}; expected 'electra' (an ELECTRA "
      "model saved by transformers)"
    )
  if config.get("hidden_act", "gelu") != "gelu":
    raise ValueError(
      f"{source}: hidden_act {config['hidden_act']!r}; electra_tf computes the original's "
      "exact GELU ('gelu') only"
    )
  eps = float(config.get("layer_norm_eps", LAYER_NORM_EPS))
  if eps != LAYER_NORM_EPS:
    raise ValueError(f"{source}: layer_norm_eps {eps}; electra_tf uses the original's 1e-12")
  missing = [k for k in _INT_FIELDS if k not in config]
  if missing:
    raise ValueError(f"{source}: missing keys {missing}")
  bert_config = {k: int(config[k]) for k in _INT_FIELDS}
  bert_config["hidden_act"] = "gelu"
  for key in _FLOAT_FIELDS:
    if key in config:
      bert_config[key] = float(config[key])
  return bert_config


def read_hf_config(input_dir):
  """`(part, BertConfig dict, embedding size, config.json content)` of a
  Hugging Face ELECTRA directory; a one-line ValueError naming `config.json`
  for another model or a setting electra_tf does not compute."""
  config_path = os.path.join(os.fspath(input_dir), CONFIG_FILE)
  with open(config_path, encoding="utf-8") as f:
    config = json.load(f)
  architectures = config.get("architectures") or []
  by_architecture = {v: k for k, v in ARCHITECTURES.items()}
  if len(architectures) != 1 or architectures[0] not in by_architecture:
    raise ValueError(
      f"{config_path}: architectures {architectures}; expected one of {sorted(by_architecture)}"
    )
  bert_config = _bert_config_from_hf(config, config_path)
  embedding_size = int(config.get("embedding_size", bert_config["hidden_size"]))
  return by_architecture[architectures[0]], bert_config, embedding_size, config


def recorded_tokenizer(input_dir):
  """`(vocab file, do_lower_case, strip_accents)` of a Hugging Face directory's
  `sentencepiece.model` (normalisation from its settings file, else
  `tokenizer_config.json`) or `vocab.txt` (from `tokenizer_config.json`, with
  transformers' defaults); None when it holds neither."""
  input_dir = os.fspath(input_dir)
  recorded = {}
  config_path = os.path.join(input_dir, TOKENIZER_CONFIG_FILE)
  if os.path.isfile(config_path):
    try:
      with open(config_path, encoding="utf-8") as f:
        recorded = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
      raise ValueError(f"{config_path!r} is not readable JSON: {json_error(e)}") from None
    if not isinstance(recorded, dict):
      raise ValueError(f"{config_path!r} holds {type(recorded).__name__}; expected a JSON object")
  model_file = os.path.join(input_dir, SENTENCEPIECE_FILE)
  if os.path.isfile(model_file):
    settings = vocab_lib.vocab_settings(model_file, vocab_lib.SENTENCEPIECE)
    if not os.path.isfile(vocab_lib.settings_path(model_file)):
      for key in ("do_lower_case", "strip_accents"):
        if isinstance(recorded.get(key), bool):
          settings[key] = recorded[key]
    return model_file, settings["do_lower_case"], settings["strip_accents"]
  vocab_file = os.path.join(input_dir, VOCAB_FILE)
  if not os.path.isfile(vocab_file):
    return None
  do_lower_case = bool(recorded.get("do_lower_case", True))
  strip_accents = recorded.get("strip_accents")
  strip_accents = do_lower_case if strip_accents is None else bool(strip_accents)
  return vocab_file, do_lower_case, strip_accents


def _weights_files(input_dir):
  """`(path to name in errors, safetensors files)`: `model.safetensors`, or the
  shards `model.safetensors.index.json` names."""
  single = os.path.join(input_dir, WEIGHTS_FILE)
  if os.path.isfile(single):
    return single, [single]
  index_path = os.path.join(input_dir, WEIGHTS_INDEX_FILE)
  if not os.path.isfile(index_path):
    # Older saves hold pytorch_model.bin (a pickle, not read here).
    others = [
      n for n in ("pytorch_model.bin", "tf_model.h5") if os.path.isfile(os.path.join(input_dir, n))
    ]
    held = f"it holds {', '.join(others)}" if others else "it holds no weights file"
    raise ValueError(
      f"Hugging Face directory {input_dir!r} has no {WEIGHTS_FILE} ({held}); re-save it with "
      "transformers' save_pretrained(..., safe_serialization=True)"
    )
  check_not_lfs_pointer(index_path)
  try:
    with open(index_path, encoding="utf-8") as f:
      weight_map = json.load(f).get("weight_map")
  except (OSError, UnicodeDecodeError, ValueError, AttributeError):
    weight_map = None
  if not isinstance(weight_map, dict) or not weight_map:
    raise ValueError(
      f"{index_path!r} holds no weight_map (a JSON object of tensor names to shard files)"
    )
  files = []
  for shard in sorted({str(v) for v in weight_map.values()}):
    path = os.path.join(input_dir, shard)
    if os.path.basename(shard) != shard or not os.path.isfile(path):
      raise ValueError(
        f"{index_path!r} names the shard {shard!r}, which {input_dir!r} does not hold: "
        "copy every model-*-of-*.safetensors file"
      )
    files.append(path)
  return index_path, files


def load_huggingface(input_dir):
  """Reads a Hugging Face `ElectraForPreTraining` or `ElectraForMaskedLM`
  directory into a fresh electra_tf model; every stored tensor is used and
  every variable is set.

  Returns:
    `(model, part, name_map, notes)`: the `ElectraDiscriminator` (with head)
    or single-tower `ElectraGenerator` (its embeddings the shared
    `electra/embeddings` block), and its official name map.
  """
  from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top

  input_dir = os.fspath(input_dir)
  config_path = os.path.join(input_dir, CONFIG_FILE)
  weights_path, weights_files = _weights_files(input_dir)  # before any model is built
  part, bert_config, embedding_size, config = read_hf_config(input_dir)
  architectures = config["architectures"]
  notes = []
  if part == PART_DISCRIMINATOR:
    model = ElectraDiscriminator(
      bert_config, embedding_size=embedding_size, include_head=True, name="discriminator"
    )
    model.build()
    name_map = official_names.discriminator_name_map(model)
  else:
    if not config.get("tie_word_embeddings", True):
      raise ValueError(
        f"{config_path}: tie_word_embeddings false; ELECTRA's generator head always reads "
        "the word embeddings"
      )
    embeddings = ElectraEmbeddings(
      vocab_size=bert_config["vocab_size"],
      embedding_size=embedding_size,
      max_position_embeddings=bert_config["max_position_embeddings"],
      type_vocab_size=bert_config["type_vocab_size"],
      initializer_range=bert_config.get("initializer_range", 0.02),
      dropout_rate=bert_config.get("hidden_dropout_prob", 0.1),
      name="embeddings",
    )
    model = ElectraGenerator(bert_config, embeddings=embeddings, name="generator")
    model.build()
    name_map = official_names.generator_name_map(
      model, [official_names.GENERATOR_SCOPE], shared_embeddings=True
    )
  stored = {}
  for path in weights_files:
    check_not_lfs_pointer(path)
    try:
      stored.update(load_file(path))
    except Exception as e:  # pylint: disable=broad-except  # safetensors' own error type
      first = (str(e).strip().splitlines() or [type(e).__name__])[0]
      raise ValueError(
        f"{path!r} cannot be read ({first}): damaged or only partly copied? copy it again"
      ) from None
  expected = {hf_name(n): n for n in name_map}
  tied = stored.pop(_HF_TIED_OUTPUT, None)
  if tied is not None:
    if not np.array_equal(tied, stored.get("electra.embeddings.word_embeddings.weight")):
      raise ValueError(
        f"{weights_path}: {_HF_TIED_OUTPUT} differs from the word embeddings; ELECTRA ties them"
      )
    notes.append(f"{_HF_TIED_OUTPUT} is the tied word embeddings")
  missing = sorted(set(expected) - set(stored))
  extra = sorted(set(stored) - set(expected))
  if missing or extra:
    raise ValueError(
      f"{weights_path} does not hold {architectures[0]} with config {config_path}: "
      f"missing {missing[:8]}{' ...' if len(missing) > 8 else ''}, "
      f"unexpected {extra[:8]}{' ...' if len(extra) > 8 else ''}"
    )
  for hf, official in expected.items():
    value = stored[hf]
    value = value.T if is_transposed(official) else value
    variable = name_map[official]
    if tuple(value.shape) != tuple(variable.shape):
      raise ValueError(
        f"{weights_path}: {hf} has shape {tuple(stored[hf].shape)}; the config gives "
        f"{tuple(variable.shape)} for {official}"
      )
    variable.assign(value.astype(np.float32))
  return model, part, name_map, notes
