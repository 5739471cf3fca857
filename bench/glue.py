"""Fine-tunes every GLUE task found in a data dir with the original's recipe
and reports the dev metric per task: median and spread over seeds, wall time
and peak memory. Each run is `python -m electra_tf.run_finetuning` in its own
child process, as a user runs it.

  python -m bench.glue --random-init --init-name random [--seeds 1,2,3]
  python -m bench.glue --init-checkpoint demo_output/models/demo --init-name demo
  python -m bench.glue --quick --random-init --init-name smoke   # tiny slice, 1 seed

Tasks are the folders of `--glue-dir` named as GLUE names them (`SST-2`,
`CoLA`, `MRPC`, `QQP`, `STS-B`, `MNLI`, `QNLI`, `RTE`), each with `train.tsv`
and its dev file, read as `run_finetuning` reads `finetuning_data/<task>/`.
The recipe is the original's for the model size: ELECTRA-Small lr 3e-4,
Base 1e-4 (layer-wise decay 0.8), Large 5e-5 (decay 0.9); batch 32, warm-up
0.1, 128 tokens, 3 epochs (10 for RTE and STS). `--max-seq-length`,
`--epochs` and `--max-train-examples` shrink it to fit a machine; every row
records what was used.

Writes `<report-dir>/glue_<report>.{json,md}` (the JSON a list of rows; rows
of another init or seed already in the file are kept, so several inits can
share one report) and, unless `--quick`, the tables of every
`glue_*.json` report into docs/benchmarks.md between the GLUE markers.
"""

import argparse
import datetime
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

from bench.common import FIXTURE_VOCAB
from bench.common import REPO_ROOT
from bench.common import call_in_child
from bench.common import machine_description
from bench.common import replace_between_markers
from bench.common import write_atomic

# GLUE's folder names → the task names `run_finetuning` uses.
GLUE_TASKS = {
  "CoLA": "cola",
  "SST-2": "sst",
  "MRPC": "mrpc",
  "STS-B": "sts",
  "QQP": "qqp",
  "MNLI": "mnli",
  "QNLI": "qnli",
  "RTE": "rte",
}
# The metric the original reports per task (the ELECTRA paper: MCC for CoLA,
# Spearman for STS, accuracy for the rest), as `run_finetuning` names it.
METRICS = {"cola": "mcc", "sts": "spearman"}
DEFAULT_METRIC = "accuracy"
# The dev file each task reads; the others read dev.tsv.
DEV_FILES = {"mnli": "dev_matched.tsv"}
# CoLA's files have no header row; every other task's first line is one.
NO_HEADER = ("cola",)
# The original's fine-tuning recipe per model size (its README and paper).
RECIPES = {
  "small": {"learning_rate": 3e-4, "layerwise_lr_decay": 0.8},
  "base": {"learning_rate": 1e-4, "layerwise_lr_decay": 0.8},
  "large": {"learning_rate": 5e-5, "layerwise_lr_decay": 0.9},
}
# `--max-train-examples` draws its rows with this seed (fixed: every run trains on the same rows).
SAMPLE_SEED = 0
RECIPE_BATCH = 32
RECIPE_WARMUP = 0.1
RECIPE_SEQ_LENGTH = 128
# Epochs per task (the original's single-task defaults).
RECIPE_EPOCHS = {"rte": 10.0, "sts": 10.0}
DEFAULT_EPOCHS = 3.0

DEFAULT_GLUE_DIR = os.path.join(os.path.dirname(REPO_ROOT), "shared", "data", "glue")
REPORT_DIR = os.path.join(REPO_ROOT, "bench", "reports")
WORK_DIR = os.path.join(REPO_ROOT, "bench", "results", "glue")
DOCS_PAGE = os.path.join(REPO_ROOT, "docs", "benchmarks.md")
DOCS_START = "<!-- bench:glue:start (written by python -m bench.glue) -->"
DOCS_END = "<!-- bench:glue:end -->"

# `--quick`: a smoke run of the code path, not a measurement.
QUICK = {"max_train_examples": 64, "max_dev_examples": 32, "epochs": 1.0, "max_seq_length": 32}
QUICK_MODEL = {
  "hidden_size": 32,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 64,
}


