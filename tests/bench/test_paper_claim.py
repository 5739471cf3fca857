"""The pre-training payoff command (`bench.paper_claim`): FLOPs, equal
budgets, the rows it fine-tunes, the gate and the verdict, and (slow) the
whole command on a tiny recipe and a GLUE dir the test writes."""

import json
import os
import random

import pytest

from bench import paper_claim
from electra_tf.utils import flops


def test_electra_step_is_discriminator_plus_generator_by_the_flops_computation():
  r = paper_claim.Recipe()
  d = flops.TransformerHparams(128, 4, s=64, v=8000, e=128, i=512, heads=2)
  g = flops.TransformerHparams(32, 4, s=64, v=8000, e=128, i=128, heads=1)
  expected = d.get_train_flops(32, 1, discriminator=True) + g.get_train_flops(32, 1)
  assert paper_claim.flops_per_step(r, "electra", 8000) == pytest.approx(expected)
  assert paper_claim.flops_per_step(r, "mlm", 8000) == pytest.approx(d.get_train_flops(32, 1))
  with pytest.raises(ValueError, match="objective"):
    paper_claim.flops_per_step(r, "electric", 8000)


def test_mlm_run_gets_electra_s_flops_within_one_percent():
  r = paper_claim.Recipe(electra_steps=1000)
  steps = paper_claim.mlm_steps(r, 7746)
  electra = 1000 * paper_claim.flops_per_step(r, "electra", 7746)
  assert steps > 1000  # the MLM step is cheaper
  assert abs(steps * paper_claim.flops_per_step(r, "mlm", 7746) / electra - 1) < 0.01


def test_the_two_runs_differ_only_in_objective_and_steps(tmp_path):
  r = paper_claim.Recipe()
  electra = paper_claim.run_hparams(r, "electra", 100, str(tmp_path))
  mlm = paper_claim.run_hparams(r, "mlm", 150, str(tmp_path))
  assert electra.pop("temperature") == r.temperature and "temperature" not in mlm
  assert {k for k in electra if electra[k] != mlm[k]} == {
    "electra_objective",
    "num_train_steps",
    "save_checkpoints_steps",
  }
  # the held-out shard is never trained on
  assert f"tfrecord-{paper_claim.EVAL_SHARD}-of" not in electra["pretrain_tfrecords"]
  config = paper_claim.pretraining_config(r, "mlm", 150, str(tmp_path), str(tmp_path / "m"), 500)
  assert not config.electra_objective and config.vocab_size == 500


def test_gate_needs_the_auc_to_keep_rising_and_the_row_to_fit():
  points = [
    {"global_step": 0, "disc_auc_at_temperature_1": 0.5},
    {"global_step": 100, "disc_auc_at_temperature_1": 0.55},
    {"global_step": 200, "disc_auc_at_temperature_1": 0.553},
  ]
  stalled = paper_claim.gate_verdict(points, 90.0, 55.0)
  assert not stalled["keeps_learning"] and stalled["fits_training_rows"] and not stalled["passed"]
  assert stalled["auc_t1_rise"] == pytest.approx(0.003)
  rising = points[:2] + [{"global_step": 200, "disc_auc_at_temperature_1": 0.6}]
  assert paper_claim.gate_verdict(rising, 90.0, 55.0)["passed"]
  assert not paper_claim.gate_verdict(rising, 60.0, 55.0)["passed"]


def _row(init, task, seed, metric, step, flops_value=0.0):
  return {
    "init": init, "task": task, "seed": seed, "metric": metric, "metric_name": "accuracy",
    "checkpoint_step": step, "pretraining_flops": flops_value, "majority": 50.9,
  }  # fmt: skip


def test_verdict_and_report_use_the_final_checkpoints():
  rows = [_row("random", "sst", s, 65.0 + s, 0) for s in (1, 2, 3)]
  rows += [_row("electra", "sst", s, 70.0 + s, 100, 1e12) for s in (1, 2, 3)]
  rows += [_row("electra", "sst", s, 50.0, 50, 5e11) for s in (1, 2, 3)]  # earlier: not final
  rows += [_row("mlm", "sst", s, 60.0, 150, 1.02e12) for s in (1, 2, 3)]
  final = paper_claim.final_rows(rows)
  assert {(r["init"], r["checkpoint_step"]) for r in final} == {
    ("random", 0),
    ("electra", 100),
    ("mlm", 150),
  }
  result = paper_claim.verdict(final)
  assert result == {
    "electra_above_random": {"sst": True},
    "electra_above_majority": {"sst": True},
    "mlm_flops_over_electra": 1.02,
  }
  # One seed of ELECTRA at or below a random seed: not above.
  worse = final[:-3] + [dict(final[3], metric=68.0)]
  assert paper_claim.verdict(worse)["electra_above_random"] == {"sst": False}
  text, _ = paper_claim.summary_markdown(paper_claim.Recipe(tasks=("sst",)), rows, None, None)
  assert "| electra | sst | accuracy | 3 | 71.00, 72.00, 73.00 | 72.00 | 1e+12 |" in text
  assert "| electra | 50 | 5e+11 | 3 | 50.00, 50.00, 50.00 | 50.00 |" in text


