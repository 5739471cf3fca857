"""The pre-trainer measured on held-out data's real tokens (the original's
metrics count padding too), each metric next to the baseline a model that
learned nothing reaches (`METRIC_ROWS`) with the margin's standard error over
the batches, so a difference within noise is not reported as a gain.
"""

import copy
import json
import os
import sys
import weakref

import keras
import numpy as np
import tensorflow as tf

from electra_tf.checkpoints import checkpointing
from electra_tf.checkpoints import reader as checkpoint_reader
from electra_tf.pretraining import step as pretraining_step
from electra_tf.runtime import distribution
from electra_tf.training import pretraining_run
from electra_tf.utils import curves
from electra_tf.utils.file_io import write_atomic
from electra_tf.utils.statistics import average_ranks

# (key, baseline key or fixed baseline, row label, baseline description)
METRIC_ROWS = (
  (
    "masked_lm_accuracy",
    "unigram_masked_lm_accuracy",
    "generator masked-LM accuracy",
    "unigram: always the most frequent token",
  ),
  ("disc_auc_real_tokens", 0.5, "discriminator AUC", "random scores"),
  (
    "disc_accuracy_real_tokens",
    "all_original_accuracy",
    "discriminator accuracy",
    "calling every token original",
  ),
  (
    "disc_recall_real_tokens",
    0.0,
    "discriminator recall (p > 0.5)",
    "calling every token original",
  ),
)
# The least each metric's plot shows (it widens to the data), so noise stays flat.
METRIC_RANGES = {
  "masked_lm_accuracy": (0.0, 0.5),
  "disc_auc_real_tokens": (0.5, 1.0),
  "disc_accuracy_real_tokens": (0.5, 1.0),
  "disc_recall_real_tokens": (0.0, 1.0),
}
# Below this spread of p(replaced) over real tokens, the discriminator scores
# every token alike.
COLLAPSED_PROB_STD = 1e-3
# The masking and sampling seed: repeated evaluations see the same corruption.
EVAL_SEED = 12345


def roc_auc(labels, scores):
  """Area under the ROC curve by ranks (ties get their average rank); NaN
  without both classes.

  >>> roc_auc([1, 0, 0, 1], [0.9, 0.1, 0.5, 0.5])
  0.875
  """
  labels = np.asarray(labels, bool)
  positives, negatives = labels.sum(), (~labels).sum()
  if positives == 0 or negatives == 0:
    return float("nan")
  ranks = average_ranks(scores)
  return float((ranks[labels].sum() - positives * (positives + 1) / 2.0) / (positives * negatives))


def baseline_value(measured, baseline):
  """A `METRIC_ROWS` baseline: the measured metric it names, or the fixed value."""
  return measured[baseline] if isinstance(baseline, str) else baseline


def batch_arrays(out):
  """The arrays `metrics` needs from one batch of `pretraining_step.forward`
  outputs (numpy): masked positions' targets, predictions and losses, and
  real tokens' discriminator labels and scores."""
  weights = out["masked_lm_weights"] > 0
  arrays = {"targets": out["masked_lm_ids"][weights], "preds": out["masked_lm_preds"][weights]}
  if "mlm_per_slot_loss" in out:
    arrays["losses"] = out["mlm_per_slot_loss"][weights]
  if "disc_labels" in out:
    real = out["input_mask"] > 0
    arrays["labels"] = out["disc_labels"][real].astype(bool)
    arrays["probs"] = out["disc_probs"][real]
  return arrays


def metrics(targets, preds, labels=None, probs=None, unigram_id=None, losses=None):
  """Pooled metrics of `batch_arrays` arrays; `unigram_id` is the unigram
  generator's one answer (default: the most frequent of `targets`). Without
  `labels` (a masked-LM run, no discriminator) only the masked-LM metrics;
  with `losses`, their mean too (`masked_lm_loss`)."""
  if unigram_id is None:
    unigram_id = int(np.bincount(targets).argmax())
  measured = {
    "masked_lm_accuracy": float((targets == preds).mean()),
    "unigram_masked_lm_accuracy": float((targets == unigram_id).mean()),
  }
  if losses is not None:
    measured["masked_lm_loss"] = float(np.mean(losses))
  if labels is None:
    return measured
  flagged = probs > 0.5
  return {
    **measured,
    "disc_auc_real_tokens": roc_auc(labels, probs),
    "disc_accuracy_real_tokens": float((flagged == labels).mean()),
    "all_original_accuracy": float(1.0 - labels.mean()),
    "disc_recall_real_tokens": float(flagged[labels].mean()) if labels.any() else float("nan"),
    "disc_precision_real_tokens": float(labels[flagged].mean()) if flagged.any() else float("nan"),
    "replaced_fraction": float(labels.mean()),
    # ~0 when every token gets the same score: the discriminator's token
    # representations have collapsed to one vector and it cannot recover.
    "disc_prob_std_real_tokens": float(probs.std()),
  }


