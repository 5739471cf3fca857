"""Does electra_tf's own pre-training pay off? ELECTRA and masked-LM
pre-training at equal FLOPs, then fine-tuning on official SST-2 (and CoLA),
against random init: in one sitting, from one command.

  python -m bench.paper_claim                      # every stage; re-run to resume
  python -m bench.paper_claim --until gate         # corpus, vocab, records and the gate
  python -m bench.paper_claim --run-dir DIR --glue-dir DIR --report-dir DIR

Stages, each skipped when its output is there (pre-training resumes from its
last checkpoint, fine-tuning rows already in the report are kept):

  corpus    the unlabelled, de-duplicated sentences of SST-2's and CoLA's
            training files (`tfrecords_tools.glue_sentences_corpus`; no dev
            sentence is read)
  vocab     a WordPiece vocab of it (`tfrecords_tools.build_vocab`)
  records   TFRecords of `SEQ` tokens, `NUM_SHARDS` shards, the last held out
  gate      a short ELECTRA run whose held-out discriminator AUC must keep
            rising after step 100, and one fine-tuning row from it that must
            fit its training rows; the command stops when the gate fails
            (`--ignore-gate` goes on)
  pretrain  ELECTRA and MLM at equal FLOPs, side by side, one core each
  finetune  every row of `finetune_rows`, two at a time
  curves    held-out masked-LM accuracy and discriminator AUC (at the run's
            temperature and at 1) of every kept checkpoint
  report    `glue_pretraining.{json,md}`, the payoff plot
            (`paper_claim_payoff.png`) and docs/benchmarks.md's section

The recipe (`Recipe`) is fixed in code, so every run of the command is the
same experiment; `--recipe` takes a JSON object of `Recipe` fields for a
variant (its reports then carry the variant's name). FLOPs are counted by the
project's `electra_tf.utils.flops` (the original's rules).
"""

import argparse
import concurrent.futures
import dataclasses
import functools
import json
import os
import subprocess
import sys
import time

from bench import glue as glue_bench
from bench.common import REPO_ROOT
from bench.common import machine_description
from bench.common import replace_between_markers
from electra_tf.utils import exit_codes
from electra_tf.utils import flops
from electra_tf.utils.file_io import write_atomic

RUN_DIR = os.path.join(REPO_ROOT, "bench", "results", "paper_claim")
REPORT_DIR = os.path.join(REPO_ROOT, "bench", "reports")
DOCS_PAGE = os.path.join(REPO_ROOT, "docs", "benchmarks.md")
DOCS_START = "<!-- bench:paper_claim:start (written by python -m bench.paper_claim) -->"
DOCS_END = "<!-- bench:paper_claim:end -->"
STAGES = ("corpus", "vocab", "records", "gate", "pretrain", "finetune", "curves", "report")
NUM_SHARDS = 8
EVAL_SHARD = NUM_SHARDS - 1
# The original ELECTRA-Small: 1M steps of batch 128 x 128 tokens.
ORIGINAL_SMALL_FLOPS = flops.MODEL_FLOPS["electra_small"]
INITS = ("random", "electra", "mlm")
# Exit status of a failed gate (the budget is not spent).
GATE_FAILED = 4


@dataclasses.dataclass(frozen=True)
class Recipe:
  """Everything the experiment's result depends on.

  Shapes: ELECTRA-Small's width halved (hidden 128, 4 layers, 2 heads,
  FFN 512, embeddings 128, generator a quarter as wide, tied embeddings),
  64 tokens (a SST-2 sentence is 13 WordPieces on average), batch 32:
  at 2 CPU cores this buys thousands of updates in minutes. Float32: at these
  shapes `mixed_bfloat16` gave no speed-up on an AVX512_BF16 CPU.
  """

  name: str = "tapt_h128"
  # True: pre-train on SST-2's sentences, not on every phrase of their parse
  # trees (the phrases repeat each sentence's words about five times, in
  # fragments). Tried as variants `sent_t1` / `sent_t3`: gates passed, but
  # fine-tuning from the first 2,000 steps was no better (docs/benchmarks.md).
  sentences_only: bool = False
  vocab_size: int = 8000
  seq: int = 64
  batch: int = 32
  hidden: int = 128
  layers: int = 4
  heads: int = 2
  intermediate: int = 512
  embedding: int = 128
  generator_fraction: float = 0.25
  temperature: float = 3.0
  learning_rate: float = 1e-3
  warmup_steps: int = 200
  electra_steps: int = 8000
  checkpoints: int = 4  # fine-tuned from for the payoff curve (the last is the final one)
  gate_steps: int = 400
  # Fine-tuning: the same fixed sample of rows for every init and seed.
  train_rows: int = 2000
  finetune_seq: int = 64
  finetune_epochs: float = 3.0
  finetune_learning_rate: float = 1e-3
  layerwise_lr_decay: float = 0.8
  seeds: tuple = (1, 2, 3)
  # Seeds fine-tuned from each earlier checkpoint (the payoff curve's points
  # before the final one; the final checkpoint gets every seed).
  payoff_seeds: int = 1
  tasks: tuple = ("sst", "cola")

  def model_hparams(self):
    """The `run_pretraining` hparams of the shapes and optimisation."""
    return {
      "model_size": "small",
      "model_hparam_overrides": {
        "hidden_size": self.hidden, "num_hidden_layers": self.layers,
        "num_attention_heads": self.heads, "intermediate_size": self.intermediate,
      },
      "embedding_size": self.embedding,
      "generator_hidden_size": self.generator_fraction,
      "max_seq_length": self.seq,
      "train_batch_size": self.batch,
      "eval_batch_size": self.batch,
      "learning_rate": self.learning_rate,
      "num_warmup_steps": self.warmup_steps,
      "seed": 0,
      "keep_checkpoint_max": 0,
      "log_every_steps": 50,
      "save_summary_steps": 50,
    }  # fmt: skip


