"""The generic learning report (`bench.learning_comparison`) and its LAMB
variant list: the variants' settings, the verdicts at equal examples seen
and the curves against examples seen (on made-up runs: no training)."""

import json

import pytest

from bench import lamb_learning
from bench import learning_comparison
from electra_tf import demo
from electra_tf.training.held_out_evaluation import METRIC_ROWS


def _run(variant, seed, auc, batch, steps, every, se=0.01):
  final = {"global_step": steps, "all_original_accuracy": 0.86, "unigram_masked_lm_accuracy": 0.06}
  for key, _, _, _ in METRIC_ROWS:
    final[key] = auc if key == "disc_auc_real_tokens" else 0.5
    final[f"{key}_margin_se"] = se
  return {
    "optimizer": variant,
    "seed": seed,
    "train_batch_size": batch,
    "train_seconds": 30.0,
    "history": [{"step": s, **final} for s in range(0, steps + 1, every)],
    "final": final,
    "losses": {
      tag: [(s, 1.0 / s) for s in range(1, steps + 1)] for tag in learning_comparison.LOSS_TAGS
    },
  }


def _runs(comparison, aucs):
  """Made-up runs of `comparison`'s variants, final AUCs `{variant: (seed 0, seed 1)}`."""
  return [
    _run(
      v.name,
      seed,
      aucs[v.name][seed],
      v.overrides.get("train_batch_size", 32),
      v.steps,
      v.eval_every,
    )
    for seed in (0, 1)
    for v in comparison.variants
  ]


