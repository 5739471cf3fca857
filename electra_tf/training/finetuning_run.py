"""Fine-tuning runs: build the model for a trial, train it with `fit`
(resumable: re-running resumes from the newest checkpoint, SIGTERM saves
first), evaluate, write results (`run_finetuning.py`'s library).

Usage (needs task data, so not run as a doctest):
  config = FinetuningConfig("electra_small", "/data", task_names=["rte"])
  results = run_finetuning(config)  # [{"rte": {"accuracy": ..., "loss": ...}}]
"""

import dataclasses
import json
import os
import statistics

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from electra_tf.checkpoints import checkpointing
from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.checkpoints.model_dir import KIND_FINETUNING
from electra_tf.checkpoints.model_dir import write_run_config
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.configs.pretraining import get_pretraining_bert_config
from electra_tf.finetune import preprocessing
from electra_tf.finetune import task_builder
from electra_tf.finetune.model import FinetuningModel
from electra_tf.finetune.qa import tasks as qa_tasks
from electra_tf.hparams_input import load_hparams
from electra_tf.optimization import factory as optimizer_factory
from electra_tf.runtime import distribution
from electra_tf.sources import any_format
from electra_tf.text import vocab as vocab_lib
from electra_tf.text.full_tokenizer import full_tokenizer_for
from electra_tf.training.callbacks import DivergenceGuard
from electra_tf.training.callbacks import ETALogger
from electra_tf.training.callbacks import TrainingSummaries
from electra_tf.training.callbacks import next_fit_steps
from electra_tf.training.pretraining_run import distributable
from electra_tf.training.pretraining_run import with_vocab_settings
from electra_tf.utils import extras
from electra_tf.utils import file_io
from electra_tf.utils import interrupts
from electra_tf.utils import run_lock
from electra_tf.utils.file_io import check_output_files
from electra_tf.utils.file_io import write_atomic

GLUE_TASKS = ("cola", "mrpc", "mnli", "sst", "rte", "qnli", "qqp", "sts")
# The tasks `write_test_outputs` reads test splits for.
TEST_OUTPUT_TASKS = GLUE_TASKS + ("squad",)


def get_finetuning_bert_config(config):
  """The encoder's `BertConfig`: the size table, shrunk in debug mode (3
  layers, 144 hidden) as the original's `get_bert_config`."""
  return _check_length(config, get_pretraining_bert_config(config))


def _check_length(config, bert_config):
  if config.max_seq_length > bert_config.max_position_embeddings:
    raise ValueError(
      f"hparam max_seq_length={config.max_seq_length} exceeds the model's "
      f"max_position_embeddings={bert_config.max_position_embeddings}"
    )
  return bert_config


@dataclasses.dataclass(frozen=True)
class FinetuningInputs:
  """What a fine-tuning run reads, resolved once: `make_inputs` or
  `inputs_for` fills the first six, `validate_inputs` the rest.

  Attributes:
    config: the `FinetuningConfig`.
    source: the `any_format.Source` of hparam `init_checkpoint`, or None.
    source_error: why `init_checkpoint` could not be detected, or None.
    source_run_config: the run config of the model the run starts from, or None.
    vocab: the `Vocab` of hparam `vocab_file` (None when the file is missing).
    bert_config: the encoder's `BertConfig`.
    tokenizer: the tokenizer every task featurises with.
    tasks: the task objects, holding the examples `validate_inputs` checked.
  """

  config: FinetuningConfig
  source: any_format.Source = None
  source_error: str = None
  source_run_config: dict = None
  vocab: vocab_lib.Vocab = None
  bert_config: object = None
  tokenizer: object = None
  tasks: tuple = None


def _detect_source(config):
  """`(Source or None, error or None)` of hparam `init_checkpoint`."""
  if not config.init_checkpoint:
    return None, None
  try:
    return any_format.open_source(config.init_checkpoint), None
  except ValueError as e:
    return None, str(e)


def _source_run_config(config, source):
  """The run config of the model the run starts from (`source`, or without
  training the first trial's dir), or None."""
  if source is not None:
    found = source.recorded_run()
    if found is not None:
      return found
  if not config.do_train:
    return any_format.run_config(config.model_dir + "_1")
  return None