def pretraining_hparams(recipe, objective, steps, data_dir, model_dir, vocab_size):
  """The `run_pretraining --hparams` of one run."""
  return dict(
    recipe.model_hparams(),
    **run_hparams(recipe, objective, steps, data_dir),
    vocab_size=vocab_size,
    model_dir=model_dir,
  )


def pretraining_config(recipe, objective, steps, data_dir, model_dir, vocab_size):
  """The `PretrainingConfig` those hparams build (no I/O)."""
  from electra_tf.configs.pretraining import PretrainingConfig  # pylint: disable=g-import-not-at-top

  hparams = pretraining_hparams(recipe, objective, steps, data_dir, model_dir, vocab_size)
  return PretrainingConfig(os.path.basename(model_dir), data_dir, **hparams)


def run_hparams(recipe, objective, steps, data_dir):
  """The hparams that tell one run of the recipe from another."""
  train_shards = ",".join(shard_path(data_dir, i) for i in range(EVAL_SHARD))
  hparams = {
    "electra_objective": objective == "electra",
    "vocab_file": os.path.join(data_dir, "vocab.txt"),
    "pretrain_tfrecords": train_shards,
    "num_train_steps": steps,
    "save_checkpoints_steps": max(1, steps // recipe.checkpoints),
  }
  if objective == "electra":
    hparams["temperature"] = recipe.temperature
  return hparams


def flops_per_step(recipe, objective, vocab_size):
  """Training FLOPs of one step of `objective` ("electra" or "mlm"): the
  discriminator with its binary head plus the generator with its softmax
  head, or the discriminator-sized transformer with the softmax head.

  Example:
  >>> r = Recipe()
  >>> flops_per_step(r, "electra", 8000) > flops_per_step(r, "mlm", 8000)
  True
  """
  if objective not in ("electra", "mlm"):
    raise ValueError(f"objective {objective!r}; expected 'electra' or 'mlm'")
  s, e = recipe.seq, recipe.embedding
  body = flops.TransformerHparams(
    recipe.hidden, recipe.layers, s=s, v=vocab_size, e=e, i=recipe.intermediate, heads=recipe.heads
  )
  if objective == "mlm":
    return body.get_train_flops(recipe.batch, 1)
  fraction = recipe.generator_fraction
  generator = flops.TransformerHparams(
    int(recipe.hidden * fraction), recipe.layers, s=s, v=vocab_size, e=e,
    i=int(recipe.intermediate * fraction), heads=max(1, int(recipe.heads * fraction)),
  )  # fmt: skip
  return body.get_train_flops(recipe.batch, 1, discriminator=True) + generator.get_train_flops(
    recipe.batch, 1
  )


def mlm_steps(recipe, vocab_size):
  """The MLM run's steps: ELECTRA's FLOPs over the MLM step's."""
  budget = recipe.electra_steps * flops_per_step(recipe, "electra", vocab_size)
  return max(1, round(budget / flops_per_step(recipe, "mlm", vocab_size)))


def shard_path(data_dir, index):
  return os.path.join(
    data_dir, "pretrain_tfrecords", f"pretrain_data.tfrecord-{index}-of-{NUM_SHARDS}"
  )


class Paths:
  """Where each stage writes, under the run dir."""

  def __init__(self, run_dir, recipe):
    self.run = run_dir
    self.corpus = os.path.join(run_dir, "corpus")
    self.data = os.path.join(run_dir, "data")
    self.vocab = os.path.join(self.data, "vocab.txt")
    self.models = os.path.join(run_dir, "models")
    self.finetune = os.path.join(run_dir, "finetune")
    self.logs = os.path.join(run_dir, "logs")
    self.recipe = recipe

  def model_dir(self, objective):
    return os.path.join(self.models, f"{objective}_{self.recipe.name}")


def _say(text):
  print(f"[paper_claim] {text}", flush=True)


def _run(argv, log_path=None, cpu=None):
  """Runs `argv` (output to `log_path`, or ours); with `cpu`, on that core alone."""
  preexec = None
  if cpu is not None and hasattr(os, "sched_setaffinity"):
    preexec = lambda: os.sched_setaffinity(0, {cpu})  # noqa: E731
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"))
  if log_path is None:
    return subprocess.run(argv, check=False, env=env, preexec_fn=preexec, cwd=REPO_ROOT).returncode
  os.makedirs(os.path.dirname(log_path), exist_ok=True)
  with open(log_path, "a", encoding="utf-8") as log:
    return subprocess.run(
      argv, check=False, env=env, preexec_fn=preexec, cwd=REPO_ROOT, stdout=log,
      stderr=subprocess.STDOUT,
    ).returncode  # fmt: skip


def _cpus():
  return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [None]


def _vocab_size(paths):
  return _vocab_lines(paths.vocab)


@functools.lru_cache(maxsize=None)
def _vocab_lines(path):
  """The vocab's size, read once (every stage and row asks for it)."""
  with open(path, encoding="utf-8") as f:
    return sum(1 for _ in f)


def stage_corpus(ctx):
  manifest = os.path.join(ctx.paths.corpus, "manifest.json")
  if os.path.exists(manifest):
    return _say(f"corpus: {manifest} exists")
  from tfrecords_tools import glue_sentences_corpus  # pylint: disable=g-import-not-at-top

  done = glue_sentences_corpus.build(
    ctx.args.glue_dir,
    ctx.paths.corpus,
    num_files=NUM_SHARDS,
    sentences_only=ctx.recipe.sentences_only,
  )
  _say(f"corpus: {done['sentences_unique']:,} sentences, {done['words']:,} words")


def stage_vocab(ctx):
  if os.path.exists(ctx.paths.vocab):
    return _say(f"vocab: {ctx.paths.vocab} exists")
  os.makedirs(ctx.paths.data, exist_ok=True)
  rc = _run(
    [sys.executable, "-m", "tfrecords_tools.build_vocab", "--corpus-dir",
     os.path.join(ctx.paths.corpus, "corpus"), "--vocab-size", str(ctx.recipe.vocab_size),
     "--output", ctx.paths.vocab],
    os.path.join(ctx.paths.logs, "vocab.log"),
  )  # fmt: skip
  if rc:
    raise SystemExit(f"paper_claim: build_vocab exited with {rc} (log in {ctx.paths.logs})")


def stage_records(ctx):
  if all(os.path.exists(shard_path(ctx.paths.data, i)) for i in range(NUM_SHARDS)):
    return _say("records: every shard exists")
  rc = _run(
    [sys.executable, "-m", "electra_tf.build_pretraining_dataset", "--corpus-dir",
     os.path.join(ctx.paths.corpus, "corpus"), "--vocab-file", ctx.paths.vocab, "--output-dir",
     os.path.join(ctx.paths.data, "pretrain_tfrecords"), "--max-seq-length", str(ctx.recipe.seq),
     "--num-processes", str(min(2, len(_cpus()))), "--num-out-files", str(NUM_SHARDS),
     "--seed", "0", "--overwrite"],
    os.path.join(ctx.paths.logs, "records.log"),
  )  # fmt: skip
  if rc:
    raise SystemExit(f"paper_claim: build_pretraining_dataset exited with {rc}")


def pretrain(ctx, objective, steps, model_dir, cpu=None):
  """Runs (or resumes) one pre-training run; returns its exit status."""
  vocab_size = _vocab_size(ctx.paths)
  step_flops = flops_per_step(ctx.recipe, objective, vocab_size)
  os.makedirs(model_dir, exist_ok=True)
  info = {"objective": objective, "steps": steps, "flops_per_step": step_flops}
  write_atomic(os.path.join(model_dir, "paper_claim.json"), json.dumps(info, indent=2) + "\n")
  hparams = pretraining_hparams(ctx.recipe, objective, steps, ctx.paths.data, model_dir, vocab_size)
  argv = [
    sys.executable, "-m", "electra_tf.run_pretraining", "--data-dir", ctx.paths.data,
    "--model-name", os.path.basename(model_dir), "--hparams", json.dumps(hparams),
  ]  # fmt: skip
  _say(f"pretrain {objective}: {steps} steps x {step_flops / 1e9:.2f} GFLOP -> {model_dir}")
  return _run(
    argv, os.path.join(ctx.paths.logs, f"pretrain_{os.path.basename(model_dir)}.log"), cpu
  )


def held_out_points(model_dir, data_dir, batches, step_flops):
  """Held-out metrics of every kept checkpoint of the run in `model_dir`
  (masked-LM accuracy, discriminator AUC at the run's temperature and at
  1), oldest first, each with its pre-training FLOPs."""
  from electra_tf.checkpoints import model_dir as model_dir_lib  # pylint: disable=g-import-not-at-top
  from electra_tf.training import held_out_evaluation  # pylint: disable=g-import-not-at-top

  run_config = model_dir_lib.read_run_config(model_dir)
  config = model_dir_lib.pretraining_config_from_run_config(
    run_config,
    {"do_train": False, "do_eval": True, "pretrain_tfrecords": shard_path(data_dir, EVAL_SHARD),
     "num_eval_steps": batches, "model_dir": model_dir},
  )  # fmt: skip
  quiet = lambda line: None  # noqa: E731
  points = held_out_evaluation.measure_checkpoints(config, batches, log=quiet, untrained=False)
  if config.electra_objective and config.temperature != 1.0:
    config.temperature = 1.0
    again = held_out_evaluation.measure_checkpoints(config, batches, log=quiet, untrained=False)
    at_1 = {p["global_step"]: p["disc_auc_real_tokens"] for p in again}
  else:
    at_1 = {p["global_step"]: p.get("disc_auc_real_tokens") for p in points}
  keys = ("masked_lm_accuracy", "unigram_masked_lm_accuracy", "disc_auc_real_tokens",
          "disc_accuracy_real_tokens", "all_original_accuracy")  # fmt: skip
  out = []
  for p in points:
    point = {k: p[k] for k in keys if k in p}
    point.update(global_step=p["global_step"], pretraining_flops=p["global_step"] * step_flops)
    if at_1[p["global_step"]] is not None:
      point["disc_auc_at_temperature_1"] = at_1[p["global_step"]]
    out.append(point)
  return out


# The gate's thresholds: the held-out AUC at temperature 1 must rise by this
# much from step 100 to the gate run's end, and the fine-tuned row must score
# this many points above the majority class on its own training rows.
GATE_AUC_RISE = 0.01
GATE_FIT_MARGIN = 10.0


def gate_verdict(points, fit_accuracy, fit_majority):
  """Whether the gate passes, and why, from its run's held-out points and
  the fine-tuned row's accuracy on its training rows.

  Example:
  >>> pts = [{"global_step": 100, "disc_auc_at_temperature_1": 0.55},
  ...        {"global_step": 400, "disc_auc_at_temperature_1": 0.60}]
  >>> gate_verdict(pts, 80.0, 55.0)["passed"]
  True
  >>> gate_verdict(pts, 60.0, 55.0)["fits_training_rows"]
  False
  """
  at_100 = [p for p in points if p["global_step"] >= 100]
  first, last = at_100[0], at_100[-1]
  rise = last["disc_auc_at_temperature_1"] - first["disc_auc_at_temperature_1"]
  keeps_learning = rise >= GATE_AUC_RISE and last["global_step"] > first["global_step"]
  fits = fit_accuracy >= fit_majority + GATE_FIT_MARGIN
  return {
    "auc_t1_from_step": first["global_step"],
    "auc_t1_rise": rise,
    "keeps_learning": keeps_learning,
    "fit_accuracy": fit_accuracy,
    "fit_majority": fit_majority,
    "fits_training_rows": fits,
    "passed": keeps_learning and fits,
  }


def _fit_glue_dir(ctx):
  """A GLUE dir whose SST-2 dev file is the first 500 of the fine-tuning
  sample's training rows (`bench.glue.copy_rows`' sample): its dev accuracy
  is how well a row fits its training rows."""
  target = os.path.join(ctx.paths.run, "glue_fit", "SST-2")
  os.makedirs(target, exist_ok=True)
  source = os.path.join(ctx.args.glue_dir, "SST-2", "train.tsv")
  if not os.path.exists(os.path.join(target, "train.tsv")):
    os.symlink(os.path.abspath(source), os.path.join(target, "train.tsv"))
  dev = os.path.join(target, "dev.tsv")
  glue_bench.copy_rows(source, dev, "sst", ctx.recipe.train_rows, sample=True)
  with open(dev, encoding="utf-8") as f:
    lines = f.readlines()
  write_atomic(dev, "".join(lines[:501]))  # the header and 500 rows
  return os.path.dirname(target)


def stage_gate(ctx):
  path = os.path.join(ctx.args.report_dir, f"paper_claim_gate_{ctx.recipe.name}.json")
  if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
      report = json.load(f)
    _say(f"gate: {path} exists (passed: {report['verdict']['passed']})")
    return report
  start = time.time()
  model_dir = os.path.join(ctx.paths.models, f"gate_{ctx.recipe.name}")
  steps = ctx.recipe.gate_steps
  gate_recipe = dataclasses.replace(ctx.recipe, checkpoints=max(1, steps // 100))
  rc = pretrain(dataclasses.replace(ctx, recipe=gate_recipe), "electra", steps, model_dir)
  if rc:
    raise SystemExit(f"paper_claim: the gate's pre-training exited with {rc}")
  vocab_size = _vocab_size(ctx.paths)
  points = held_out_points(
    model_dir, ctx.paths.data, 8, flops_per_step(ctx.recipe, "electra", vocab_size)
  )
  row = finetune_row(ctx, "gate", "sst", 1, model_dir, steps, glue_dir=_fit_glue_dir(ctx))
  verdict = gate_verdict(points, row["metric"], row["majority"])
  report = {
    "recipe": dataclasses.asdict(ctx.recipe), "points": points, "fit_row": row,
    "verdict": verdict, "wall_s": round(time.time() - start, 1),
  }  # fmt: skip
  write_atomic(path, json.dumps(report, indent=1) + "\n")
  _say(f"gate: {json.dumps(verdict)} ({report['wall_s']:.0f} s)")
  return report


def stage_pretrain(ctx):
  vocab_size = _vocab_size(ctx.paths)
  runs = [("electra", ctx.recipe.electra_steps), ("mlm", mlm_steps(ctx.recipe, vocab_size))]
  cpus = _cpus()
  with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
    futures = [
      pool.submit(
        pretrain,
        ctx,
        objective,
        steps,
        ctx.paths.model_dir(objective),
        cpus[i % len(cpus)] if len(cpus) >= len(runs) else None,
      )  # fmt: skip
      for i, (objective, steps) in enumerate(runs)
    ]
    statuses = [f.result() for f in futures]
  if any(statuses):
    raise SystemExit(f"paper_claim: pre-training exited with {statuses} (logs in {ctx.paths.logs})")


def _checkpoint_steps(model_dir):
  from electra_tf.checkpoints import reader as checkpoint_reader  # pylint: disable=g-import-not-at-top

  return sorted(
    checkpoint_reader.step_of(p) for p in checkpoint_reader.checkpoint_candidates(model_dir)
  )


def finetune_rows(recipe, electra_steps, mlm_steps_):
  """`(init, task, seed, step)` of every fine-tuning row: every init on every
  task and seed from the final checkpoint, and on SST-2 the first
  `payoff_seeds` seeds from each earlier kept checkpoint of both runs (the
  payoff curve).

  Example:
  >>> rows = finetune_rows(Recipe(seeds=(1,), tasks=("sst",), checkpoints=2), [5, 10], [6, 12])
  >>> rows
  [('random', 'sst', 1, 0), ('electra', 'sst', 1, 10), ('mlm', 'sst', 1, 12), ('electra', 'sst', 1, 5), ('mlm', 'sst', 1, 6)]
  """
  rows = []
  for task in recipe.tasks:
    for seed in recipe.seeds:
      rows += [("random", task, seed, 0), ("electra", task, seed, electra_steps[-1])]
      rows.append(("mlm", task, seed, mlm_steps_[-1]))
  for seed in recipe.seeds[: recipe.payoff_seeds]:
    rows += [("electra", "sst", seed, s) for s in electra_steps[:-1] if s > 0]
    rows += [("mlm", "sst", seed, s) for s in mlm_steps_[:-1] if s > 0]
  return rows


def finetune_row(ctx, init, task, seed, model_dir, step, glue_dir=None):
  """One fine-tuning row (`bench.glue`'s, with this recipe), in its own work dir."""
  recipe = ctx.recipe
  name = f"{init}-{task}-seed{seed}-step{step}"
  vocab_size = _vocab_size(ctx.paths)
  args = argparse.Namespace(
    random_init=init == "random",
    init_checkpoint=None if init == "random" else os.path.join(model_dir, f"model.ckpt-{step}"),
    init_name=init, glue_dir=glue_dir or ctx.args.glue_dir, vocab_file=ctx.paths.vocab,
    max_seq_length=recipe.finetune_seq, epochs=recipe.finetune_epochs,
    max_train_examples=recipe.train_rows, max_dev_examples=None, quick=False,
    keep_models=False, work_dir=os.path.join(ctx.paths.finetune, name),
    extra_hparams={
      "learning_rate": recipe.finetune_learning_rate,
      "layerwise_lr_decay": recipe.layerwise_lr_decay, "vocab_size": vocab_size,
    },
  )  # fmt: skip
  if init == "random":
    args.extra_hparams.update(
      model_hparam_overrides=recipe.model_hparams()["model_hparam_overrides"],
      embedding_size=recipe.embedding,
    )
  info = {}
  if init != "random":
    with open(os.path.join(model_dir, "paper_claim.json"), encoding="utf-8") as f:
      info = json.load(f)
  folder = {v: k for k, v in glue_bench.GLUE_TASKS.items()}[task]
  row = glue_bench.finetune(
    args, folder, task, seed, "small", init != "random",
    step * info.get("flops_per_step", 0.0), ctx.rates,
  )  # fmt: skip
  row.update(
    checkpoint_step=step,
    train_rows=row["train_examples"],
    recipe=recipe.name,
    majority=_majority(os.path.join(args.work_dir, "data", "finetuning_data", task), task),
  )
  return row


def _majority(task_dir, task):
  """The majority class's share of the dev file's labels, ×100."""
  dev = os.path.join(task_dir, glue_bench.DEV_FILES.get(task, "dev.tsv"))
  with open(dev, encoding="utf-8") as f:
    lines = f.readlines()
  rows = lines[1:] if task not in glue_bench.NO_HEADER else lines
  labels = [line.rstrip("\n").split("\t")[1] for line in rows]  # SST-2's and CoLA's label column
  return 100.0 * max(labels.count(v) for v in set(labels)) / len(labels)


def _rows_path(ctx):
  return os.path.join(ctx.args.report_dir, "glue_pretraining.json")


def _read_rows(ctx):
  path = _rows_path(ctx)
  if not os.path.exists(path):
    return []
  with open(path, encoding="utf-8") as f:
    return [r for r in json.load(f) if r.get("recipe") == ctx.recipe.name]


def stage_finetune(ctx):
  electra_dir, mlm_dir = ctx.paths.model_dir("electra"), ctx.paths.model_dir("mlm")
  wanted = finetune_rows(ctx.recipe, _checkpoint_steps(electra_dir), _checkpoint_steps(mlm_dir))
  key = lambda r: (r["init"], r["task"], r["seed"], r["checkpoint_step"])  # noqa: E731
  done = {key(r) for r in _read_rows(ctx)}
  todo = [w for w in wanted if w not in done]
  _say(f"finetune: {len(wanted) - len(todo)} of {len(wanted)} rows done, {len(todo)} to run")
  dirs = {"random": None, "electra": electra_dir, "mlm": mlm_dir}

  def one(spec):
    init, task, seed, step = spec
    return finetune_row(ctx, init, task, seed, dirs[init], step)

  with concurrent.futures.ThreadPoolExecutor(min(2, len(_cpus()))) as pool:
    for row in pool.map(one, todo):
      rows = [r for r in _read_rows(ctx) if key(r) != key(row)] + [row]
      rows.sort(key=lambda r: (INITS.index(r["init"]), r["task"], r["checkpoint_step"], r["seed"]))
      write_atomic(_rows_path(ctx), json.dumps(rows, indent=1) + "\n")
      _say(f"finetune: {row['init']} {row['task']} seed {row['seed']} step "
           f"{row['checkpoint_step']}: {row['metric_name']} {row['metric']:.2f}")  # fmt: skip


def stage_curves(ctx):
  vocab_size = _vocab_size(ctx.paths)
  runs = {}
  for objective in ("electra", "mlm"):
    model_dir = ctx.paths.model_dir(objective)
    runs[objective] = held_out_points(
      model_dir, ctx.paths.data, ctx.args.batches, flops_per_step(ctx.recipe, objective, vocab_size)
    )
  path = os.path.join(ctx.args.report_dir, f"paper_claim_curves_{ctx.recipe.name}.json")
  write_atomic(path, json.dumps(runs, indent=1) + "\n")
  _say(f"curves: wrote {path}")


def verdict(rows):
  """What the issue's table must show, from the final-checkpoint rows: per
  task, whether every ELECTRA seed is above every random-init seed and
  above the majority class, and the MLM rows' FLOPs over ELECTRA's.

  Example:
  >>> rows = [
  ...   {"init": "random", "task": "sst", "metric": 60.0, "pretraining_flops": 0, "majority": 50.9},
  ...   {"init": "electra", "task": "sst", "metric": 70.0, "pretraining_flops": 1e14,
  ...    "majority": 50.9},
  ...   {"init": "mlm", "task": "sst", "metric": 65.0, "pretraining_flops": 1.05e14,
  ...    "majority": 50.9},
  ... ]
  >>> v = verdict(rows)
  >>> v["electra_above_random"], v["electra_above_majority"], v["mlm_flops_over_electra"]
  ({'sst': True}, {'sst': True}, 1.05)
  """
  result = {"electra_above_random": {}, "electra_above_majority": {}}
  for task in sorted({r["task"] for r in rows}):
    of = lambda init: [r for r in rows if r["init"] == init and r["task"] == task]  # noqa: E731
    electra, random = of("electra"), of("random")
    if electra and random:
      result["electra_above_random"][task] = min(r["metric"] for r in electra) > max(
        r["metric"] for r in random
      )
    if electra:
      result["electra_above_majority"][task] = all(r["metric"] > r["majority"] for r in electra)
  e = max((r["pretraining_flops"] for r in rows if r["init"] == "electra"), default=0)
  m = max((r["pretraining_flops"] for r in rows if r["init"] == "mlm"), default=0)
  result["mlm_flops_over_electra"] = round(m / e, 4) if e and m else None
  return result


def final_rows(rows):
  """The rows fine-tuned from each run's last checkpoint (and random init)."""
  last = {}
  for r in rows:
    last[r["init"]] = max(last.get(r["init"], 0), r["checkpoint_step"])
  return [r for r in rows if r["checkpoint_step"] == last[r["init"]]]


def summary_markdown(recipe, rows, curves, gate, wall_s=None):
  """The report: the verdict, the table of final rows, the payoff points
  and the held-out curves."""
  final = final_rows(rows)
  result = verdict(final)
  lines = [
    f"Recipe `{recipe.name}`: "
    + ", ".join(f"{k} {v}" for k, v in dataclasses.asdict(recipe).items()),
    "",
    "| init | task | metric | seeds | values | mean | pre-training FLOPs | share of ELECTRA-Small's |",
    "|---|---|---|---|---|---|---|---|",
  ]
  for task in recipe.tasks:
    for init in INITS:
      group = sorted((r for r in final if r["init"] == init and r["task"] == task),
                     key=lambda r: r["seed"])  # fmt: skip
      if not group:
        continue
      values = [r["metric"] for r in group]
      f = group[0]["pretraining_flops"]
      lines.append(
        f"| {init} | {task} | {group[0]['metric_name']} | {len(group)} | "
        f"{', '.join(f'{v:.2f}' for v in values)} | {sum(values) / len(values):.2f} | "
        f"{f:.3g} | {f / ORIGINAL_SMALL_FLOPS:.2e} |"
      )
  majority = {r["task"]: r["majority"] for r in final}
  lines += ["", "Majority class on dev: " + ", ".join(f"{t} {v:.2f}" for t, v in majority.items())]
  lines += ["", "Payoff (SST-2 dev accuracy against pre-training FLOPs):", ""]
  lines += ["| init | step | FLOPs | seeds | values | mean |", "|---|---|---|---|---|---|"]
  for init in ("electra", "mlm"):
    for step in sorted({r["checkpoint_step"] for r in rows if r["init"] == init}):
      group = [r for r in rows if r["init"] == init and r["task"] == "sst"
               and r["checkpoint_step"] == step]  # fmt: skip
      if group:
        values = [r["metric"] for r in sorted(group, key=lambda r: r["seed"])]
        lines.append(
          f"| {init} | {step} | {group[0]['pretraining_flops']:.3g} | {len(values)} | "
          f"{', '.join(f'{v:.2f}' for v in values)} | {sum(values) / len(values):.2f} |"
        )
  if curves:
    lines += ["", "Held-out pre-training metrics:", ""]
    lines += ["| run | step | FLOPs | masked-LM accuracy | disc AUC (own T) | disc AUC (T=1) |"]
    lines += ["|---|---|---|---|---|---|"]
    for name, points in curves.items():
      for p in points:
        auc = p.get("disc_auc_real_tokens")
        auc1 = p.get("disc_auc_at_temperature_1")
        lines.append(
          f"| {name} | {p['global_step']} | {p['pretraining_flops']:.3g} | "
          f"{p['masked_lm_accuracy']:.3f} | {'' if auc is None else f'{auc:.3f}'} | "
          f"{'' if auc1 is None else f'{auc1:.3f}'} |"
        )
  if gate:
    lines += ["", f"Gate: `{json.dumps(gate['verdict'], sort_keys=True)}` ({gate['wall_s']:.0f} s)"]
  if wall_s is not None:
    lines += ["", f"Whole command: {wall_s / 60:.1f} min wall on {machine_description()}."]
  lines += ["", "```json", json.dumps(result, indent=1, sort_keys=True), "```"]
  return "\n".join(lines) + "\n", result


def payoff_panels(rows, curves):
  """The payoff plot's panels: SST-2 dev accuracy of every fine-tuned row
  against pre-training FLOPs (random init the floor at 0), and the runs'
  held-out AUC at temperature 1 and masked-LM accuracy."""
  from electra_tf.utils import curves as curves_lib  # pylint: disable=g-import-not-at-top

  series = []
  for init in ("electra", "mlm"):
    by_flops = {}
    for r in rows:
      if r["init"] == init and r["task"] == "sst":
        by_flops.setdefault(r["pretraining_flops"], []).append(r["metric"])
    if by_flops:
      xs = sorted(by_flops)
      series.append(
        curves_lib.Series(
          f"{init} (mean of seeds)", xs, [sum(by_flops[x]) / len(by_flops[x]) for x in xs]
        )
      )
  random = [r["metric"] for r in rows if r["init"] == "random" and r["task"] == "sst"]
  baselines = []
  if random:
    baselines.append(curves_lib.Baseline(max(random), "random init (best seed)"))
  majority = [r["majority"] for r in rows if r["task"] == "sst"]
  if majority:
    baselines.append(curves_lib.Baseline(majority[0], "majority class"))
  panels = [
    curves_lib.Panel(
      "SST-2 dev accuracy after fine-tuning", series, "accuracy", baselines=baselines,
      x_label="pre-training FLOPs",
    )
  ]  # fmt: skip
  for key, title, y_range in (
    ("disc_auc_at_temperature_1", "Held-out discriminator AUC, temperature 1", (0.5, 1.0)),
    ("masked_lm_accuracy", "Held-out masked-LM accuracy", (0.0, 0.5)),
  ):
    lines = [
      curves_lib.Series(name, [p["pretraining_flops"] for p in pts], [p[key] for p in pts])
      for name, pts in (curves or {}).items()
      if any(key in p for p in pts)
    ]
    if lines:
      panels.append(curves_lib.Panel(title, lines, key, y_range, x_label="pre-training FLOPs"))
  return panels


def stage_report(ctx):
  from electra_tf.utils import curves as curves_lib  # pylint: disable=g-import-not-at-top

  rows = _read_rows(ctx)
  if not rows:
    raise SystemExit(f"paper_claim: no fine-tuning rows of recipe {ctx.recipe.name!r} yet")
  curves = None
  path = os.path.join(ctx.args.report_dir, f"paper_claim_curves_{ctx.recipe.name}.json")
  if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
      curves = json.load(f)
  gate_path = os.path.join(ctx.args.report_dir, f"paper_claim_gate_{ctx.recipe.name}.json")
  gate = None
  if os.path.exists(gate_path):
    with open(gate_path, encoding="utf-8") as f:
      gate = json.load(f)
  text, result = summary_markdown(ctx.recipe, rows, curves, gate, ctx.wall_s)
  write_atomic(os.path.join(ctx.args.report_dir, "glue_pretraining.md"), text)
  curves_lib.write_training_curves_png(
    os.path.join(ctx.args.report_dir, "paper_claim_payoff.png"), payoff_panels(rows, curves),
    width=1500, height=450, columns=3,
  )  # fmt: skip
  if ctx.args.docs_page:
    replace_between_markers(ctx.args.docs_page, DOCS_START, DOCS_END, text)
  print(text, flush=True)
  return result


@dataclasses.dataclass(frozen=True)
class Context:
  args: argparse.Namespace
  recipe: Recipe
  paths: Paths
  rates: dict
  wall_s: float | None = None


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--run-dir", default=RUN_DIR, help="corpus, data, models, fine-tuning dirs")
  parser.add_argument("--glue-dir", default=glue_bench.DEFAULT_GLUE_DIR, help="holds SST-2/, CoLA/")
  parser.add_argument("--report-dir", default=REPORT_DIR)
  parser.add_argument("--docs-page", default=DOCS_PAGE, help="'' leaves docs/benchmarks.md alone")
  parser.add_argument("--until", choices=STAGES, default=STAGES[-1], help="the last stage to run")
  parser.add_argument("--only", choices=STAGES, help="run this stage alone")
  parser.add_argument("--ignore-gate", action="store_true", help="go on when the gate fails")
  parser.add_argument("--batches", type=int, default=32, help="held-out batches per checkpoint")
  parser.add_argument("--recipe", type=json.loads, default={}, help="JSON of Recipe fields")
  args = parser.parse_args(argv)
  known = {f.name for f in dataclasses.fields(Recipe)}
  unknown = sorted(set(args.recipe) - known)
  if unknown:
    parser.error(f"--recipe: unknown fields {unknown}; expected some of {sorted(known)}")
  if args.batches < 1:
    parser.error(f"--batches={args.batches}; expected a positive integer")
  if not os.path.isdir(os.path.join(args.glue_dir, "SST-2")):
    parser.error(f"--glue-dir {args.glue_dir}: no SST-2/ folder")
  return args


def main(argv=None):
  args = parse_args(argv)
  fields = dict(args.recipe)
  for name in ("seeds", "tasks"):
    if name in fields:
      fields[name] = tuple(fields[name])
  recipe = Recipe(**fields)
  from bench.bench_pretraining_step import machine_rates  # pylint: disable=g-import-not-at-top

  start = time.time()
  rates = {k: v for k, v in machine_rates().items() if k.endswith("gflop_per_s")}
  _say(f"recipe {recipe.name}; machine {machine_description()}; matmul rates {rates}")
  ctx = Context(args, recipe, Paths(args.run_dir, recipe), rates)
  os.makedirs(args.report_dir, exist_ok=True)
  stages = [args.only] if args.only else STAGES[: STAGES.index(args.until) + 1]
  timings_path = os.path.join(args.report_dir, f"paper_claim_timings_{recipe.name}.json")
  timings = {}
  if os.path.exists(timings_path):
    with open(timings_path, encoding="utf-8") as f:
      timings = json.load(f)
  for stage in stages:
    begun = time.time()
    if stage == "report":
      ctx = dataclasses.replace(
        ctx, wall_s=sum(t["wall_s"] for t in timings.values() if isinstance(t, dict))
      )
    result = globals()[f"stage_{stage}"](ctx)
    timings[stage] = {"wall_s": round(time.time() - begun, 1), "cpu_rates": rates}
    write_atomic(timings_path, json.dumps(timings, indent=1) + "\n")
    if stage == "gate" and not result["verdict"]["passed"] and not args.ignore_gate:
      _say("the gate failed: not spending the budget (--ignore-gate goes on)")
      return GATE_FAILED
  _say(f"done in {(time.time() - start) / 60:.1f} min")
  return exit_codes.OK


if __name__ == "__main__":
  sys.exit(main())
