"""Fine-tunes and evaluates a pre-trained ELECTRA model on GLUE, SQuAD, MRQA
and chunking (`run_finetuning.py` flags, the original's `finetune/` package).

Usage:
  python -m electra_tf.run_finetuning --data-dir DIR --model-name NAME \
      --hparams '{"model_size": "small", "task_names": ["rte"]}'

Reads `<data-dir>/finetuning_data/<task>/`, starts from the checkpoint in
`<data-dir>/models/<model-name>` (the original's / official name-based
checkpoints, or an electra_tf pre-training checkpoint) and writes everything
under that model directory (`configure_finetuning.py` output paths):
`finetuning_models/<tasks>_model_<trial>/`, `finetuning_tfrecords/`,
`results/<tasks>_results.{txt,json}`, `results/<tasks>_qa/` and
`test_predictions/`.
"""

import argparse
import json
import statistics
import time

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from electra_tf.checkpoints import finetuned as checkpoint_io
from electra_tf.checkpoints import names as checkpoint_names
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.configs.hparams import load_hparams
from electra_tf.configs.pretraining import get_pretraining_bert_config
from electra_tf.finetune import preprocessing
from electra_tf.finetune import task_builder
from electra_tf.finetune.model import FinetuningModel
from electra_tf.optimization import layerwise as layerwise_learning_rate
from electra_tf.optimization.adam_weight_decay import AdamWeightDecay
from electra_tf.optimization.schedule import ElectraLearningRateSchedule
from electra_tf.text import wordpiece as tokenization
from electra_tf.training.callbacks import secs_to_str
from electra_tf.utils.file_io import write_atomic

GLUE_TASKS = ("cola", "mrpc", "mnli", "sst", "rte", "qnli", "qqp", "sts")


def get_finetuning_bert_config(config):
  """The encoder's `BertConfig`: the size table, shrunk in debug mode (3
  layers, 144 hidden) as the original's `get_bert_config`."""
  bert_config = get_pretraining_bert_config(config)
  if config.max_seq_length > bert_config.max_position_embeddings:
    raise ValueError(
      f"hparam max_seq_length={config.max_seq_length} exceeds the model's "
      f"max_position_embeddings={bert_config.max_position_embeddings}"
    )
  return bert_config


def _numpy_rows(outputs, task_ids, n_tasks):
  """Yields one dict of numpy values per non-padding row."""
  outputs = {k: np.asarray(v) for k, v in outputs.items()}
  for i, task_id in enumerate(np.asarray(task_ids)):
    if task_id == n_tasks:
      continue  # padding record
    yield {k: v[i] for k, v in outputs.items()}