def test_unknown_recipe_fields_are_refused(tmp_path, capsys):
  glue = tmp_path / "glue"
  (glue / "SST-2").mkdir(parents=True)
  with pytest.raises(SystemExit):
    paper_claim.parse_args(["--glue-dir", str(glue), "--recipe", '{"hiden": 64}'])
  assert "unknown fields ['hiden']" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    paper_claim.parse_args(["--glue-dir", str(tmp_path / "none")])
  assert "no SST-2/ folder" in capsys.readouterr().err


WORDS = {
  1: ["good", "great", "fine", "lovely", "warm", "funny", "moving", "smart"],
  0: ["bad", "dull", "awful", "boring", "weak", "flat", "tired", "messy"],
}
FILLER = ["the", "film", "is", "a", "story", "with", "some", "scenes", "and", "it"]


def _write_glue(root, rows=160, seed=0):
  """A GLUE dir with SST-2 and CoLA files whose labels follow their words."""
  rng = random.Random(seed)

  def sentence(label):
    words = rng.sample(FILLER, 4) + rng.sample(WORDS[label], 2)
    rng.shuffle(words)
    return " ".join(words)

  for split, n in (("train", rows), ("dev", rows // 4)):
    labels = [rng.randint(0, 1) for _ in range(n)]
    sst = ["sentence\tlabel\n"] + [f"{sentence(y)}\t{y}\n" for y in labels]
    cola = [f"src\t{y}\t\t{sentence(y)}\n" for y in labels]
    for task, lines in (("SST-2", sst), ("CoLA", cola)):
      os.makedirs(root / task, exist_ok=True)
      (root / task / f"{split}.tsv").write_text("".join(lines))


@pytest.mark.slow
def test_the_whole_command_on_a_tiny_recipe_resumes_and_reports(tmp_path):
  glue = tmp_path / "glue"
  _write_glue(glue)
  docs = tmp_path / "benchmarks.md"
  docs.write_text(f"# B\n\n{paper_claim.DOCS_START}\nold\n{paper_claim.DOCS_END}\nafter\n")
  recipe = {
    "name": "tiny", "vocab_size": 200, "seq": 16, "batch": 8, "hidden": 16, "layers": 1,
    "heads": 2, "intermediate": 32, "embedding": 16, "electra_steps": 20, "warmup_steps": 2,
    "checkpoints": 2, "gate_steps": 200, "train_rows": 64, "finetune_seq": 16,
    "finetune_epochs": 1.0, "seeds": [1], "tasks": ["sst"],
  }  # fmt: skip
  reports = tmp_path / "reports"
  argv = [
    "--run-dir", str(tmp_path / "run"), "--glue-dir", str(glue), "--report-dir", str(reports),
    "--docs-page", str(docs), "--batches", "2", "--recipe", json.dumps(recipe), "--ignore-gate",
  ]  # fmt: skip
  assert paper_claim.main(argv) == 0
  gate = json.loads((reports / "paper_claim_gate_tiny.json").read_text())
  assert [p["global_step"] for p in gate["points"]] == [0, 100, 200]
  assert set(gate["verdict"]) >= {"keeps_learning", "fits_training_rows", "passed"}
  rows = json.loads((reports / "glue_pretraining.json").read_text())
  # random, electra and mlm from their final checkpoints, both runs from their middle one
  vocab_size = len((tmp_path / "run" / "data" / "vocab.txt").read_text().splitlines())
  mlm_steps = paper_claim.mlm_steps(paper_claim.Recipe(**dict(recipe, seeds=(1,))), vocab_size)
  kept = paper_claim._checkpoint_steps(str(tmp_path / "run" / "models" / "mlm_tiny"))
  assert kept[-1] == mlm_steps and len(kept) >= 3  # step 0, every half of the run, the end
  assert sorted((r["init"], r["checkpoint_step"]) for r in rows) == (
    [("electra", 10), ("electra", 20)] + [("mlm", s) for s in kept if s] + [("random", 0)]
  )
  for r in rows:
    assert r["train_rows"] == 64 and r["task"] == "sst" and 0 <= r["metric"] <= 100
    assert (r["pretraining_flops"] == 0) == (r["init"] == "random")
  electra = {r["checkpoint_step"]: r["pretraining_flops"] for r in rows if r["init"] == "electra"}
  assert electra[20] == pytest.approx(2 * electra[10])
  mlm = max(r["pretraining_flops"] for r in rows if r["init"] == "mlm")
  assert abs(mlm / electra[20] - 1) < 0.1
  curves = json.loads((reports / "paper_claim_curves_tiny.json").read_text())
  assert [p["global_step"] for p in curves["electra"]] == [0, 10, 20]
  assert "disc_auc_at_temperature_1" in curves["electra"][-1]
  assert "disc_auc_at_temperature_1" not in curves["mlm"][-1]
  assert (reports / "paper_claim_payoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  page = docs.read_text()
  assert "old" not in page and "Payoff (SST-2 dev accuracy" in page and page.endswith("after\n")
  # A second run finds every stage done and fine-tunes nothing again.
  before = (reports / "glue_pretraining.json").read_text()
  assert paper_claim.main(argv) == 0
  assert (reports / "glue_pretraining.json").read_text() == before