def _read_vocab(config):
  """The `Vocab` of hparam `vocab_file`, or None when it is missing."""
  if not config.vocab_file or not tf.io.gfile.exists(config.vocab_file):
    return None
  return vocab_lib.Vocab.read(config.vocab_file)


def make_inputs(model_name, data_dir, hparams):
  """The `FinetuningInputs` of the three flags (hparams: dict, JSON string,
  `.json` path or a run's `config.json`). The encoder's sizes, vocab file and
  normalisation come from the starting model's `config.json`, if any, unless
  the hparams set them; set sizes must build the same encoder (one-line
  `model_dir.ModelDirMismatch` otherwise)."""
  user = load_hparams(hparams, "FinetuningConfig")
  config = model_dir_lib.with_found_vocab_file(FinetuningConfig(model_name, data_dir, **user))
  source, source_error = _detect_source(config)
  run_config = _source_run_config(config, source)
  bert_config = None
  if run_config is not None:
    config = model_dir_lib.with_found_vocab_file(
      FinetuningConfig(
        model_name, data_dir, **model_dir_lib.finetuning_hparams_over(run_config, user)
      )
    )
    bert_config = get_pretraining_bert_config(config)
    model_dir_lib.check_finetuning_encoder(config, run_config, bert_config)
    model_dir_lib.check_recorded_vocab(run_config, config.vocab_file, user)
  vocab = _read_vocab(config)
  if run_config is not None:
    _check_vocab_of_source(config, vocab, run_config)
  config = with_vocab_settings(config, user)
  if run_config is None:
    _with_vocab_size(config, vocab, user)
    bert_config = get_pretraining_bert_config(config)  # sized by the vocab
    if source is not None:
      source.check_encoder_fits(bert_config, config.embedding_size)
  return FinetuningInputs(config, source, source_error, run_config, vocab, bert_config)


def make_config(model_name, data_dir, hparams):
  """The `FinetuningConfig` of the three flags (`make_inputs`'s config)."""
  return make_inputs(model_name, data_dir, hparams).config


def inputs_for(config):
  """The `FinetuningInputs` of a config built in code; the encoder it builds
  must be the source run's."""
  model_dir_lib.with_found_vocab_file(config)
  source, source_error = _detect_source(config)
  run_config = _source_run_config(config, source)
  bert_config = get_pretraining_bert_config(config)
  if run_config is not None:
    model_dir_lib.check_finetuning_encoder(config, run_config, bert_config)
  elif source is not None:
    source.check_encoder_fits(bert_config, config.embedding_size)
  vocab = _read_vocab(config)
  return FinetuningInputs(config, source, source_error, run_config, vocab, bert_config)


def _check_vocab_of_source(config, vocab, run_config):
  """Refuses in one line a vocab other than the one the starting model was
  pre-trained with: by sha256 where recorded, else by size."""
  if vocab is None:
    return  # validate_inputs names the missing file
  where = f"the model in {os.path.dirname(run_config.get('path') or '')!r} was pre-trained"
  recorded = run_config.get("vocab") or {}
  if recorded.get("sha256"):
    vocab.check_made_with(recorded, where)
    return
  rows = model_dir_lib.encoder_config(run_config)[0].get("vocab_size")
  if rows is not None and int(rows) != vocab.size:
    raise ValueError(
      f"hparam vocab_file={config.vocab_file!r} has {vocab.size} entries but {where} with "
      f"{rows} embedding rows (vocab {recorded.get('file')!r}); give the vocab it was "
      "pre-trained with"
    )


def _with_vocab_size(config, vocab, user):
  """Sets `vocab_size` to the vocab's size unless the hparams set it (the
  original's 30,522 fits no smaller vocab); one below it is refused."""
  if vocab is None:
    return  # validate_inputs names the missing file
  if "vocab_size" not in user:
    config.vocab_size = vocab.size
  elif config.vocab_size < vocab.size:
    raise ValueError(
      f"hparam vocab_size={config.vocab_size} but vocab file {config.vocab_file!r} has "
      f"{vocab.size} entries: its ids would be out of range; set vocab_size to {vocab.size}"
    )


