"""What is this path? Every model and checkpoint format electra_tf reads,
told apart by content (never by guessing from names).

| format | what is there |
|---|---|
| `official` | a name-based TF1 pre-training checkpoint (the original's, the released models) |
| `finetuned` | a name-based checkpoint with `task_specific/<task>/` heads (the original's fine-tuning, or `run_finetuning`'s) |
| `training` | an electra_tf (object-based) training checkpoint, usually with its run's `config.json` |
| `keras` | a `.keras` file written by electra_tf (a zip archive with `config.json`) |
| `huggingface` | a Hugging Face transformers ELECTRA directory (`config.json` with `model_type`, `model.safetensors`) |
| `keras_hub_preset` | a keras-hub preset directory (`config.json` naming a keras-hub class, `metadata.json`) |

Three formats write a `config.json` (a run dir, a Hugging Face directory, a
keras-hub preset); its content decides which.

Example:
  >>> FORMATS[:3]
  ('official', 'finetuned', 'training')
  >>> str(wrong_format_error("x.keras", "keras", ("official", "training")))
  "'x.keras' is a .keras model file; expected an official (name-based) checkpoint or an electra_tf training checkpoint"
"""

import dataclasses
import functools
import json
import os
import zipfile

import tensorflow as tf

from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.checkpoints import reader as checkpoint_reader
from electra_tf.checkpoints.reader import is_object_based
from electra_tf.checkpoints.reader import open_reader
from electra_tf.sources.finetuned_heads import task_groups
from electra_tf.utils.file_io import check_not_lfs_pointer
from electra_tf.utils.file_io import json_error
from electra_tf.utils.file_io import not_there

OFFICIAL = "official"
FINETUNED = "finetuned"
TRAINING = "training"
KERAS = "keras"
HUGGINGFACE = "huggingface"
KERAS_HUB_PRESET = "keras_hub_preset"
FORMATS = (OFFICIAL, FINETUNED, TRAINING, KERAS, HUGGINGFACE, KERAS_HUB_PRESET)
DESCRIPTIONS = {
  OFFICIAL: "an official (name-based) checkpoint",
  FINETUNED: "a fine-tuned checkpoint (task_specific/ heads)",
  TRAINING: "an electra_tf training checkpoint",
  KERAS: "a .keras model file",
  HUGGINGFACE: "a Hugging Face ELECTRA directory",
  KERAS_HUB_PRESET: "a keras-hub preset directory",
}
CONFIG_FILE = "config.json"


@dataclasses.dataclass(frozen=True)
class Detected:
  """What `detect` found.

  Attributes:
    format: one of `FORMATS`.
    path: the path as given.
    location: the checkpoint prefix (checkpoint formats) or the file or
      directory itself.
    run_config: the electra_tf run's `config.json` content, when there is one.
  """

  format: str
  path: str
  location: str
  run_config: dict = None

  @property
  def description(self):
    return DESCRIPTIONS[self.format]


def _read_json(path):
  if not tf.io.gfile.exists(path):
    return None
  try:
    with tf.io.gfile.GFile(path, "r") as f:
      content = json.loads(f.read())
  except json.JSONDecodeError as e:
    if not e.doc[e.pos : e.pos + 1].isascii():  # a hand edit (a pasted no-break space), not damage
      raise ValueError(f"config file {path!r} is not valid JSON ({json_error(e)})") from None
    return None
  except UnicodeDecodeError:
    return None
  return content if isinstance(content, dict) else None


def _config_json_format(content):
  """The format a directory's `config.json` (`content`, parsed) declares, or None."""
  if content is None:
    return None
  if content.get("format") == model_dir_lib.RUN_CONFIG_FORMAT:
    return TRAINING  # a run dir: its checkpoint says training or fine-tuned
  if str(content.get("module", "")).startswith("keras_hub") or str(
    content.get("registered_name", "")
  ).startswith("keras_hub>"):
    return KERAS_HUB_PRESET
  if "model_type" in content or "architectures" in content:
    return HUGGINGFACE
  return None


def _is_keras_archive(path):
  if not zipfile.is_zipfile(path):
    return False
  with zipfile.ZipFile(path) as archive:
    return CONFIG_FILE in archive.namelist()


def _starts_like_a_zip_archive(path):
  with tf.io.gfile.GFile(path, "rb") as f:
    return f.read(4) == b"PK\x03\x04"


def keras_archive_config(path):
  """A `.keras` archive's `config.json`, parsed, without loading the model;
  {} when it cannot be read."""
  try:
    stat = os.stat(path)
    return json.loads(_archive_config_bytes(os.path.abspath(path), stat.st_mtime_ns, stat.st_size))
  except (OSError, KeyError, ValueError, zipfile.BadZipFile):
    return {}


@functools.lru_cache(maxsize=8)
def _archive_config_bytes(path, mtime_ns, size):
  """Keyed by the file's identity: the steps of one command that ask about the
  same `.keras` (its class names, its preprocessor, its sizes) open it once."""
  del mtime_ns, size
  with zipfile.ZipFile(path) as archive:
    return archive.read(CONFIG_FILE)


