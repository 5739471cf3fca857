"""Pre-training and evaluation as a library: the original's
`run_pretraining.py:train_or_eval` (checks before any model is built, then
resumable training to `num_train_steps` through `ElectraPretrainer.fit`, or
evaluation of the newest checkpoint with its results files).
`python -m electra_tf.run_pretraining` is the command line over
`make_config`, `validate_config` and `train_or_eval`.

Example:
  >>> config = make_config("tiny", "/tmp/data", {"debug": True})
  >>> config.model_dir.endswith("tiny")
  True
  >>> # train_or_eval(config)
"""

import dataclasses
import glob
import json
import os
import pickle
import sys

import keras
import tensorflow as tf

from electra_tf.checkpoints import checkpointing
from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.checkpoints import reader as checkpoint_reader
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.configs.pretraining import get_pretraining_bert_config
from electra_tf.data import pretraining_dataset as pretrain_data
from electra_tf.data import record_check
from electra_tf.data import records_info
from electra_tf.hparams_input import load_hparams
from electra_tf.models import official_names
from electra_tf.models.electra_pretrainer import built_pretrainer
from electra_tf.runtime import distribution
from electra_tf.sources import any_format
from electra_tf.sources import formats
from electra_tf.text import vocab as vocab_lib
from electra_tf.training import callbacks as training_callbacks
from electra_tf.utils import file_io
from electra_tf.utils import interrupts
from electra_tf.utils import run_lock
from electra_tf.utils.file_io import check_output_files
from electra_tf.utils.file_io import check_writable
from electra_tf.utils.file_io import write_atomic


def resolve_file_patterns(config, globs=None):
  """The `pretrain_tfrecords` globs (or `globs`, comma-separated) as a list;
  a relative pattern matching nothing from the working directory is tried
  under `data_dir`."""
  patterns = []
  for pattern in str(globs or config.pretrain_tfrecords).split(","):
    pattern = pattern.strip()
    if not pattern:
      continue
    under_data_dir = os.path.join(config.data_dir or "", pattern)
    if (
      not os.path.isabs(pattern)
      and "://" not in pattern
      and config.data_dir
      and not tf.io.gfile.glob(pattern)
      and tf.io.gfile.glob(under_data_dir)
    ):
      # (Only where that finds files: the default pattern already starts with
      # data_dir, and an error naming `<data_dir>/<data_dir>/...` misleads.)
      pattern = under_data_dir
    patterns.append(pattern)
  return patterns


def find_pretraining_files(config):
  """The TFRecord files of hparam `pretrain_tfrecords`; a clear error if none."""
  patterns = resolve_file_patterns(config)
  try:
    return pretrain_data.find_files(patterns)
  except ValueError as error:
    matches = [f for p in patterns for f in tf.io.gfile.glob(p)]
    if any(tf.io.gfile.isdir(f) or file_io.broken_link(f) for f in matches):
      raise ValueError(f"hparam pretrain_tfrecords: {error}") from None  # name the folder, link
    aside = [
      os.path.join(os.path.dirname(p), records_info.PREVIOUS_BUILD)
      for p in patterns
      if tf.io.gfile.isdir(os.path.join(os.path.dirname(p), records_info.PREVIOUS_BUILD))
    ]
    hint = (
      f"; a rebuild killed midway left the earlier build in {aside[0]!r}: run the build "
      "again (it finishes or puts that build back)"
      if aside
      else ""
    )
    # A folder such as `run[1]` that exists as written: its `[1]` is a glob class.
    literal = [
      os.path.dirname(p)
      for p in patterns
      if file_io.glob_class(os.path.dirname(p)) and tf.io.gfile.isdir(os.path.dirname(p))
    ]
    if literal:
      hint += (
        f"; the folder {literal[0]!r} exists, but its {file_io.glob_class(literal[0])!r} is "
        f"read as a glob character class: escape it ({glob.escape(literal[0])!r}) or rename "
        "the folder"
      )
    raise ValueError(
      f"No pre-training TFRecords found for hparam pretrain_tfrecords="
      f"{config.pretrain_tfrecords!r} (searched {patterns}); build them with "
      f"`python -m electra_tf.build_pretraining_dataset` or set pretrain_tfrecords{hint}"
    ) from None


