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
that, bf16 "learns like fp32" on this metric.

Writes `<report-dir>/precision_learning.{md,json,png}` (table and curves) and
prints the table:

  python -m bench.precision_learning [--steps 600] [--output-dir DIR] [--report-dir DIR]
"""

import argparse
import json
import os
import shutil
import sys
import time

from bench.common import REPO_ROOT
from bench.common import call_in_child
from bench.common import machine_description
from electra_tf import demo
from electra_tf.training import held_out_evaluation
from electra_tf.training import pretraining_run
from electra_tf.utils import curves
from electra_tf.utils.events import scalar_events
from electra_tf.utils.file_io import write_atomic

PRECISIONS = ("float32", "mixed_bfloat16")
SEEDS = (0, 1)
FINAL_BATCHES = 20


def run_name(precision, seed):
  return f"{precision}_seed{seed}"


def train_and_measure(out, precision, seed, steps):
  """One run (for `call_in_child`): trains from scratch, returns the
  held-out history, the final metrics and the training-loss series."""
  name = run_name(precision, seed)
  overrides = dict(model_name=name, seed=seed, mixed_precision=precision)
  config = demo.pretraining_config(out, steps, **overrides)
  shutil.rmtree(config.model_dir, ignore_errors=True)  # a fresh run, not a resume
  periodic = demo.periodic_evaluation(out, every=max(1, steps // 6), model_name=name)
  start = time.perf_counter()
  pretraining_run.train_or_eval(config, callbacks=[periodic.callback])
  seconds = time.perf_counter() - start
  eval_config = demo.pretraining_config(out, steps, for_eval=True, **overrides)
  final = held_out_evaluation.measure_against_baselines(eval_config, num_batches=FINAL_BATCHES)
  events = scalar_events(config.model_dir)
  return {
    "precision": precision,
    "seed": seed,
    "train_seconds": round(seconds, 1),
    "history": periodic.history,
    "final": final,
    "losses": {tag: events.get(tag, []) for tag in ("disc_loss", "generator_loss", "loss")},
  }


def compare(runs):
  """Per metric: fp32 and bf16 seed means, their difference, the noise it
  is judged against, and the verdict."""
  rows = []
  for key, _, title, _ in held_out_evaluation.METRIC_ROWS:
    by_precision = {p: [r["final"][key] for r in runs if r["precision"] == p] for p in PRECISIONS}
    means = {p: sum(v) / len(v) for p, v in by_precision.items()}
    seed_spread = max(max(v) - min(v) for v in by_precision.values())
    batch_noise = max(2.0 * r["final"][f"{key}_margin_se"] for r in runs)
    noise = max(seed_spread, batch_noise)
    difference = means["mixed_bfloat16"] - means["float32"]
    rows.append(
      {
        "metric": title,
        "float32_mean": round(means["float32"], 4),
        "mixed_bfloat16_mean": round(means["mixed_bfloat16"], 4),
        "bf16_minus_fp32": round(difference, 4),
        "seed_spread": round(seed_spread, 4),
        "two_batch_se": round(batch_noise, 4),
        "verdict": "within noise" if abs(difference) <= noise else "outside noise",
      }
    )
  return rows


def _markdown(runs, comparison, header):
  lines = [header, "", "Each run at its last step, on the real tokens of 20 held-out batches:", ""]
  lines.append(
    "| precision | seed | train s | s/step | "
    + " | ".join(title for _, _, title, _ in held_out_evaluation.METRIC_ROWS)
    + " | disc loss (last 10%) | generator loss (last 10%) |"
  )
  lines.append("|" + "---|" * (4 + len(held_out_evaluation.METRIC_ROWS) + 2))
  for r in runs:
    steps = r["final"]["global_step"]
    tail = {}
    for tag in ("disc_loss", "generator_loss"):
      points = [v for s, v in r["losses"][tag] if s > 0.9 * steps]
      tail[tag] = sum(points) / len(points) if points else float("nan")
    metrics = [
      f"{r['final'][key]:.3f} (baseline {held_out_evaluation.baseline_value(r['final'], base):.3f})"
      for key, base, _, _ in held_out_evaluation.METRIC_ROWS
    ]
    lines.append(
      f"| {r['precision']} | {r['seed']} | {r['train_seconds']:.0f} | "
      f"{r['train_seconds'] / steps:.3f} | " + " | ".join(metrics) + " | "
      f"{tail['disc_loss']:.3f} | {tail['generator_loss']:.3f} |"
    )
  lines += ["", "bf16 against fp32 (means over the seeds):", ""]
  columns = list(comparison[0])
  lines.append("| " + " | ".join(columns) + " |")
  lines.append("|" + "---|" * len(columns))
  for row in comparison:
    lines.append("| " + " | ".join(str(row[c]) for c in columns) + " |")
  lines += [
    "",
    "Curves (`precision_learning.png`): one panel per measure with every run in it (float32 "
    "blue, mixed_bfloat16 orange; seed 0 solid, seed 1 dashed): the discriminator loss (raw "
    "faint, its moving average bold), the held-out discriminator AUC (random scores dashed) "
    "and the held-out generator accuracy (unigram answer dashed) from step 0.",
  ]
  return "\n".join(lines) + "\n"


def _curves(runs, path):
  """One panel per measure, every run in it: float32 blue, mixed_bfloat16
  orange, seed 0 solid, seed 1 dashed; the discriminator loss raw and
  smoothed, the held-out metrics from step 0 with their trivial baselines.
  Returns the figure."""
  colors = {"float32": "tab:blue", "mixed_bfloat16": "tab:orange"}
  ordered = sorted(runs, key=lambda r: (PRECISIONS.index(r["precision"]), r["seed"]))

  def series(run, points, **kwargs):
    return curves.Series(
      f"{run['precision']} seed {run['seed']}",
      [s for s, _ in points],
      [v for _, v in points],
      color=colors[run["precision"]],
      linestyle="-" if run["seed"] == SEEDS[0] else "--",
      **kwargs,
    )

  panels = [
    curves.Panel(
      "Discriminator loss (training batches)",
      [series(r, r["losses"]["disc_loss"], smoothing=curves.DEFAULT_SMOOTHING) for r in ordered],
      y_label="loss",
    )
  ]
  for key, base, y_range in (
    ("disc_auc_real_tokens", 0.5, (0.5, 1.0)),
    ("masked_lm_accuracy", "unigram_masked_lm_accuracy", (0.0, 0.5)),
  ):
    _, _, name, how = next(row for row in held_out_evaluation.METRIC_ROWS if row[0] == key)
    bases = [held_out_evaluation.baseline_value(r["final"], base) for r in runs]
    panels.append(
      curves.Panel(
        f"Held-out {name} (real tokens)",
        [series(r, [(h["step"], h[key]) for h in r["history"]]) for r in ordered],
        y_label=name.split(" ", 1)[1],
        y_range=y_range,
        baselines=[curves.Baseline(sum(bases) / len(bases), f"baseline: {how}")],
      )
    )
  return curves.write_training_curves_png(
    path,
    panels,
    width=1200,
    height=1500,
    columns=1,
    title="mixed_bfloat16 against float32 pre-training",
  )


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
  out = os.path.abspath(args.output_dir)
  if not os.path.isdir(os.path.join(out, "pretrain_tfrecords")):
    demo.main(["--output-dir", out, "--stages", "corpus,vocab,data"])
  rates = call_in_child("bench.bench_pretraining_step", "machine_rates")
  started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
  runs = []
  for seed in SEEDS:
    for precision in PRECISIONS:
      print(f"== {run_name(precision, seed)}: {args.steps} steps", flush=True)
      runs.append(
        call_in_child(
          "bench.precision_learning",
          "train_and_measure",
          out=out,
          precision=precision,
          seed=seed,
          steps=args.steps,
        )
      )
  comparison = compare(runs)
  rate_text = ", ".join(f"{k} {v}" for k, v in sorted(rates.items()) if k.endswith("_per_s"))
  header = (
    f"# mixed_bfloat16 against float32: the demo's ELECTRA, {args.steps} steps, seeds "
    f"{list(SEEDS)}\n\nOne run of `python -m bench.precision_learning --steps {args.steps}`, "
    f"started {started} on {machine_description()}; measured in the same run: {rate_text}."
  )
  os.makedirs(args.report_dir, exist_ok=True)
  text = _markdown(runs, comparison, header)
  write_atomic(os.path.join(args.report_dir, "precision_learning.md"), text)
  write_atomic(
    os.path.join(args.report_dir, "precision_learning.json"),
    json.dumps(
      {"machine": machine_description(), "rates": rates, "runs": runs, "comparison": comparison},
      indent=1,
    ),
  )
  _curves(runs, os.path.join(args.report_dir, "precision_learning.png"))
  print(text, flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
