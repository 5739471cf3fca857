"""What pre-training and fine-tuning configs share: strict updates and `--hparams` parsing."""

import json
import os


def load_hparams(hparams):
  """Returns the hparams dict given as a dict, a JSON object string, or a path
  to a `.json` file (the original's `--hparams` rule: a string ending in
  `.json` is a file)."""
  if hparams is None:
    return {}
  if isinstance(hparams, dict):
    return dict(hparams)
  if not isinstance(hparams, str):
    raise ValueError(
      f"--hparams must be a dict, a JSON string or a .json path, got {type(hparams).__name__}"
    )
  text = hparams.strip()
  if text.endswith(".json"):
    if not os.path.exists(text):
      raise ValueError(f"--hparams: file {text!r} does not exist")
    with open(text, encoding="utf-8") as f:
      try:
        values = json.load(f)
      except json.JSONDecodeError as e:
        raise ValueError(f"--hparams: {text!r} is not valid JSON: {e}") from e
  else:
    try:
      values = json.loads(text or "{}")
    except json.JSONDecodeError as e:
      raise ValueError(
        f"--hparams: expected a JSON object or a path ending in .json, got {text!r}: {e}"
      ) from e
  if not isinstance(values, dict):
    raise ValueError(f"--hparams: expected a JSON object, got {type(values).__name__}")
  return values


class HParams:
  """Attribute bag whose `update` rejects keys that are not already attributes."""

  def update(self, kwargs):
    for key, value in kwargs.items():
      if key not in self.__dict__:
        valid = ", ".join(sorted(k for k in self.__dict__ if not k.startswith("_")))
        raise ValueError(f"Unknown hparam {key!r}. Valid hparams: {valid}")
      self.__dict__[key] = value

  def to_dict(self):
    return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

  def __repr__(self):
    lines = [f"{k} {v}" for k, v in sorted(self.to_dict().items())]
    return "\n".join(lines)
