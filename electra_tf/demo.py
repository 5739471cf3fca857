"""The main job on the built-in demo: `python -m electra_tf.demo`.

Stages, in order (each can also be run alone with `--stages`):

  corpus    Python docstrings → `<out>/corpus/*.txt`
  vocab     a WordPiece vocab → `<out>/vocab.txt`
  data      pre-training TFRecords → `<out>/pretrain_tfrecords/` (shard 7 of 8
            held out for evaluation)
  pretrain  the hparams files and a small ELECTRA on CPU → `<out>/models/demo/`,
            with held-out metrics at step 0 and every sixth of the run
  eval      held-out metrics next to their trivial baselines, the results
            files and `<out>/training_curves.png`
  export    SavedModel of the discriminator → `<out>/export/1`
  score     load the export, corrupt a sentence and show what it flags

A re-run over a model the pretrain stage started resumes it, keeping the
corpus, vocab and records it was made with (`kept_stages`). `<out>` is laid
out like the original's data dir, for `run_pretraining`, `run_finetuning`
and `export_saved_model`.
"""

import argparse
import json
import os
import sys
import time

import tensorflow as tf

from electra_tf import build_pretraining_dataset
from electra_tf import export_saved_model
from electra_tf import serving
from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.data import records_info
from electra_tf.runtime import distribution
from electra_tf.text.vocab import Vocab
from electra_tf.text.vocab import load_vocab
from electra_tf.training import held_out_evaluation
from electra_tf.training import pretraining_run
from electra_tf.training import run_status
from electra_tf.utils import curves
from electra_tf.utils import exit_codes
from electra_tf.utils import interrupts
from electra_tf.utils.events import scalar_events
from electra_tf.utils.file_io import read_json
from electra_tf.utils.file_io import write_atomic
from tfrecords_tools import build_vocab
from tfrecords_tools.python_docs_corpus import write_python_docs_corpus

MODEL_NAME = "demo"
# Held-out batches of the eval stage (and of `eval_hparams.json`).
EVAL_STAGE_STEPS = 20
NUM_SHARDS = 8
EVAL_SHARD = NUM_SHARDS - 1

# A small ELECTRA for a few CPU minutes. Sampling at temperature 3 (the
# original's is 1): at 1, in this budget, the discriminator stays on its first
# plateau (held-out AUC about 0.56 after 600 steps; about 0.9 at 3). A warm-up
# much shorter than 100 steps collapses its token representations.
DEMO_HPARAMS = {
  "model_size": "small",
  "model_hparam_overrides": {
    "hidden_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 2,
    "intermediate_size": 512,
  },
  "embedding_size": 128,
  "generator_hidden_size": 0.25,
  "temperature": 3.0,
  "max_seq_length": 128,
  "train_batch_size": 32,
  "eval_batch_size": 32,
  "learning_rate": 1e-3,
  "num_warmup_steps": 100,
  "num_train_steps": 1200,
  "num_eval_steps": 10,
  "save_checkpoints_steps": 200,
  "keep_checkpoint_max": 2,
  "seed": 0,
  "log_every_steps": 20,
  "save_summary_steps": 10,
}


def _say(text):
  print(f"\n[demo] {text}", flush=True)


def _paths(out, model_name=MODEL_NAME):
  return {
    "corpus": os.path.join(out, "corpus"),
    "vocab": os.path.join(out, "vocab.txt"),
    "tfrecords": os.path.join(out, "pretrain_tfrecords"),
    "model_dir": os.path.join(out, "models", model_name),
    "export": os.path.join(out, "export"),
    "png": os.path.join(out, "training_curves.png"),
    "history": os.path.join(out, "models", model_name, "demo_eval_history.json"),
    "hparams": os.path.join(out, "hparams.json"),
    "eval_hparams": os.path.join(out, "eval_hparams.json"),
    "finetune_hparams": os.path.join(out, "finetune_hparams.json"),
    # Says the demo made this folder: its stages replace what they find in it.
    "marker": os.path.join(out, ".electra_tf_demo"),
  }