def find_tasks(glue_dir):
  """`[(GLUE folder name, task name)]` of the GLUE tasks under `glue_dir`
  that have a train and a dev file, in `GLUE_TASKS` order."""
  found = []
  for folder, task in GLUE_TASKS.items():
    path = os.path.join(glue_dir, folder)
    dev = DEV_FILES.get(task, "dev.tsv")
    if os.path.isfile(os.path.join(path, "train.tsv")) and os.path.isfile(os.path.join(path, dev)):
      found.append((folder, task))
  return found


def metric_name(task):
  return METRICS.get(task, DEFAULT_METRIC)


def recipe_epochs(task):
  return RECIPE_EPOCHS.get(task, DEFAULT_EPOCHS)


def copy_rows(source, target, task, max_rows=None, sample=False):
  """Copies the header (where the task's files have one) and the data rows of
  `source` to `target`: all of them, the first `max_rows`, or with `sample`
  `max_rows` rows drawn with a fixed seed (the same rows on every run, in
  the file's order: GLUE's CoLA train file is grouped by source, so its first
  rows are not a fair slice). Returns the number of data rows written."""
  with open(source, encoding="utf-8", newline="") as f:
    lines = f.readlines()
  header = [] if task in NO_HEADER else lines[:1]
  rows = lines[len(header) :]
  if max_rows is not None and max_rows < len(rows):
    if sample:
      keep = sorted(random.Random(SAMPLE_SEED).sample(range(len(rows)), max_rows))
      rows = [rows[i] for i in keep]
    else:
      rows = rows[:max_rows]
  with open(target, "w", encoding="utf-8", newline="") as f:
    f.writelines(header + rows)
  return len(rows)


def _latest_step(model_dir):
  """The global step of the newest checkpoint named in `model_dir`'s
  `checkpoint` state file, or None."""
  try:
    with open(os.path.join(model_dir, "checkpoint"), encoding="utf-8") as f:
      for line in f:
        if line.startswith("model_checkpoint_path:"):
          return int(line.split(":", 1)[1].strip().strip('"').rsplit("-", 1)[1])
  except (OSError, ValueError, IndexError):
    return None
  return None


def pretraining_flops(checkpoint):
  """The original's FLOPs count (`electra_tf.utils.flops`) of the
  pre-training behind `checkpoint`, from the electra_tf run's `config.json`
  (its towers, batch, length) and the checkpoint's step (a model dir: its
  newest checkpoint's); None when
  the checkpoint records neither."""
  from electra_tf.checkpoints import reader as checkpoint_reader  # pylint: disable=g-import-not-at-top
  from electra_tf.utils import flops as flops_lib  # pylint: disable=g-import-not-at-top

  model_dir = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
  config_path = os.path.join(model_dir, "config.json")
  # An explicit checkpoint (`<dir>/model.ckpt-<step>`) counts its own step, not the run's newest.
  step = (
    _latest_step(model_dir) if os.path.isdir(checkpoint) else checkpoint_reader.step_of(checkpoint)
  )
  if not os.path.isfile(config_path) or not step:
    return None
  with open(config_path, encoding="utf-8") as f:
    run_config = json.load(f)
  if run_config.get("kind") != "pretraining":
    return None
  hparams = run_config["hparams"]
  towers = run_config["architecture"]
  e = towers.get("embedding_size")
  s = hparams["max_seq_length"]
  batch = hparams["train_batch_size"]

  def tower(name, embedding_size):
    c = towers[name]
    return flops_lib.TransformerHparams(
      c["hidden_size"],
      c["num_hidden_layers"],
      s=s,
      v=c["vocab_size"],
      e=embedding_size,
      i=c["intermediate_size"],
      heads=c["num_attention_heads"],
    )

  total = 0.0
  if "discriminator" in towers:
    total += tower("discriminator", e).get_train_flops(batch, step, discriminator=True)
  if "generator" in towers:
    # Tied embeddings (the default) are the discriminator's; untied ones the generator's width.
    tied = not hparams.get("untied_generator_embeddings", False)
    total += tower(
      "generator", e if tied or "discriminator" not in towers else None
    ).get_train_flops(batch, step)
  return total