@dataclasses.dataclass(frozen=True)
class PretrainingInputs:
  """What `validate_config` resolved once, passed on in place of paths.

  Attributes:
    files: the data files and their record counts (`PretrainingFiles`).
    vocab: the `Vocab` of hparam `vocab_file` (None: read where needed).
    bert_config: the discriminator's `BertConfig` (None: derived where needed).
  """

  files: pretrain_data.PretrainingFiles
  vocab: vocab_lib.Vocab = None
  bert_config: object = None


def _as_inputs(inputs):
  """`PretrainingInputs` of itself, a `PretrainingFiles` or a list of paths."""
  if isinstance(inputs, PretrainingInputs):
    return inputs
  if isinstance(inputs, pretrain_data.PretrainingFiles):
    return PretrainingInputs(inputs)
  return PretrainingInputs(pretrain_data.PretrainingFiles(list(inputs), None))


def _check_results_paths(config):
  """Refuses unwritable results files before any work, not after the evaluation."""
  paths = [("hparam results_txt", config.results_txt), ("hparam results_pkl", config.results_pkl)]
  if config.results_txt:
    json_path = os.path.splitext(config.results_txt)[0] + ".json"
    paths.append(("hparam results_txt (its .json twin)", json_path))
  check_output_files(paths, writable=config.do_eval)


def _warn_unused_hparams(config):
  """One warning line per group of hparams set that this objective does not use."""
  defaults = PretrainingConfig.__dataclass_fields__
  trains_discriminator = config.electra_objective or config.electric_objective
  if config.uniform_generator:
    sizes_unused = "uniform_generator=true samples replacements uniformly: there is no generator"
  elif not trains_discriminator:
    sizes_unused = "an MLM-only run (electra_objective false) trains the full-size encoder"
  elif not config.untied_generator:
    sizes_unused = (
      "untied_generator=false: the generator shares the discriminator's weights, so it is full size"
    )
  else:
    sizes_unused = None
  groups = (
    (sizes_unused, ("generator_hidden_size", "generator_layers")),
    (
      None if trains_discriminator else "electra_objective is false: no discriminator",
      ("disc_weight",),
    ),
  )
  for reason, names in groups:
    unused = [
      f"{n}={getattr(config, n)}" for n in names if getattr(config, n) != defaults[n].default
    ]
    if reason and unused:
      print(f"warning: {reason}; {', '.join(unused)} not used", file=sys.stderr, flush=True)