# What `finetune_hparams.json` holds: a short RTE run (sizes from config.json).
DEMO_FINETUNE_HPARAMS = {
  "task_names": ["rte"],
  "max_seq_length": 128,
  "train_batch_size": 8,
  "eval_batch_size": 8,
  "predict_batch_size": 8,
  "num_train_epochs": 2.0,
  "log_every_steps": 1,
}


def pretraining_config(
  out, train_steps=None, for_eval=False, model_name=MODEL_NAME, **hparam_overrides
):
  """The demo's `PretrainingConfig` (training on shards 0–6, evaluation on 7);
  `model_name` and `hparam_overrides` let other runs reuse it."""
  hparams = dict(pretraining_hparams(out, train_steps, for_eval), **hparam_overrides)
  return PretrainingConfig(model_name, out, **hparams)


def pretraining_hparams(out, train_steps=None, for_eval=False):
  """The demo's pre-training (or, `for_eval`, evaluation) settings as the
  `--hparams` of `run_pretraining --data-dir <out> --model-name demo`."""
  hparams = _demo_hparams(out, train_steps)
  shards = (
    f"pretrain_data.tfrecord-{EVAL_SHARD}-of-{NUM_SHARDS}"
    if for_eval
    else f"pretrain_data.tfrecord-[0-{EVAL_SHARD - 1}]-of-{NUM_SHARDS}"
  )
  hparams["pretrain_tfrecords"] = os.path.join(_paths(out)["tfrecords"], shards)
  if for_eval:
    hparams.update(do_train=False, do_eval=True)
  return hparams


def write_hparams_files(out, train_steps=None):
  """Writes the demo's pre-training, evaluation and fine-tuning settings as
  `--hparams` files."""
  paths = _paths(out)
  eval_hparams = pretraining_hparams(out, train_steps, for_eval=True)
  eval_hparams["num_eval_steps"] = EVAL_STAGE_STEPS
  for key, hparams in (
    ("hparams", pretraining_hparams(out, train_steps)),
    ("eval_hparams", eval_hparams),
    ("finetune_hparams", DEMO_FINETUNE_HPARAMS),
  ):
    write_atomic(paths[key], json.dumps(hparams, indent=2) + "\n")


