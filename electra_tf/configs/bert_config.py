"""The transformer's shape: the original's `BertConfig` (`model/modeling.py:BertConfig`), typed."""

import copy
import dataclasses
import json
import numbers
from typing import Optional

from electra_tf.configs.hparams import unknown_hparam_message

# The integer sizes of the encoder besides vocab_size (each must be positive).
SHAPE_FIELDS = (
  "hidden_size",
  "num_hidden_layers",
  "num_attention_heads",
  "intermediate_size",
  "max_position_embeddings",
  "type_vocab_size",
)


@dataclasses.dataclass
class BertConfig:
  """Hyperparameters of one transformer tower, with the original's defaults.

  Args:
    vocab_size: rows of the word-embedding table.
    hidden_size: width H of the transformer.
    num_hidden_layers: number of transformer blocks L.
    num_attention_heads: heads A; `hidden_size` must be divisible by it.
    intermediate_size: width I of the feed-forward layer.
    hidden_act: "gelu" (exact erf form), "relu", "tanh" or "linear".
    hidden_dropout_prob: dropout after embeddings, attention output and FFN.
    attention_probs_dropout_prob: dropout on the attention probabilities.
    max_position_embeddings: rows P of the position table.
    type_vocab_size: rows T of the token-type (segment) table.
    initializer_range: stddev of the truncated-normal initializers.

  Example:
  >>> config = BertConfig(vocab_size=30522, hidden_size=256)
  >>> config.num_attention_heads
  12
  """

  vocab_size: Optional[int] = None
  hidden_size: int = 768
  num_hidden_layers: int = 12
  num_attention_heads: int = 12
  intermediate_size: int = 3072
  hidden_act: str = "gelu"
  hidden_dropout_prob: float = 0.1
  attention_probs_dropout_prob: float = 0.1
  max_position_embeddings: int = 512
  type_vocab_size: int = 2
  initializer_range: float = 0.02

  @classmethod
  def from_dict(cls, values):
    """Builds a config from a dict; unknown keys are an error (the original kept
    them silently). An integral float for an integer field becomes an int."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:  # the first, named as --hparams names one (a look-alike letter shown)
      raise ValueError(unknown_hparam_message(unknown[0], known, "BertConfig field"))
    values = dict(values)
    for f in dataclasses.fields(cls):
      value = values.get(f.name)
      if f.name not in values:
        continue
      if f.type in (int, Optional[int]) and isinstance(value, float):
        if not value.is_integer():
          raise ValueError(f"BertConfig field {f.name} must be an integer, got {value!r}")
        values[f.name] = int(value)
      elif f.type in (int, Optional[int], float) and (
        isinstance(value, bool) or not isinstance(value, numbers.Real)
      ):
        if value is not None or f.type is not Optional[int]:
          kind = "a number" if f.type is float else "an integer"
          raise ValueError(f"BertConfig field {f.name} must be {kind}, got {value!r}")
    return cls(**values)

  def to_dict(self):
    return copy.deepcopy(dataclasses.asdict(self))

  def to_json_string(self):
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def replace(self, **changes):
    return dataclasses.replace(self, **changes)

  def check(self, what="BertConfig"):
    """Raises a one-line `ValueError` naming the field, its value and the
    expected range for a shape that cannot build a model; `what` names the config.

    Example:
    >>> BertConfig(vocab_size=10, hidden_size=32, num_attention_heads=3).check()
    Traceback (most recent call last):
    ...
    ValueError: BertConfig hidden_size=32 must be divisible by num_attention_heads=3 (each head gets hidden_size / heads dimensions)
    """
    for name in SHAPE_FIELDS + (("vocab_size",) if self.vocab_size is not None else ()):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} {name}={value!r}; expected a positive integer")
    if self.hidden_size % self.num_attention_heads:
      raise ValueError(
        f"{what} hidden_size={self.hidden_size} must be divisible by "
        f"num_attention_heads={self.num_attention_heads} (each head gets hidden_size / heads "
        "dimensions)"
      )
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{what} {name}={value!r}; expected a probability in [0, 1)")
    if not isinstance(self.initializer_range, (int, float)) or not self.initializer_range > 0:
      raise ValueError(f"{what} initializer_range={self.initializer_range!r}; expected > 0")
    act = self.hidden_act
    if isinstance(act, str) and act.lower() not in ("", "gelu", "relu", "tanh", "linear"):
      raise ValueError(
        f"{what} hidden_act={self.hidden_act!r}; expected one of gelu, relu, tanh, linear"
      )
