"""Small helpers shared by the layers: the original's initializers, LayerNorm,
activations and attention-mask construction."""

import keras
from keras import ops

# The original adds this to the scores of masked keys (a quirk of the original (README: Differences from the original)).
ATTENTION_MASK_ADDER = -10000.0
LAYER_NORM_EPSILON = 1e-12
ATTENTION_DIRECTIONS = ("bidirectional", "ltr", "rtl")


def truncated_normal(stddev):
  """TF1's `truncated_normal_initializer` (cut at 2σ), as `create_initializer`."""
  return keras.initializers.TruncatedNormal(stddev=stddev)


def make_layer_norm(name):
  """`tf.contrib.layers.layer_norm`: last axis, ε=1e-12, always float32."""
  return keras.layers.LayerNormalization(
    axis=-1, epsilon=LAYER_NORM_EPSILON, dtype="float32", name=name
  )


def get_activation(name):
  """The original's `get_activation` (`model/modeling.py:BertConfig`); "gelu" is the exact erf form."""
  if not isinstance(name, str):
    return name
  key = name.lower()
  if key in ("", "linear"):
    return None
  if key == "gelu":
    # Keras' gelu defaults to approximate=False: the exact erf form.
    return keras.activations.gelu
  if key == "relu":
    return keras.activations.relu
  if key == "tanh":
    return keras.activations.tanh
  raise ValueError(f"Unsupported activation {name!r}; expected gelu, relu, tanh or linear")


def attention_mask_adder(input_mask, attention_direction="bidirectional"):
  """Float32 `[B, 1, S, S]` adder: 0 where attention is allowed, −10000 else.

  Only keys are masked (by `input_mask`); "ltr" also hides keys j > i and
  "rtl" keys j < i (Electric's towers, `model/modeling.py:BertModel`).
  """
  if attention_direction not in ATTENTION_DIRECTIONS:
    raise ValueError(
      f"attention_direction={attention_direction!r}; expected one of {ATTENTION_DIRECTIONS}"
    )
  mask = ops.cast(input_mask, "float32")[:, None, None, :]  # [B, 1, 1, S]
  if attention_direction != "bidirectional":
    seq_length = ops.shape(input_mask)[1]
    rows = ops.arange(seq_length)[:, None]
    cols = ops.arange(seq_length)[None, :]
    allowed = cols <= rows if attention_direction == "ltr" else cols >= rows
    mask = mask * ops.cast(allowed, "float32")[None, None, :, :]
  return (1.0 - mask) * ATTENTION_MASK_ADDER


def add_list_children(children, save_type, **lists):
  """Names the items of sublayer lists as checkpoint children.

  Keras 3 (3.15, TF backend) leaves its tracked lists out of
  `_trackable_children` for `tf.train.Checkpoint`, so the layers in a list
  attribute would be missing from object-based checkpoints. A layer holding
  such a list calls this from its `_trackable_children` override.
  """
  if save_type == "checkpoint":
    for name, items in lists.items():
      for index, item in enumerate(items):
        children[f"{name}_{index}"] = item
  return children
