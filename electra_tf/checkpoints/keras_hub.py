"""Publishes an ELECTRA encoder as a keras-hub preset directory.

`keras_hub.models.ElectraBackbone.from_preset(dir)` and
`keras_hub.models.ElectraTokenizer.from_preset(dir)` load what
`write_keras_hub_preset` writes (keras-hub's own `save_to_preset`:
`config.json`, `metadata.json`, `model.weights.h5`, `tokenizer.json`,
`assets/tokenizer/vocabulary.txt`). Every variable of the part's encoder
(embeddings, `embeddings_project`, transformer layers) sets one backbone
weight; the heads have no place in a backbone and are listed as not
converted.

Two things differ from the original's model:
- keras-hub's backbone has a tanh pooler (`pooled_dense`) that ELECTRA does
  not have (the original's "pooled output" is the `[CLS]` row). It is set to
  the identity kernel and a zero bias, so `pooled_output` is
  `tanh(sequence_output[:, 0])`.
- keras-hub's transformer layers use the tanh approximation of GELU; the
  original uses the exact erf GELU, so `sequence_output` is close to, not
  equal to, electra_tf's (docs/publish.md gives the measured size).

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

import os

import numpy as np

from electra_tf.checkpoints import huggingface
from electra_tf.utils import keras_compat
from electra_tf.utils.file_io import atomic_path

BACKBONE_CLASS = "keras_hub.models.ElectraBackbone"
# The backbone's weights that ELECTRA has no tensor for, and their values.
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


def _backbone_assignments(backbone, part):
  """`[(keras variable, official name or None, value)]` for every backbone
  weight; the name is None for weights ELECTRA does not have."""
  t = part.tensors
  emb = f"{_embeddings_scope(part)}/embeddings"
  scope = _scope(part)
  c = part.bert_config
  heads = int(c["num_attention_heads"])
  hidden = int(c["hidden_size"])
  head_size = hidden // heads
  out = []

  def add(variable, name, shape=None):
    value = t[name]
    out.append((variable, name, value if shape is None else value.reshape(shape)))

  add(backbone.token_embedding.embeddings, f"{emb}/word_embeddings")
  add(backbone.position_embedding.position_embeddings, f"{emb}/position_embeddings")
  add(backbone.segment_embedding.embeddings, f"{emb}/token_type_embeddings")
  add(backbone.embeddings_layer_norm.gamma, f"{emb}/LayerNorm/gamma")
  add(backbone.embeddings_layer_norm.beta, f"{emb}/LayerNorm/beta")
  if f"{scope}/embeddings_project/kernel" in t:
    add(backbone.embeddings_projection.kernel, f"{scope}/embeddings_project/kernel")
    add(backbone.embeddings_projection.bias, f"{scope}/embeddings_project/bias")
  for i, layer in enumerate(backbone.transformer_layers):
    p = f"{scope}/encoder/layer_{i}"
    parts = keras_compat.keras_hub_transformer_encoder_parts(layer)
    for key in ("query", "key", "value"):
      add(parts[key].kernel, f"{p}/attention/self/{key}/kernel", (hidden, heads, head_size))
      add(parts[key].bias, f"{p}/attention/self/{key}/bias", (heads, head_size))
    output = parts["attention_output"]
    add(output.kernel, f"{p}/attention/output/dense/kernel", (heads, head_size, hidden))
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
  out.append((backbone.pooled_dense.kernel, None, np.eye(hidden, dtype=np.float32)))
  out.append((backbone.pooled_dense.bias, None, np.zeros((hidden,), np.float32)))
  return out


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
    vocab_file: the vocab the model was trained with.
    do_lower_case, strip_accents: the tokenizer's normalisation.

  Returns:
    A report dict: `output`, `converted`, `not_converted`, `notes`.
  """
  import keras_hub  # pylint: disable=g-import-not-at-top

  output_dir = os.fspath(output_dir)
  huggingface.check_new_output_dir(output_dir)
  tokens = huggingface.read_vocab(vocab_file, int(part.bert_config["vocab_size"]))
  backbone, converted, not_converted = build_keras_hub_backbone(part)
  tokenizer = keras_hub.models.ElectraTokenizer(
    vocabulary=tokens,
    lowercase=bool(do_lower_case),
    strip_accents=bool(do_lower_case and strip_accents),
  )
  if os.path.isdir(output_dir):
    os.rmdir(output_dir)  # empty: atomic_path renames a new directory into place
  with atomic_path(output_dir) as tmp:
    backbone.save_to_preset(tmp)
    tokenizer.save_to_preset(tmp)
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
