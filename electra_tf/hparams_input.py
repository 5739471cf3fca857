"""The hparams a user gives a run, read once into a dict: the `--data-dir`,
`--model-name` and `--hparams` flags (`add_run_flags`), and `load_hparams`,
which takes a dict, a JSON object, a `.json` file, a run's `config.json`
or a packaged preset.

The presets ship inside the package (`electra_tf/configs/presets/*.json`,
read with `importlib.resources`). `--hparams` takes one by name (`small`) or
by the path the docs use (`configs/small.json`, which falls back to the
packaged file where no such file exists).
"""

import argparse
from importlib import resources
import json
import os

from electra_tf.configs.hparams import RUN_CONFIG_FORMAT
from electra_tf.configs.hparams import run_config_hparams
from electra_tf.utils.file_io import DuplicateKeyError
from electra_tf.utils.file_io import json_error
from electra_tf.utils.file_io import not_there
from electra_tf.utils.file_io import object_with_unique_keys

# The resource folder of `electra_tf.configs` holding `<name>.json`.
PRESETS_DIR = "presets"
# The relative folder the docs name the presets by.
CHECKOUT_DIR = "configs"


def preset_names():
  """The names of the packaged presets, sorted.

  Example:
  >>> "small" in preset_names() and "base" in preset_names()
  True
  """
  folder = resources.files("electra_tf.configs").joinpath(PRESETS_DIR)
  return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


def preset_name(text):
  """The preset `text` names: a bare name (`small`) or a relative
  `configs/<name>.json` path; None for anything else.

  Example:
  >>> preset_name("small"), preset_name("configs/small++.json"), preset_name("{}")
  ('small', 'small++', None)
  """
  names = preset_names()
  if text in names:
    return text
  folder, base = os.path.split(os.path.normpath(text))
  if folder == CHECKOUT_DIR and base.endswith(".json") and base[: -len(".json")] in names:
    return base[: -len(".json")]
  return None


def load_preset(name):
  """The hparams dict of the packaged preset `name`.

  Raises:
    ValueError: no preset has that name (the message lists them).

  Example:
  >>> load_preset("small")["model_size"]
  'small'
  """
  if name not in preset_names():
    raise ValueError(f"--hparams: no preset {name!r}; the presets are {', '.join(preset_names())}")
  path = resources.files("electra_tf.configs").joinpath(PRESETS_DIR).joinpath(f"{name}.json")
  return json.loads(path.read_text(encoding="utf-8"))


def load_hparams(hparams, config_class=None):
  """Returns the hparams dict given as a dict, a JSON object string, a path
  to a `.json` file or a packaged preset (`small`, or `configs/small.json`
  where no such file exists). A run's `config.json` gives that run's
  hparams; with `config_class` (the command's config class, by name), one
  of another kind of run is refused in one line."""
  if config_class == "FinetuningConfig" and isinstance(hparams, str):
    text = hparams.strip()
    preset = preset_name(text)
    if preset is not None and (preset == text or not os.path.exists(text)):
      # The packaged presets size a pre-training run; none is a fine-tuning config.
      raise ValueError(
        f"--hparams {text!r} names a packaged pre-training preset; fine-tuning takes its own "
        "hparams (a JSON object or a .json file; the model's sizes come from its config.json)"
      )
  values = _load_hparams(hparams)
  if values.get("format") == RUN_CONFIG_FORMAT:
    recorded = values.get("config_class")
    if config_class is not None and recorded != config_class:
      raise ValueError(
        f"--hparams {hparams if isinstance(hparams, str) else 'the run config'!r} is the "
        f"config.json of a {values.get('kind')} run ({recorded}); this command takes a "
        f"{config_class}'s: to start from that run, give its model dir as init_checkpoint"
      )
    return run_config_hparams(values, source=hparams if isinstance(hparams, str) else None)
  if config_class is not None:
    for key, flag in (("model_name", "--model-name"), ("data_dir", "--data-dir")):
      if key in values:
        raise ValueError(
          f"--hparams sets {key}={values[key]!r}, which is the command's {flag} flag; "
          f"give it there only"
        )
  return values


def _load_hparams(hparams):
  if hparams is None:
    return {}
  if isinstance(hparams, dict):
    return dict(hparams)
  if not isinstance(hparams, str):
    raise ValueError(
      f"--hparams must be a dict, a JSON string or a .json path, got {type(hparams).__name__}"
    )
  text = hparams.strip()
  if not text:
    raise ValueError(
      "--hparams is empty (an unset shell variable?); expected a JSON object ('{}' for the "
      "defaults), a path ending in .json or a preset name"
    )
  preset = preset_name(text)
  # A file that exists wins over the packaged preset of its name; a bare name has no file.
  if preset is not None and (preset == text or not os.path.exists(text)):
    values = load_preset(preset)
  elif text.endswith(".json"):
    if not os.path.exists(text):
      raise ValueError(f"--hparams: file {text!r} {not_there(text)}")
    if os.path.isdir(text):
      raise ValueError(f"--hparams: {text!r} is a directory; expected a .json file")
    with open(text, encoding="utf-8") as f:
      try:
        values = json.load(f, object_pairs_hook=object_with_unique_keys)
      except DuplicateKeyError as e:
        raise ValueError(f"--hparams: {text!r}: {e}; give each hparam once") from None
      except json.JSONDecodeError as e:
        raise ValueError(f"--hparams: {text!r} is not valid JSON: {json_error(e)}") from e
      except UnicodeDecodeError:
        raise ValueError(f"--hparams: {text!r} is not UTF-8 text; expected a .json file") from None
  else:
    try:
      values = json.loads(text, object_pairs_hook=object_with_unique_keys)
    except DuplicateKeyError as e:
      raise ValueError(f"--hparams: {e}; give each hparam once") from None
    except json.JSONDecodeError as e:
      raise ValueError(
        f"--hparams: expected a JSON object, a path ending in .json or a preset name "
        f"({', '.join(preset_names())}), got {text!r}: {json_error(e)}"
      ) from e
  if not isinstance(values, dict):
    raise ValueError(f"--hparams: expected a JSON object, got {type(values).__name__}")
  return values


class _GivenOnce(argparse.Action):
  """An option that may be given once (argparse would keep the last silently)."""

  def __call__(self, parser, namespace, values, option_string=None):
    if getattr(namespace, self.dest) is not self.default:
      parser.error(f"{option_string} is given more than once; give it once")
    setattr(namespace, self.dest, values)


def add_run_flags(parser, model_role, presets=True):
  """Adds the original's three flags of `run_pretraining.py` and
  `run_finetuning.py` to an `argparse` parser: `--data-dir`, `--model-name`
  (the model being `model_role`, e.g. "trained") and `--hparams` (which
  names the packaged pre-training presets with `presets`)."""
  parser.add_argument(
    "--data-dir",
    required=True,
    action=_GivenOnce,
    help="Location of data files (model weights, etc).",
  )
  parser.add_argument(
    "--model-name",
    required=True,
    action=_GivenOnce,
    help=f"The name of the model being {model_role}.",
  )
  preset_help = f", or a packaged preset's name ({', '.join(preset_names())})" if presets else ""
  parser.add_argument(
    "--hparams",
    default="{}",
    action=_GivenOnce,
    help=f"JSON dict of model hyperparameters or a path ending in .json{preset_help}.",
  )