def finetuning_tokenizer(config, vocab=None):
  """The tokenizer every fine-tuning task featurises with: the config's vocab
  (`vocab`, when already read), `do_lower_case` and `strip_accents`."""
  return full_tokenizer_for(
    vocab or config.vocab_file,
    do_lower_case=config.do_lower_case,
    strip_accents=config.strip_accents,
  )


def validate_inputs(inputs):
  """Checks before anything is written: the vocab, the tasks, the output
  paths and every data file (or TFDS split) the run will read, so that a bad
  dev.tsv fails now rather than after training.

  Args:
    inputs: the run's `FinetuningInputs` (`make_inputs` or `inputs_for`).

  Returns:
    `inputs` with the run's tokenizer (`finetuning_tokenizer`, built once)
    and tasks (the examples checked stay read): pass it to `run_finetuning`.
  """
  config = inputs.config
  if inputs.vocab is None:
    file_io.check_data_dir(config.data_dir)
    raise ValueError(
      f"vocab file {config.vocab_file} {file_io.not_there(config.vocab_file)} (hparam vocab_file)"
    )
  if config.data_source == "tfds":
    extras.require("tensorflow_datasets", "tfds", 'hparam data_source="tfds"')
  # Before anything is written (a trial dir): the names and the length.
  unknown = [name for name in config.task_names if name not in task_builder.TASK_CLASSES]
  if unknown:
    raise ValueError(
      f"Unknown task(s) {unknown} in hparam task_names; known tasks: "
      f"{sorted(task_builder.TASK_CLASSES)}"
    )
  _check_length(config, inputs.bert_config)
  # Directories the run writes into: a file there fails only once training has begun.
  for what, path in (
    ("hparam preprocessed_data_dir", config.preprocessed_data_dir),
    ("hparam model_dir", config.model_dir),
  ):
    if path and os.path.exists(path) and not os.path.isdir(path):
      raise ValueError(f"{what}={path!r} is a file; expected a directory")
  if config.do_eval:  # written after training and evaluating: refused now, not then
    check_output_files(
      [
        ("hparam results_txt", config.results_txt),
        ("hparam results_json", config.results_json),
        ("hparam results_json (its _median.json twin)", _median_path(config)),
      ]
    )
  for name in config.task_names:
    if issubclass(task_builder.TASK_CLASSES[name], qa_tasks.QATask):
      if config.max_seq_length < config.beam_size:
        # The QA head takes the beam_size best starts and ends among the positions.
        raise ValueError(
          f"task {name}: hparam max_seq_length={config.max_seq_length} is below "
          f"beam_size={config.beam_size}; a QA window needs at least beam_size positions"
        )
  if config.data_source == "files" and (config.do_train or config.do_eval):
    for name in config.task_names:
      path = config.raw_data_dir(name)
      if tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path):
        raise ValueError(
          f"hparam task_names: the data of task {name!r}, {path}, is a file; expected a "
          "directory holding the task's data files"
        )
      if not tf.io.gfile.isdir(path):
        broken = file_io.broken_link(path)
        raise ValueError(
          f"hparam task_names: no data directory {path} for task {name!r}"
          + (f": it is {broken}" if broken else "")
        )
  tokenizer = finetuning_tokenizer(config, inputs.vocab)
  tasks = tuple(task_builder.get_tasks(config, tokenizer))
  if config.do_train or config.do_eval:
    # TFDS splits too: one that is not prepared is named before a trial dir exists.
    _check_data_files(config, tasks, inputs.vocab)
  return dataclasses.replace(inputs, tokenizer=tokenizer, tasks=tasks)


