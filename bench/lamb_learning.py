"""Does LAMB at a 4× larger global batch learn like Adam in the same number
of examples seen? A report, not a speed benchmark.

The demo's small ELECTRA (`electra_tf.demo`: H=128, L=4, batches of B = 32 ×
128 tokens, Adam at learning rate 1e-3) on the demo's data is pre-trained
with two seeds each:
- `adam`: the demo's settings for `--steps` N steps;
- `lamb`: `"optimizer": "lamb"`, global batch 4B = 128 as 4 accumulated
  micro-batches of B (the same memory as Adam's batch), for N/4 steps, so
  both see N × B examples.

LAMB's learning rate and warm-up follow the LAMB paper's recipe for a k-fold
batch (k = 4): the rate grows by sqrt(k) (1e-3 → 2e-3) and the warm-up by k
in examples ("linear-epoch warm-up": the same 100 warm-up steps), capped as
the demo caps every short run's warm-up at half its steps. Held-out metrics
are measured every N/6 Adam steps and N/24 LAMB steps (the same examples
seen) and at the end; the verdict per metric compares the seed means at the
same examples seen with the run-to-run noise (`bench.learning_comparison`).

Writes `<report-dir>/lamb_learning.{md,json,png}` (tables and curves against
examples seen; with settings of one's own `lamb_learning_lr<rate>_steps<N>_warmup<W>.*`,
each part where it is given and not the default) and
prints the tables:

  python -m bench.lamb_learning [--steps 480] [--lamb-learning-rate R]
    [--lamb-warmup-steps W] [--large-batch-optimizer adam] [--batch B]
    [--reference-from JSON] [--output-dir DIR] [--report-dir DIR]

`--large-batch-optimizer adam` is the control: Adam at the same 4× batch,
rate and warm-up (variant `adam_4x`, report `lamb_learning_adam4x*`), to
tell what the larger batch costs from what the optimizer does about it.
"""

import argparse
import json
import math
import os
import sys

from bench import learning_comparison
from bench.common import REPO_ROOT
from electra_tf import demo

# k: LAMB's global batch over Adam's, run as k micro-batches of Adam's batch.
BATCH_FACTOR = 4
# Adam's steps by default; other step counts name their report.
DEFAULT_STEPS = 480
EVALUATIONS = 6
CURVES_TEXT = (
  "Curves (`{name}.png`), against examples seen (step × global batch): one panel per "
  "measure with every run in it (adam blue, {large} green; seed 0 solid, seed 1 dashed): the "
  "discriminator loss on training batches (raw faint, its moving average bold; {large}'s batches "
  "are 4× larger, so its raw loss is less noisy), the held-out discriminator AUC (random "
  "scores dashed) and the held-out generator accuracy (unigram answer dashed)."
)


def sqrt_scaled_learning_rate(k=BATCH_FACTOR):
  """The LAMB paper's square-root scaling of the demo's rate to a k-fold batch."""
  return demo.DEMO_HPARAMS["learning_rate"] * math.sqrt(k)


def lamb_hparams(
  k=BATCH_FACTOR, learning_rate=None, warmup_steps=None, optimizer="lamb", batch=None
):
  """LAMB's overrides of the demo's hparams for a k-fold global batch made
  of k accumulated micro-batches of the demo's batch; `learning_rate`
  defaults to `sqrt_scaled_learning_rate(k)`, `warmup_steps` to the demo's
  (see below). `optimizer="adam"` gives the control: Adam at the same
  batch and rate. `batch`: Adam's (default the demo's)."""
  batch = batch or demo.DEMO_HPARAMS["train_batch_size"]
  overrides = {
    "optimizer": optimizer,
    "train_batch_size": k * batch,
    "gradient_accumulation_steps": k,
    "learning_rate": learning_rate or sqrt_scaled_learning_rate(k),
    # No warm-up override: the demo's warm-up steps are the LAMB paper's
    # linear-epoch warm-up (k× the examples, so the same steps), and
    # demo.pretraining_config caps them at half of a short run.
  }
  if warmup_steps is not None:
    overrides["num_warmup_steps"] = warmup_steps
  return overrides


