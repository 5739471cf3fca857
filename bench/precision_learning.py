"""Does `mixed_bfloat16` pre-training learn like float32? A report, not a
speed benchmark.

The demo's small ELECTRA (`electra_tf.demo`: H=128, L=4, batches of 32 × 128)
on the demo's data (its corpus, vocab and TFRecords, built in the output dir
when missing) is pre-trained for `--steps` steps in float32 and in
`mixed_bfloat16`, with two seeds each, every run in its own process. Each run
measures the demo's held-out real-token metrics (discriminator AUC, accuracy,
recall, generator accuracy on shard 7) every `steps / 6` steps and, at the
end, on 20 batches.

The verdict per metric compares the bf16 − fp32 difference of the seed means
with the run-to-run noise: the larger of the two seeds' spread within a
precision and twice the standard error over the evaluation batches. Within
that, bf16 "learns like fp32" on this metric (`bench.learning_comparison`).

Writes `<report-dir>/precision_learning.{md,json,png}` (table and curves) and
prints the table:

  python -m bench.precision_learning [--steps 600] [--output-dir DIR] [--report-dir DIR]
"""

import argparse
import os
import sys

from bench import learning_comparison
from bench.common import REPO_ROOT

PRECISIONS = ("float32", "mixed_bfloat16")
SEEDS = learning_comparison.SEEDS
COLORS = {"float32": "tab:blue", "mixed_bfloat16": "tab:orange"}
CURVES_TEXT = (
  "Curves (`precision_learning.png`): one panel per measure with every run in it (float32 "
  "blue, mixed_bfloat16 orange; seed 0 solid, seed 1 dashed): the discriminator loss (raw "
  "faint, its moving average bold), the held-out discriminator AUC (random scores dashed) "
  "and the held-out generator accuracy (unigram answer dashed) from step 0."
)


def comparison(steps=600):
  """float32 (the reference) and mixed_bfloat16, `steps` steps each,
  held-out metrics every `steps / 6`."""
  variants = tuple(
    learning_comparison.Variant(
      p, {"mixed_precision": p}, steps, eval_every=max(1, steps // 6), color=COLORS[p]
    )
    for p in PRECISIONS
  )
  return learning_comparison.Comparison(
    name="precision_learning",
    title="mixed_bfloat16 against float32 pre-training",
    variants=variants,
    variant_key="precision",
    difference_key="bf16_minus_fp32",
    comparison_heading="bf16 against fp32 (means over the seeds):",
    curves_text=CURVES_TEXT,
  )


def compare(runs):
  """Per metric: fp32 and bf16 seed means, their difference, the noise it
  is judged against, and the verdict."""
  return learning_comparison.compare(comparison(), runs)


def _markdown(runs, rows, header):
  return learning_comparison.markdown(comparison(), runs, rows, header)


def _curves(runs, path):
  return learning_comparison.training_curves(comparison(), runs, path)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--steps", type=int, default=600, help="pre-training steps per run")
  parser.add_argument(
    "--output-dir",
    default=os.path.join(REPO_ROOT, "bench", "results", "precision_learning"),
    help="the demo's data and the runs' model dirs",
  )
  parser.add_argument(
    "--report-dir",
    default=os.path.join(REPO_ROOT, "bench", "reports"),
    help="where precision_learning.{md,json,png} go",
  )
  args = parser.parse_args(argv)
  if args.steps < 6:
    parser.error(f"--steps {args.steps}: expected at least 6 (held-out metrics every steps/6)")
  learning_comparison.run_report(
    comparison(args.steps),
    args.output_dir,
    args.report_dir,
    command=f"python -m bench.precision_learning --steps {args.steps}",
    heading=(
      f"# mixed_bfloat16 against float32: the demo's ELECTRA, {args.steps} steps, seeds "
      f"{list(SEEDS)}"
    ),
  )
  return 0


if __name__ == "__main__":
  sys.exit(main())
