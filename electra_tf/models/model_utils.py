"""Helpers shared by the ELECTRA models."""

import keras

from electra_tf.configs.bert_config import BertConfig

INPUT_KEYS = ("input_ids", "input_mask", "segment_ids")


def bert_config_dict(bert_config):
  """A plain dict of BertConfig fields from a `BertConfig` or a dict; unknown
  keys raise (via `BertConfig.from_dict`)."""
  if isinstance(bert_config, BertConfig):
    return bert_config.to_dict()
  if not isinstance(bert_config, dict):
    raise ValueError(
      f"bert_config must be a BertConfig or a dict of its fields, got {type(bert_config).__name__}"
    )
  config = BertConfig.from_dict(dict(bert_config)).to_dict()
  if config["vocab_size"] is None:
    raise ValueError("bert_config needs vocab_size")
  return config


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