def _recorded_model_size(checkpoint):
  """`model_size` from an electra_tf run's `config.json` beside `checkpoint`, or None."""
  model_dir = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
  try:
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
      return json.load(f)["hparams"]["model_size"]
  except (OSError, ValueError, KeyError, TypeError):
    return None


def run_hparams(args, task, seed, recipe_size, records_config):
  """The `--hparams` of one fine-tuning run."""
  hparams = {
    "task_names": [task],
    "train_batch_size": RECIPE_BATCH,
    "warmup_proportion": RECIPE_WARMUP,
    "max_seq_length": args.max_seq_length,
    "num_train_epochs": args.epochs if args.epochs is not None else recipe_epochs(task),
    "seed": seed,
    "num_trials": 1,
    **RECIPES[recipe_size],
  }
  if args.random_init:
    hparams["init_checkpoint"] = None
  else:
    hparams["init_checkpoint"] = os.path.abspath(args.init_checkpoint)
  if not records_config:
    # No config.json records the encoder: its size comes from the flag.
    hparams["model_size"] = recipe_size
  if args.vocab_file:
    hparams["vocab_file"] = os.path.abspath(args.vocab_file)
  if args.quick and args.random_init:
    hparams["model_hparam_overrides"] = QUICK_MODEL
    hparams["embedding_size"] = QUICK_MODEL["hidden_size"]
  hparams.update(args.extra_hparams)
  return hparams


def run_one(command, log_path, env=None):
  """Runs `command` with its output in `log_path`; returns (exit status,
  wall seconds, the child's own peak RSS in MiB) — `os.wait4` gives the
  resource use of that child alone, not the maximum over earlier ones."""
  start = time.perf_counter()
  with open(log_path, "w", encoding="utf-8") as log:
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
  proc.returncode = os.waitstatus_to_exitcode(status)
  return proc.returncode, time.perf_counter() - start, usage.ru_maxrss / 1024.0


def _log_tail(path, n=15):
  with open(path, encoding="utf-8", errors="replace") as f:
    return "".join(f.readlines()[-n:])


def finetune(args, folder, task, seed, recipe_size, records_config, flops, rates):
  """One fine-tuning run of `task` with `seed`; returns its row."""
  data_dir = os.path.join(args.work_dir, "data")
  task_dir = os.path.join(data_dir, "finetuning_data", task)
  os.makedirs(task_dir, exist_ok=True)
  source = os.path.join(args.glue_dir, folder)
  dev_file = DEV_FILES.get(task, "dev.tsv")
  train_examples = copy_rows(
    os.path.join(source, "train.tsv"),
    os.path.join(task_dir, "train.tsv"),
    task,
    args.max_train_examples,
    sample=True,
  )
  dev_examples = copy_rows(
    os.path.join(source, dev_file), os.path.join(task_dir, dev_file), task, args.max_dev_examples
  )
  model_name = f"{args.init_name}-{task}-seed{seed}"
  model_dir = os.path.join(data_dir, "models", model_name)
  # A fresh run every time: run_finetuning resumes a trial dir that holds a checkpoint.
  shutil.rmtree(model_dir, ignore_errors=True)
  hparams = run_hparams(args, task, seed, recipe_size, records_config)
  command = [
    sys.executable,
    "-m",
    "electra_tf.run_finetuning",
    "--data-dir",
    data_dir,
    "--model-name",
    model_name,
    "--hparams",
    json.dumps(hparams),
  ]
  os.makedirs(os.path.join(args.work_dir, "logs"), exist_ok=True)
  log_path = os.path.join(args.work_dir, "logs", f"{model_name}.log")
  print(f"== {task} seed {seed}: {' '.join(command[1:5])} ... (log: {log_path})", flush=True)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
  status, wall_s, peak_rss_mb = run_one(command, log_path, env)
  if status != 0:
    raise RuntimeError(
      f"run_finetuning exited with {status} on {task} seed {seed}; the end of {log_path}:\n"
      + _log_tail(log_path)
    )
  with open(os.path.join(model_dir, "results", f"{task}_results.json"), encoding="utf-8") as f:
    results = json.load(f)[-1][task]
  name = metric_name(task)
  row = {
    "init": args.init_name,
    "task": task,
    "glue_task": folder,
    "seed": seed,
    "metric": round(results[name], 4),
    "metric_name": name,
    "dev_loss": round(results.get("loss", float("nan")), 4),
    "pretraining_flops": flops,
    "wall_s": round(wall_s, 1),
    "peak_rss_mb": round(peak_rss_mb, 1),
    "max_seq_length": hparams["max_seq_length"],
    "epochs": hparams["num_train_epochs"],
    "train_examples": train_examples,
    "dev_examples": dev_examples,
    "model_size": recipe_size,
    "learning_rate": hparams["learning_rate"],
    "layerwise_lr_decay": hparams["layerwise_lr_decay"],
    "train_batch_size": RECIPE_BATCH,
    "warmup_proportion": RECIPE_WARMUP,
    "init_checkpoint": None if args.random_init else os.path.abspath(args.init_checkpoint),
    "extra_hparams": args.extra_hparams,
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "machine": machine_description(),
    **rates,
  }
  if not args.keep_models:
    # Checkpoints with Adam slots are large; the row and the log are what the bench keeps.
    shutil.rmtree(os.path.join(model_dir, "finetuning_models"), ignore_errors=True)
  print(
    f"   {task} seed {seed}: {name} {row['metric']:.2f}, {row['wall_s']:.0f} s, "
    f"peak RSS {row['peak_rss_mb']:.0f} MB",
    flush=True,
  )
  return row


