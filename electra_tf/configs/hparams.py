"""What pre-training and fine-tuning configs share: typed fields with help
text, strict updates, and a run config's hparams as another run's
(`run_config_hparams`). Reading `--hparams` (a file, a preset) is
`electra_tf.hparams_input`'s: configs are built from values."""

import copy
import dataclasses
import difflib
import numbers
import os
import re
import types

from electra_tf.utils import file_io

# The `format` of a run's `config.json` (`electra_tf.checkpoints.model_dir`).
RUN_CONFIG_FORMAT = "electra_tf.run_config"
# Every `ConfigBase` subclass by name, so a run config's `config_class` finds its fields.
_CONFIG_CLASSES = {}


def run_config_hparams(run_config, source=None):
  """The hparams of a run config as `--hparams` for another run: without the
  flags' values, derived fields, unset defaults and the paths that followed the
  run's flags (a path the run was given explicitly is kept).

  Args:
    run_config: the parsed `config.json`.
    source: its path, for messages.
  """
  where = source or run_config.get("path") or "the run config"
  cls = _CONFIG_CLASSES.get(run_config.get("config_class"))
  if cls is None or not isinstance(run_config.get("hparams"), dict):
    raise ValueError(
      f"--hparams {where!r}: a run config with an unknown config_class "
      f"{run_config.get('config_class')!r} or no hparams (written by another electra_tf version?)"
    )
  recorded = run_config["hparams"]
  fields = {f.name: f for f in dataclasses.fields(cls)}
  model_name = recorded.get("model_name") or run_config.get("model_name") or "electra"
  data_dir = recorded.get("data_dir") or _given_data_dir(recorded, model_name, run_config)
  # Fine-tuning paths are named after the tasks.
  naming = {"task_names": recorded["task_names"]} if "task_names" in recorded else {}
  defaults = cls(model_name, data_dir, **naming).to_dict()
  elsewhere = cls(model_name, os.path.join(data_dir, "elsewhere"), **naming).to_dict()
  hparams = {}
  for key, value in recorded.items():
    field = fields.get(key)
    if field is None:
      raise ValueError(unknown_hparam_message(key, fields) + f" (in the run config {where!r})")
    if key in ("model_name", "data_dir") or field.metadata.get("derived"):
      continue
    if value is None and field.default is None:
      continue
    if defaults[key] != elsewhere[key] and _follows_flags(value, defaults[key]):
      continue
    hparams[key] = value
  return hparams


def _given_data_dir(recorded, model_name, run_config):
  """The `--data-dir` a pre-training run was given, else the one it recorded."""
  model_dir = str(recorded.get("model_dir") or "")
  tail = os.path.join("models", model_name)
  if model_dir.endswith(tail):
    return model_dir[: -len(tail)].rstrip(os.sep) or "."
  return run_config.get("data_dir") or "."


def _follows_flags(value, default):
  # A fine-tuning run records its trial dir `<model_dir>_<trial>`.
  return value == default or (
    isinstance(value, str)
    and isinstance(default, str)
    and re.fullmatch(re.escape(default) + r"_\d+", value) is not None
  )


# The `optimizer` hparam's values (`optimization.factory.OPTIMIZERS` builds them).
OPTIMIZER_NAMES = ("adam", "lamb")


def check_optimizer_name(name):
  """Raises a one-line `ValueError` unless `name` is a value of the `optimizer` hparam."""
  if name not in OPTIMIZER_NAMES:
    raise ValueError(f"hparam optimizer={name!r}; expected one of {sorted(OPTIMIZER_NAMES)}")


def check_path_hparam(config, name):
  """A one-line ValueError unless hparam `name` is null or a path (an empty
  string would read as "none")."""
  value = getattr(config, name)
  if isinstance(value, os.PathLike):
    value = os.fspath(value)
  if value is not None and (not isinstance(value, str) or not value.strip()):
    raise ValueError(f"hparam {name}={value!r}; expected a path, or null for none")


