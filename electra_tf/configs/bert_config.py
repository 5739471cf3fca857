"""The transformer's shape: the original's `BertConfig` (`model/modeling.py:BertConfig`), typed."""

import copy
import dataclasses
import json
from typing import Optional


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
    """Builds a config from a dict; unknown keys are an error (the original
    silently kept them as attributes, which hid typos)."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
      raise ValueError(f"Unknown BertConfig field(s) {unknown}; valid fields are {sorted(known)}")
    return cls(**values)

  @classmethod
  def from_json_file(cls, path):
    with open(path, encoding="utf-8") as f:
      return cls.from_dict(json.load(f))

  def to_dict(self):
    return copy.deepcopy(dataclasses.asdict(self))

  def to_json_string(self):
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def replace(self, **changes):
    return dataclasses.replace(self, **changes)