def validate_config(config):
  """Every check that can fail before training starts; returns the
  `PretrainingInputs` (data files, vocab, encoder config) it resolved."""
  if config.do_train == config.do_eval:
    raise ValueError("Exactly one of `do_train` or `do_eval` must be True.")
  for name in (
    "num_train_steps",
    "train_batch_size",
    "eval_batch_size",
    "max_seq_length",
    "steps_per_execution",
  ):
    if int(getattr(config, name)) <= 0:
      raise ValueError(f"hparam {name}={getattr(config, name)}; expected a positive integer")
  if config.do_eval and int(config.num_eval_steps) <= 0:
    raise ValueError(f"hparam num_eval_steps={config.num_eval_steps}; expected > 0")
  bert_config = get_pretraining_bert_config(config)
  positions = bert_config.max_position_embeddings
  if config.max_seq_length > positions:
    raise ValueError(
      f"hparam max_seq_length={config.max_seq_length} exceeds the model's "
      f"max_position_embeddings={positions}; expected at most that"
    )
  if config.do_eval and not checkpoint_reader.checkpoint_candidates(config.model_dir):
    raise ValueError(
      f"do_eval: no checkpoint found in model dir {config.model_dir!r}; train first "
      "(do_train) or check --data-dir/--model-name"
    )
  if config.save_checkpoints_steps is not None and config.save_checkpoints_steps < 0:
    raise ValueError(
      f"hparam save_checkpoints_steps={config.save_checkpoints_steps}; expected >= 0"
    )
  if config.init_checkpoint:
    _check_init_checkpoint(config)
  # Before the records' checks (seconds to minutes): training and evaluation write there.
  check_writable(config.model_dir, "model dir (<data-dir>/models/<model-name>)", directory=True)
  _check_results_paths(config)
  if not tf.io.gfile.exists(config.vocab_file):
    file_io.check_data_dir(config.data_dir)
  vocab = vocab_lib.check_vocab_file(config.vocab_file, config.vocab_size)
  files = find_pretraining_files(config)
  # What the run records for fine-tuning and serving to read text with (a
  # SentencePiece model's own settings file says that, whatever the run records).
  normalisation = None
  if vocab.kind == vocab_lib.WORDPIECE:
    normalisation = (config.do_lower_case, config.strip_accents)
  records_info.check_records_vocab(files, vocab, normalisation)
  if config.held_out_tfrecords and config.do_train:
    try:
      held_out_files = pretrain_data.find_files(
        resolve_file_patterns(config, config.held_out_tfrecords)
      )
    except ValueError as error:  # none, or a folder: find_files says which
      raise ValueError(f"hparam held_out_tfrecords: {error}") from None
    trained_on = {os.path.realpath(f) for f in files}
    shared = sorted(f for f in held_out_files if os.path.realpath(f) in trained_on)
    if shared:
      # Metrics of records the model trains on measure memory, not generalisation.
      raise ValueError(
        f"hparam held_out_tfrecords={config.held_out_tfrecords!r} matches {len(shared)} of the "
        f"training files (pretrain_tfrecords), e.g. {shared[0]!r}; held-out records must be "
        "others (build them from held-out text)"
      )
    records_info.check_records_vocab(held_out_files, vocab, normalisation)
    try:
      # Held-out records of another length would fail deep in the first measurement.
      pretrain_data.validate_pretraining_files(
        held_out_files, config.max_seq_length, vocab_size=config.vocab_size
      )
    except record_check.CorruptRecordError:
      raise
    except ValueError as e:
      raise ValueError(
        f"hparam held_out_tfrecords: {e} (hparams max_seq_length={config.max_seq_length}, "
        f"vocab_size={config.vocab_size})"
      ) from None
  try:
    checked = pretrain_data.validate_pretraining_files(
      files,
      config.max_seq_length,
      vocab_size=config.vocab_size,
      log=lambda line: print(line, flush=True),
    )
    if config.do_train and config.num_warmup_steps > config.num_train_steps:
      # The original's schedule allows it; a short run with the default warm-up is a slip.
      print(
        f"warning: hparam num_warmup_steps={config.num_warmup_steps} is more than "
        f"num_train_steps={config.num_train_steps}: the whole run stays in the warm-up and the "
        f"learning rate never reaches learning_rate={config.learning_rate}",
        file=sys.stderr,
        flush=True,
      )
    sizes = {"num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads"}
    overruled = sorted(sizes & set(config.model_hparam_overrides or {}))
    if config.debug and overruled:
      print(
        f"warning: debug=True builds the original's debug model (3 layers, H=144, FFN 576, "
        f"4 heads) whatever model_hparam_overrides say ({', '.join(overruled)} not used); "
        "drop debug to train your sizes",
        file=sys.stderr,
        flush=True,
      )
    _warn_unused_hparams(config)
    return PretrainingInputs(checked, vocab, bert_config)
  except record_check.CorruptRecordError:
    raise
  except ValueError as e:
    raise ValueError(
      f"{e} (hparams max_seq_length={config.max_seq_length}, vocab_size={config.vocab_size})"
    ) from e