def _check_data_files(config, tasks, vocab):
  preprocessor = preprocessing.Preprocessor(config, tasks, vocab)

  def cached(split_tasks, split):
    # Records an earlier run built with the same settings from the same
    # files are read instead of the files (`Preprocessor.cache_changes`).
    return preprocessor.cache_changes(split_tasks, split == "train", split) is None

  train = config.do_train and not cached(tasks, "train")
  for task in tasks:
    splits = ["train"] if train else []
    if config.do_eval:
      splits.append("dev")
      if config.write_test_outputs and config.n_writes_test > 0 and task.name in TEST_OUTPUT_TASKS:
        splits += task.get_test_splits()
    for split in splits:
      if split == "train" or not cached([task], split):
        task.check_examples(split)


def _check_heads_loaded(loaded, tasks, path):
  """Evaluating without training needs each task's fine-tuned head (else a
  random head's scores would pass for results)."""
  missing = [
    t.name for t in tasks if not any(n.startswith(f"task_specific/{t.name}/") for n in loaded)
  ]
  if missing:
    raise model_dir_lib.ModelDirMismatch(
      f"do_train=false: hparam init_checkpoint={path!r} holds no fine-tuned head for task(s) "
      f"{missing} (a pre-trained model?), so the scores would be a random head's; give a "
      "fine-tuned model (<...>/finetuning_models/<tasks>_model_1) or train first"
    )


def _numpy_rows(outputs, task_ids, n_tasks):
  """Yields one dict of numpy values per non-padding row."""
  outputs = {k: np.asarray(v) for k, v in outputs.items()}
  for i, task_id in enumerate(np.asarray(task_ids)):
    if task_id == n_tasks:
      continue  # padding record
    yield {k: v[i] for k, v in outputs.items()}


class _StepLosses(keras.callbacks.Callback):
  """Collects the loss of every training step (for callers and tests)."""

  def __init__(self):
    super().__init__()
    self.losses = []

  def on_train_batch_end(self, batch, logs=None):
    if logs and "loss" in logs:
      self.losses.append(float(logs["loss"]))


