"""The held-out real-token evaluation: metrics against trivial baselines,
verdicts within noise, the report lines, the periodic schedule and the
training-curve panels (no model: made-up arrays)."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.training import held_out_evaluation
from electra_tf.training.held_out_evaluation import PeriodicEvaluation


def test_verdict_calls_a_margin_within_two_standard_errors_noise():
  assert held_out_evaluation.verdict(0.001, 0.002) == "within noise"
  assert held_out_evaluation.verdict(-0.003, 0.002) == "within noise"
  assert held_out_evaluation.verdict(0.33, 0.01) == "above"
  assert held_out_evaluation.verdict(-0.05, 0.01) == "below"
  # no noise estimate: no claim either way
  assert held_out_evaluation.verdict(0.2, float("nan")) == "within noise"


def test_metrics_on_real_tokens_against_baselines():
  labels = np.array([1, 0, 0, 0, 1, 0, 0, 0], bool)
  probs = np.array([0.9, 0.1, 0.2, 0.6, 0.4, 0.3, 0.1, 0.2])
  targets = np.array([5, 5, 5, 7])
  preds = np.array([5, 7, 5, 7])
  m = held_out_evaluation.metrics(targets, preds, labels, probs)
  assert m["masked_lm_accuracy"] == 0.75 and m["unigram_masked_lm_accuracy"] == 0.75
  assert m["all_original_accuracy"] == 0.75 and m["replaced_fraction"] == 0.25
  # flagged: positions 0 and 3 -> one hit of two replaced, one false alarm
  assert m["disc_recall_real_tokens"] == 0.5 and m["disc_precision_real_tokens"] == 0.5
  assert m["disc_accuracy_real_tokens"] == 0.75
  # replaced scores 0.9 and 0.4 rank above 6 and 5 of the 6 originals
  assert m["disc_auc_real_tokens"] == pytest.approx(11 / 12)


def test_a_masked_lm_run_gets_the_masked_lm_metrics_only():
  # no discriminator outputs (electra_objective false): no discriminator metrics, no KeyError
  out = {
    "masked_lm_weights": np.array([[1.0, 1.0, 0.0]]),
    "masked_lm_ids": np.array([[4, 5, 0]]),
    "masked_lm_preds": np.array([[4, 6, 9]]),
    "mlm_per_slot_loss": np.array([[0.5, 1.5, 7.0]]),
    "input_mask": np.array([[1, 1, 1, 0]]),
  }
  arrays = held_out_evaluation.batch_arrays(out)
  assert sorted(arrays) == ["losses", "preds", "targets"]
  m = held_out_evaluation.metrics(**arrays)
  assert m == {
    "masked_lm_accuracy": 0.5,
    "unigram_masked_lm_accuracy": 0.5,
    "masked_lm_loss": 1.0,  # the unused slot's 7.0 is not counted
  }
  lines = held_out_evaluation.format_against_baselines(
    dict(m, masked_lm_accuracy_margin=0.0, masked_lm_accuracy_margin_se=0.1)
  )
  assert len(lines) == 1 and "generator masked-LM accuracy" in lines[0]


def test_report_lines_show_value_baseline_margin_and_noise():
  measured = {
    "masked_lm_accuracy": 0.30,
    "unigram_masked_lm_accuracy": 0.07,
    "disc_auc_real_tokens": 0.834,
    "disc_accuracy_real_tokens": 0.880,
    "all_original_accuracy": 0.879,
    "disc_recall_real_tokens": 0.011,
  }
  margins = {
    "masked_lm_accuracy": (0.23, 0.01),
    "disc_auc_real_tokens": (0.334, 0.005),
    "disc_accuracy_real_tokens": (0.001, 0.002),
    "disc_recall_real_tokens": (0.011, 0.004),
  }
  for key, (margin, se) in margins.items():
    measured[f"{key}_margin"], measured[f"{key}_margin_se"] = margin, se
  measured["disc_prob_std_real_tokens"] = 0.05
  lines = held_out_evaluation.format_against_baselines(measured)
  assert len(lines) == 4
  assert "0.834 vs 0.500 (random scores): +0.334 ± 0.010 -> above" in lines[1]
  assert "0.880 vs 0.879" in lines[2] and lines[2].endswith("+0.001 ± 0.004 -> within noise")
  assert lines[3].endswith("+0.011 ± 0.008 -> above")


def test_report_warns_when_every_token_gets_the_same_score():
  measured = {"all_original_accuracy": 0.88, "unigram_masked_lm_accuracy": 0.07}
  for key, _, _, _ in held_out_evaluation.METRIC_ROWS:
    measured[key], measured[f"{key}_margin"], measured[f"{key}_margin_se"] = 0.5, 0.0, 0.0
  labels = np.arange(100) % 8 == 0
  measured["disc_prob_std_real_tokens"] = held_out_evaluation.metrics(
    np.array([1, 2]), np.array([1, 1]), labels, np.full(100, 0.12)
  )["disc_prob_std_real_tokens"]
  lines = held_out_evaluation.format_against_baselines(measured)
  assert len(lines) == 5 and "collapsed" in lines[-1]


def test_roc_auc_by_ranks_with_ties_and_without_both_classes():
  assert held_out_evaluation.roc_auc([1, 0, 0, 1], [0.9, 0.1, 0.5, 0.5]) == 0.875
  assert held_out_evaluation.roc_auc([1, 0], [0.3, 0.3]) == 0.5
  assert held_out_evaluation.roc_auc([0, 1], [0.9, 0.1]) == 0.0
  assert np.isnan(held_out_evaluation.roc_auc([1, 1], [0.2, 0.3]))


def test_batch_arrays_keep_masked_positions_and_real_tokens_only():
  out = {
    "masked_lm_weights": np.array([[1.0, 1.0, 0.0]]),
    "masked_lm_ids": np.array([[4, 5, 0]]),
    "masked_lm_preds": np.array([[4, 6, 9]]),
    "input_mask": np.array([[1, 1, 1, 0]]),
    "disc_labels": np.array([[0, 1, 0, 1]]),
    "disc_probs": np.array([[0.1, 0.8, 0.2, 0.9]]),
  }
  arrays = held_out_evaluation.batch_arrays(out)
  assert arrays["targets"].tolist() == [4, 5] and arrays["preds"].tolist() == [4, 6]
  assert arrays["labels"].tolist() == [False, True, False]
  assert arrays["probs"].tolist() == [0.1, 0.8, 0.2]


def test_periodic_evaluation_measures_step_0_then_every_nth_step_once():
  periodic = PeriodicEvaluation.__new__(PeriodicEvaluation)  # no dataset needed
  periodic.every, periodic.history = 50, [{"step": 0}, {"step": 50}]
  assert not periodic.due(0, starting=True)  # already measured (a resumed run)
  assert not periodic.due(50) and periodic.due(100) and not periodic.due(120)
  assert not periodic.due(100, starting=True)  # a resumed run starts where it was
  periodic.history = []
  assert periodic.due(0, starting=True)


def test_curve_panels_show_losses_and_each_metric_against_its_baseline():
  events = {"disc_loss": [(0, 0.7), (10, 0.5)], "generator_loss": [(0, 9.0), (10, 8.0)]}
  history = []
  for step, accuracy in ((0, 0.8), (100, 0.9)):
    entry = {"step": step, "all_original_accuracy": accuracy, "unigram_masked_lm_accuracy": 0.05}
    history.append({**entry, **{key: 0.6 for key, _, _, _ in held_out_evaluation.METRIC_ROWS}})
  panels = held_out_evaluation.training_curve_panels(events, history)
  assert [p.title for p in panels[:2]] == ["Generator MLM loss", "Discriminator loss"]
  assert panels[1].series[0].smoothing is not None and list(panels[1].series[0].steps) == [0, 10]
  baselines = {p.title: p.baselines[0].value for p in panels[2:]}
  assert baselines == {
    "Held-out generator masked-LM accuracy": 0.05,
    "Held-out discriminator AUC": 0.5,
    "Held-out discriminator accuracy": pytest.approx(0.85),  # the mean over the history
    "Held-out discriminator recall (p > 0.5)": 0.0,
  }
  assert all(list(p.series[0].steps) == [0, 100] for p in panels[2:])
  # before the first evaluation: no measured baseline, the fixed ones stay
  empty = held_out_evaluation.training_curve_panels({}, [])
  assert [p.baselines[0].value for p in empty[2:]] == [None, 0.5, None, 0.0]


def test_stall_warning_when_the_auc_at_temperature_1_stops_rising():
  def history(aucs):
    return [
      {"step": 100 * i, held_out_evaluation.AUC_AT_TEMPERATURE_1: a} for i, a in enumerate(aucs)
    ]

  # Rising: no warning. Flat for the last three evaluations: one line naming them.
  assert held_out_evaluation.stall_warning(history([0.5, 0.55, 0.6, 0.65, 0.7])) is None
  flat = held_out_evaluation.stall_warning(history([0.5, 0.55, 0.554, 0.553, 0.551]))
  assert flat.startswith("warning: the discriminator's held-out AUC at temperature 1")
  assert "steps 200-400: 0.554, 0.553, 0.551; best before 0.550" in flat and "\n" not in flat
  # Too few evaluations after step 0 to tell, or a masked-LM run (no AUC): nothing.
  assert held_out_evaluation.stall_warning(history([0.5, 0.55, 0.55, 0.55])) is None
  assert held_out_evaluation.stall_warning([{"step": s} for s in range(0, 600, 100)]) is None


def test_run_pretraining_measures_held_out_records_at_temperature_1(tmp_path, capsys):
  """`held_out_tfrecords`: a run measures them at step 0 and every
  checkpoint, the discriminator's AUC also on replacements drawn at
  temperature 1 (the run samples at 0.01: an untrained generator's logits are
  near 0, so only a small temperature changes what it draws), into
  held_out_history.json."""
  import json

  from electra_tf.configs.pretraining import PretrainingConfig
  from electra_tf.training import pretraining_run
  from tests.helpers.pretraining_data import make_data_dir
  from tests.helpers.pretraining_data import self_made_hparams

  make_data_dir(tmp_path, num_files=3)
  shards = sorted(str(p) for p in (tmp_path / "pretrain_tfrecords").iterdir())
  hparams = self_made_hparams(
    num_train_steps=6, temperature=0.01, pretrain_tfrecords=",".join(shards[:2]),
    held_out_tfrecords=shards[2], held_out_batches=2,
  )  # fmt: skip
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  strategy = tf.distribute.get_strategy()
  callbacks = held_out_evaluation.held_out_callbacks(config, strategy)  # as run_pretraining
  assert pretraining_run.train_or_eval(config, strategy=strategy, callbacks=callbacks) == 6
  history = json.loads((tmp_path / "models" / "m" / "held_out_history.json").read_text())
  assert [h["step"] for h in history] == [0, 3, 6]
  for h in history:
    assert 0.0 <= h["disc_auc_at_temperature_1"] <= 1.0
  assert any(h["disc_auc_at_temperature_1"] != h["disc_auc_real_tokens"] for h in history)
  assert "[held-out] step 6" in capsys.readouterr().out
  with pytest.raises(ValueError, match="held_out_batches=0"):
    PretrainingConfig("m", str(tmp_path), **dict(hparams, held_out_batches=0))


def test_a_held_out_set_smaller_than_held_out_batches_names_that_hparam(tmp_path, capsys):
  """The periodic measurement takes `held_out_batches`; the line saying the
  set is smaller names it, not `num_eval_steps` (left at its default)."""
  from electra_tf.configs.pretraining import PretrainingConfig
  from tests.helpers.pretraining_data import make_data_dir
  from tests.helpers.pretraining_data import self_made_hparams

  make_data_dir(tmp_path, num_files=3)
  shards = sorted(str(p) for p in (tmp_path / "pretrain_tfrecords").iterdir())
  hparams = self_made_hparams(
    pretrain_tfrecords=",".join(shards[:2]), held_out_tfrecords=shards[2], held_out_batches=50
  )
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  held_out_evaluation.held_out_callbacks(config, tf.distribute.get_strategy())
  err = capsys.readouterr().err
  assert "held-out evaluation: held_out_batches=50 batches of" in err
  assert "num_eval_steps" not in err
