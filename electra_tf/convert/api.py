"""One conversion in either direction, detected from the input, and the
report the CLI prints.

Example:
  >>> print(format_report({"input": "a", "output": "b", "converted": ["x"],
  ...                      "not_converted": []}))
  Converted a -> b
    converted: 1 entries
    not converted: 0 entries
"""

import json
import os

from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.checkpoints.reader import open_reader
from electra_tf.convert.publish import huggingface_to_keras
from electra_tf.convert.publish import keras_hub_preset_to_keras
from electra_tf.convert.to_keras import official_to_keras
from electra_tf.convert.to_keras import training_checkpoint_to_keras
from electra_tf.convert.to_official import keras_to_official
from electra_tf.convert.writer import KERAS_SUFFIX
from electra_tf.interop import huggingface
from electra_tf.models import official_names
from electra_tf.sources import formats
from electra_tf.sources.finetuned_heads import task_groups
from electra_tf.utils.arguments import check_bools

DIRECTIONS = ("to-keras", "to-official")
CONVERTIBLE = formats.FORMATS


def direction_for(found, output_path=None):
  """The direction for an input of format `found` (`formats.detect(path).format`):
  "to-official" for a `.keras` model, "to-keras" for a name-based checkpoint;
  an electra_tf (object-based) training checkpoint goes "to-keras" when
  `output_path` ends in `.keras` (its pretrainer, discriminator or generator
  as a `.keras` model), else "to-official"."""
  if found == formats.KERAS:
    return "to-official"
  if found != formats.TRAINING:
    return "to-keras"
  to_keras_file = output_path is not None and os.fspath(output_path).endswith(KERAS_SUFFIX)
  return "to-keras" if to_keras_file else "to-official"


def convert(
  input_path,
  output_path,
  direction=None,
  part=None,
  hparams=None,
  with_optimizer_slots=False,
  global_step=None,
  overwrite=False,
):
  """Runs one conversion, as `python -m electra_tf.convert_checkpoint` does.

  Args:
    input_path: checkpoint prefix or directory (official or electra_tf), a
      `.keras` file, or a Hugging Face ELECTRA directory (written as a
      `.keras` discriminator or generator).
    output_path: see `official_to_keras` and `keras_to_official`.
    direction: one of `DIRECTIONS`, or None to detect it (`direction_for`;
      a given direction must match a name-based or `.keras` input).
    part: to-keras only (see `official_to_keras` and
      `training_checkpoint_to_keras`); None picks "finetuned" for a
      checkpoint with task heads, else "pretrainer".
    hparams: dict, JSON string or `.json` path, checked against the shapes.
    with_optimizer_slots, global_step: to-official only (see
      `keras_to_official`).
    overwrite: replace an existing `.keras` output (a model other work may
      depend on); without it that is an error. Directories are never replaced.

  Returns:
    The report dict of the direction's function (`format_report` prints it).
  """
  report = _convert(
    input_path, output_path, direction, part, hparams, with_optimizer_slots, global_step, overwrite
  )
  # Converted as asked; a run killed early is worth a word all the same.
  model_dir_lib.warn_if_unfinished(input_path, "converted")
  return report