class ModelRunner:
  """Builds the model for one trial, trains it and runs predictions.

  Args:
    config: a `FinetuningConfig` (its `model_dir` is this trial's).
    tasks: the task objects.
    trial: 1-based trial number (seeds `seed + trial` when `seed` is set).
  """

  def __init__(self, config, tasks, trial=1):
    self._config = config
    self._tasks = tasks
    self._preprocessor = preprocessing.Preprocessor(config, tasks)
    if config.seed is not None:
      keras.utils.set_random_seed(config.seed + trial)
    self.bert_config = get_finetuning_bert_config(config)
    heads = [task.create_head() for task in tasks]
    self.model = FinetuningModel.from_finetuning_config(config, heads)
    self.name_map = self.model.official_name_map()
    self.optimizer = None
    self.train_steps = None
    self._init_weights()
    self._predict_fn = tf.function(lambda features: self.model(features, training=False))

  def _init_weights(self):
    config = self._config
    if config.init_checkpoint:
      checkpoint_io.load_pretrained(self.model, config.init_checkpoint)
    elif config.do_train:
      logging.warning("No init_checkpoint: fine-tuning from random initialisation")
    if not config.do_train:
      # As the Estimator: a checkpoint in the model dir wins over init_checkpoint.
      if tf.train.latest_checkpoint(config.model_dir):
        checkpoint_io.load_pretrained(self.model, config.model_dir)
      elif not config.init_checkpoint:
        raise ValueError(
          "do_train=false needs a trained model: pass hparam init_checkpoint "
          "(e.g. <...>/finetuning_models/<tasks>_model_1)"
        )

  def _make_optimizer(self, train_steps):
    config = self._config
    names = list(self.name_map)
    multipliers = layerwise_learning_rate.layerwise_lr_multipliers(
      names,
      self.bert_config.num_hidden_layers,
      config.layerwise_lr_decay,
      fixed=config.layerwise_lr_decay_variant == "fixed",
    )
    schedule = ElectraLearningRateSchedule(
      config.learning_rate, train_steps, warmup_proportion=config.warmup_proportion
    )
    return AdamWeightDecay(
      learning_rate=schedule,
      weight_decay_rate=config.weight_decay_rate,
      beta_1=0.9,
      beta_2=0.999,
      epsilon=1e-6,
      clip_norm=1.0,
      variable_names=checkpoint_names.keras_path_map(self.name_map),
      learning_rate_multipliers=multipliers,
    )

  def _save(self, step):
    names = dict(self.name_map)
    names.update(self.optimizer.official_slots(self.name_map))
    names["global_step"] = tf.cast(self.optimizer.iterations, tf.int64)
    return checkpoint_io.save_name_based(names, self._config.model_dir, step)

  def train(self):
    """Trains for `train_steps`; saves `model.ckpt-0` and the final step (and
    every `save_checkpoints_steps`). Returns the list of losses per step."""
    config = self._config
    dataset, self.train_steps = self._preprocessor.prepare_train()
    if self.train_steps <= 0:
      raise ValueError(
        f"no training steps: train_steps = n_records // train_batch_size "
        f"({config.train_batch_size}) * num_train_epochs "
        f"({config.num_train_epochs}) is 0"
      )
    self.optimizer = self._make_optimizer(self.train_steps)
    self.optimizer.build(self.model.trainable_variables)
    model, optimizer = self.model, self.optimizer

    @tf.function
    def train_step(features):
      with tf.GradientTape() as tape:
        loss = model(features, training=True)["loss"]
      grads = tape.gradient(loss, model.trainable_variables)
      # embedding lookups give IndexedSlices; the original's Adam math
      # densifies them too
      grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
      optimizer.apply(grads, model.trainable_variables)
      return loss

    self._save(0)
    losses = []
    start = time.time()
    step = 0
    for features in dataset.take(self.train_steps):
      losses.append(float(train_step(features)))
      step += 1
      if step % config.log_every_steps == 0 or step == self.train_steps:
        elapsed = time.time() - start
        eta = elapsed / step * (self.train_steps - step)
        logging.info(
          "%d/%d = %.1f%%, SPS: %.1f, ELAP: %s, ETA: %s - loss: %.4f",
          step,
          self.train_steps,
          100.0 * step / self.train_steps,
          step / elapsed,
          secs_to_str(elapsed),
          secs_to_str(eta),
          losses[-1],
        )
      if step % config.save_checkpoints_steps == 0 and step != self.train_steps:
        self._save(step)
    self._save(self.train_steps)
    return losses

  def predict(self, task, split):
    """Yields each non-padding row's outputs for `task` on `split`."""
    dataset, _ = self._preprocessor.prepare_predict([task], split)
    n_tasks = len(self._tasks)
    for features in dataset:
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
        # The original decodes *dev* examples against test features and
        # overwrites the dev prediction files (a quirk of the original (README: Differences from the original)); here the test
        # scorer uses the test examples and its own files.
        scorer = task.get_scorer("test")
        for row in self.predict(task, "test"):
          scorer.update(row)
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


def write_results(config, results):
  """Rewrites `results_txt` and `results_json` with all trials so far, plus
  `<tasks>_results_median.json` with the per-metric median over trials."""
  write_atomic(config.results_txt, "".join(line + "\n" for line in results_lines(results)))
  write_atomic(config.results_json, json.dumps(results, indent=2))
  median_path = config.results_json[: -len(".json")] + "_median.json"
  write_atomic(median_path, json.dumps(median_results(results), indent=2))


def run_finetuning(config):
  """Runs `num_trials` trials of train → evaluate (→ test outputs); returns
  the list of per-trial results."""
  results = []
  trial = 1
  # The original's heading never updates its trial number (a quirk of the original (README: Differences from the original)).
  logging.info(
    "Config: model=%s, trial %d/%d\n%s", config.model_name, trial, config.num_trials, config
  )
  generic_model_dir = config.model_dir
  tokenizer = tokenization.FullTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
  tasks = task_builder.get_tasks(config, tokenizer)
  while config.num_trials < 0 or trial <= config.num_trials:
    config.model_dir = generic_model_dir + "_" + str(trial)
    if config.do_train:
      if tf.io.gfile.exists(config.model_dir):
        tf.io.gfile.rmtree(config.model_dir)
      tf.io.gfile.makedirs(config.model_dir)
    runner = ModelRunner(config, tasks, trial)
    if config.do_train:
      logging.info("Training for %s", ",".join(config.task_names))
      runner.train()
    if config.do_eval:
      results.append(runner.evaluate())
      write_results(config, results)
      if config.write_test_outputs and trial <= config.n_writes_test:
        runner.write_test_outputs(trial)
    if trial != config.num_trials and not config.keep_all_models:
      tf.io.gfile.rmtree(config.model_dir)
    trial += 1
  if results:
    logging.info("Median over %d trial(s): %s", len(results), median_results(results))
  return results


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument(
    "--data-dir", required=True, help="Location of data files (model weights, etc)."
  )
  parser.add_argument("--model-name", required=True, help="The name of the model being fine-tuned.")
  parser.add_argument(
    "--hparams", default="{}", help="JSON dict of model hyperparameters or a path to a .json file."
  )
  args = parser.parse_args(argv)
  logging.set_verbosity(logging.INFO)
  hparams = load_hparams(args.hparams)
  config = FinetuningConfig(args.model_name, args.data_dir, **hparams)
  run_finetuning(config)


if __name__ == "__main__":
  main()
