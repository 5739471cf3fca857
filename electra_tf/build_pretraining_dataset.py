"""Raw text → pre-training TFRecords: `python -m electra_tf.build_pretraining_dataset`.

Accepts the original's flags, plus `--seed`, `--num-out-files`, `--overwrite`,
a TFDS source and `--runner` (Apache Beam). Unlike the original,
`--blanks-separate-docs false` means false, and the output directory is never
deleted. The work is done by `tfrecords_tools.text_corpus`.

Example:

    python -m electra_tf.build_pretraining_dataset --corpus-dir corpus \
        --vocab-file vocab.txt --output-dir pretrain_tfrecords --seed 0

    python -m electra_tf.build_pretraining_dataset --corpus-dir corpus \
        --vocab-file vocab.txt --output-dir pretrain_tfrecords --seed 0 \
        --num-processes 8 --runner DirectRunner --direct_num_workers 2
"""

import argparse
import sys

from tfrecords_tools import runner_flags
from tfrecords_tools import tfds_corpus
from tfrecords_tools.text_corpus import BuildOptions
from tfrecords_tools.text_corpus import build_pretraining_dataset

_TRUE = ("true", "t", "yes", "y", "1")
_FALSE = ("false", "f", "no", "n", "0")


def parse_bool(value):
  """A real boolean parser (the original's `type=bool` makes "False" true)."""
  lowered = str(value).strip().lower()
  if lowered in _TRUE:
    return True
  if lowered in _FALSE:
    return False
  raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got {value!r}")


def make_parser():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument(
    "--corpus-dir", default=None, help="Directory of raw text files (every file directly inside)."
  )
  parser.add_argument(
    "--vocab-file",
    required=True,
    help="WordPiece vocab.txt or SentencePiece model (build_vocab --model-type).",
  )
  parser.add_argument("--output-dir", required=True, help="Where to write the shards.")
  parser.add_argument(
    "--max-seq-length", default=128, type=int, help="Tokens per example, including [CLS]/[SEP]."
  )
  parser.add_argument("--num-processes", default=1, type=int, help="Parallel job processes.")
  parser.add_argument(
    "--blanks-separate-docs",
    default=True,
    type=parse_bool,
    help="Whether blank lines end a document (true/false).",
  )
  parser.add_argument(
    "--do-lower-case",
    dest="do_lower_case",
    action="store_true",
    help="Lower-case the input (default: as the vocab was built, its <vocab>.json; without one "
    "on for a WordPiece vocab, off for a SentencePiece model).",
  )
  parser.add_argument(
    "--no-lower-case",
    dest="do_lower_case",
    action="store_false",
    help="Don't lower-case the input.",
  )
  parser.add_argument(
    "--do-strip-accents",
    dest="strip_accents",
    action="store_true",
    help="Strip accents (default: as the vocab was built, its <vocab>.json; without one on for "
    "a WordPiece vocab, when lower-casing, off for a SentencePiece model).",
  )
  parser.add_argument(
    "--no-strip-accents", dest="strip_accents", action="store_false", help="Don't strip accents."
  )
  # Unset: as the vocab was built; a flag that contradicts its <vocab>.json is refused.
  parser.set_defaults(do_lower_case=None, strip_accents=None)
  parser.add_argument(
    "--seed",
    default=None,
    type=int,
    help="Seed for Python's random in every job (reproducible output).",
  )
  parser.add_argument(
    "--num-out-files", default=1000, type=int, help="Number of output shards over all jobs."
  )
  parser.add_argument(
    "--overwrite", action="store_true", help="Replace the shards of a non-empty --output-dir."
  )
  parser.add_argument(
    "--carriage-return-as-space",
    action="store_true",
    help='Treat a lone "\\r" as a space between words (default: drop it, as the original does).',
  )
  parser.add_argument(
    "--tfds-name",
    default=None,
    help="Read documents from this TFDS dataset instead of --corpus-dir.",
  )
  # Defaults None, resolved in `options_from_args`: given without --tfds-name, refused.
  parser.add_argument("--tfds-split", default=None, help="TFDS split (default: train).")
  parser.add_argument(
    "--tfds-text-key", default=None, help="TFDS feature holding the text (default: text)."
  )
  parser.add_argument("--tfds-data-dir", default=None, help="TFDS data_dir.")
  runner_flags.add_runner_flag(parser)
  return parser


# The flags that only a TFDS source reads, and their defaults.
TFDS_ONLY_FLAGS = {"tfds_split": "train", "tfds_text_key": "text", "tfds_data_dir": None}


def check_tfds_only_flags(args):
  """Refuses a TFDS-only flag given without --tfds-name (it would be ignored)."""
  if args.tfds_name:
    return
  given = [
    "--" + name.replace("_", "-") for name in TFDS_ONLY_FLAGS if getattr(args, name) is not None
  ]
  if given:
    raise ValueError(
      f"{', '.join(given)} applies only with --tfds-name (a TFDS source); "
      "drop it, or give --tfds-name instead of --corpus-dir"
    )


def options_from_args(args):
  check_tfds_only_flags(args)
  for name, default in TFDS_ONLY_FLAGS.items():
    if getattr(args, name) is None:
      setattr(args, name, default)
  if not args.corpus_dir and not args.tfds_name:
    raise ValueError("one of --corpus-dir or --tfds-name is required")
  if args.tfds_name:
    tfds_corpus.require_tfds(args.tfds_name)  # the tfds extra, before any job starts
  return runner_flags.options_from_args(BuildOptions, args)


def main(argv=None):
  return runner_flags.run_builder(make_parser(), argv, options_from_args, build_pretraining_dataset)


if __name__ == "__main__":
  sys.exit(main())