def _convert(
  input_path, output_path, direction, part, hparams, with_optimizer_slots, global_step, overwrite
):
  check_bools(with_optimizer_slots=with_optimizer_slots, overwrite=overwrite)
  output = os.fspath(output_path)
  if output.endswith(KERAS_SUFFIX) and os.path.exists(output) and not overwrite:
    raise ValueError(f"--output {output!r} exists; pass --overwrite to replace it")
  found = formats.require(input_path, CONVERTIBLE).format
  if found == formats.KERAS_HUB_PRESET:
    if direction not in (None, "to-keras") or hparams is not None:
      raise ValueError(
        f"--input {os.fspath(input_path)!r} is a keras-hub preset: it becomes a .keras "
        "discriminator encoder; --direction and --hparams do not apply"
      )
    return keras_hub_preset_to_keras(input_path, output_path, part)
  if found == formats.HUGGINGFACE:
    if direction not in (None, "to-keras") or hparams is not None:
      raise ValueError(
        f"--input {os.fspath(input_path)!r} is a Hugging Face directory: it becomes a "
        ".keras discriminator or generator (as its architecture says); --direction "
        "and --hparams do not apply"
      )
    held = huggingface.read_hf_config(input_path)[0]
    if part not in (None, held):
      raise ValueError(
        f"--part {part}: --input {os.fspath(input_path)!r} is a Hugging Face directory that "
        f"holds the {held} only (use --part {held}, or leave --part out)"
      )
    return huggingface_to_keras(input_path, output_path)
  detected = direction_for(found, output_path)
  training_checkpoint = found == formats.TRAINING
  if direction is None:
    direction = detected
  elif direction not in DIRECTIONS:
    raise ValueError(f"--direction {direction!r}; expected one of {DIRECTIONS}")
  elif direction != detected and not training_checkpoint:
    kind = "an electra_tf checkpoint/.keras model"
    hint = ""
    if detected == "to-keras":
      kind = "a name-based (official) checkpoint"
      prefix = official_checkpoint.resolve_checkpoint_path(input_path)
      if task_groups(open_reader(prefix).get_variable_to_shape_map()):
        hint = (
          "; a fine-tuned checkpoint written by run_finetuning already has the original's "
          "names, shapes, dtypes, slots and global_step"
        )
    raise ValueError(
      f"--direction {direction}, but --input {input_path!r} is {kind} "
      f"(use --direction {detected}){hint}"
    )
  if direction == "to-keras":
    if with_optimizer_slots or global_step is not None:
      raise ValueError(
        "--with-optimizer-slots and --global-step apply to --direction "
        "to-official; to-keras carries the slots and step over whenever the "
        "output is a training checkpoint"
      )
    if training_checkpoint:
      return training_checkpoint_to_keras(input_path, output_path, part=part, hparams=hparams)
    return official_to_keras(input_path, output_path, part=part, hparams=hparams)
  if output.endswith(KERAS_SUFFIX):
    # The output would be a checkpoint directory with a model file's name.
    raise ValueError(
      f"--output {output!r} ends in {KERAS_SUFFIX}, but --input {os.fspath(input_path)!r} "
      "converts to the original's format (a checkpoint directory): name the output "
      "directory without the suffix (a .keras model is copied as a file)"
    )
  if part is not None:
    raise ValueError(
      f"--part applies to .keras outputs (--direction to-keras); --output {output_path!r} "
      "is written in the original's format with whatever the input holds"
    )
  return keras_to_official(
    input_path,
    output_path,
    hparams=hparams,
    with_optimizer_slots=with_optimizer_slots,
    global_step=global_step,
  )


def format_report(report):
  lines = [f"Converted {report['input']} -> {report['output']}"]
  for key in ("part", "layout", "global_step"):
    if key in report:
      lines.append(f"  {key}: {report[key]}")
  for task, description in report.get("tasks", []):
    lines.append(f"  task {task}: {description}")
  if report.get("hparams") is not None:
    lines.append(f"  hparams: {json.dumps(report['hparams'], sort_keys=True)}")
  for note in report.get("notes", []):
    lines.append(f"  note: {note}")
  lines.append(f"  converted: {len(report['converted'])} entries")
  not_converted = report["not_converted"]
  lines.append(f"  not converted: {len(not_converted)} entries" + (":" if not_converted else ""))
  slots = [n for n in not_converted if n.endswith(official_names.OPTIMIZER_SLOT_SUFFIXES)]
  if slots:
    lines.append(f"    {len(slots)} optimizer slots (<variable>/adam_m, <variable>/adam_v)")
  lines += [f"    {n}" for n in not_converted if n not in set(slots)]
  return "\n".join(lines)