def make_dataset(config, is_training, start_batch=0, record_counts=None, files=None):
  """The global-batch input pipeline; with a seed it starts after
  `start_batch` batches. `files`: `validate_config`'s (default: hparam
  `pretrain_tfrecords`'s)."""
  batch_size = config.train_batch_size if is_training else config.eval_batch_size
  dataset = pretrain_data.get_dataset(
    files.files if files is not None else resolve_file_patterns(config),
    config.max_seq_length,
    batch_size,
    is_training=is_training,
    seed=config.seed,
    start_batch=start_batch,
    record_counts=record_counts,
    vocab_size=config.vocab_size,
  )
  return distributable(dataset)


def distributable(dataset):
  """`dataset` sharded by batch: each worker of a cluster takes every n-th."""
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
  return dataset.with_options(options)


def make_eval_dataset(config, files=None):
  """`(dataset, num_examples)`: the records of `files` (default: hparam
  `pretrain_tfrecords`'s) read once, in order, in batches of
  `eval_batch_size`, and how many there are. Nothing repeats (unlike the
  original's), so no example counts twice; `eval_steps` says how many to take."""
  files = _as_inputs(
    files if files is not None else pretrain_data.find_files(resolve_file_patterns(config))
  ).files
  counts = files.record_counts
  if counts is None:
    counts = record_check.check_tfrecord_files(files.files)
  dataset = tf.data.TFRecordDataset(files.files).map(
    lambda r: pretrain_data.decode_record(r, config.max_seq_length),
    num_parallel_calls=tf.data.AUTOTUNE,
  )
  dataset = dataset.batch(config.eval_batch_size).prefetch(tf.data.AUTOTUNE)
  return distributable(dataset), int(sum(counts))


