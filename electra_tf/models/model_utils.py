"""Helpers shared by the ELECTRA models."""

import keras

from electra_tf.configs.bert_config import BertConfig
from electra_tf.layers.electra_embeddings import ElectraEmbeddings
from electra_tf.layers.electra_encoder import ElectraEncoder

INPUT_KEYS = ("input_ids", "input_mask", "segment_ids")


def bert_config_dict(bert_config):
  """A plain dict of BertConfig fields from a `BertConfig` or a dict; unknown
  keys and sizes no model can have raise (`BertConfig.from_dict`, `.check`)."""
  if not isinstance(bert_config, (BertConfig, dict)):
    raise ValueError(
      f"bert_config must be a BertConfig or a dict of its fields, got {type(bert_config).__name__}"
    )
  if isinstance(bert_config, dict):
    bert_config = BertConfig.from_dict(dict(bert_config))
  if bert_config.vocab_size is None:
    raise ValueError("bert_config needs vocab_size")
  # A size of 0 would build, then fail deep in the first call.
  bert_config.check("bert_config")
  return bert_config.to_dict()


def check_inputs(inputs, owner):
  """Raises a ValueError naming the missing keys of an ELECTRA input dict."""
  if not isinstance(inputs, dict):
    raise ValueError(
      f"{owner} expects a dict with keys {list(INPUT_KEYS)}, got {type(inputs).__name__}"
    )
  missing = [k for k in INPUT_KEYS if k not in inputs]
  if missing:
    raise ValueError(f"{owner} inputs lack {missing}; expected keys {list(INPUT_KEYS)}")


def serialize_layer(layer):
  return None if layer is None else keras.saving.serialize_keras_object(layer)


def deserialize_layer(config):
  if config is None or isinstance(config, keras.layers.Layer):
    return config
  return keras.saving.deserialize_keras_object(config)


def build_once(layer, *shapes):
  if not layer.built:
    layer.build(*shapes)


# The BertConfig fields the embeddings and the encoder take under the same names.
_EMBEDDINGS_FIELDS = (
  "vocab_size",
  "max_position_embeddings",
  "type_vocab_size",
  "initializer_range",
)
_ENCODER_FIELDS = (
  "hidden_size",
  "num_hidden_layers",
  "num_attention_heads",
  "intermediate_size",
  "hidden_act",
  "hidden_dropout_prob",
  "attention_probs_dropout_prob",
  "initializer_range",
)


def make_embeddings(config, width, dtype, name):
  """The `ElectraEmbeddings` block of width `width` that a BertConfig dict describes."""
  return ElectraEmbeddings(
    **{field: config[field] for field in _EMBEDDINGS_FIELDS},
    embedding_size=width,
    dropout_rate=config["hidden_dropout_prob"],
    dtype=dtype,
    name=name,
  )


def embeddings_of_width(config, embedding_size, embeddings, dtype):
  """`embeddings` checked against the width `embedding_size` (None: the hidden
  size) needs, or a new `ElectraEmbeddings` block of that width."""
  width = embedding_size if embedding_size is not None else config["hidden_size"]
  if embeddings is None:
    return make_embeddings(config, width, dtype, "embeddings")
  if embeddings.embedding_size != width:
    raise ValueError(
      f"the given embeddings have width {embeddings.embedding_size} but "
      f"embedding_size={embedding_size} (hidden_size={config['hidden_size']}) needs {width}"
    )
  return embeddings


def make_encoder(config, width, fused_training_kernels, dtype, name, direction="bidirectional"):
  """The `ElectraEncoder` a BertConfig dict describes, reading embeddings of width `width`."""
  return ElectraEncoder(
    **{field: config[field] for field in _ENCODER_FIELDS},
    embedding_size=width,
    attention_direction=direction,
    fused_training_kernels=fused_training_kernels,
    dtype=dtype,
    name=name,
  )