def _read_rows(report_json):
  if not os.path.exists(report_json):
    return []
  with open(report_json, encoding="utf-8") as f:
    return json.load(f)


def merge_rows(existing, new):
  """`existing` with the rows of `new` replacing those of the same (init,
  task, seed), then sorted by init, task, seed."""
  key = lambda r: (r["init"], r["task"], r["seed"])  # noqa: E731
  merged = {key(r): r for r in existing}
  merged.update({key(r): r for r in new})
  return [merged[k] for k in sorted(merged, key=lambda k: (k[0], k[1], k[2]))]


def _fmt_flops(value):
  if value is None:
    return "not recorded"
  return "0" if value == 0 else f"{value:.2e}"


def summary(rows):
  """Per (init, task): the metric's median and spread over the seeds, with
  what the runs used and cost."""
  groups = {}
  for row in rows:
    groups.setdefault((row["init"], row["task"]), []).append(row)
  out = []
  for (init, task), group in groups.items():
    metrics = [r["metric"] for r in group]
    out.append(
      {
        "init": init,
        "task": task,
        "glue_task": group[0].get("glue_task", task),
        "metric_name": group[0]["metric_name"],
        "seeds": sorted(r["seed"] for r in group),
        "median": statistics.median(metrics),
        "min": min(metrics),
        "max": max(metrics),
        "wall_s_median": statistics.median(r["wall_s"] for r in group),
        "peak_rss_mb_max": max(r["peak_rss_mb"] for r in group),
        "max_seq_length": sorted({r["max_seq_length"] for r in group}),
        "epochs": sorted({r["epochs"] for r in group}),
        "train_examples": sorted({r["train_examples"] for r in group}),
        "dev_examples": sorted({r["dev_examples"] for r in group}),
        "pretraining_flops": group[0]["pretraining_flops"],
        "learning_rate": group[0]["learning_rate"],
        "layerwise_lr_decay": group[0]["layerwise_lr_decay"],
      }
    )
  return out


def _one_or_list(values):
  return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)


