"""Do two ways of pre-training the demo's ELECTRA learn alike? The generic
part of the learning reports (`bench.precision_learning`,
`bench.lamb_learning`): a report is a `Comparison` of named `Variant`s (demo
hparam overrides, a step count and an evaluation period), and a new report
needs only a new list of them.

Every run (each variant with each seed) trains the demo's small ELECTRA
(`electra_tf.demo`) from scratch on the demo's data in its own process,
measures the demo's held-out real-token metrics (discriminator AUC,
accuracy, recall, generator accuracy on shard 7) every `eval_every` steps
and, at the end, on 20 batches.

The verdict per metric compares each variant's seed mean with the first
(reference) variant's against the run-to-run noise: the larger of the
seeds' spread within a variant and twice the standard error over the
evaluation batches. Within that, the variant learns like the reference on
this metric.

`run_report` writes `<report-dir>/<name>.{md,json,png}` (tables and curves)
and returns the markdown.
"""

import dataclasses
import json
import os
import shutil
import time

from bench.common import call_in_child
from bench.common import machine_description
from electra_tf import demo
from electra_tf.training import held_out_evaluation
from electra_tf.training import pretraining_run
from electra_tf.utils import curves
from electra_tf.utils.events import scalar_events
from electra_tf.utils.file_io import write_atomic

SEEDS = (0, 1)
FINAL_BATCHES = 20
LOSS_TAGS = ("disc_loss", "generator_loss", "loss")


@dataclasses.dataclass(frozen=True)
class Variant:
  """One way of pre-training: `overrides` of the demo's hparams for `steps`
  steps, held-out metrics every `eval_every` steps; `color` in the curves."""

  name: str
  overrides: dict
  steps: int
  eval_every: int
  color: str
  # Hparams of training only, left out of the held-out evaluation's config
  # (which then measures every variant alike).
  train_only: tuple = ()


@dataclasses.dataclass(frozen=True)
class Comparison:
  """A report: `variants[0]` is the reference every other variant is judged
  against; runs name their variant under `variant_key` (a column of the
  tables); `difference_key` names the candidate − reference column; with
  `by_examples`, curves are drawn against examples seen (step × global
  batch) instead of steps."""

  name: str
  title: str
  variants: tuple
  variant_key: str = "variant"
  difference_key: str = "difference"
  comparison_heading: str = "Against the reference (means over the seeds):"
  curves_text: str = ""
  by_examples: bool = False
  seeds: tuple = SEEDS

  def variant(self, name):
    return next(v for v in self.variants if v.name == name)


def run_name(variant, seed):
  return f"{variant}_seed{seed}"


def train_and_measure(out, variant, variant_key, seed, steps, eval_every, overrides, train_only=()):
  """One run (for `call_in_child`): trains from scratch, returns the
  held-out history, the final metrics and the training-loss series."""
  name = run_name(variant, seed)
  overrides = dict(overrides, model_name=name, seed=seed)
  config = demo.pretraining_config(out, steps, **overrides)
  shutil.rmtree(config.model_dir, ignore_errors=True)  # a fresh run, not a resume
  periodic = demo.periodic_evaluation(out, every=eval_every, model_name=name)
  start = time.perf_counter()
  pretraining_run.train_or_eval(config, callbacks=[periodic.callback])
  seconds = time.perf_counter() - start
  measured = {k: v for k, v in overrides.items() if k not in train_only}
  eval_config = demo.pretraining_config(out, steps, for_eval=True, **measured)
  final = held_out_evaluation.measure_against_baselines(eval_config, num_batches=FINAL_BATCHES)
  events = scalar_events(config.model_dir)
  return {
    variant_key: variant,
    "seed": seed,
    "train_batch_size": config.train_batch_size,
    "train_seconds": round(seconds, 1),
    "history": periodic.history,
    "final": final,
    "losses": {tag: events.get(tag, []) for tag in LOSS_TAGS},
  }