def comparison(
  steps=DEFAULT_STEPS,
  k=BATCH_FACTOR,
  learning_rate=None,
  warmup_steps=None,
  large_batch="lamb",
  batch=None,
):
  """Adam for `steps` steps (the reference) and LAMB at k× the batch for
  steps / k (at `learning_rate` and `warmup_steps`, see `lamb_hparams`),
  held-out metrics at the same examples seen. `large_batch="adam"` runs
  Adam instead of LAMB at k× the batch (the variant `adam_4x`): whether the
  larger batch or the optimizer costs what LAMB lacks. `batch`: Adam's
  global batch (default the demo's 32; LAMB's is k× it)."""
  every = steps // EVALUATIONS
  # Settings of one's own get a report of their own beside the default's.
  name = "lamb_learning"
  if large_batch != "lamb":
    name += f"_{large_batch}{k}x"
  if learning_rate is not None:
    name += f"_lr{learning_rate:g}"
  if steps != DEFAULT_STEPS:
    name += f"_steps{steps}"
  if warmup_steps is not None:
    name += f"_warmup{warmup_steps}"
  adam_overrides = {}
  if batch is not None and batch != demo.DEMO_HPARAMS["train_batch_size"]:
    name += f"_batch{batch}"
    adam_overrides["train_batch_size"] = batch
  large = "lamb" if large_batch == "lamb" else f"{large_batch}_{k}x"
  return learning_comparison.Comparison(
    name=name,
    title=f"{large} at a {k}x global batch against Adam, by examples seen",
    variants=(
      learning_comparison.Variant("adam", adam_overrides, steps, every, color="tab:blue"),
      learning_comparison.Variant(
        large,
        lamb_hparams(k, learning_rate, warmup_steps, large_batch, batch),
        steps // k,
        every // k,
        color="tab:green",
      ),
    ),
    variant_key="optimizer",
    difference_key=f"{large}_minus_adam",
    comparison_heading=(
      f"{large} at a {k}x batch against Adam at the same examples seen (means over the seeds):"
    ),
    curves_text=CURVES_TEXT.format(name=name, large=large),
    by_examples=True,
  )