def markdown(report, rows):
  """The report's table: one line per (init, task)."""
  lines = [
    f"#### `glue_{report}`",
    "",
    "| init | task | dev metric | seeds | median | min – max | train / dev examples "
    "| max_seq_length | epochs | lr / layer decay | pre-training FLOPs | wall s (median run) "
    "| peak RSS MB |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
  ]
  for s in summary(rows):
    lines.append(
      f"| {s['init']} | {s['glue_task']} | {s['metric_name']} | {len(s['seeds'])} "
      f"| {s['median']:.2f} | {s['min']:.2f} – {s['max']:.2f} "
      f"| {_one_or_list(s['train_examples'])} / {_one_or_list(s['dev_examples'])} "
      f"| {_one_or_list(s['max_seq_length'])} | {_one_or_list(s['epochs'])} "
      f"| {s['learning_rate']:g} / {s['layerwise_lr_decay']:g} | {_fmt_flops(s['pretraining_flops'])} "
      f"| {s['wall_s_median']:.0f} | {s['peak_rss_mb_max']:.0f} |"
    )
  machines = sorted({r.get("machine", "?") for r in rows})
  rates = sorted(
    {r.get("fp32_matmul_gflop_per_s") for r in rows if r.get("fp32_matmul_gflop_per_s")}
  )
  dates = sorted(r.get("date", "") for r in rows)
  lines += [
    "",
    f"Runs {dates[0]} – {dates[-1]} on {'; '.join(machines)}; fp32 GEMM rate measured in the "
    f"runs: {', '.join(f'{r:g}' for r in rates) or 'not measured'} GFLOP/s. Metric ×100 as "
    "the original prints it; the seeds and their values are in the JSON.",
  ]
  return "\n".join(lines) + "\n"


def docs_section(report_dir):
  """The GLUE section of docs/benchmarks.md: every `glue_*.json` report's table."""
  parts = []
  for name in sorted(os.listdir(report_dir)):
    # glue_pretraining.json joins the paper-claim reports, whose tables are already here.
    if name.startswith("glue_") and name.endswith(".json") and name != "glue_pretraining.json":
      with open(os.path.join(report_dir, name), encoding="utf-8") as f:
        rows = json.load(f)
      if rows:
        parts.append(markdown(name[len("glue_") : -len(".json")], rows))
  return "\n".join(parts) or "No GLUE bench report yet.\n"


def write_docs_section(path, section):
  """Replaces what lies between `DOCS_START` and `DOCS_END` in the page at
  `path`; every byte outside them stays as it was."""
  replace_between_markers(path, DOCS_START, DOCS_END, section)


def _seeds(text):
  try:
    seeds = [int(s) for s in text.split(",") if s.strip()]
  except ValueError:
    seeds = []
  if not seeds:
    raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated integers, e.g. 1,2,3")
  return seeds


def _json_dict(text):
  try:
    value = json.loads(text)
  except json.JSONDecodeError as e:
    raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
  if not isinstance(value, dict):
    raise argparse.ArgumentTypeError("expected a JSON object of hparams")
  return value


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  init = parser.add_mutually_exclusive_group(required=True)
  init.add_argument(
    "--init-checkpoint",
    help="the model to fine-tune: anything run_finetuning's init_checkpoint reads",
  )
  init.add_argument("--random-init", action="store_true", help="no pre-trained weights")
  parser.add_argument("--init-name", required=True, help="the rows' `init` label")
  parser.add_argument("--glue-dir", default=DEFAULT_GLUE_DIR, help="GLUE task folders")
  parser.add_argument("--seeds", type=_seeds, default=[1, 2, 3], help="e.g. 1,2,3")
  parser.add_argument(
    "--model-size",
    choices=tuple(RECIPES),
    help="the recipe's size (and the encoder's, when no config.json records it); default: the "
    "checkpoint's config.json, else small",
  )
  parser.add_argument("--vocab-file", help="default: the checkpoint's; random init: the original's")
  parser.add_argument("--max-seq-length", type=int, help=f"default {RECIPE_SEQ_LENGTH}")
  parser.add_argument(
    "--epochs", type=float, help="default: the original's per task (3; RTE, STS 10)"
  )
  parser.add_argument(
    "--max-train-examples", type=int, help="N rows of train.tsv, drawn with a fixed seed"
  )
  parser.add_argument("--max-dev-examples", type=int, help="the first N rows of the dev file")
  parser.add_argument("--tasks", help="comma-separated task names (default: every task found)")
  parser.add_argument(
    "--pretraining-flops", type=float, help="default: from the checkpoint's config.json; 0 random"
  )
  parser.add_argument(
    "--extra-hparams", type=_json_dict, default={}, help="JSON hparams added to every run"
  )
  parser.add_argument("--report", help="report name: glue_<report>.json (default: --init-name)")
  parser.add_argument("--report-dir", default=REPORT_DIR)
  parser.add_argument("--work-dir", help=f"data and model dirs (default {WORK_DIR}/<init-name>)")
  parser.add_argument("--docs-page", default=DOCS_PAGE, help="'' leaves the page alone")
  parser.add_argument("--keep-models", action="store_true", help="keep the fine-tuned checkpoints")
  parser.add_argument("--quick", action="store_true", help="smoke run: tiny slice, 1 seed")
  args = parser.parse_args(argv)
  if args.quick:
    args.seeds = args.seeds[:1]
    for name, value in QUICK.items():
      if getattr(args, name) is None:
        setattr(args, name, value)
  if args.max_seq_length is None:
    args.max_seq_length = RECIPE_SEQ_LENGTH
  for name in ("max_seq_length", "max_train_examples", "max_dev_examples"):
    value = getattr(args, name)
    if value is not None and value < 1:
      parser.error(f"--{name.replace('_', '-')}={value}; expected a positive integer")
  if args.epochs is not None and args.epochs <= 0:
    parser.error(f"--epochs={args.epochs}; expected > 0")
  if not os.path.isdir(args.glue_dir):
    parser.error(f"--glue-dir {args.glue_dir}: no such directory")
  if args.init_checkpoint and not (
    os.path.exists(args.init_checkpoint) or os.path.exists(args.init_checkpoint + ".index")
  ):
    parser.error(f"--init-checkpoint {args.init_checkpoint}: not found")
  if args.random_init and not args.vocab_file:
    if not os.path.isfile(FIXTURE_VOCAB):
      parser.error(f"--random-init needs --vocab-file (the original's {FIXTURE_VOCAB} is absent)")
    args.vocab_file = FIXTURE_VOCAB
  args.report = args.report or args.init_name
  args.work_dir = args.work_dir or os.path.join(WORK_DIR, args.init_name)
  return args, parser