def _demo_hparams(out, train_steps=None):
  """`DEMO_HPARAMS` with the vocab's size and, if given, the step count (a
  short run warms up over at most its first half)."""
  hparams = dict(DEMO_HPARAMS, vocab_size=_vocab_size(_paths(out)["vocab"]))
  if train_steps is not None:
    hparams["num_train_steps"] = int(train_steps)
    hparams["num_warmup_steps"] = max(1, min(hparams["num_warmup_steps"], int(train_steps) // 2))
  return hparams


def _vocab_size(vocab_file):
  if not os.path.exists(vocab_file):
    return 30522
  return len(load_vocab(vocab_file))


# The stages.


def stage_corpus(out, args):
  paths, written = write_python_docs_corpus(
    _paths(out)["corpus"], max_megabytes=args.corpus_mb, num_files=NUM_SHARDS
  )
  _say(f"corpus: {written / 2**20:.1f} MB of docstrings in {len(paths)} files")


def _run_tool(main, **flags):
  """Runs an entry point's `main` with `--flag value` arguments (`True`: a
  bare flag); a failure stops the demo with its exit code."""
  argv = []
  for name, value in flags.items():
    flag = "--" + name.replace("_", "-")
    argv += [flag] if value is True else [flag, str(value)]
  code = main(argv)
  if code:
    raise SystemExit(code)


# The flags a kept vocab was made with (recorded in the marker file).
VOCAB_FLAGS = ("corpus_mb", "vocab_size")


def stage_vocab(out, args):
  paths = _paths(out)
  _run_tool(
    build_vocab.main,
    corpus_dir=paths["corpus"],
    vocab_size=args.vocab_size,
    output=paths["vocab"],
    overwrite=True,  # the demo's own output: a re-run with no model to resume rebuilds it
  )
  _write_marker(out, {flag: getattr(args, flag) for flag in VOCAB_FLAGS})
  _say(f"vocab: {_vocab_size(paths['vocab'])} entries in {paths['vocab']}")


def stage_data(out, args):
  paths = _paths(out)
  _run_tool(
    build_pretraining_dataset.main,
    corpus_dir=paths["corpus"],
    vocab_file=paths["vocab"],
    output_dir=paths["tfrecords"],
    max_seq_length=128,
    num_processes=args.num_processes,
    num_out_files=NUM_SHARDS,
    seed=0,
    overwrite=True,
  )


def periodic_evaluation(out, every, model_name=MODEL_NAME):
  """A `held_out_evaluation.PeriodicEvaluation` on the held-out shard."""
  return held_out_evaluation.PeriodicEvaluation(
    pretraining_config(out, for_eval=True, model_name=model_name),
    every,
    _paths(out, model_name)["history"],
  )


def stage_pretrain(out, args):
  config = pretraining_config(out, args.train_steps)
  inputs = pretraining_run.validate_config(config)
  write_hparams_files(out, args.train_steps)
  periodic = periodic_evaluation(out, every=max(1, config.num_train_steps // 6))
  sizes = DEMO_HPARAMS["model_hparam_overrides"]
  _say(
    f"pretrain: {config.num_train_steps} steps of batch {config.train_batch_size} x "
    f"{config.max_seq_length} tokens (H={sizes['hidden_size']}, L={sizes['num_hidden_layers']}, "
    f"generator H={int(sizes['hidden_size'] * config.generator_hidden_size)}), held-out "
    f"evaluation at step 0 and every {periodic.every} steps, in {config.model_dir}"
  )
  start = time.time()
  pretraining_run.train_or_eval(config, inputs, callbacks=[periodic.callback])
  _say(f"pretrain: done in {time.time() - start:.0f} s")


def stage_eval(out, args):
  paths = _paths(out)
  eval_config = pretraining_config(out, args.train_steps, for_eval=True)
  eval_config.num_eval_steps = EVAL_STAGE_STEPS
  inputs = pretraining_run.validate_config(eval_config)
  # The training config was printed above; evaluation changes only these.
  _say(
    "evaluation: the config above with do_train=False, do_eval=True, "
    f"num_eval_steps={eval_config.num_eval_steps}, pretrain_tfrecords={eval_config.pretrain_tfrecords}"
  )
  strategy = distribution.setup_distribution(eval_config)
  results = pretraining_run.evaluate(eval_config, strategy, inputs)
  measured = held_out_evaluation.measure_against_baselines(eval_config)
  _say(
    f"evaluation of step {measured['global_step']} on the held-out shard "
    f"({measured['real_tokens']} real tokens, {measured['masked_positions']} masked positions in "
    f"{measured['num_batches']} batches; the original's metrics above also count padding). "
    "Each metric is shown next to its trivial baseline; the margin is ± 2 standard errors over "
    "the batches, and 'within noise' means it is smaller than that:"
  )
  for line in held_out_evaluation.format_against_baselines(measured):
    print(line, flush=True)
  write_atomic(
    os.path.join(eval_config.model_dir, "results", "demo_vs_baselines.json"),
    json.dumps(measured, indent=1),
  )
  _write_curves(paths)
  print(f"  training curves: {paths['png']}", flush=True)
  return results, measured


def _write_curves(paths):
  """The training curves PNG; returns the figure."""
  panels = held_out_evaluation.training_curve_panels(
    scalar_events(paths["model_dir"]), held_out_evaluation.load_history(paths["history"])
  )
  return curves.write_training_curves_png(
    paths["png"], panels, width=1400, height=1400, title="ELECTRA demo pre-training"
  )


def stage_export(out, args):
  paths = _paths(out)
  # The model dir's config.json describes the network: no --hparams needed.
  _run_tool(
    export_saved_model.main,
    checkpoint=paths["model_dir"],
    vocab_file=paths["vocab"],
    export_dir=paths["export"],
    model="discriminator",
    version=1,
    overwrite=True,
  )
  _say(f"export: SavedModel in {os.path.join(paths['export'], '1')}")


DEMO_SENTENCE = "return the number of items in the list , or raise an error if the list is empty ."
# Replacements a careless generator might make; the discriminator should flag them.
DEMO_REPLACEMENTS = {"number": "color", "list": "window", "error": "banana"}


def corrupt(sentence, replacements):
  """Replaces the first occurrence of each key; returns (text, replaced words)."""
  words = sentence.split()
  replaced = []
  for original, fake in replacements.items():
    if original in words:
      words[words.index(original)] = fake
      replaced.append(fake)
  return " ".join(words), replaced


def stage_score(out, args):
  paths = _paths(out)
  export_path = os.path.join(paths["export"], "1")
  loaded = serving.load(export_path)  # imports tensorflow_text (the tokenizer ops)
  serve = loaded.signatures["serving_default"]
  text, replaced = corrupt(DEMO_SENTENCE, DEMO_REPLACEMENTS)
  outputs = serve(text_a=tf.constant([text]), text_b=tf.constant([""]))
  inv_vocab = {i: t for t, i in load_vocab(paths["vocab"]).items()}
  ids = outputs["input_ids"].numpy()[0]
  mask = outputs["input_mask"].numpy()[0]
  probs = outputs["rtd_probs"].numpy()[0]
  _say(f"score: original  '{DEMO_SENTENCE}'")
  print(f"       corrupted '{text}'  (replaced: {', '.join(replaced)})")
  print("       token            p(replaced)")
  tokens, scores = [], []
  for token_id, m, p in zip(ids, mask, probs):
    if not m:
      break
    tokens.append(inv_vocab.get(int(token_id), "?"))
    scores.append(float(p))
  # Rank the words (a word's score is its pieces' highest), leaving out [CLS]/[SEP].
  words = []
  for token, p in zip(tokens[1:-1], scores[1:-1]):
    if token.startswith("##") and words:
      words[-1] = (words[-1][0] + token[2:], max(words[-1][1], p))
    else:
      words.append((token, p))
  top = {w for w, _ in sorted(words, key=lambda wp: -wp[1])[: len(replaced)]}
  flagged = [w for w, p in words if p > 0.5]
  for word, p in words:
    marks = ("  <-- replaced" if word in replaced else "") + (
      "  (flagged: p > 0.5)" if p > 0.5 else ""
    )
    print(f"       {word:16s} {p:.3f}{marks}")
  hits = len(top & set(replaced))
  print(
    f"       flagged (p > 0.5): {flagged or 'none'}; the {len(replaced)} most suspicious words: "
    f"{sorted(top)} -> {hits} of {len(replaced)} replaced words found",
    flush=True,
  )
  return flagged


# The stages in order: name -> (function, the `_paths` entry it reads, the
# stage that writes that entry).
STAGES = {
  "corpus": (stage_corpus, None, None),
  "vocab": (stage_vocab, "corpus", "corpus"),
  "data": (stage_data, "vocab", "vocab"),
  "pretrain": (stage_pretrain, "tfrecords", "data"),
  "eval": (stage_eval, "model_dir", "pretrain"),
  "export": (stage_export, "model_dir", "pretrain"),
  "score": (stage_score, "export", "export"),
}


def _write_marker(out, vocab_flags=None):
  made = {"made_by": "python -m electra_tf.demo; its stages rebuild what is here"}
  if vocab_flags:
    made["vocab_flags"] = vocab_flags
  write_atomic(_paths(out)["marker"], json.dumps(made) + "\n")


def _marker_vocab_flags(out):
  """The flags the vocab stage recorded (None: an older demo's marker)."""
  try:
    made = read_json(_paths(out)["marker"], "demo marker")
  except ValueError:
    return None
  return made.get("vocab_flags") if isinstance(made, dict) else None


def kept_stages(out, args):
  """The stages before pretrain whose output a re-run keeps (a rebuilt vocab
  would get other ids and the model could not resume): the vocab the model
  dir's config.json records, its corpus, and the records made with it. A
  one-line ValueError when --corpus-mb/--vocab-size differ from the vocab's."""
  paths = _paths(out)
  config_file = os.path.join(paths["model_dir"], model_dir_lib.RUN_CONFIG_FILE)
  try:
    recorded = (read_json(config_file, "config") or {}).get("vocab") or {}
    if not recorded.get("sha256") or not os.path.isfile(paths["vocab"]):
      return set()
    if Vocab.read(paths["vocab"], "vocab").sha256 != recorded["sha256"]:
      return set()  # not this vocab's model: the pretrain stage refuses it in one line
    info = records_info.read_records_info(paths["tfrecords"])
  except ValueError:  # a damaged file: the stage that reads it names it
    return set()
  made_with = _marker_vocab_flags(out) or {}
  changed = [f for f in VOCAB_FLAGS if f in made_with and made_with[f] != getattr(args, f)]
  if changed:

    def flags(values):
      return " ".join(f"--{f.replace('_', '-')} {values[f]}" for f in changed)

    raise ValueError(
      f"{flags(vars(args))}: the model in {paths['model_dir']!r} was pre-trained with "
      f"{paths['vocab']!r}, made with {flags(made_with)}: give those to resume it, or a new "
      "--output-dir"
    )
  kept = {"vocab"}
  if os.path.isdir(paths["corpus"]):
    kept.add("corpus")
  settings = (info or {}).get("settings") or {}
  if (
    info
    and info["vocab"]["sha256"] == recorded["sha256"]
    and (settings.get("max_seq_length"), settings.get("num_out_files")) == (128, NUM_SHARDS)
  ):
    kept.add("data")
  return kept


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--output-dir", default="demo_output")
  parser.add_argument(
    "--stages", default=",".join(STAGES), help=f"comma-separated subset of {','.join(STAGES)}"
  )
  parser.add_argument(
    "--train-steps",
    type=int,
    default=None,
    help=f"pre-training steps (default {DEMO_HPARAMS['num_train_steps']})",
  )
  parser.add_argument("--corpus-mb", type=float, default=6.0)
  parser.add_argument("--vocab-size", type=int, default=8000)
  parser.add_argument("--num-processes", type=int, default=2)
  args = parser.parse_args(argv)
  # Before any stage runs: a bad number would otherwise stop the run minutes in.
  for flag, value in (
    ("--train-steps", args.train_steps),
    ("--corpus-mb", args.corpus_mb),
    ("--vocab-size", args.vocab_size),
    ("--num-processes", args.num_processes),
  ):
    if value is not None and not 0 < value < float("inf"):  # NaN fails both
      parser.error(f"{flag} {value}: expected a positive number")
  stages = [s.strip() for s in args.stages.split(",") if s.strip()]
  unknown = [s for s in stages if s not in STAGES]
  if unknown or not stages:
    what = f"unknown stage(s) {unknown}" if unknown else f"{args.stages!r} names no stage"
    parser.error(f"--stages: {what}; expected a subset of {list(STAGES)}")
  if not args.output_dir.strip():
    parser.error("--output-dir is empty (an unset shell variable?); expected a directory path")
  out = os.path.abspath(args.output_dir)
  if os.path.exists(out) and not os.path.isdir(out):
    parser.error(f"--output-dir {args.output_dir!r} is a file; expected a directory")
  if "vocab" in stages:
    # Records, model and export hold the old vocab's ids: left alone they would no longer match.
    stale = [
      stage
      for stage, key in (("data", "tfrecords"), ("pretrain", "model_dir"), ("export", "export"))
      if stage not in stages and os.path.exists(_paths(out)[key])
    ]
    if stale:
      parser.error(
        f"--stages vocab rebuilds {_paths(out)['vocab']}, but the {', '.join(stale)} stage(s) "
        f"under {out} were made with the current vocab and would no longer match it: add "
        f"{','.join(stale)} to --stages, or give a new --output-dir"
      )
  for stage in stages:
    _, reads, writer = STAGES[stage]
    if reads and writer not in stages and not os.path.exists(_paths(out)[reads]):
      parser.error(
        f"--stages {stage}: {_paths(out)[reads]} does not exist; run the {writer} stage "
        f"first (or add it to --stages)"
      )
  marker = _paths(out)["marker"]
  if os.path.isdir(out) and os.listdir(out) and not os.path.exists(marker):
    parser.error(
      f"--output-dir {args.output_dir!r} holds files the demo did not make (such as "
      f"{sorted(os.listdir(out))[0]!r}) and its stages replace what they find there: give a "
      "new or empty folder"
    )
  try:
    kept = kept_stages(out, args) & set(stages)
  except ValueError as e:
    parser.error(str(e))
  os.makedirs(out, exist_ok=True)  # after the checks: a refused run leaves no folder
  if not os.path.exists(marker):
    _write_marker(out)
  start = time.time()

  def run_stages():
    for stage, (run_stage, _, _) in STAGES.items():
      if stage in kept:
        _say(
          f"=== stage {stage}: kept (the model in {_paths(out)['model_dir']} was pre-trained "
          "on it; give a new --output-dir to rebuild) ==="
        )
      elif stage in stages:
        _say(f"=== stage {stage} ===")
        run_stage(out, args)

  # Ctrl-C and SIGTERM end as in run_pretraining: one line (a checkpoint saved
  # in the pretrain stage), exit 130 / 143; a rerun goes on from there.
  try:
    status = run_status.run_to_exit_status("demo", run_stages)
  except ValueError as e:  # bad input a stage found (as run_pretraining says it)
    print(f"demo: error: {e}", file=sys.stderr, flush=True)
    return exit_codes.BAD_INPUT
  if status != 0:
    return status
  _say(f"all done in {time.time() - start:.0f} s. Everything is under {out}:")
  paths = _paths(out)
  for key in ("corpus", "vocab", "tfrecords", "model_dir", "export", "png"):
    if os.path.exists(paths[key]):  # what this run and earlier ones made, not the rest
      print(f"  {key:10s} {paths[key]}")
  rel = os.path.relpath(out)
  settings = (
    f"""
  * the demo's settings are in {rel}/hparams.json (pre-training),
    {rel}/eval_hparams.json (evaluation on the held-out shard) and
    {rel}/finetune_hparams.json (fine-tuning); e.g. evaluate again:
      python -m electra_tf.run_pretraining --data-dir {rel} --model-name {MODEL_NAME} \\
          --hparams {rel}/eval_hparams.json"""
    if os.path.exists(paths["hparams"])  # written by the pretrain stage
    else ""
  )
  tensorboard = ""
  if os.path.exists(paths["model_dir"]):
    tensorboard = f"\n  * TensorBoard: tensorboard --logdir {paths['model_dir']}"
  print(
    f"""
Next steps (docs/ has each of these, and what it needs):{settings}
  * your own corpus (a folder of text files, one sentence per line, blank
    lines between documents):
      python -m tfrecords_tools.build_vocab --corpus-dir MY_CORPUS --vocab-size 30522 --output DATA/vocab.txt
      python -m electra_tf.build_pretraining_dataset --corpus-dir MY_CORPUS \\
          --vocab-file DATA/vocab.txt --output-dir DATA/pretrain_tfrecords
      python -m electra_tf.run_pretraining --data-dir DATA --model-name my_electra \\
          --hparams configs/small.json{tensorboard}
""",
    flush=True,
  )
  return 0


if __name__ == "__main__":
  interrupts.exit_with(main())