class ModelRunner:
  """Builds the model for one trial, trains it and runs predictions.

  Args:
    config: a `FinetuningConfig` (its `model_dir` is this trial's).
    tasks: the task objects.
    trial: 1-based trial number (seeds `seed + trial` when `seed` is set).
    strategy: the `tf.distribute.Strategy` to build and train under
      (default: the current one).
    inputs: the run's `FinetuningInputs` (then not read or derived again).
  """

  def __init__(self, config, tasks, trial=1, strategy=None, inputs=None):
    self._config = config
    self._tasks = tasks
    self._strategy = strategy or tf.distribute.get_strategy()
    inputs = inputs or FinetuningInputs(config)
    self._source = inputs.source
    self._source_run_config = inputs.source_run_config
    self.chief = distribution.is_chief(self._strategy)
    self._preprocessor = preprocessing.Preprocessor(config, tasks, inputs.vocab)
    if config.seed is not None:
      keras.utils.set_random_seed(config.seed + trial)
    self.bert_config = inputs.bert_config or get_finetuning_bert_config(config)
    heads = [task.create_head() for task in tasks]
    with self._strategy.scope():
      self.model = FinetuningModel.from_finetuning_config(config, heads, self.bert_config)
    self.name_map = self.model.official_name_map()
    self.train_steps = None
    self.unfinished = None  # do_train=false on an interrupted trial: its warning
    self._init_weights()
    self._predict_fn = tf.function(lambda features: self.model(features, training=False))

  def _init_weights(self):
    config = self._config
    loaded = ()
    if config.init_checkpoint:
      loaded = any_format.initialize_finetuning_model(
        self.model, self._source or config.init_checkpoint
      )
      if config.do_train:  # a killed pre-training run's early checkpoint
        model_dir_lib.warn_if_unfinished(
          config.init_checkpoint, "fine-tuning", self._source_run_config
        )
    elif config.do_train:
      logging.warning("No init_checkpoint: fine-tuning from random initialisation")
    if not config.do_train:
      # As the Estimator: a checkpoint in the model dir wins over init_checkpoint.
      evaluated = config.init_checkpoint
      if tf.train.latest_checkpoint(config.model_dir):
        any_format.initialize_finetuning_model(self.model, config.model_dir)
        evaluated = config.model_dir
      elif not config.init_checkpoint:
        raise ValueError(
          "do_train=false needs a trained model: pass hparam init_checkpoint "
          "(e.g. <...>/finetuning_models/<tasks>_model_1)"
        )
      else:
        _check_heads_loaded(loaded, self._tasks, config.init_checkpoint)
      # A trial stopped short of its steps (killed): scored as it is, with a warning.
      self.unfinished = model_dir_lib.unfinished_trial_warning(evaluated, "evaluating")
      if self.unfinished:
        logging.warning(self.unfinished)

  def train(self):
    """Trains to `train_steps`, resuming from the model dir's newest
    checkpoint (with a `seed`, bit-identical to an uninterrupted run); saves
    every `save_checkpoints_steps` and at the end. Returns the losses of the
    steps run here. Raises `TrainingPreempted` after a SIGTERM (saved)."""
    config = self._config
    records, self.train_steps = self._preprocessor.train_records()
    if self.train_steps <= 0:
      raise preprocessing.NoExamplesError(
        f"no training steps: train_steps = n_records // train_batch_size "
        f"({config.train_batch_size}) * num_train_epochs ({config.num_train_epochs}) is 0"
      )
    if self.chief:  # a checkpoint short of it is an interrupted trial (export says so)
      model_dir_lib.record_planned_steps(config.model_dir, self.train_steps)
    model = self.model
    single_worker = distribution.num_workers(self._strategy) == 1
    with self._strategy.scope():
      model.compile(
        optimizer=optimizer_factory.finetuning_optimizer_from_config(
          config, model, self.train_steps
        ),
        jit_compile=config.jit_compile,
        steps_per_execution=config.steps_per_execution,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
      )
      checkpointing.build_optimizer(model)
      manager = checkpointing.NameBasedCheckpointManager(
        model, config.model_dir, config.keep_checkpoint_max, chief=self.chief
      )
      checkpoint_callback = checkpointing.PretrainingCheckpoint(
        manager,
        config.save_checkpoints_steps,
        num_train_steps=self.train_steps,
        handle_sigterm=single_worker,
      )
      step = checkpoint_callback.restore()
    if step:
      logging.info("Resuming from %s at step %d", manager.latest_checkpoint, step)
    step_losses = _StepLosses()
    callbacks = [
      # First: it stops a diverged run before a checkpoint of it is written.
      DivergenceGuard(manager, check_weights_every=config.save_checkpoints_steps),
      checkpoint_callback,
      ETALogger(self.train_steps, log_every=config.log_every_steps, print_fn=logging.info),
      TrainingSummaries(config.model_dir, config.save_summary_steps, enabled=self.chief),
      step_losses,
    ]
    # More than one `fit` only when float16 skipped steps, or for the steps
    # short of a whole execution (`next_fit_steps`).
    while step < self.train_steps:
      # A new pipeline for each `fit`, at the input position (batches consumed).
      dataset = self._preprocessor.train_dataset(records, manager.batches_consumed)
      with next_fit_steps(model, self.train_steps - step) as steps:
        model.fit(
          distributable(dataset),
          epochs=1,
          steps_per_epoch=steps,
          verbose=0,
          shuffle=False,
          callbacks=callbacks,
        )
      step = checkpointing.global_step(model)
      if checkpoint_callback.preempted:
        raise checkpointing.TrainingPreempted(
          step, manager.latest_checkpoint, signum=checkpoint_callback.stop_signal
        )
    return step_losses.losses

  def predict(self, task, split):
    """Yields each non-padding row's outputs for `task` on `split`."""
    dataset, _ = self._preprocessor.prepare_predict([task], split)
    n_tasks = len(self._tasks)
    for features in dataset:
      interrupts.check()  # a Ctrl-C swallowed in a finaliser stops the evaluation too
      outputs = self._predict_fn(features)
      yield from _numpy_rows(outputs[task.name], features["task_id"], n_tasks)

  def evaluate_task(self, task, split="dev"):
    scorer = task.get_scorer(split)
    for row in self.predict(task, split):
      scorer.update(row)
    return scorer

  def evaluate(self):
    """`{task: {metric: value}}` on the dev sets."""
    results = {}
    for task in self._tasks:
      scorer = self.evaluate_task(task, "dev")
      results[task.name] = {k: float(v) for k, v in scorer.get_results()}
      logging.info("%s: %s", task.name, scorer.results_str())
    return results

  def write_test_outputs(self, trial):
    """GLUE: `{eid: logits}` (regression: the normalised prediction) per test
    split; SQuAD 2.0: `{id: answer or ""}` with the no-answer threshold."""
    config = self._config
    for task in self._tasks:
      if task.name in GLUE_TASKS:
        for split in task.get_test_splits():
          predictions = {}
          for row in self.predict(task, split):
            value = row["logits"] if "logits" in row else row["predictions"]
            predictions[int(row["eid"])] = np.asarray(value, np.float32).tolist()
          write_atomic(
            config.test_predictions(task.name, split, trial), json.dumps(predictions, indent=2)
          )
      elif task.name == "squad":
        # Unlike the original, test examples and files of their own (docs/differences.md).
        scorer = self.evaluate_task(task, "test")
        preds_file = config.test_predictions(task.name, "test", trial)
        predictions, null_odds = scorer.write_predictions(
          preds_file=preds_file[: -len(".json")] + "_preds.json",
          na_file=preds_file[: -len(".json")] + "_null_odds.json",
        )
        answers = {
          qid: ("" if null_odds[qid] > config.qa_na_threshold else text)
          for qid, text in predictions.items()
        }
        write_atomic(preds_file, json.dumps(answers, indent=2))
      else:
        logging.info(
          "Skipping task %s - writing predictions is not supported for this task", task.name
        )