def eval_steps(
  num_eval_steps, num_examples, batch_size, log=None, workers=1, name="num_eval_steps"
):
  """The batches one measurement takes: `num_eval_steps`, or every batch of
  the `num_examples` when that is fewer (said in one line through `log`,
  naming hparam `name`). With several `workers` the count is per worker, of
  full batches only, so all workers run the same steps.

  >>> eval_steps(200, 151, 16, log=print)
  held-out evaluation: num_eval_steps=200 batches of 16 (3200 examples) asked, but the held-out set holds 151 examples: measuring 10 batches, each of the 151 examples once
  10

  Raises:
    ValueError: with several workers, fewer examples than one full batch
      for each.
  """
  num_eval_steps, num_examples, batch_size = int(num_eval_steps), int(num_examples), int(batch_size)
  if workers > 1:
    available = num_examples // batch_size // workers
    if available == 0:
      raise ValueError(
        f"held-out evaluation: the held-out set holds {num_examples} examples, fewer than one "
        f"batch of eval_batch_size={batch_size} for each of {workers} workers"
      )
    distinct = available * workers * batch_size
    measured = (
      f"{available} batches on each of {workers} workers, {distinct} distinct examples once"
    )
  else:
    available = -(-num_examples // batch_size)
    measured = f"{available} batches, each of the {num_examples} examples once"
  if num_eval_steps <= available:
    return num_eval_steps
  if log is not None:
    log(
      f"held-out evaluation: {name}={num_eval_steps} batches of {batch_size} "
      f"({num_eval_steps * batch_size} examples) asked, but the held-out set holds "
      f"{num_examples} examples: measuring {measured}"
    )
  return available


def build_pretrainer(config, strategy, inputs=None):
  """Builds and compiles the pretrainer under `strategy` (with `inputs`'
  vocab and encoder config). With `init_checkpoint` and no checkpoint in the
  model dir, weights and global step come from it; optimizer slots start fresh."""
  init_step = None
  with strategy.scope():
    if config.init_checkpoint and checkpoint_reader.latest_checkpoint(config.model_dir) is None:
      try:
        model = official_checkpoint.load_official_checkpoint(config.init_checkpoint, config)
      except ValueError as e:
        # The first difference on the line; the count of the others after it.
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        differences = [line for line in lines[1:] if not line.endswith(":")]
        first = f" {differences[0]}" if differences else ""
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        raise InitCheckpointMismatch(
          f"hparam init_checkpoint={config.init_checkpoint!r}: {lines[0]}{first}{more}"
        ) from None
      info = getattr(model, "official_checkpoint_info", None) or {}
      init_step = info.get("global_step")
      print(f"Initialized from {config.init_checkpoint} (global_step={init_step})", flush=True)
    else:
      inputs = inputs or PretrainingInputs(None)
      model = built_pretrainer(config, inputs.vocab, inputs.bert_config)
    model.compile(
      pretraining_config=config,
      jit_compile=config.jit_compile,
      steps_per_execution=config.steps_per_execution,
    )
    checkpointing.build_optimizer(model)
    if init_step:
      model.optimizer.iterations.assign(int(init_step))
  return model


def write_eval_results(results, config):
  """Writes `results` to `results_txt` (one `name = value` line each,
  sorted), a `.json` twin, and `results_pkl`; atomically."""
  results = {k: (int(v) if k == "global_step" else float(v)) for k, v in results.items()}
  txt = "".join(f"{name} = {value}\n" for name, value in sorted(results.items()))
  json_path = os.path.splitext(config.results_txt)[0] + ".json"
  write_atomic(config.results_txt, txt)
  write_atomic(json_path, json.dumps(results, indent=2, sort_keys=True) + "\n")
  if config.results_pkl:
    write_atomic(config.results_pkl, pickle.dumps(results))
  return config.results_txt, json_path


def _heading(text):
  print("=" * 80 + "\n" + text + "\n" + "=" * 80, flush=True)


def _check_init_checkpoint(config):
  """`init_checkpoint` must be an official pre-training checkpoint, unless the
  model dir has one to resume from (then it is not read, said in one line)."""
  name = f"hparam init_checkpoint={config.init_checkpoint!r}"
  try:
    # What it is, first: a Hugging Face directory is named as one, not as "no checkpoint file".
    detected = formats.detect(config.init_checkpoint)
  except (ValueError, OSError) as e:
    raise ValueError(f"{name}: {e}") from e
  latest = checkpoint_reader.latest_checkpoint(config.model_dir)
  if latest is not None:
    print(
      f"Note: {name} is not read: the model dir has {os.path.basename(latest)}, which the run "
      "resumes from (as the original does); use a new --model-name to start from it",
      flush=True,
    )
    return
  if detected.format != formats.OFFICIAL:
    raise ValueError(
      f"{name} is {detected.description}; pre-training starts from a pre-training checkpoint "
      "in the original's name-based format (a released one, or one convert_checkpoint wrote)"
    )
  scopes = {n.split("/", 1)[0] for n, _ in tf.train.list_variables(detected.location)}
  if not config.uniform_generator and not scopes & _GENERATOR_SCOPES:
    held = "a discriminator" if official_names.DISCRIMINATOR_HEAD_SCOPE in scopes else "an encoder"
    raise ValueError(
      f"{name} holds {held} only (no generator entries: converted from a .keras "
      f"{held.split()[1]}?); pre-training starts from a whole pre-trainer: convert the "
      "pre-training run (or its ElectraPretrainer .keras), or start without init_checkpoint"
    )


# The scopes of a pre-trainer's generator in the original's names (any layout).
_GENERATOR_SCOPES = {
  official_names.GENERATOR_SCOPE,
  official_names.GENERATOR_LTR_SCOPE,
  official_names.GENERATOR_RTL_SCOPE,
  official_names.GENERATOR_HEAD_SCOPE,
}


class InitCheckpointMismatch(ValueError):
  """`init_checkpoint` holds another model than the hparams describe; the
  message is one line."""


class TrainingDataError(RuntimeError):
  """Corrupt data met while training; the message names the file (as far as
  it can be found), the byte offset and the checkpoint to resume from."""


def _data_loss_message(error, files, manager, step):
  found = record_check.find_corrupt_file(files)
  where = str(found) if found is not None else f"{error.message.strip()} (file not identified)"
  return (
    f"corrupt pre-training data at global step {step}: {where} Last checkpoint: "
    f"{manager.latest_checkpoint}; fix or remove the file and re-run to resume."
  )


def train(config, strategy, inputs, callbacks=()):
  """Trains to the absolute step `num_train_steps`, resuming from the model
  dir's newest checkpoint (with a seed, at its input position), on `inputs`
  (`validate_config`'s, or a list of paths). `callbacks` run after the
  package's own. Returns the final global step.

  Raises:
    TrainingPreempted: SIGTERM stopped training (after saving).
    TrainingDataError: a corrupt record was met while training.
    TrainingDiverged: the loss or the weights became NaN/Inf (nothing of it saved).
  """
  inputs = _as_inputs(inputs)
  files = inputs.files
  chief = distribution.is_chief(strategy)
  model = build_pretrainer(config, strategy, inputs)
  with strategy.scope():
    manager = checkpointing.TrainingCheckpointManager(
      model, config.model_dir, keep_checkpoint_max=config.keep_checkpoint_max, chief=chief
    )
    single_worker = distribution.num_workers(strategy) == 1
    checkpoint_callback = checkpointing.PretrainingCheckpoint(
      manager,
      config.save_checkpoints_steps,
      num_train_steps=config.num_train_steps,
      handle_sigterm=single_worker,
      save_initial=single_worker,
    )
    step = checkpoint_callback.restore()
  if manager.restored_checkpoint is not None:
    print(f"Restored {manager.restored_checkpoint} (global step {step})", flush=True)
  if chief:
    # Only now: a run that fails before leaves the model dir's description as it was.
    written = model_dir_lib.write_run_config(
      config, vocab=inputs.vocab, bert_config=inputs.bert_config
    )
    print(f"Wrote {written}", flush=True)
  if step >= config.num_train_steps:
    print(
      f"Global step {step} >= num_train_steps={config.num_train_steps}: nothing to train.",
      flush=True,
    )
    return step
  callbacks = [
    # First: it stops a diverged run before a checkpoint of it is written.
    training_callbacks.DivergenceGuard(manager, check_weights_every=config.save_checkpoints_steps),
    checkpoint_callback,
    training_callbacks.ETALogger(
      config.num_train_steps, is_training=True, log_every=config.log_every_steps
    ),
    training_callbacks.TrainingSummaries(
      config.model_dir, config.save_summary_steps, enabled=chief
    ),
  ] + list(callbacks)
  record_counts = files.record_counts
  if config.seed is not None and record_counts is None:
    record_counts = record_check.check_tfrecord_files(files.files)
  # More than one `fit` only when float16 skipped steps, or for the steps
  # short of a whole execution (`next_fit_steps`).
  while step < config.num_train_steps:
    position = manager.batches_consumed
    if config.seed is not None and position:
      print(f"Input pipeline resumes after {position} batches", flush=True)
    dataset = make_dataset(
      config, is_training=True, start_batch=position, record_counts=record_counts, files=files
    )
    remaining = config.num_train_steps - step
    try:
      with training_callbacks.next_fit_steps(model, remaining) as steps:
        model.fit(
          dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False, callbacks=callbacks
        )
    except tf.errors.DataLossError as e:
      step = checkpointing.global_step(model)
      raise TrainingDataError(_data_loss_message(e, files.files, manager, step)) from None
    step = checkpointing.global_step(model)
    if checkpoint_callback.preempted:
      raise checkpointing.TrainingPreempted(step, signum=checkpoint_callback.stop_signal)
  return step


def evaluate(config, strategy, inputs):
  """Evaluates the newest checkpoint on at most `num_eval_steps` batches of
  `inputs`' files (`eval_steps`), prints the metrics as the original does and
  writes the results files."""
  inputs = _as_inputs(inputs)
  files = inputs.files
  if not checkpoint_reader.checkpoint_candidates(config.model_dir):
    raise ValueError(
      f"do_eval: no checkpoint found in model dir {config.model_dir!r}; "
      "train first (do_train) or check --data-dir/--model-name"
    )
  model = build_pretrainer(config, strategy, inputs)
  with strategy.scope():
    manager = checkpointing.TrainingCheckpointManager(
      model,
      config.model_dir,
      keep_checkpoint_max=config.keep_checkpoint_max,
      chief=distribution.is_chief(strategy),
    )
    step = manager.restore_latest(lambda line: print(line, flush=True))
  print(f"Evaluating {manager.restored_checkpoint}", flush=True)
  dataset, num_examples = make_eval_dataset(config, files)
  steps = eval_steps(
    config.num_eval_steps,
    num_examples,
    config.eval_batch_size,
    lambda line: print(line, flush=True),
    workers=distribution.num_workers(strategy),
  )
  interrupts.check()
  results = model.evaluate(
    dataset,
    steps=steps,
    verbose=0,
    return_dict=True,
    callbacks=[training_callbacks.ETALogger(steps, is_training=False)],
  )
  interrupts.check()  # a Ctrl-C swallowed while evaluating: no results written
  results = {k: float(v) for k, v in results.items()}
  results["global_step"] = step
  _heading("Eval results")
  for name in sorted(results):
    print(f"  {name} = {results[name]}", flush=True)
  if distribution.is_chief(strategy):
    training_callbacks.TrainingSummaries(os.path.join(config.model_dir, "eval")).write(
      step, {k: v for k, v in results.items() if k != "global_step"}, learning_rate=False
    )
    paths = write_eval_results(results, config)
    print("Wrote " + ", ".join(paths), flush=True)
  return results


def check_model_dir(config, vocab=None):
  """Refuses (`model_dir.ModelDirMismatch`, one line) hparams that would build
  another architecture than the model dir holds (its `config.json`, or its
  variables' shapes), and a `vocab` other than the one it records; the other
  hparams may change on a re-run."""
  newest, skipped = checkpoint_reader.newest_readable(config.model_dir)
  _, state_problem = checkpoint_reader.read_state(config.model_dir)
  if skipped and newest is None:
    return  # nothing readable: restoring says so in one line
  # Past a damaged state file or newest checkpoint: the one training will restore.
  where = newest if (skipped or state_problem) and newest else config.model_dir
  try:
    existing, ignore = any_format.existing_architecture(where)
  except ValueError as e:  # a damaged config.json: which model the dir holds is unknown
    raise model_dir_lib.ModelDirMismatch(str(e)) from None
  if existing is not None and existing.get("kind") == model_dir_lib.KIND_FINETUNING:
    raise model_dir_lib.ModelDirMismatch(
      f"model dir {config.model_dir!r} holds a fine-tuning run (its config.json says kind "
      f"{model_dir_lib.KIND_FINETUNING!r}); pre-training needs a model dir of its own: give "
      "another --model-name (or hparam model_dir)"
    )
  if existing is not None:
    model_dir_lib.check_same_architecture(
      existing, model_dir_lib.run_config_dict(config), ignore=ignore
    )
    recorded = existing.get("vocab") or {}
    if vocab is not None and recorded.get("sha256"):
      try:
        vocab.check_made_with(recorded, f"the model in {config.model_dir!r} was pre-trained")
      except ValueError as e:
        raise model_dir_lib.ModelDirMismatch(str(e)) from None


def _wipe_model_dir(model_dir, keep):
  """Deletes everything in `model_dir` but the file `keep` (the lock)."""
  for name in tf.io.gfile.listdir(model_dir):
    path = os.path.join(model_dir, name.rstrip("/"))
    if os.path.basename(path) == keep:
      continue
    if tf.io.gfile.isdir(path):
      tf.io.gfile.rmtree(path)
    else:
      tf.io.gfile.remove(path)


def train_or_eval(config, inputs=None, strategy=None, callbacks=()):
  """The original's `train_or_eval`: validation (unless `inputs`, what
  `validate_config` returned, is given), debug wipe or `check_model_dir`,
  config log, then training (under the model dir's lock) or evaluation.
  `strategy` defaults to `distribution.setup_distribution`'s, made first: a
  multi-worker strategy must exist before anything starts TensorFlow.
  `callbacks` are extra Keras callbacks for training.
  """
  if strategy is None:
    strategy = distribution.setup_distribution(config)
  inputs = _as_inputs(validate_config(config) if inputs is None else inputs)
  lock = None
  if config.do_train and distribution.is_chief(strategy):
    lock = run_lock.RunLock(
      os.path.join(config.model_dir, run_lock.LOCK_FILE),
      f"run_pretraining --model-name {config.model_name}",
    )
    lock.acquire()
  try:
    if config.debug and config.do_train:
      print(
        f"WARNING: debug=True deletes the model dir {config.model_dir} before training "
        "(as the original does).",
        flush=True,
      )
      if tf.io.gfile.exists(config.model_dir):
        _wipe_model_dir(config.model_dir, run_lock.LOCK_FILE)
    else:
      check_model_dir(config, inputs.vocab)
    tf.io.gfile.makedirs(config.model_dir)
    _heading("Config")
    print(repr(config), flush=True)
    print(f"{len(inputs.files.files)} pre-training file(s)", flush=True)
    batch_size = config.train_batch_size if config.do_train else config.eval_batch_size
    distribution.report_devices(
      config,
      strategy,
      batch_size,
      lambda line: print(line, flush=True),
      accumulation_steps=config.gradient_accumulation_steps if config.do_train else 1,
    )
    if config.seed is not None:
      keras.utils.set_random_seed(int(config.seed))
    if config.do_train:
      _heading("Training")
      return train(config, strategy, inputs, callbacks)
    _heading("Evaluation")
    return evaluate(config, strategy, inputs)
  finally:
    if lock is not None:
      lock.release()


def make_config(model_name, data_dir, hparams):
  """`PretrainingConfig` from the three flags (hparams: JSON string, dict,
  `.json` path or a run's `config.json`); evaluation takes the model dir's
  recorded sizes, vocab and `do_lower_case` unless the hparams set them."""
  user = load_hparams(hparams, "PretrainingConfig")
  config = PretrainingConfig(model_name, data_dir, **user)
  if not config.do_train:
    existing = any_format.run_config(config.model_dir)
    if existing is None:
      # Past a damaged state file or newest checkpoint: the one evaluation will restore.
      newest, _ = checkpoint_reader.newest_readable(config.model_dir)
      existing = any_format.run_config(newest) if newest is not None else None
    if existing is not None and existing.get("kind") == model_dir_lib.KIND_PRETRAINING:
      hparams = model_dir_lib.model_hparams(existing, user)
      config = PretrainingConfig(model_name, data_dir, **hparams)
      model_dir_lib.check_recorded_vocab(existing, config.vocab_file, user)
  return with_vocab_settings(config, user)


def with_vocab_settings(config, user):
  """`config` with the normalisation its vocab's settings file records (the
  records were built with it) over the hparams' defaults; a `user` hparam
  contradicting it is refused in one line (`vocab.normalisation_for_hparams`)."""
  resolved = vocab_lib.normalisation_for_hparams(config.vocab_file, user)
  if resolved is not None:
    config.do_lower_case, config.strip_accents = resolved
  return config
