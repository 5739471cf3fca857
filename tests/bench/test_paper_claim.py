import json
import os
import shutil

import pytest

from bench import paper_claim
from electra_tf.utils import flops


def test_electra_step_flops_are_the_flops_computation_s():
  # at the original's vocab, the same as the project's ELECTRA counter
  expected = flops.get_electra_train_flops(
    256, 12, 64, 12, paper_claim.BATCH, 1, True, e=128, s=128
  )
  assert paper_claim.flops_per_step("electra", vocab_size=30522) == pytest.approx(expected)
  # the original Small's whole pre-training is 1M such steps at 4x the batch
  assert paper_claim.flops_per_step("electra", batch=128) * 1e6 == pytest.approx(
    paper_claim.ORIGINAL_SMALL_FLOPS
  )


def test_mlm_step_is_bert_of_the_discriminator_s_size():
  expected = flops.TransformerHparams(256, 12, e=128, s=128).get_train_flops(paper_claim.BATCH, 1)
  assert paper_claim.flops_per_step("mlm") == pytest.approx(expected)
  with pytest.raises(ValueError, match="objective"):
    paper_claim.flops_per_step("electric")


def test_same_budget_gives_equal_flops_within_ten_percent():
  budget = paper_claim.budget_from_step_time(1.5, budget_seconds=7200)
  plan = paper_claim.plan(budget)
  assert plan["electra"]["steps"] == round(7200 / 1.5)
  # the MLM step is cheaper, so it runs more steps for the same FLOPs
  assert plan["mlm"]["steps"] > plan["electra"]["steps"]
  assert abs(plan["mlm_over_electra_flops"] - 1) < 0.01
  assert plan["budget_ratio"] == pytest.approx(budget / paper_claim.ORIGINAL_SMALL_FLOPS)


def test_steps_scale_with_the_budget():
  one = paper_claim.steps_for_budget("mlm", 1e15)
  two = paper_claim.steps_for_budget("mlm", 2e15)
  assert abs(two - 2 * one) <= 1


def test_seconds_per_step_leaves_out_start_up():
  times = [(1, 0.0), (2, 30.0), (3, 33.0), (5, 36.0)]
  mean, fastest = paper_claim.seconds_per_step(times, skip=1)
  assert mean == pytest.approx(2.0) and fastest == pytest.approx(1.5)
  with pytest.raises(ValueError):
    paper_claim.seconds_per_step(times[:2], skip=1)


def test_arguments(tmp_path):
  args = paper_claim.parse_args(
    ["--run-dir", str(tmp_path), "pretrain", "--objective", "mlm", "--extra-hparams", '{"seed": 3}']
  )
  assert args.command == "pretrain" and args.objective == "mlm"
  assert args.data_dir == str(tmp_path / "data")
  assert args.extra_hparams == {"seed": 3}
  args = paper_claim.parse_args(["finetune", "--objective", "random", "--seeds", "1,2,3"])
  assert args.glue_args == ["--seeds", "1,2,3"]
  with pytest.raises(SystemExit):
    paper_claim.parse_args(["pretrain", "--objective", "bert"])


def test_hparams_of_the_two_runs_differ_only_in_objective_and_steps(tmp_path):
  electra = paper_claim.hparams("electra", 1000, str(tmp_path), str(tmp_path / "e"))
  mlm = paper_claim.hparams("mlm", 1200, str(tmp_path), str(tmp_path / "m"))
  assert electra["electra_objective"] and not mlm["electra_objective"]
  # the sampling temperature is ELECTRA's alone (MLM samples nothing)
  assert electra.pop("temperature") == paper_claim.TEMPERATURE and "temperature" not in mlm
  different = {k for k in electra if electra[k] != mlm[k]}
  assert different == {
    "electra_objective", "num_train_steps", "num_warmup_steps", "save_checkpoints_steps",
    "model_dir",
  }  # fmt: skip
  # the held-out shard is not trained on
  assert f"tfrecord-{paper_claim.EVAL_SHARD}-of" not in electra["pretrain_tfrecords"]