def results_lines(results):
  """The original's results.txt lines: one per (trial, task)."""
  lines = []
  for trial_results in results:
    for task_name, task_results in trial_results.items():
      if task_name in ("time", "global_step"):
        continue
      lines.append(task_name + ": " + " - ".join(f"{k}: {v:.2f}" for k, v in task_results.items()))
  return lines


def median_results(results):
  """`{task: {metric: median over trials}}`."""
  medians = {}
  for trial_results in results:
    for task_name, task_results in trial_results.items():
      for metric, value in task_results.items():
        medians.setdefault(task_name, {}).setdefault(metric, []).append(value)
  return {t: {m: float(statistics.median(v)) for m, v in ms.items()} for t, ms in medians.items()}


def write_results(config, results, warning=None):
  """Rewrites `results_txt` and `results_json` with all trials so far, plus
  `<tasks>_results_median.json` with the per-metric median over trials;
  a `warning` (one line) ends the text file."""
  lines = results_lines(results) + ([f"warning: {warning}"] if warning else [])
  write_atomic(config.results_txt, "".join(line + "\n" for line in lines))
  write_atomic(config.results_json, json.dumps(results, indent=2))
  write_atomic(_median_path(config), json.dumps(median_results(results), indent=2))


def _median_path(config):
  return config.results_json[: -len(".json")] + "_median.json"


# Hparams that change what training does: a trial dir trained with other
# values holds another run's checkpoint and results.
TRAINING_HPARAMS = (
  "task_names", "init_checkpoint", "learning_rate", "weight_decay_rate", "layerwise_lr_decay",
  "layerwise_lr_decay_variant", "optimizer", "num_train_epochs", "warmup_proportion",
  "max_seq_length", "train_batch_size", "gradient_accumulation_steps", "seed",
  "double_unordered", "do_lower_case", "strip_accents", "max_query_length", "doc_stride",
  "answerable_classifier", "answerable_uses_start_logits", "answerable_weight",
  "joint_prediction",
)  # fmt: skip


def _check_same_training(existing, config):
  """Refuses in one line to resume (or re-report) a trial dir trained with
  other training hparams, naming each difference."""
  recorded = existing.get("hparams") or {}
  keys = [key for key in TRAINING_HPARAMS if key in recorded]
  differences = model_dir_lib.value_differences(recorded, config.to_dict(), keys)
  if differences:
    raise model_dir_lib.ModelDirMismatch(
      f"{config.model_dir}: this trial was trained with other hparams: "
      + "; ".join(differences)
      + " (its checkpoint and results are that run's): delete the directory to train again, or "
      "use another --model-name"
    )


