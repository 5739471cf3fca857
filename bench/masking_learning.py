"""Does whole-word masking learn like token masking? A report, not a speed
benchmark.

The demo's small ELECTRA (`electra_tf.demo`: H=128, L=4, batches of 32 ×
128, Adam at 1e-3) on the demo's data is pre-trained for `--steps` steps with
`"masking": "token"` (the original's, the demo's default) and with
`"masking": "whole_word"`, two seeds each. Both are measured alike, with
the held-out evaluation's token masking (whole-word masking is a training
choice; masking whole words at evaluation would make the generator's task
harder, not tell which model learned more). The verdict per metric compares
the seed means with the run-to-run noise (`bench.learning_comparison`).

The token runs are the demo's default settings, so `--reference-from` can
take them from an earlier report of the same steps and seeds: the Adam runs
of `bench/reports/lamb_learning.json` are exactly those.

Writes `<report-dir>/masking_learning.{md,json,png}` and prints the tables:

  python -m bench.masking_learning [--steps 480] [--reference-from bench/reports/lamb_learning.json]
"""

import argparse
import os
import sys

from bench import learning_comparison
from bench.common import REPO_ROOT

EVALUATIONS = 6
CURVES_TEXT = (
  "Curves (`masking_learning.png`): one panel per measure with every run in it (token blue, "
  "whole_word red; seed 0 solid, seed 1 dashed): the discriminator loss on training batches "
  "(raw faint, its moving average bold), the held-out discriminator AUC (random scores dashed) "
  "and the held-out generator accuracy (unigram answer dashed)."
)
# Where an earlier report holds the demo's default runs under another name.
EARLIER_NAMES = {"lamb_learning": ("optimizer", "adam")}


def comparison(steps=480):
  """Token masking (the reference) and whole-word masking, `steps` each."""
  every = max(1, steps // EVALUATIONS)
  return learning_comparison.Comparison(
    name="masking_learning",
    title="whole-word masking against token masking",
    variants=(
      learning_comparison.Variant("token", {}, steps, every, color="tab:blue"),
      learning_comparison.Variant(
        "whole_word", {"masking": "whole_word"}, steps, every, "tab:red", train_only=("masking",)
      ),
    ),
    variant_key="masking",
    difference_key="whole_word_minus_token",
    comparison_heading="whole_word against token (means over the seeds):",
    curves_text=CURVES_TEXT,
  )


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--steps", type=int, default=480, help="pre-training steps per run")
  parser.add_argument(
    "--output-dir",
    default=os.path.join(REPO_ROOT, "bench", "results", "masking_learning"),
    help="the demo's data and the runs' model dirs",
  )
  parser.add_argument(
    "--report-dir",
    default=os.path.join(REPO_ROOT, "bench", "reports"),
    help="where masking_learning.{md,json,png} go",
  )
  parser.add_argument(
    "--reference-from",
    help="an earlier report's JSON whose runs of the demo's defaults (same --steps) are reused",
  )
  args = parser.parse_args(argv)
  if args.steps < EVALUATIONS:
    parser.error(f"--steps {args.steps}: expected at least {EVALUATIONS}")
  earlier = None
  if args.reference_from:
    stem = os.path.splitext(os.path.basename(args.reference_from))[0]
    earlier = EARLIER_NAMES.get(stem, ("masking", "token"))
  command = f"python -m bench.masking_learning --steps {args.steps}"
  if args.reference_from:
    command += f" --reference-from {args.reference_from}"
  learning_comparison.run_report(
    comparison(args.steps),
    args.output_dir,
    args.report_dir,
    command=command,
    reference_from=args.reference_from,
    reference_earlier=earlier,
    heading=(
      f"# whole-word masking against token masking: the demo's ELECTRA, {args.steps} steps, "
      f"seeds {list(learning_comparison.SEEDS)}, both measured with token masking"
    ),
  )
  return 0


if __name__ == "__main__":
  sys.exit(main())
