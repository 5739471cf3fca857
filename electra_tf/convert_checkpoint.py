"""Converts checkpoints between the original's name-based TF1 format (the
original's variable names) and electra_tf (training checkpoints and `.keras`
models), in both directions, and publishes a model as a Hugging Face directory
or keras-hub preset (`--to`): the command line over `electra_tf.convert.convert`
and `electra_tf.convert.publish`.

docs/convert.md describes the directions, the parts (`--part finetuned`: a
fine-tuned checkpoint's encoder and heads, with `task_types` in `--hparams` for
tasks electra_tf does not know) and the formats read; docs/publish.md the
publishing. Nothing is skipped silently: every entry not converted is listed.

Example:
  python -m electra_tf.convert_checkpoint --input data/models/tiny \
      --output /tmp/tiny_disc.keras --part discriminator
  python -m electra_tf.convert_checkpoint \
      --input models/tiny/finetuning_models/rte,chunk_model_1 --output /tmp/rte_chunk.keras \
      --hparams '{"task_names": ["rte", "chunk"]}'
"""

import argparse
import sys

from electra_tf import convert
from electra_tf.utils import exit_codes
from electra_tf.utils import file_io
from electra_tf.utils import interrupts
from electra_tf.utils.file_io import check_writable


def main(argv=None):
  parser = argparse.ArgumentParser(
    prog="python -m electra_tf.convert_checkpoint",
    description="Convert ELECTRA checkpoints between the original's name-based TF1 format "
    "and electra_tf (training checkpoints and .keras models).",
  )
  parser.add_argument(
    "--input",
    required=True,
    help="checkpoint prefix or directory (official or electra_tf), a .keras file, or a "
    "Hugging Face ELECTRA directory",
  )
  parser.add_argument(
    "--output",
    required=True,
    help="to-keras: a directory (training checkpoint) or a .keras path; "
    "to-official: the directory for model.ckpt-<step>",
  )
  parser.add_argument(
    "--direction", choices=convert.DIRECTIONS, default=None, help="default: detected from --input"
  )
  parser.add_argument(
    "--part",
    choices=convert.PARTS,
    default=None,
    help="to-keras (.keras output of an official or electra_tf checkpoint): what to "
    "convert. finetuned: a fine-tuned checkpoint's "
    "encoder and task_specific/<task>/ heads as a .keras FinetuningModel. "
    "Default: finetuned when the checkpoint has task heads, else "
    "pretrainer",
  )
  parser.add_argument(
    "--hparams",
    default=None,
    help="JSON dict or .json path of pre-training hparams (as for "
    "run_pretraining; over the model dir's config.json when it has one); for a fine-tuned checkpoint (--part finetuned), "
    "fine-tuning hparams (as for run_finetuning: task_names gives the heads' order, beam_size, ...) "
    "plus task_types, e.g. {\"task_types\": {\"mytask\": "
    "\"classification\"}} (classification, regression, tagging or qa) "
    "for tasks electra_tf does not know; checked against the checkpoint's shapes",
  )
  parser.add_argument(
    "--with-optimizer-slots",
    action="store_true",
    help="to-official: also write <var>/adam_m and <var>/adam_v",
  )
  parser.add_argument(
    "--global-step",
    type=int,
    default=None,
    help="to-official: the global_step to write (default: the training "
    "checkpoint's step; 0 for a .keras model)",
  )
  parser.add_argument(
    "--overwrite",
    action="store_true",
    help="replace an existing .keras --output (output directories are never replaced)",
  )
  parser.add_argument(
    "--to",
    choices=convert.TARGETS,
    default=None,
    help="publish the discriminator (or, with --part generator, the generator) as a "
    "Hugging Face transformers directory or a keras-hub preset directory (--output)",
  )
  parser.add_argument(
    "--vocab-file",
    default=None,
    help="--to: the vocab the model was trained with (default: vocab_file in --hparams, "
    "else vocab.txt beside --input, else <data_dir>/vocab.txt for a run's "
    "<data_dir>/models/<model_name>)",
  )
  args = parser.parse_args(argv)
  return interrupts.run_stoppable("convert_checkpoint", lambda: _run(args))


def _run(args):
  try:
    keras_file = args.output.endswith(convert.KERAS_SUFFIX) and args.to is None  # else a dir
    check_writable(args.output, "--output", directory=not keras_file)
    with file_io.full_disk_as_bad_input("--output", args.output):
      report = _publish_or_convert(args)
  except ValueError as e:
    print(f"convert_checkpoint: error: {e}", file=sys.stderr)
    return exit_codes.BAD_INPUT
  print(convert.format_report(report))
  return exit_codes.OK


def _publish_or_convert(args):
  """Publishes (`--to`) or converts as the flags say; returns the report."""
  if args.to is not None:
    if args.direction or args.with_optimizer_slots or args.global_step is not None:
      raise ValueError(
        "--to publishes a model; --direction, --with-optimizer-slots and --global-step do not apply"
      )
    return convert.publish(
      args.input, args.output, args.to, args.part, args.hparams, args.vocab_file
    )
  if args.vocab_file is not None:  # only a published model carries tokenizer files
    raise ValueError("--vocab-file applies to --to (publishing); a conversion writes no vocab")
  if args.global_step is not None and not 0 <= args.global_step < 2**63:  # an int64 variable
    raise ValueError(f"--global-step {args.global_step}: expected a step in [0, 2**63)")
  return convert.convert(
    args.input,
    args.output,
    direction=args.direction,
    part=args.part,
    hparams=args.hparams,
    with_optimizer_slots=args.with_optimizer_slots,
    global_step=args.global_step,
    overwrite=args.overwrite,
  )


if __name__ == "__main__":
  sys.exit(main())
