"""The hparam presets shipped inside the package (`electra_tf/configs/presets/
*.json`; a checkout's top-level `configs/` points at the same files).

`--hparams` takes a preset by name (`--hparams small`) or by the repository
path the docs use (`--hparams configs/small.json`); from an installed wheel,
where no `configs/` folder exists, that path falls back to the packaged file
of the same name. A `configs/<name>.json` file that exists is read as any
other file. The files are read with `importlib.resources`, so they are found
in a wheel, an editable install or a zip alike.
"""

from importlib import resources
import json
import os

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
