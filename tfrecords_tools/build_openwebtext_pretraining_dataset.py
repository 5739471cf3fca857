"""OpenWebText → pre-training TFRecords:
`python -m tfrecords_tools.build_openwebtext_pretraining_dataset --data-dir DIR`.

The original's flags (`build_openwebtext_pretraining_dataset.py`) plus `--seed`, `--num-out-files` and
`--overwrite`, and `--runner` to run the jobs on Apache Beam (Beam's own
pipeline options passed through, as `electra_tf.build_pretraining_dataset`). Reads `<data-dir>/vocab.txt` and `<data-dir>/openwebtext/*`,
writes `<data-dir>/pretrain_tfrecords/`.
"""

import argparse
import sys

from tfrecords_tools import runner_flags
from tfrecords_tools.openwebtext import OpenWebTextOptions
from tfrecords_tools.openwebtext import build_openwebtext


def make_parser():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument(
    "--data-dir", required=True, help="Holds vocab.txt and openwebtext/ (the .xz archives)."
  )
  parser.add_argument("--max-seq-length", default=128, type=int)
  parser.add_argument("--num-processes", default=1, type=int)
  parser.add_argument("--do-lower-case", dest="do_lower_case", action="store_true")
  parser.add_argument("--no-lower-case", dest="do_lower_case", action="store_false")
  parser.add_argument("--do-strip-accents", dest="strip_accents", action="store_true")
  parser.add_argument("--no-strip-accents", dest="strip_accents", action="store_false")
  # Unset: as the vocab was built (WordPiece: on; a SentencePiece model: its settings).
  parser.set_defaults(do_lower_case=None, strip_accents=None)
  parser.add_argument("--seed", default=None, type=int)
  parser.add_argument("--num-out-files", default=1000, type=int)
  parser.add_argument("--overwrite", action="store_true")
  parser.add_argument(
    "--carriage-return-as-space",
    action="store_true",
    help='Treat a lone "\\r" as a space between words (default: drop it, as the original does).',
  )
  runner_flags.add_runner_flag(parser)
  return parser


def main(argv=None):
  return runner_flags.run_builder(
    make_parser(),
    argv,
    lambda args: runner_flags.options_from_args(OpenWebTextOptions, args),
    build_openwebtext,
  )


if __name__ == "__main__":
  sys.exit(main())