def run_all(comparison, out, skip=()):
  """Trains every variant (but those named in `skip`) with every seed, each
  in its own process. Each finished run's result is kept in
  `<out>/runs/<run>.json` with its settings, so an interrupted report
  resumes at its next run; a result of other settings is trained again
  (remove `<out>/runs` to train every run again after a code change)."""
  runs = []
  for seed in comparison.seeds:
    for v in comparison.variants:
      if v.name in skip:
        continue
      name = run_name(v.name, seed)
      kwargs = dict(
        variant=v.name,
        variant_key=comparison.variant_key,
        seed=seed,
        steps=v.steps,
        eval_every=v.eval_every,
        overrides=v.overrides,
        **({"train_only": list(v.train_only)} if v.train_only else {}),
      )
      path = os.path.join(out, "runs", f"{name}.json")
      if os.path.exists(path):
        with open(path) as f:
          kept = json.load(f)
        if kept["settings"] == kwargs:
          print(f"== {name}: kept from {path}", flush=True)
          runs.append(kept["result"])
          continue
      print(f"== {name}: {v.steps} steps", flush=True)
      result = call_in_child("bench.learning_comparison", "train_and_measure", out=out, **kwargs)
      os.makedirs(os.path.dirname(path), exist_ok=True)
      write_atomic(path, json.dumps({"settings": kwargs, "result": result}))
      runs.append(result)
  return runs


def compare(comparison, runs):
  """Per metric (and per candidate variant): the seed means, the candidate
  − reference difference, the noise it is judged against, and the verdict."""
  names = [v.name for v in comparison.variants]
  reference, candidates = names[0], names[1:]
  rows = []
  for key, _, title, _ in held_out_evaluation.METRIC_ROWS:
    by_variant = {
      n: [r["final"][key] for r in runs if r[comparison.variant_key] == n] for n in names
    }
    means = {n: sum(v) / len(v) for n, v in by_variant.items()}
    batch_noise = max(2.0 * r["final"][f"{key}_margin_se"] for r in runs)
    for candidate in candidates:
      pair = (by_variant[reference], by_variant[candidate])
      seed_spread = max(max(v) - min(v) for v in pair)
      noise = max(seed_spread, batch_noise)
      difference = means[candidate] - means[reference]
      row = {"metric": title}
      row.update({f"{n}_mean": round(means[n], 4) for n in (reference, candidate)})
      row.update(
        {
          comparison.difference_key: round(difference, 4),
          "seed_spread": round(seed_spread, 4),
          "two_batch_se": round(batch_noise, 4),
          "verdict": "within noise" if abs(difference) <= noise else "outside noise",
        }
      )
      rows.append(row)
  return rows


def _loss_tail(run, tag):
  """The mean training loss over the run's last 10% of steps."""
  steps = run["final"]["global_step"]
  points = [v for s, v in run["losses"][tag] if s > 0.9 * steps]
  return sum(points) / len(points) if points else float("nan")


def table(rows):
  """`compare`'s rows as the lines of a markdown table."""
  columns = list(rows[0])
  lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
  return lines + ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]


def markdown(comparison, runs, rows, header):
  """The report: one row per run at its last step, then the verdicts."""
  final = runs[0]["final"] if runs else {}
  # The held-out set is read once: fewer batches than asked where it is smaller.
  held_out = f"{final.get('num_batches', FINAL_BATCHES)} held-out batches"
  if "num_examples" in final:
    held_out += f" ({final['num_examples']} distinct examples)"
  lines = [header, "", f"Each run at its last step, on the real tokens of {held_out}:", ""]
  lines.append(
    f"| {comparison.variant_key} | seed | train s | s/step | "
    + " | ".join(title for _, _, title, _ in held_out_evaluation.METRIC_ROWS)
    + " | disc loss (last 10%) | generator loss (last 10%) |"
  )
  lines.append("|" + "---|" * (4 + len(held_out_evaluation.METRIC_ROWS) + 2))
  for r in runs:
    steps = r["final"]["global_step"]
    metrics = [
      f"{r['final'][key]:.3f} (baseline {held_out_evaluation.baseline_value(r['final'], base):.3f})"
      for key, base, _, _ in held_out_evaluation.METRIC_ROWS
    ]
    lines.append(
      f"| {r[comparison.variant_key]} | {r['seed']} | {r['train_seconds']:.0f} | "
      f"{r['train_seconds'] / steps:.3f} | " + " | ".join(metrics) + " | "
      f"{_loss_tail(r, 'disc_loss'):.3f} | {_loss_tail(r, 'generator_loss'):.3f} |"
    )
  lines += ["", comparison.comparison_heading, ""] + table(rows)
  if comparison.curves_text:
    lines += ["", comparison.curves_text]
  return "\n".join(lines) + "\n"