def test_the_budget_is_at_least_two_hours_of_the_reference_rate():
  hours = paper_claim.BUDGET_FLOPS / paper_claim.reference_flops_per_second() / 3600
  assert 2.0 <= hours < 2.2
  plan = paper_claim.plan(paper_claim.BUDGET_FLOPS)
  assert abs(plan["mlm"]["flops"] / plan["electra"]["flops"] - 1) < 0.1


def test_finetune_rows_call_the_glue_bench(tmp_path):
  args = paper_claim.parse_args(
    ["--run-dir", str(tmp_path), "finetune", "--objective", "random", "--seeds", "1,2,3"]
  )
  argv = paper_claim.finetune_argv(args)
  assert argv[1:3] == ["-m", "bench.glue"]
  assert "--random-init" in argv and argv[argv.index("--pretraining-flops") + 1] == "0"
  assert argv[-2:] == ["--seeds", "1,2,3"]  # the command line's flags come last and win
  recipe = argv.index("--max-train-examples")
  assert argv[recipe + 1] == "8551" and recipe < len(argv) - 2
  model_dir = tmp_path / "models" / f"electra_small_b{paper_claim.BATCH}_lr0.0005_t3"
  model_dir.mkdir(parents=True)
  (model_dir / "paper_claim.json").write_text('{"pretraining_flops": 1.4e15}')
  args = paper_claim.parse_args(["--run-dir", str(tmp_path), "finetune", "--objective", "electra"])
  argv = paper_claim.finetune_argv(args)
  assert argv[argv.index("--init-checkpoint") + 1] == str(model_dir)
  assert float(argv[argv.index("--pretraining-flops") + 1]) == 1.4e15
  assert argv[argv.index("--vocab-file") + 1] == str(tmp_path / "data" / "vocab.txt")


def _row(init, task, seed, metric, flops_value, **recipe):
  return {
    "init": init, "task": task, "seed": seed, "metric": metric,
    "pretraining_flops": flops_value, "max_seq_length": 64, **recipe,
  }  # fmt: skip


def test_the_verdict_is_recomputed_from_the_rows():
  rows = [_row("random", "sst", s, 80.0 + s, 0) for s in (1, 2, 3)]
  rows += [_row("electra", "sst", s, 83.5 + s, 1.40e15) for s in (1, 2, 3)]
  rows += [_row("mlm", "sst", s, 82.0, 1.45e15) for s in (1, 2, 3)]
  # on CoLA one ELECTRA seed is below the best random seed
  rows += [_row("random", "cola", s, 5.0 * s, 0) for s in (1, 2, 3)]
  rows += [_row("electra", "cola", s, 14.0 + s, 1.40e15) for s in (1, 2, 3)]
  result = paper_claim.verdict(rows)
  assert result["electra_above_random"] == {"sst": True, "cola": False}
  assert result["mlm_flops_within_10_percent"] is True
  assert result["recipe_differs"] == {}
  rows.append(_row("mlm", "cola", 1, 9.0, 1.6e15, max_seq_length=128))
  result = paper_claim.verdict(rows)
  assert result["mlm_flops_within_10_percent"] is False
  assert result["recipe_differs"] == {"cola": ["max_seq_length"]}
  # A task with only random-init rows so far has no verdict yet, not a failed one.
  rows.append(_row("random", "mrpc", 1, 70.0, 0))
  assert paper_claim.verdict(rows)["electra_above_random"]["mrpc"] is None


def test_table_joins_the_inits_reports(tmp_path, capsys):
  for init, metric, flops_value in (("random", 50.0, 0), ("electra", 60.0, 1.4e15)):
    rows = [_row(init, "sst", s, metric + s, flops_value) for s in (1, 2, 3)]
    (tmp_path / f"glue_paper_claim_{init}.json").write_text(json.dumps(rows))
  assert paper_claim.main(["--report-dir", str(tmp_path), "table"]) == 0
  joined = json.loads((tmp_path / "glue_pretraining.json").read_text())
  assert [(r["init"], r["seed"]) for r in joined][:4] == [
    ("random", 1), ("random", 2), ("random", 3), ("electra", 1)
  ]  # fmt: skip
  table = (tmp_path / "glue_pretraining.md").read_text()
  assert "| electra | sst | 3 | 62.00 | 61.00–63.00 | 1.4e+15 |" in table
  assert '"sst": true' in table
  assert "no rows for 'mlm' yet" in capsys.readouterr().out
  empty = tmp_path / "empty"
  empty.mkdir()
  with pytest.raises(SystemExit, match="no glue_paper_claim"):
    paper_claim.main(["--report-dir", str(empty), "table"])