def _prepare_model_dir(config, inputs):
  """A fresh trial dir, unless it holds a checkpoint of the same architecture
  to resume from (another one: one-line `model_dir.ModelDirMismatch`)."""
  existing = any_format.run_config(config.model_dir)
  if existing is not None:
    model_dir_lib.check_same_architecture(
      existing,
      model_dir_lib.run_config_dict(
        config, KIND_FINETUNING, vocab=inputs.vocab, bert_config=inputs.bert_config
      ),
    )
  if tf.train.latest_checkpoint(config.model_dir):
    if existing is not None and config.do_train:
      _check_same_training(existing, config)
    logging.info(
      "%s holds a checkpoint: resuming it (delete the directory to start over)", config.model_dir
    )
    return
  if tf.io.gfile.exists(config.model_dir):
    tf.io.gfile.rmtree(config.model_dir)
  tf.io.gfile.makedirs(config.model_dir)


def run_finetuning(config, strategy=None, inputs=None):
  """Runs `num_trials` trials of train → evaluate (→ test outputs); returns
  the list of per-trial results. `strategy` defaults to the hparams'
  (`distribution.setup_distribution`); `inputs` (`FinetuningInputs`) are
  resolved and validated here unless the caller did."""
  if inputs is None:
    inputs = inputs_for(config)
  if inputs.tasks is None:
    inputs = validate_inputs(inputs)
  if strategy is None:
    strategy = distribution.setup_distribution(config)
  chief = distribution.is_chief(strategy)
  lock = None
  if config.do_train and chief:
    # One lock for all trials (a trial's dir is deleted and re-made).
    lock = run_lock.RunLock(
      config.model_dir + ".lock",
      f"run_finetuning --model-name {config.model_name} of {os.path.basename(config.model_dir)}",
    )
    lock.acquire()
  try:
    return _run_trials(config, strategy, chief, inputs)
  finally:
    if lock is not None:
      lock.release()


def _run_trials(config, strategy, chief, inputs):
  results = []
  trial = 1
  # The original's heading never updates its trial number (docs/differences.md).
  logging.info(
    "Config: model=%s, trial %d/%d\n%s", config.model_name, trial, config.num_trials, config
  )
  distribution.report_devices(
    config,
    strategy,
    config.train_batch_size,
    logging.info,
    accumulation_steps=config.gradient_accumulation_steps,
  )
  generic_model_dir = config.model_dir
  tasks = list(inputs.tasks)
  while config.num_trials < 0 or trial <= config.num_trials:
    config.model_dir = generic_model_dir + "_" + str(trial)
    if config.do_train and chief:
      _prepare_model_dir(config, inputs)
      write_run_config(
        config,
        config.model_dir,
        KIND_FINETUNING,
        vocab=inputs.vocab,
        bert_config=inputs.bert_config,
      )
    try:
      runner = ModelRunner(config, tasks, trial, strategy=strategy, inputs=inputs)
      if config.do_train:
        logging.info("Training for %s", ",".join(config.task_names))
        runner.train()
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP (`interrupts.Stopped`) before a save
      if config.do_train and chief and not tf.train.latest_checkpoint(config.model_dir):
        tf.io.gfile.rmtree(config.model_dir)  # nothing of the new trial to resume
      raise
    interrupts.check()
    if config.do_eval and chief:
      results.append(runner.evaluate())
      interrupts.check()  # stopped in its last batch: no result of a stopped trial
      write_results(config, results, runner.unfinished)
      if config.write_test_outputs and trial <= config.n_writes_test:
        runner.write_test_outputs(trial)
    if trial != config.num_trials and not config.keep_all_models and chief:
      tf.io.gfile.rmtree(config.model_dir)
    trial += 1
  if results:
    logging.info("Median over %d trial(s): %s", len(results), median_results(results))
  return results