def training_curves(comparison, runs, path):
  """One panel per measure, every run in it (each variant its color, the
  first seed solid, the others dashed): the discriminator loss raw and
  smoothed, the held-out metrics from step 0 with their trivial baselines;
  against steps, or examples seen with `by_examples`. Returns the figure."""
  names = [v.name for v in comparison.variants]
  ordered = sorted(runs, key=lambda r: (names.index(r[comparison.variant_key]), r["seed"]))
  x_label = "examples seen" if comparison.by_examples else "training step"

  def series(run, points, **kwargs):
    # Runs without their batch size (reports older than it) are drawn by step.
    scale = run.get("train_batch_size", 1) if comparison.by_examples else 1
    name = run[comparison.variant_key]
    return curves.Series(
      f"{name} seed {run['seed']}",
      [s * scale for s, _ in points],
      [v for _, v in points],
      color=comparison.variant(name).color,
      linestyle="-" if run["seed"] == comparison.seeds[0] else "--",
      **kwargs,
    )

  panels = [
    curves.Panel(
      "Discriminator loss (training batches)",
      [series(r, r["losses"]["disc_loss"], smoothing=curves.DEFAULT_SMOOTHING) for r in ordered],
      y_label="loss",
      x_label=x_label,
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
        x_label=x_label,
      )
    )
  return curves.write_training_curves_png(
    path, panels, width=1200, height=1500, columns=1, title=comparison.title
  )


def prepare_data(out):
  """The demo's corpus, vocab and TFRecords in `out`, built when missing."""
  if not os.path.isdir(os.path.join(out, "pretrain_tfrecords")):
    demo.main(["--output-dir", out, "--stages", "corpus,vocab,data"])


def machine_line(command):
  """`One run of <command>, started <time> on <machine>; measured in the same
  run: <rates>.` (the rates measured in a child first)."""
  rates = call_in_child("bench.bench_pretraining_step", "machine_rates")
  started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
  rate_text = ", ".join(f"{k} {v}" for k, v in sorted(rates.items()) if k.endswith("_per_s"))
  line = (
    f"One run of `{command}`, started {started} on {machine_description()}; "
    f"measured in the same run: {rate_text}."
  )
  return line, rates


def write_report(comparison, runs, header, report_dir, rates):
  """Writes `<report_dir>/<name>.{md,json,png}`; returns the markdown."""
  rows = compare(comparison, runs)
  os.makedirs(report_dir, exist_ok=True)
  text = markdown(comparison, runs, rows, header)
  base = os.path.join(report_dir, comparison.name)
  write_atomic(base + ".md", text)
  write_atomic(
    base + ".json",
    json.dumps(
      {"machine": machine_description(), "rates": rates, "runs": runs, "comparison": rows},
      indent=1,
    ),
  )
  training_curves(comparison, runs, base + ".png")
  return text


def reference_runs(comparison, path, earlier=None):
  """The reference variant's runs from an earlier report's JSON at `path`,
  checked to have run the reference's steps with this report's seeds.
  `earlier`: `(variant_key, name)` of the same settings in that report when
  it names them otherwise (the runs are relabelled)."""
  reference = comparison.variants[0]
  key, name = earlier or (comparison.variant_key, reference.name)
  with open(path) as f:
    runs = [r for r in json.load(f)["runs"] if r.get(key) == name]
  runs = [
    {**{k: v for k, v in r.items() if k != key}, comparison.variant_key: reference.name}
    for r in runs
  ]
  found = sorted((r["seed"], r["final"]["global_step"]) for r in runs)
  wanted = [(seed, reference.steps) for seed in sorted(comparison.seeds)]
  if found != wanted:
    raise ValueError(
      f"{path}: expected {reference.name} runs (seed, steps) {wanted}; found {found}"
    )
  return runs


def run_report(
  comparison, out, report_dir, command, heading, reference_from=None, reference_earlier=None
):
  """Prepares the data, trains every run, writes the report and prints it.
  `heading` is the report's first line; `command` how it was run. With
  `reference_from` (an earlier report's JSON), the reference variant's runs
  are read from it when the others have trained, not trained again."""
  out = os.path.abspath(out)
  prepare_data(out)
  line, rates = machine_line(command)
  skip = (comparison.variants[0].name,) if reference_from else ()
  runs = run_all(comparison, out, skip)
  if reference_from:
    line += f" The {skip[0]} runs are those of `{reference_from}`."
    runs = reference_runs(comparison, reference_from, reference_earlier) + runs
  text = write_report(comparison, runs, f"{heading}\n\n{line}", report_dir, rates)
  print(text, flush=True)
  return text