def check_run_flags(model_name, data_dir):
  """A one-line ValueError unless `model_name` names one directory under
  `<data-dir>/models/` and `data_dir` is given, neither holding a glob
  character class (`file_io.check_no_glob_class`)."""
  outside = isinstance(model_name, str) and (
    os.path.isabs(model_name) or os.path.normpath(model_name).split(os.sep)[0] == ".."
  )
  if isinstance(model_name, str) and model_name.strip() and model_name != model_name.strip():
    # "n " makes a folder a later --model-name n does not find.
    raise ValueError(
      f"--model-name {model_name!r} starts or ends with white space; expected the name "
      f"of a model directory (such as {model_name.strip()!r})"
    )
  if not isinstance(model_name, str) or model_name.strip() in ("", ".", "..") or outside:
    raise ValueError(
      f"--model-name {model_name!r}: expected the name of a model directory under "
      "<data-dir>/models/ (not empty, '.', '..', absolute or leading out of it)"
    )
  longest = max((len(part.encode()) for part in model_name.split("/")), default=0)
  if longest > 200:
    # File systems take 255 bytes a name; the run adds hidden staging names to it.
    raise ValueError(
      f"--model-name is {longest} bytes long ({model_name[:20]!r}…); expected a directory "
      "name of at most 200 bytes"
    )
  if not str(os.fspath(data_dir) if isinstance(data_dir, os.PathLike) else data_dir).strip():
    raise ValueError(
      "--data-dir is empty (an unset shell variable?); expected the data directory ('.' for "
      "this one)"
    )
  # TensorFlow's checkpoint reader globs the model dir: `run[1]` would hide every checkpoint.
  file_io.check_no_glob_class(data_dir, "--data-dir")
  file_io.check_no_glob_class(model_name, "--model-name", fix="choose another name")


def hparam(default, help, *, derived=False):  # pylint: disable=redefined-builtin
  """Declares one config field: its default and help text (docs/hparams.md).

  Args:
    default: the default value; a list or dict is copied for every instance.
    help: one-line description of the hparam.
    derived: True for a value the config computes itself, which `update`
      refuses (the original creates it only after applying the user's values).

  Returns:
    A `dataclasses.Field`.

  Example:
  >>> @dataclasses.dataclass(init=False, repr=False, eq=False)
  ... class Tiny(ConfigBase):
  ...   steps: int = hparam(10, "Training steps.")
  >>> Tiny.field_help()["steps"]
  'Training steps.'
  """
  metadata = {"help": help, "derived": derived}
  if isinstance(default, (dict, list)):
    return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
  return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass(init=False, repr=False, eq=False)
class ConfigBase:
  """Base of the dataclass configs: the fields, declared with `hparam`, are the
  hparams; a subclass's `__init__` calls `set_defaults`, then `update`.

  Example:
  >>> @dataclasses.dataclass(init=False, repr=False, eq=False)
  ... class Tiny(ConfigBase):
  ...   learning_rate: float = hparam(1e-3, "Peak learning rate.")
  ...   def __init__(self, **kwargs):
  ...     self.set_defaults()
  ...     self.update(kwargs)
  >>> Tiny(learning_rate=0.1).to_dict()
  {'learning_rate': 0.1}
  >>> Tiny(lerning_rate=0.1)
  Traceback (most recent call last):
  ...
  ValueError: Unknown hparam 'lerning_rate' — did you mean 'learning_rate'? Valid hparams: learning_rate
  """

  def __init_subclass__(cls, **kwargs):
    super().__init_subclass__(**kwargs)
    _CONFIG_CLASSES[cls.__name__] = cls

  @classmethod
  def field_help(cls):
    """Maps every field name to its help text (empty when a field has none)."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}

  def set_defaults(self):
    """Sets every field to its declared default."""
    for f in dataclasses.fields(self):
      if f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
      elif f.default is not dataclasses.MISSING:
        value = f.default
      else:
        value = None
      setattr(self, f.name, value)

  def update(self, values):
    """Sets hparams from a dict; an unknown or derived key, or a value that does
    not fit the field's type (`check_type`), raises `ValueError` naming it."""
    fields = dataclasses.fields(self)
    settable = [f.name for f in fields if not f.metadata.get("derived")]
    derived = {f.name for f in fields if f.metadata.get("derived")}
    for key, value in values.items():
      if key in derived:
        # Unknown, as in the original, where the attribute does not exist yet.
        raise ValueError(
          f"Unknown hparam {key!r}: it is derived from other hparams and cannot be set"
        )
      if key not in settable:
        raise ValueError(unknown_hparam_message(key, settable))
      value = check_type(key, value, self.__dataclass_fields__[key].type)
      setattr(self, key, value)

  def to_dict(self):
    """The hparams (every field) in declaration order."""
    return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

  def __repr__(self):
    return "\n".join(f"{k} {v}" for k, v in sorted(self.to_dict().items()))