def test_lamb_sees_adams_examples_at_4x_batch_in_the_same_memory(tmp_path):
  comparison = lamb_learning.comparison(960)
  adam, lamb = comparison.variants
  adam_config = demo.pretraining_config(str(tmp_path), adam.steps, **adam.overrides)
  lamb_config = demo.pretraining_config(str(tmp_path), lamb.steps, **lamb.overrides)
  assert adam_config.optimizer == "adam" and lamb_config.optimizer == "lamb"
  # 4x the global batch as 4 micro-batches of Adam's batch, a quarter of the steps
  assert lamb_config.train_batch_size == 4 * adam_config.train_batch_size
  assert lamb_config.train_batch_size // lamb_config.gradient_accumulation_steps == (
    adam_config.train_batch_size
  )
  assert lamb_config.num_train_steps * lamb_config.train_batch_size == (
    adam_config.num_train_steps * adam_config.train_batch_size
  )
  assert (
    lamb.eval_every * lamb_config.train_batch_size == adam.eval_every * adam_config.train_batch_size
  )
  # square-root scaling of the rate; linear-epoch warm-up keeps the warm-up steps
  assert lamb_config.learning_rate == pytest.approx(2 * adam_config.learning_rate)
  assert lamb_config.num_warmup_steps == adam_config.num_warmup_steps
  # a short run still warms up over at most half its steps
  short = lamb_learning.comparison(96).variants[1]
  assert demo.pretraining_config(
    str(tmp_path), short.steps, **short.overrides
  ).num_warmup_steps <= (short.steps // 2)


def test_a_learning_rate_of_ones_own_gets_its_own_report():
  default, given = lamb_learning.comparison(480), lamb_learning.comparison(480, learning_rate=6e-3)
  assert given.variants[1].overrides["learning_rate"] == 6e-3
  assert given.variants[0] == default.variants[0]
  assert (default.name, given.name) == ("lamb_learning", "lamb_learning_lr0.006")
  assert "`lamb_learning_lr0.006.png`" in given.curves_text
  # other steps and a warm-up of one's own name their report too
  longer = lamb_learning.comparison(960, learning_rate=0.05, warmup_steps=24)
  assert longer.name == "lamb_learning_lr0.05_steps960_warmup24"
  assert longer.variants[1].overrides["num_warmup_steps"] == 24
  assert "num_warmup_steps" not in given.variants[1].overrides


def test_a_warmup_of_ones_own_reaches_the_lamb_config(tmp_path):
  lamb = lamb_learning.comparison(960, warmup_steps=24).variants[1]
  config = demo.pretraining_config(str(tmp_path), lamb.steps, **lamb.overrides)
  assert (config.num_warmup_steps, config.num_train_steps) == (24, 240)


def test_the_adam_control_runs_adam_at_lambs_batch_and_rate(tmp_path):
  lamb = lamb_learning.comparison(960, learning_rate=0.004)
  control = lamb_learning.comparison(960, learning_rate=0.004, large_batch="adam")
  assert control.name == "lamb_learning_adam4x_lr0.004_steps960"
  assert control.variants[0] == lamb.variants[0]
  adam_4x = control.variants[1]
  assert adam_4x.name == "adam_4x" and control.difference_key == "adam_4x_minus_adam"
  config = demo.pretraining_config(str(tmp_path), adam_4x.steps, **adam_4x.overrides)
  lamb_config = demo.pretraining_config(
    str(tmp_path), lamb.variants[1].steps, **lamb.variants[1].overrides
  )
  assert config.optimizer == "adam"
  # everything else is LAMB's: batch, micro-batches, steps, rate and warm-up
  for key in (
    "train_batch_size",
    "gradient_accumulation_steps",
    "num_train_steps",
    "learning_rate",
    "num_warmup_steps",
  ):
    assert getattr(config, key) == getattr(lamb_config, key), key
  assert "adam_4x green" in control.curves_text


def test_a_batch_of_ones_own_scales_both_and_names_the_report(tmp_path):
  comparison = lamb_learning.comparison(3840, learning_rate=0.05, batch=8)
  assert comparison.name == "lamb_learning_lr0.05_steps3840_batch8"
  adam, lamb = comparison.variants
  adam_config = demo.pretraining_config(str(tmp_path), adam.steps, **adam.overrides)
  lamb_config = demo.pretraining_config(str(tmp_path), lamb.steps, **lamb.overrides)
  assert (adam_config.train_batch_size, lamb_config.train_batch_size) == (8, 32)
  assert lamb_config.train_batch_size // lamb_config.gradient_accumulation_steps == 8
  assert lamb.steps * 32 == adam.steps * 8 == 3840 * 8
  # the demo's batch keeps the default name and Adam's settings untouched
  same = lamb_learning.comparison(480, batch=32)
  assert same.name == "lamb_learning" and same.variants[0].overrides == {}


@pytest.mark.parametrize(
  "flags, message",
  [
    (["--steps", "100"], "--steps 100: expected a positive multiple of 24"),
    (["--steps", "12"], "--steps 12: expected a positive multiple of 24"),
    (["--steps", "0"], "--steps 0: expected a positive multiple of 24"),
    (["--lamb-learning-rate", "-1"], "--lamb-learning-rate -1.0: expected a positive rate"),
    (["--lamb-warmup-steps", "-5"], "--lamb-warmup-steps -5: expected 0 or more steps"),
    (["--large-batch-optimizer", "sgd"], "--large-batch-optimizer: invalid choice: 'sgd'"),
    (["--batch", "0"], "--batch 0: expected a batch of 1 or more examples"),
  ],
)
def test_flags_that_cannot_be_compared_are_refused(flags, message, capsys):
  with pytest.raises(SystemExit) as exit_info:
    lamb_learning.main(flags)
  assert exit_info.value.code == 2
  assert message in capsys.readouterr().err


@pytest.mark.parametrize(
  "aucs, verdict",
  [
    ({"adam": (0.88, 0.90), "lamb": (0.87, 0.89)}, "within noise"),
    ({"adam": (0.88, 0.89), "lamb": (0.80, 0.81)}, "outside noise"),
  ],
)
def test_lamb_is_judged_against_adam(aucs, verdict):
  comparison = lamb_learning.comparison(480)
  rows = learning_comparison.compare(comparison, _runs(comparison, aucs))
  row = next(r for r in rows if r["metric"] == "discriminator AUC")
  assert list(row)[:4] == ["metric", "adam_mean", "lamb_mean", "lamb_minus_adam"]
  assert row["lamb_minus_adam"] == pytest.approx(sum(aucs["lamb"]) / 2 - sum(aucs["adam"]) / 2)
  assert row["verdict"] == verdict


def test_each_candidate_is_judged_against_the_reference():
  variants = tuple(
    learning_comparison.Variant(name, {}, 60, 10, color)
    for name, color in (("a", "k"), ("b", "r"), ("c", "g"))
  )
  comparison = learning_comparison.Comparison("x", "x", variants, variant_key="optimizer")
  aucs = {"a": (0.9, 0.9), "b": (0.9, 0.9), "c": (0.5, 0.5)}
  rows = learning_comparison.compare(comparison, _runs(comparison, aucs))
  auc_rows = [r for r in rows if r["metric"] == "discriminator AUC"]
  assert [list(r)[1:3] for r in auc_rows] == [["a_mean", "b_mean"], ["a_mean", "c_mean"]]
  assert [r["verdict"] for r in auc_rows] == ["within noise", "outside noise"]


def test_report_files_and_curves_against_examples_seen(tmp_path):
  comparison = lamb_learning.comparison(480)
  runs = _runs(comparison, {"adam": (0.88, 0.9), "lamb": (0.87, 0.89)})
  text = learning_comparison.write_report(comparison, runs, "# header", str(tmp_path), rates={})
  assert text.count("| adam |") == 2 and text.count("| lamb |") == 2
  assert "| discriminator AUC |" in text and "lamb_minus_adam" in text
  assert (tmp_path / "lamb_learning.md").read_text() == text
  assert '"lamb_minus_adam"' in (tmp_path / "lamb_learning.json").read_text()
  assert (tmp_path / "lamb_learning.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  figure = learning_comparison.training_curves(comparison, runs, str(tmp_path / "again.png"))
  loss, auc, _ = figure.axes
  assert loss.get_xlabel() == "examples seen"
  lines = {line.get_label(): list(line.get_xdata()) for line in auc.get_lines()}
  # Adam every 80 steps of 32, LAMB every 20 of 128: the same examples seen
  assert lines["adam seed 0"] == lines["lamb seed 0"] == list(range(0, 480 * 32 + 1, 80 * 32))


def _settings(comparison, variant, seed):
  return dict(
    variant=variant.name,
    variant_key=comparison.variant_key,
    seed=seed,
    steps=variant.steps,
    eval_every=variant.eval_every,
    overrides=variant.overrides,
  )


def test_finished_runs_are_kept_and_not_trained_again(tmp_path):
  comparison = lamb_learning.comparison(480)
  runs = _runs(comparison, {"adam": (0.88, 0.9), "lamb": (0.87, 0.89)})
  (tmp_path / "runs").mkdir()
  for run in runs:
    variant = comparison.variant(run["optimizer"])
    kept = {"settings": _settings(comparison, variant, run["seed"]), "result": run}
    name = learning_comparison.run_name(variant.name, run["seed"])
    (tmp_path / "runs" / f"{name}.json").write_text(json.dumps(kept))
  # every run kept: nothing trains (a child would fail: there is no data here)
  assert learning_comparison.run_all(comparison, str(tmp_path)) == json.loads(json.dumps(runs))
  # the reference skipped, only the others come back
  skipped = learning_comparison.run_all(comparison, str(tmp_path), skip=("adam",))
  assert [r["optimizer"] for r in skipped] == ["lamb", "lamb"]


def test_reference_runs_come_from_an_earlier_report_of_the_same_steps(tmp_path):
  comparison = lamb_learning.comparison(480)
  runs = _runs(comparison, {"adam": (0.88, 0.9), "lamb": (0.87, 0.89)})
  report = tmp_path / "earlier.json"
  report.write_text(json.dumps({"runs": runs}))
  reused = learning_comparison.reference_runs(comparison, str(report))
  assert [(r["optimizer"], r["seed"]) for r in reused] == [("adam", 0), ("adam", 1)]
  with pytest.raises(ValueError, match=r"earlier.json: expected adam runs \(seed, steps\)"):
    learning_comparison.reference_runs(lamb_learning.comparison(960), str(report))


def _report(path, runs):
  path.write_text(json.dumps({"runs": runs}))
  return str(path)


def test_lamb_is_judged_against_the_control_from_two_reports(tmp_path, capsys):
  lamb = _report(
    tmp_path / "lamb.json",
    [_run("adam", s, 0.9, 32, 960, 160) for s in (0, 1)]
    + [_run("lamb", s, auc, 128, 240, 40) for s, auc in ((0, 0.89), (1, 0.88))],
  )
  control = _report(
    tmp_path / "control.json", [_run("adam_4x", s, 0.85, 128, 240, 40) for s in (0, 1)]
  )
  rows = lamb_learning.lamb_against_control(lamb, control)
  auc = next(r for r in rows if r["metric"] == "discriminator AUC")
  assert auc["adam_4x_mean"] == pytest.approx(0.85) and auc["lamb_mean"] == pytest.approx(0.885)
  assert auc["lamb_minus_adam_4x"] == pytest.approx(0.035) and auc["verdict"] == "outside noise"
  assert lamb_learning.main(["--lamb-against-control", lamb, control]) == 0
  assert "| discriminator AUC | 0.85 | 0.885 | 0.035 |" in capsys.readouterr().out


def test_reports_of_other_runs_cannot_be_judged_against_each_other(tmp_path):
  lamb = _report(tmp_path / "lamb.json", [_run("lamb", s, 0.89, 128, 360, 60) for s in (0, 1)])
  control = _report(tmp_path / "c.json", [_run("adam_4x", s, 0.85, 128, 240, 40) for s in (0, 1)])
  with pytest.raises(ValueError, match=r"c.json and .*lamb.json: expected the same"):
    lamb_learning.lamb_against_control(lamb, control)
  with pytest.raises(ValueError, match=r"lamb.json: expected runs of adam_4x; found none"):
    lamb_learning.lamb_against_control(control, lamb)