def keras_archive_class_names(path):
  """The class names a `.keras` archive's `config.json` builds (every nested
  layer and model), without loading it; an empty set when it cannot be read.

  Example:
  >>> sorted(keras_archive_class_names("missing.keras"))
  []
  """
  names = set()
  for node in keras_archive_nodes(path):
    for key in ("class_name", "registered_name"):
      if isinstance(node.get(key), str):
        names.add(node[key].rsplit(">", 1)[-1])
  return names


def keras_archive_nodes(path):
  """Every dict nested in a `.keras` archive's `config.json` (each layer's and
  model's entry, their configs), outermost first; none when it cannot be read."""
  stack = [keras_archive_config(path)]
  while stack:
    node = stack.pop()
    if isinstance(node, dict):
      yield node
      stack.extend(reversed(node.values()))
    elif isinstance(node, list):
      stack.extend(reversed(node))


def _checkpoint_format(prefix):
  if is_object_based(prefix):
    return TRAINING
  return FINETUNED if task_groups(open_reader(prefix).get_variable_to_shape_map()) else OFFICIAL


def detect(path):
  """The format of `path` (see the module docstring).

  Args:
    path: a checkpoint prefix or directory, a `.keras` file, a Hugging Face
      directory or a keras-hub preset directory.

  Returns:
    A `Detected`.

  Raises:
    ValueError: one line naming `path` and what was found there.
  """
  path = os.fspath(path)
  directory_config = None  # a directory's config.json, read once
  if tf.io.gfile.isdir(path):
    directory_config = _read_json(os.path.join(path, CONFIG_FILE))
    declared = _config_json_format(directory_config)
    if declared in (HUGGINGFACE, KERAS_HUB_PRESET):
      for directory, _, names in tf.io.gfile.walk(path):  # weights, vocab, tokenizer.json
        for name in sorted(names):
          check_not_lfs_pointer(os.path.join(directory, name))
      return Detected(declared, path, path)
  elif tf.io.gfile.exists(path) and not tf.io.gfile.exists(path + ".index"):
    check_not_lfs_pointer(path)
    if _is_keras_archive(path):
      return Detected(KERAS, path, path)
    if _starts_like_a_zip_archive(path):
      # A cut archive has lost the directory at its end.
      raise ValueError(
        f"{path!r} is not a whole .keras file (no zip archive's directory at its end): "
        "damaged or only partly copied? copy it again"
      )
    raise ValueError(
      f"{path!r} is a file but not a model electra_tf reads: expected a .keras model "
      "(a zip archive), a checkpoint prefix or a model directory"
    )
  elif not tf.io.gfile.exists(path + ".index"):
    raise ValueError(f"{path!r} {not_there(path)} (no file, directory or checkpoint prefix)")
  try:
    # A damaged checkpoint is named with what is wrong, before anything reads it.
    prefix = checkpoint_reader.readable_prefix(path)
  except checkpoint_reader.UnreadableCheckpointError:
    raise
  except ValueError:
    config_file = os.path.join(path, CONFIG_FILE)
    if directory_config is None and tf.io.gfile.exists(config_file):
      # What a published directory is recognised by: name it, not what is missing.
      raise ValueError(
        f"{config_file!r} is empty or no JSON object, so {path!r} is no model electra_tf "
        "reads (damaged or only partly copied? copy it again)"
      ) from None
    raise ValueError(
      f"{path!r} holds no model electra_tf reads: it has no usable `checkpoint` file, "
      "no Hugging Face config.json + model.safetensors and no keras-hub preset"
    ) from None
  found = _checkpoint_format(prefix)
  run_config = None
  if found != OFFICIAL:
    config_path = model_dir_lib.run_config_path(prefix)
    read_already = directory_config is not None and os.path.normpath(
      config_path
    ) == os.path.normpath(os.path.join(path, CONFIG_FILE))
    if read_already:
      run_config = model_dir_lib.checked_run_config(directory_config, config_path)
    else:
      run_config = model_dir_lib.read_run_config(prefix)
  if run_config is not None and run_config.get("kind") == model_dir_lib.KIND_FINETUNING:
    found = FINETUNED
  return Detected(found, path, prefix, run_config)


def wrong_format_error(path, found, expected):
  """The one-line `ValueError` every loader raises for a format it cannot use."""
  wanted = " or ".join(DESCRIPTIONS[f] for f in expected)
  return ValueError(f"{os.fspath(path)!r} is {DESCRIPTIONS[found]}; expected {wanted}")


def require(path, expected):
  """`detect(path)` (or `path`, a `Detected`), refused with `wrong_format_error`
  when its format is not one of `expected`."""
  detected = path if isinstance(path, Detected) else detect(path)
  if detected.format not in expected:
    raise wrong_format_error(detected.path, detected.format, expected)
  return detected