def unknown_hparam_message(key, valid_names, what="hparam"):
  """The error for an unknown hparam (or other `what`), with a "did you mean" when one is close.

  Example:
  >>> unknown_hparam_message("lerning_rate", ["learning_rate", "seed"])
  "Unknown hparam 'lerning_rate' — did you mean 'learning_rate'? Valid hparams: learning_rate, seed"
  """
  valid = sorted(valid_names)
  close = difflib.get_close_matches(str(key), valid, n=1)
  hint = f" — did you mean {close[0]!r}?" if close else "."
  shown = repr(key)
  odd = next((c for c in str(key) if not c.isascii()), None)
  if odd:  # a look-alike letter (Cyrillic U+0430 for 'a') reads as the suggestion itself
    shown = f"{ascii(str(key))} (its {odd!r} is {file_io.char_name(odd)}, not ASCII)"
  return f"Unknown {what} {shown}{hint} Valid {what}s: {', '.join(valid)}"


# What a field's annotation accepts, and how the error names it; bools are not numbers.
_TYPE_CHECKS = {
  bool: (lambda v: isinstance(v, bool), "true or false"),
  int: (
    lambda v: (
      (isinstance(v, numbers.Integral) and not isinstance(v, bool))
      or (isinstance(v, float) and v.is_integer())
    ),
    "an integer",
  ),
  float: (lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool), "a number"),
  str: (lambda v: isinstance(v, (str, os.PathLike)), "a string"),
  list: (lambda v: isinstance(v, (list, tuple)), "a list"),
  dict: (lambda v: isinstance(v, dict), "a JSON object"),
}


def check_type(name, value, annotation):
  """Raises `ValueError` naming the hparam when `value` does not fit its
  annotation (`bool`, `int`, `float`, `str`, `list`, `dict`, or `X | None`);
  returns the value as the field keeps it (an integral float as an int).

  Example:
  >>> check_type("num_train_steps", 1e6, int)
  1000000
  >>> check_type("num_train_steps", 2.5, int)
  Traceback (most recent call last):
  ...
  ValueError: hparam 'num_train_steps' must be an integer, got the float 2.5
  >>> check_type("debug", "false", bool)
  Traceback (most recent call last):
  ...
  ValueError: hparam 'debug' must be true or false, got the str 'false'
  """
  optional = False
  if isinstance(annotation, types.UnionType):
    members = [a for a in annotation.__args__ if a is not type(None)]
    optional = len(members) < len(annotation.__args__)
    (annotation,) = members
  accepts, expected = _TYPE_CHECKS[annotation]
  if value is None and optional:
    return value
  if value is None or not accepts(value):
    expected += " or null" if optional else ""
    raise ValueError(
      f"hparam {name!r} must be {expected}, got the {type(value).__name__} {value!r}"
    )
  if annotation is int and type(value) is not int:
    return int(value)  # an integral float, or a numpy integer
  return value