# One traced forward pass per model: periodic evaluations reuse it instead of
# tracing the network again each time.
_EVAL_FORWARD = weakref.WeakKeyDictionary()


def _eval_forward(model, temperature=None):
  """The model's traced evaluation forward pass at `temperature` (None: the
  run's own), holding the model weakly."""
  by_temperature = _EVAL_FORWARD.setdefault(model, {})
  if temperature not in by_temperature:
    model_ref = weakref.ref(model)

    @tf.function(reduce_retracing=True)
    def forward(features, index):
      return pretraining_step.forward(
        model_ref(), features, training=False, seed=EVAL_SEED, step=index, temperature=temperature
      )

    by_temperature[temperature] = forward
  return by_temperature[temperature]


def real_token_metrics(model, dataset, num_batches, log=None, passes=1, temperature=None):
  """Generator and discriminator on `num_batches` batches of `dataset`, on
  real tokens only, next to the `METRIC_ROWS` baselines, each margin with its
  standard error over the batches (`<key>_margin_se`). Masking and sampling
  use a fixed seed, so repeated calls see the same corruption. Give a
  dataset read once (`pretraining_run.make_eval_dataset`): a shorter one is
  measured to its end. Extra `passes` draw fresh masks over the same
  batches; the standard errors stay over the distinct batches.

  Args:
    model: an `ElectraPretrainer`.
    dataset: batches of pre-training features (the held-out shard).
    num_batches: how many batches to use at most.
    log: gets one line about a dataset shorter than `num_batches`, or None.
    passes: draws of masks over the same batches.
    temperature: of the replacements drawn (None: the run's own).

  Returns:
    A dict of pooled metrics, baselines, margins and their standard errors,
    plus `real_tokens`, `masked_positions` (all passes), `num_batches`
    and `num_examples` (distinct) and `passes`.

  Example:
    measured = real_token_metrics(model, eval_dataset, num_batches=20)
    print(measured["disc_auc_real_tokens"], measured["disc_auc_real_tokens_margin_se"])
  """

  forward = _eval_forward(model, temperature)
  # One list of arrays per distinct batch; a further pass adds its draw to it.
  draws = []
  num_examples = real_tokens = 0
  for pass_index in range(int(passes)):
    for index, features in enumerate(dataset.take(num_batches)):
      # Pass 0 uses the seeds of a single pass; each later pass draws fresh masks.
      step = tf.constant(pass_index * len(draws) + index)
      out = {k: v.numpy() for k, v in forward(features, step).items()}
      if pass_index == 0:
        draws.append([])
        num_examples += int(out["input_mask"].shape[0])
      draws[index].append(batch_arrays(out))
      real_tokens += int((out["input_mask"] > 0).sum())
  if not draws:
    raise ValueError("held-out evaluation: the dataset holds no batches")
  if len(draws) < num_batches and log is not None:
    log(
      f"held-out evaluation: {num_batches} batches asked, but the dataset ends after "
      f"{len(draws)} ({num_examples} examples): measured each once"
      + (f" per pass ({passes} passes with fresh masks)" if passes > 1 else "")
    )
  batches = [{k: np.concatenate([d[k] for d in batch]) for k in batch[0]} for batch in draws]
  pooled = {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
  measured = metrics(**pooled)
  # The same unigram answer in every batch, not one fitted to each batch.
  unigram_id = int(np.bincount(pooled["targets"]).argmax())
  per_batch = [metrics(**b, unigram_id=unigram_id) for b in batches]
  for key, baseline, _, _ in METRIC_ROWS:
    if key not in measured:  # no discriminator
      continue
    margins = np.array([m[key] - baseline_value(m, baseline) for m in per_batch])
    margins = margins[np.isfinite(margins)]
    measured[f"{key}_margin"] = measured[key] - baseline_value(measured, baseline)
    measured[f"{key}_margin_se"] = (
      float(margins.std(ddof=1) / np.sqrt(len(margins))) if len(margins) > 1 else float("nan")
    )
  measured.update(
    real_tokens=real_tokens,
    masked_positions=int(len(pooled["targets"])),
    num_batches=len(batches),
    num_examples=num_examples,
    passes=int(passes),
  )
  return measured


def verdict(margin, standard_error):
  """ "above"/"below" only when the margin exceeds twice its standard error.

  >>> verdict(0.33, 0.01), verdict(0.001, 0.002), verdict(0.2, float("nan"))
  ('above', 'within noise', 'within noise')
  """
  if not (standard_error == standard_error) or abs(margin) <= 2.0 * standard_error:
    return "within noise"
  return "above" if margin > 0 else "below"


def format_against_baselines(measured):
  """One line per metric: value, baseline, margin ± 2 s.e., verdict (and a
  warning line if the discriminator's scores have collapsed)."""
  lines = []
  for key, baseline, name, how in METRIC_ROWS:
    if key not in measured:  # no discriminator
      continue
    base = baseline_value(measured, baseline)
    margin, se = measured[f"{key}_margin"], measured[f"{key}_margin_se"]
    lines.append(
      f"  {name:31s} {measured[key]:.3f} vs {base:.3f} ({how}): "
      f"{margin:+.3f} ± {2 * se:.3f} -> {verdict(margin, se)}"
    )
  if measured.get("disc_prob_std_real_tokens", 1.0) < COLLAPSED_PROB_STD:
    lines.append(
      "  WARNING: the discriminator gives every token the same p(replaced) "
      f"(std {measured['disc_prob_std_real_tokens']:.1e}): its token representations have "
      "collapsed to one vector, so it cannot learn; lower learning_rate or lengthen "
      "num_warmup_steps"
    )
  return lines


def _stderr_line(line):
  print(line, file=sys.stderr, flush=True)


def measure_against_baselines(config, num_batches=20, log=_stderr_line, passes=1):
  """`real_token_metrics` (`passes` draws of masks) of the latest checkpoint
  in `config.model_dir` on `config`'s evaluation files, with its
  `global_step`; `log` gets one line when they hold fewer than `num_batches`."""
  model, manager, dataset, num_batches = _model_and_held_out_data(config, num_batches, log)
  step = manager.restore_latest()
  measured = real_token_metrics(model, dataset, num_batches, passes=passes)
  return {"global_step": step, **measured}


def measure_checkpoints(config, num_batches=20, log=_stderr_line, untrained=True, skip_steps=()):
  """`real_token_metrics` of every checkpoint in `config.model_dir`, oldest
  first, on the same batches of `config`'s evaluation files: entries
  `{"global_step", "checkpoint", **metrics}`. `untrained` adds a freshly
  initialized model in front (step 0) where no checkpoint of step 0 was
  kept; steps in `skip_steps` are neither restored nor measured.

  Example:
    for point in measure_checkpoints(eval_config, num_batches=32):
      print(point["global_step"], point["masked_lm_loss"])
  """
  prefixes = list(reversed(checkpoint_reader.checkpoint_candidates(config.model_dir)))
  if not prefixes:
    raise ValueError(f"no checkpoint in model dir {config.model_dir!r}")
  skip_steps = set(skip_steps)
  # (A run's first checkpoint may be its step 0: the untrained model itself.)
  untrained = untrained and 0 not in skip_steps and checkpoint_reader.step_of(prefixes[0]) != 0
  prefixes = [p for p in prefixes if checkpoint_reader.step_of(p) not in skip_steps]
  points = []
  if not (untrained or prefixes):
    return points
  model, manager, dataset, num_batches = _model_and_held_out_data(config, num_batches, log)
  if untrained:
    points.append({"global_step": 0, "checkpoint": None})
    points[-1].update(real_token_metrics(model, dataset, num_batches))
  for prefix in prefixes:
    manager.restore(prefix)
    point = {"global_step": checkpointing.global_step(model), "checkpoint": prefix}
    point.update(real_token_metrics(model, dataset, num_batches))
    log(
      f"held-out {os.path.basename(prefix)}: masked-LM loss {point['masked_lm_loss']:.3f}, "
      f"accuracy {point['masked_lm_accuracy']:.3f}"
      + (
        f", discriminator AUC {point['disc_auc_real_tokens']:.3f}"
        if "disc_auc_real_tokens" in point
        else ""
      )
    )
    points.append(point)
  return points


def _model_and_held_out_data(config, num_batches, log):
  """The pre-trainer of `config` (not restored), its manager, the
  evaluation dataset and the batches to take of it."""
  strategy = distribution.setup_distribution(config)
  model = pretraining_run.build_pretrainer(config, strategy)
  manager = checkpointing.TrainingCheckpointManager(model, config.model_dir, chief=True)
  dataset, num_examples = pretraining_run.make_eval_dataset(config)
  num_batches = pretraining_run.eval_steps(num_batches, num_examples, config.eval_batch_size, log)
  return model, manager, dataset, num_batches


def load_history(path):
  """The held-out evaluations a `PeriodicEvaluation` wrote (`[]` before the first)."""
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return json.load(f)


AUC_AT_TEMPERATURE_1 = "disc_auc_at_temperature_1"
# The discriminator has stopped learning when its held-out AUC at temperature
# 1 has not beaten its best by this much in this many evaluations (after step 0).
STALL_MIN_RISE = 0.005
STALL_EVALUATIONS = 3


def stall_warning(history, evaluations=STALL_EVALUATIONS, min_rise=STALL_MIN_RISE):
  """A one-line warning when the discriminator's held-out AUC at
  temperature 1 has not risen by `min_rise` over its earlier best in the last
  `evaluations` evaluations (it stopped learning context), else None.

  Example:
  >>> h = [{"step": s, "disc_auc_at_temperature_1": a} for s, a in
  ...      [(0, 0.5), (100, 0.55), (200, 0.552), (300, 0.551), (400, 0.553)]]
  >>> stall_warning(h).split(":")[0]
  'warning'
  >>> stall_warning(h[:4]) is None
  True
  """
  points = [(h["step"], h[AUC_AT_TEMPERATURE_1]) for h in history if AUC_AT_TEMPERATURE_1 in h]
  points = [p for p in points if p[0] > 0]
  if len(points) <= evaluations:
    return None
  before = max(a for _, a in points[:-evaluations])
  recent = points[-evaluations:]
  if max(a for _, a in recent) >= before + min_rise:
    return None
  return (
    f"warning: the discriminator's held-out AUC at temperature 1 has not risen for "
    f"{evaluations} evaluations (steps {recent[0][0]}-{recent[-1][0]}: "
    f"{', '.join(f'{a:.3f}' for _, a in recent)}; best before {before:.3f}): it has stopped "
    "learning context, and fine-tuning from these weights is likely to do worse than random "
    "init (docs/pretrain.md, 'When a small run stalls')"
  )


class PeriodicEvaluation:
  """Measures `real_token_metrics` on the evaluation files of `eval_config`
  before the first step and every `every` steps; the history is resumed
  from and rewritten to `history_path`.

  Args:
    eval_config: a `PretrainingConfig` whose evaluation files are the
      held-out data; `num_eval_steps` batches are measured.
    every: evaluation period in global steps.
    history_path: the history's JSON file.

  Example:
    periodic = PeriodicEvaluation(eval_config, every=100, history_path="history.json")
    pretraining_run.train_or_eval(config, callbacks=[periodic.callback])
  """

  def __init__(self, eval_config, every, history_path):
    self.every = every
    self.history_path = history_path
    self.history = load_history(history_path)
    self.dataset, num_examples = pretraining_run.make_eval_dataset(eval_config)
    # Said once, not at every evaluation.
    self.num_batches = pretraining_run.eval_steps(
      eval_config.num_eval_steps,
      num_examples,
      eval_config.eval_batch_size,
      _stderr_line,
      name="held_out_batches",
    )
    self.callback = _PeriodicCallback(self)
    self.warned = False

  def due(self, step, starting=False):
    """Whether `step` is to be measured: step 0 when training starts, every
    `every`-th step, and each step once."""
    wanted = step == 0 if starting else step % self.every == 0
    return wanted and all(h["step"] != step for h in self.history)

  def evaluate(self, model, step):
    measured = real_token_metrics(model, self.dataset, self.num_batches)
    entry = {"step": step, **measured}
    if "disc_auc_real_tokens" in entry:
      # One yardstick for every run: replacements drawn at the original's temperature 1.
      if model.objective.temperature == 1.0:
        entry[AUC_AT_TEMPERATURE_1] = entry["disc_auc_real_tokens"]
      else:
        at_1 = real_token_metrics(model, self.dataset, self.num_batches, temperature=1.0)
        entry[AUC_AT_TEMPERATURE_1] = at_1["disc_auc_real_tokens"]
    self.history.append(entry)
    write_atomic(self.history_path, json.dumps(self.history, indent=1))
    warning = stall_warning(self.history)
    if warning and not self.warned:
      self.warned = True
      print(warning, file=sys.stderr, flush=True)
    discriminator = (
      f"real tokens: disc AUC {entry['disc_auc_real_tokens']:.3f}, "
      f"accuracy {entry['disc_accuracy_real_tokens']:.3f} "
      f"(all-original {entry['all_original_accuracy']:.3f}), "
      f"recall {entry['disc_recall_real_tokens']:.3f}, "
      f"p(replaced) std {entry['disc_prob_std_real_tokens']:.1e}, "
      if "disc_auc_real_tokens" in entry
      else ""  # a masked-LM run
    )
    print(
      f"[held-out] step {step}: {discriminator}"
      f"generator accuracy {entry['masked_lm_accuracy']:.3f}",
      flush=True,
    )
    return entry


class _PeriodicCallback(keras.callbacks.Callback):
  def __init__(self, periodic):
    super().__init__()
    self.periodic = periodic

  def on_train_begin(self, logs=None):
    # The untrained model too (step 0), so the curves start at the baselines.
    step = checkpointing.global_step(self.model)
    if self.periodic.due(step, starting=True):
      self.periodic.evaluate(self.model, step)

  def on_train_batch_end(self, batch, logs=None):
    step = checkpointing.global_step(self.model)
    if self.periodic.due(step):
      self.periodic.evaluate(self.model, step)


def training_curve_panels(events, history):
  """`curves.Panel`s of a pre-training run: the training losses of `events`
  (`utils.events.scalar_events`), then each `METRIC_ROWS` metric of the
  held-out `history` with its baseline (averaged over the history)."""
  panels = []
  for tag, title in (("generator_loss", "Generator MLM loss"), ("disc_loss", "Discriminator loss")):
    points = events.get(tag, [])
    line = curves.Series(
      "training batches",
      [s for s, _ in points],
      [v for _, v in points],
      smoothing=curves.DEFAULT_SMOOTHING,
    )
    panels.append(curves.Panel(title, [line], y_label="loss"))
  steps = [h["step"] for h in history]
  for key, baseline, name, how in METRIC_ROWS:
    values = [h.get(key, float("nan")) for h in history]
    if isinstance(baseline, str):
      bases = [h[baseline] for h in history if baseline in h]
      baseline = sum(bases) / len(bases) if bases else None
    panels.append(
      curves.Panel(
        f"Held-out {name}",
        [curves.Series("held-out data, real tokens", steps, values)],
        y_label=name.split(" ", 1)[1],
        y_range=METRIC_RANGES[key],
        baselines=[curves.Baseline(baseline, f"baseline: {how}")],
      )
    )
  return panels


def held_out_callbacks(config, strategy):
  """The callbacks `run_pretraining` adds for `held_out_tfrecords`: a
  `PeriodicEvaluation` every `save_checkpoints_steps`, history in
  `<model_dir>/held_out_history.json`; none without it or with several
  replicas (said in one line)."""
  if not (config.held_out_tfrecords and config.do_train):
    return []
  if strategy.num_replicas_in_sync > 1:
    print("note: held_out_tfrecords is measured only with one replica; skipped", flush=True)
    return []
  eval_config = copy.copy(config)
  eval_config.do_train, eval_config.do_eval = False, True
  eval_config.pretrain_tfrecords = config.held_out_tfrecords
  eval_config.num_eval_steps = config.held_out_batches
  periodic = PeriodicEvaluation(
    eval_config,
    config.save_checkpoints_steps or config.num_train_steps,
    os.path.join(config.model_dir, "held_out_history.json"),
  )
  return [periodic.callback]