def lamb_against_control(lamb_report, control_report):
  """LAMB's runs in `lamb_report` judged against the Adam control's
  (`adam_4x`) in `control_report` (the JSONs of two reports at the same
  steps and batch): the rows of `learning_comparison.compare`, with the
  control as the reference and the same noise rule."""
  runs = {}
  for path, name in ((control_report, "adam_4x"), (lamb_report, "lamb")):
    with open(path) as f:
      runs[name] = [r for r in json.load(f)["runs"] if r.get("optimizer") == name]
    if not runs[name]:
      raise ValueError(f"{path}: expected runs of {name}; found none")
  shapes = {
    name: sorted((r["seed"], r["final"]["global_step"], r["train_batch_size"]) for r in rs)
    for name, rs in runs.items()
  }
  if shapes["adam_4x"] != shapes["lamb"]:
    raise ValueError(
      f"{control_report} and {lamb_report}: expected the same (seed, steps, batch) runs; found "
      f"{shapes['adam_4x']} and {shapes['lamb']}"
    )
  steps = shapes["lamb"][0][1]
  variants = tuple(
    learning_comparison.Variant(name, {}, steps, steps, color="") for name in ("adam_4x", "lamb")
  )
  comparison = learning_comparison.Comparison(
    name="lamb_against_control",
    title="LAMB against Adam at the same batch",
    variants=variants,
    variant_key="optimizer",
    difference_key="lamb_minus_adam_4x",
    seeds=tuple(sorted({seed for seed, _, _ in shapes["lamb"]})),
  )
  return learning_comparison.compare(comparison, runs["adam_4x"] + runs["lamb"])


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
    "--steps", type=int, default=DEFAULT_STEPS, help="Adam's steps (LAMB runs a quarter)"
  )
  parser.add_argument(
    "--output-dir",
    default=os.path.join(REPO_ROOT, "bench", "results", "lamb_learning"),
    help="the demo's data and the runs' model dirs",
  )
  parser.add_argument(
    "--report-dir",
    default=os.path.join(REPO_ROOT, "bench", "reports"),
    help="where lamb_learning[_lr<rate>].{md,json,png} go",
  )
  parser.add_argument(
    "--lamb-learning-rate",
    type=float,
    help="LAMB's peak rate (default: the demo's Adam rate scaled by sqrt(4))",
  )
  parser.add_argument(
    "--reference-from",
    help="an earlier report's JSON whose adam runs (same --steps) are reused, not run again",
  )
  parser.add_argument(
    "--lamb-warmup-steps",
    type=int,
    help="LAMB's warm-up steps (default: the demo's, the LAMB paper's linear-epoch warm-up)",
  )
  parser.add_argument(
    "--large-batch-optimizer",
    choices=("lamb", "adam"),
    default="lamb",
    help="the optimizer at the 4x batch: lamb, or adam as the control (report lamb_learning_adam4x*)",
  )
  parser.add_argument(
    "--batch",
    type=int,
    default=demo.DEMO_HPARAMS["train_batch_size"],
    help="Adam's global batch (LAMB's is 4x it, as 4 micro-batches of it); other than the demo's "
    "names the report (_batch<B>)",
  )
  parser.add_argument(
    "--lamb-against-control",
    nargs=2,
    metavar=("LAMB_JSON", "CONTROL_JSON"),
    help="train nothing; print LAMB's runs of one report judged against the adam_4x runs of another",
  )
  args = parser.parse_args(argv)
  if args.lamb_against_control:
    try:
      rows = lamb_against_control(*args.lamb_against_control)
    except (OSError, ValueError, KeyError) as e:
      parser.error(f"--lamb-against-control: {e}")
    print("\n".join(learning_comparison.table(rows)))
    return 0
  if args.lamb_warmup_steps is not None and args.lamb_warmup_steps < 0:
    parser.error(f"--lamb-warmup-steps {args.lamb_warmup_steps}: expected 0 or more steps")
  if args.lamb_learning_rate is not None and not args.lamb_learning_rate > 0:
    parser.error(f"--lamb-learning-rate {args.lamb_learning_rate}: expected a positive rate")
  if args.batch < 1:
    parser.error(f"--batch {args.batch}: expected a batch of 1 or more examples")
  unit = BATCH_FACTOR * EVALUATIONS
  if args.steps < unit or args.steps % unit:
    parser.error(
      f"--steps {args.steps}: expected a positive multiple of {unit} (LAMB runs steps/"
      f"{BATCH_FACTOR}, and both are measured {EVALUATIONS} times at the same examples seen)"
    )
  c = comparison(
    args.steps,
    learning_rate=args.lamb_learning_rate,
    warmup_steps=args.lamb_warmup_steps,
    large_batch=args.large_batch_optimizer,
    batch=args.batch,
  )
  how = "square-root scaling" if args.lamb_learning_rate is None else "--lamb-learning-rate"
  command = f"python -m bench.lamb_learning --steps {args.steps}"
  if args.lamb_learning_rate is not None:
    command += f" --lamb-learning-rate {args.lamb_learning_rate:g}"
  if args.lamb_warmup_steps is not None:
    command += f" --lamb-warmup-steps {args.lamb_warmup_steps}"
  if args.large_batch_optimizer != "lamb":
    command += f" --large-batch-optimizer {args.large_batch_optimizer}"
  if args.batch != demo.DEMO_HPARAMS["train_batch_size"]:
    command += f" --batch {args.batch}"
  if args.reference_from:
    command += f" --reference-from {args.reference_from}"

  def warmup(steps):
    return demo.pretraining_hparams(args.output_dir, steps)["num_warmup_steps"]

  adam, lamb = c.variants
  if args.lamb_warmup_steps is None:
    lamb_warmup = f"{warmup(lamb.steps)} steps (linear-epoch, capped at half the run"
  else:
    lamb_warmup = f"{args.lamb_warmup_steps} steps (--lamb-warmup-steps"
  batch = args.batch
  title = "LAMB" if lamb.name == "lamb" else f"Adam (the control, `{lamb.name}`)"
  learning_comparison.run_report(
    c,
    args.output_dir,
    args.report_dir,
    command=command,
    reference_from=args.reference_from,
    heading=(
      f"# {title} at a {BATCH_FACTOR}x global batch against Adam: the demo's ELECTRA, "
      f"{args.steps * batch} examples each, seeds {list(c.seeds)}\n\n"
      f"adam: the demo's settings, batch {batch}, learning rate "
      f"{demo.DEMO_HPARAMS['learning_rate']:g}, {adam.steps} steps. {lamb.name} "
      f"({lamb.overrides['optimizer']}): batch "
      f"{lamb.overrides['train_batch_size']} as {BATCH_FACTOR} accumulated micro-batches of "
      f"{batch}, learning rate {lamb.overrides['learning_rate']:g} ({how}), "
      f"{lamb.steps} steps, warm-up {lamb_warmup}; Adam's: "
      f"{warmup(adam.steps)}). Held-out metrics every "
      f"{adam.eval_every * batch} examples."
    ),
  )
  return 0


if __name__ == "__main__":
  sys.exit(main())
