"""Helpers shared by the fine-tuning heads."""

import keras
from keras import ops


def head_dense(units, name, activation=None):
  """A head's dense layer: Glorot-uniform kernel, zero bias."""
  return keras.layers.Dense(
    units,
    activation=activation,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    name=name,
  )


def log_softmax_cross_entropy(logits, labels, depth):
  """Per-row `-sum(one_hot(labels) * log_softmax(logits))` over the last axis."""
  log_probs = ops.log_softmax(logits, axis=-1)
  one_hot = ops.one_hot(ops.cast(labels, "int32"), depth, dtype=log_probs.dtype)
  return -ops.sum(one_hot * log_probs, axis=-1)


def gelu(x):
  """The exact (erf) GELU of the original."""
  return keras.activations.gelu(x, approximate=False)


def prediction_features(features, **label_features):
  """Placeholder label features for prediction: `{name: make(batch, seq_length)}`
  for each of `label_features`, the sizes read from `features`."""
  batch = ops.shape(features["input_ids"])[0]
  seq_length = ops.shape(features["input_ids"])[1]
  return {name: make(batch, seq_length) for name, make in label_features.items()}