def _tiny_run(run_dir, name, electra_objective, steps_flops, **extra):
  from electra_tf.configs.pretraining import PretrainingConfig
  from electra_tf.training import pretraining_run
  from tests.helpers.pretraining_data import self_made_hparams

  model_dir = run_dir / "models" / name
  hparams = self_made_hparams(
    num_train_steps=6, save_checkpoints_steps=3, keep_checkpoint_max=0, seed=1,
    electra_objective=electra_objective, model_dir=str(model_dir), **extra,
  )  # fmt: skip
  assert pretraining_run.train_or_eval(PretrainingConfig(name, str(run_dir / "data"), **hparams))
  (model_dir / "paper_claim.json").write_text(json.dumps({"flops_per_step": steps_flops}))


@pytest.mark.slow
def test_curves_measure_every_checkpoint_of_each_run_on_the_held_out_shard(tmp_path, capsys):
  from tests.helpers.pretraining_data import make_data_dir

  # 16 shards as the recipe's, 4 records each: shard 15 is the held-out one
  make_data_dir(tmp_path / "data", num_examples=64, num_files=paper_claim.NUM_SHARDS)
  _tiny_run(tmp_path, "electra_small_b4", True, 10.0)
  _tiny_run(tmp_path, "mlm_small_b4", False, 7.0)
  # (an untrained generator's logits are near 0: only a small temperature
  # changes what it draws)
  _tiny_run(tmp_path, "electra_small_b4_t0.01", True, 10.0, temperature=0.01)
  reports = tmp_path / "reports"
  reports.mkdir()
  argv = ["--run-dir", str(tmp_path), "--report-dir", str(reports), "curves", "--batches", "2"]
  assert paper_claim.main(argv) == 0
  runs = json.loads((reports / "paper_claim_curves.json").read_text())
  assert sorted(runs) == ["electra_small_b4", "electra_small_b4_t0.01", "mlm_small_b4"]
  # The discriminator against replacements drawn at the original's temperature 1:
  # a temperature-1 run's own AUC; another temperature's run measured again.
  for p in runs["electra_small_b4"]:
    assert p["disc_auc_at_temperature_1"] == p["disc_auc_real_tokens"]
  cold = runs["electra_small_b4_t0.01"]
  assert [p["global_step"] for p in cold] == [0, 3, 6]
  assert any(p["disc_auc_at_temperature_1"] != p["disc_auc_real_tokens"] for p in cold)
  assert "disc_auc_at_temperature_1" not in runs["mlm_small_b4"][0]
  for name, step_flops in (("electra_small_b4", 10.0), ("mlm_small_b4", 7.0)):
    points = runs[name]
    # the untrained model, then each checkpoint oldest first, its FLOPs from the step
    assert [p["global_step"] for p in points] == [0, 3, 6]
    assert [p["pretraining_flops"] for p in points] == [0.0, 3 * step_flops, 6 * step_flops]
    assert [os.path.basename(p["checkpoint"]) for p in points] == [
      "model.ckpt-0",
      "model.ckpt-3",
      "model.ckpt-6",
    ]
    # one held-out batch of the 4 records of shard 15, the same masks at every point
    assert {p["num_examples"] for p in points} == {4}
    assert len({p["masked_positions"] for p in points}) == 1
    # different weights give different losses
    assert len({round(p["masked_lm_loss"], 6) for p in points}) == 3
  # A run that kept no step-0 checkpoint: a freshly initialized model stands in for it.
  from electra_tf.training import held_out_evaluation

  only_last = tmp_path / "models" / "only_last"
  only_last.mkdir()
  for path in (tmp_path / "models" / "electra_small_b4").iterdir():
    if path.name.startswith("model.ckpt-6.") or path.name == "config.json":
      shutil.copy(path, only_last / path.name)
  # (its config.json still names the run's own dir: the copy is measured)
  config = paper_claim.curve_config(str(only_last), str(tmp_path / "data"), batches=2)
  assert config.model_dir == str(only_last)
  points = held_out_evaluation.measure_checkpoints(config, 2)
  assert [(p["global_step"], p["checkpoint"] is None) for p in points] == [(0, True), (6, False)]
  electra = runs["electra_small_b4"]
  # the same held-out batches and masks as in the run's own dir
  assert points[1]["masked_lm_loss"] == pytest.approx(electra[2]["masked_lm_loss"], rel=1e-5)
  assert points[0]["masked_lm_loss"] != pytest.approx(points[1]["masked_lm_loss"], rel=1e-3)
  assert "disc_auc_real_tokens" in runs["electra_small_b4"][1]
  assert "disc_auc_real_tokens" not in runs["mlm_small_b4"][1]  # no discriminator
  mlm_last = runs["mlm_small_b4"][2]
  text = (reports / "paper_claim_curves.md").read_text()
  assert "## mlm_small_b4" in text and "| 6 | 42 |" in text
  assert (reports / "paper_claim_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  # Run again after the MLM run's step-6 checkpoint is gone from the report:
  # points already there for the same --batches are kept as they are (a
  # marked value survives), the missing one is measured again.
  runs["electra_small_b4"][1]["masked_lm_loss"] = 123.0
  runs["mlm_small_b4"].pop()
  (reports / "paper_claim_curves.json").write_text(json.dumps(runs))
  assert paper_claim.main(argv) == 0
  again = json.loads((reports / "paper_claim_curves.json").read_text())
  assert again["electra_small_b4"][1]["masked_lm_loss"] == 123.0
  assert [p["global_step"] for p in again["mlm_small_b4"]] == [0, 3, 6]
  assert again["mlm_small_b4"][2]["masked_lm_loss"] == pytest.approx(
    mlm_last["masked_lm_loss"], rel=1e-5
  )
  # Another --batches measures every checkpoint afresh.
  assert paper_claim.main(argv[:-1] + ["1"]) == 0
  fresh = json.loads((reports / "paper_claim_curves.json").read_text())
  assert fresh["electra_small_b4"][1]["masked_lm_loss"] != 123.0
  assert {p["batches_requested"] for p in fresh["electra_small_b4"]} == {1}
  capsys.readouterr()


def test_curves_without_runs_say_where_they_looked(tmp_path):
  with pytest.raises(SystemExit, match="no run in .*models"):
    paper_claim.main(["--run-dir", str(tmp_path), "curves"])
  with pytest.raises(SystemExit):
    paper_claim.main(["--run-dir", str(tmp_path), "curves", "--batches", "0"])


def test_curve_panels_draw_the_discriminator_only_where_a_run_has_one():
  runs = {
    "electra": [
      {"pretraining_flops": 0.0, "masked_lm_loss": 9.0, "masked_lm_accuracy": 0.0,
       "disc_auc_real_tokens": 0.5},
      {"pretraining_flops": 1e15, "masked_lm_loss": 5.0, "masked_lm_accuracy": 0.2,
       "disc_auc_real_tokens": 0.8},
    ],
    "mlm": [
      {"pretraining_flops": 0.0, "masked_lm_loss": 9.5, "masked_lm_accuracy": 0.0},
      {"pretraining_flops": 1e15, "masked_lm_loss": 4.0, "masked_lm_accuracy": 0.3},
    ],
  }  # fmt: skip
  panels = paper_claim.curve_panels(runs)
  assert [len(p.series) for p in panels] == [2, 2, 1]
  assert [s.label for s in panels[2].series] == ["electra"]
  assert list(panels[0].series[1].values) == [9.5, 4.0]