def main(argv=None):
  args, parser = parse_args(argv)
  tasks = find_tasks(args.glue_dir)
  if args.tasks:
    wanted = [t for t in args.tasks.split(",") if t]
    unknown = sorted(set(wanted) - set(GLUE_TASKS.values()))
    if unknown:
      parser.error(f"--tasks: unknown {unknown}; expected some of {sorted(GLUE_TASKS.values())}")
    tasks = [(folder, task) for folder, task in tasks if task in wanted]
  if not tasks:
    parser.error(
      f"--glue-dir {args.glue_dir}: no GLUE task folder ({', '.join(GLUE_TASKS)}) with "
      "train.tsv and its dev file"
    )
  records_config = False
  recorded_size = None
  if args.init_checkpoint:
    recorded_size = _recorded_model_size(args.init_checkpoint)
    records_config = recorded_size is not None
  recipe_size = args.model_size or recorded_size or "small"
  if args.pretraining_flops is not None:
    flops = args.pretraining_flops
  elif args.random_init:
    flops = 0
  else:
    flops = pretraining_flops(args.init_checkpoint)
  rates = {}
  if not args.quick:
    measured = call_in_child("bench.bench_pretraining_step", "machine_rates")
    rates = {
      k: measured[k]
      for k in ("fp32_matmul_gflop_per_s", "bf16_matmul_gflop_per_s")
      if k in measured
    }
    print(f"matmul rates: {rates}", flush=True)
  os.makedirs(args.report_dir, exist_ok=True)
  report_json = os.path.join(args.report_dir, f"glue_{args.report}.json")
  new_rows = []
  for folder, task in tasks:
    for seed in args.seeds:
      new_rows.append(finetune(args, folder, task, seed, recipe_size, records_config, flops, rates))
      # Written after every run, so an interrupted bench keeps what it measured; the file is
      # read again each time, so a bench of another init writing the same report keeps its rows.
      rows = merge_rows(_read_rows(report_json), new_rows)
      write_atomic(report_json, json.dumps(rows, indent=2) + "\n")
      write_atomic(report_json[: -len(".json")] + ".md", markdown(args.report, rows))
  print(markdown(args.report, rows), flush=True)
  if not args.quick and args.docs_page:
    write_docs_section(args.docs_page, docs_section(args.report_dir))
    print(f"wrote the GLUE tables into {args.docs_page}", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
