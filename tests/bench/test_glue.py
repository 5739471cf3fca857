"""`python -m bench.glue --quick` on a GLUE folder the test writes (SST-2 and
CoLA in GLUE's layouts, a tiny vocab): one `run_finetuning` child per task,
rows with the run's own dev metric, wall time and peak RSS; and the pieces
around it (task discovery, row slicing, merging reports, the docs section,
the pre-training FLOPs of a run's config.json)."""

import json
import os
import subprocess
import sys

import pytest

from bench import glue
from electra_tf.utils import flops as flops_lib
from tests.conftest import REPO_ROOT
from tests.helpers.finetuning_testdata import write_vocab

SENTENCES = [
  ("the movie was great", 1),
  ("the film is awful", 0),
  ("a good and happy film", 1),
  ("it was a bad movie", 0),
  ("he is happy", 1),
  ("she is sad", 0),
  ("the red fox jumps", 1),
  ("the dog ran slow", 0),
]
TRAIN_ROWS = 24
DEV_ROWS = 12


def _write_glue(root):
  """SST-2 (header `sentence`, `label`) and CoLA (no header: source, label,
  mark, sentence) with TRAIN_ROWS and DEV_ROWS rows."""

  def rows(n):
    return [SENTENCES[i % len(SENTENCES)] for i in range(n)]

  for split, n in (("train.tsv", TRAIN_ROWS), ("dev.tsv", DEV_ROWS)):
    sst = root / "SST-2"
    sst.mkdir(exist_ok=True)
    (sst / split).write_text(
      "sentence\tlabel\n" + "".join(f"{s} \t{label}\n" for s, label in rows(n))
    )
    cola = root / "CoLA"
    cola.mkdir(exist_ok=True)
    (cola / split).write_text(
      "".join(f"src\t{label}\t{'' if label else '*'}\t{s}\n" for s, label in rows(n))
    )
  (root / "WNLI").mkdir()  # not a task of the original's: ignored


@pytest.mark.slow
def test_quick_run_writes_one_row_per_task_with_the_runs_metric(tmp_path):
  glue_dir = tmp_path / "glue"
  glue_dir.mkdir()
  _write_glue(glue_dir)
  vocab = tmp_path / "vocab.txt"
  write_vocab(str(vocab))
  page = tmp_path / "benchmarks.md"
  page.write_text(f"before\n{glue.DOCS_START}\nold\n{glue.DOCS_END}\nafter\n")
  reports, work = tmp_path / "reports", tmp_path / "work"
  command = [
    sys.executable, "-m", "bench.glue", "--quick", "--random-init", "--init-name", "rand",
    "--glue-dir", str(glue_dir), "--vocab-file", str(vocab), "--report-dir", str(reports),
    "--work-dir", str(work), "--docs-page", str(page), "--seeds", "7,8",
  ]  # fmt: skip
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  proc = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  rows = json.loads((reports / "glue_rand.json").read_text())
  assert [(r["task"], r["glue_task"], r["seed"]) for r in rows] == [
    ("cola", "CoLA", 7),
    ("sst", "SST-2", 7),
  ]  # --quick keeps the first seed
  for row in rows:
    results = json.loads(
      (
        work
        / "data"
        / "models"
        / f"rand-{row['task']}-seed7"
        / "results"
        / f"{row['task']}_results.json"
      ).read_text()
    )
    name = {"sst": "accuracy", "cola": "mcc"}[row["task"]]
    assert row["metric_name"] == name
    assert row["metric"] == pytest.approx(results[0][row["task"]][name], abs=1e-4)
    assert row["init"] == "rand" and row["pretraining_flops"] == 0
    assert row["train_examples"] == TRAIN_ROWS and row["dev_examples"] == DEV_ROWS
    assert row["max_seq_length"] == glue.QUICK["max_seq_length"]
    assert row["epochs"] == glue.QUICK["epochs"]
    assert (row["learning_rate"], row["layerwise_lr_decay"]) == (3e-4, 0.8)
    assert row["wall_s"] > 0 and row["peak_rss_mb"] > 100
    # The checkpoints are removed; the results stay.
    assert not (
      work / "data" / "models" / f"rand-{row['task']}-seed7" / "finetuning_models"
    ).exists()
  assert "| rand | SST-2 | accuracy | 1 |" in (reports / "glue_rand.md").read_text()
  # A smoke run leaves the docs page alone.
  assert "old" in page.read_text()


def test_finds_the_glue_folders_it_knows(tmp_path):
  _write_glue(tmp_path)
  (tmp_path / "RTE").mkdir()  # no files: not a task
  (tmp_path / "MNLI").mkdir()
  (tmp_path / "MNLI" / "train.tsv").write_text("")
  (tmp_path / "MNLI" / "dev_matched.tsv").write_text("")
  assert glue.find_tasks(str(tmp_path)) == [("CoLA", "cola"), ("SST-2", "sst"), ("MNLI", "mnli")]


def test_copy_rows_keeps_the_header_and_draws_the_same_rows_every_time(tmp_path):
  source = tmp_path / "in.tsv"
  source.write_text("sentence\tlabel\n" + "".join(f"s{i}\t{i % 2}\n" for i in range(100)))
  first = tmp_path / "a.tsv"
  assert glue.copy_rows(str(source), str(first), "sst", 10, sample=True) == 10
  lines = first.read_text().splitlines()
  assert lines[0] == "sentence\tlabel" and len(lines) == 11
  numbers = [int(line.split("\t")[0][1:]) for line in lines[1:]]
  assert numbers == sorted(numbers) and numbers != list(range(10))  # drawn, in file order
  second = tmp_path / "b.tsv"
  glue.copy_rows(str(source), str(second), "sst", 10, sample=True)
  assert second.read_text() == first.read_text()
  # CoLA has no header: its first line is a row.
  cola = tmp_path / "cola.tsv"
  assert glue.copy_rows(str(source), str(cola), "cola", 3) == 3
  assert cola.read_text().splitlines()[0] == "sentence\tlabel"
  assert glue.copy_rows(str(source), str(tmp_path / "all.tsv"), "sst") == 100


def _row(init, task, seed, metric):
  return {
    "init": init, "task": task, "glue_task": task.upper(), "seed": seed, "metric": metric,
    "metric_name": "accuracy", "pretraining_flops": 0, "wall_s": 10.0, "peak_rss_mb": 500.0,
    "max_seq_length": 64, "epochs": 3.0, "train_examples": 100, "dev_examples": 50,
    "learning_rate": 3e-4, "layerwise_lr_decay": 0.8, "date": "d", "machine": "m",
  }  # fmt: skip


def test_rows_of_another_init_stay_and_the_same_seed_is_replaced():
  old = [_row("random", "sst", 1, 50.0), _row("electra", "sst", 1, 80.0)]
  merged = glue.merge_rows(old, [_row("random", "sst", 1, 52.0), _row("random", "sst", 2, 54.0)])
  assert [(r["init"], r["seed"], r["metric"]) for r in merged] == [
    ("electra", 1, 80.0),
    ("random", 1, 52.0),
    ("random", 2, 54.0),
  ]


def test_the_table_gives_median_and_spread_over_seeds():
  rows = [_row("random", "sst", s, m) for s, m in ((1, 50.0), (2, 60.0), (3, 56.0))]
  (line,) = [x for x in glue.markdown("r", rows).splitlines() if x.startswith("| random")]
  assert "| 3 | 56.00 | 50.00 – 60.00 |" in line


def test_docs_section_holds_every_report_between_the_markers(tmp_path):
  reports = tmp_path / "reports"
  reports.mkdir()
  (reports / "glue_a.json").write_text(json.dumps([_row("a", "sst", 1, 70.0)]))
  (reports / "glue_b.json").write_text(json.dumps([_row("b", "cola", 1, 10.0)]))
  # the paper-claim join repeats rows of the reports beside it: not listed twice
  (reports / "glue_pretraining.json").write_text(json.dumps([_row("a", "sst", 1, 70.0)]))
  page = tmp_path / "page.md"
  page.write_text(f"head\n{glue.DOCS_START}\nold\n{glue.DOCS_END}\ntail\n")
  glue.write_docs_section(str(page), glue.docs_section(str(reports)))
  text = page.read_text()
  assert text.startswith(f"head\n{glue.DOCS_START}\n") and text.endswith(f"{glue.DOCS_END}\ntail\n")
  assert "glue_a" in text and "glue_b" in text and "old" not in text
  assert "glue_pretraining" not in text and text.count("| a | SST |") == 1
  page.write_text("no markers")
  with pytest.raises(ValueError):
    glue.write_docs_section(str(page), "x")


def test_the_docs_page_has_one_glue_section():
  text = (REPO_ROOT / "docs" / "benchmarks.md").read_text()
  assert text.count(glue.DOCS_START) == 1 and text.count(glue.DOCS_END) == 1


@pytest.mark.parametrize("untied", [False, True])
def test_pretraining_flops_from_the_runs_config(tmp_path, untied):
  discriminator = {
    "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
    "intermediate_size": 128, "vocab_size": 1000,
  }  # fmt: skip
  generator = dict(discriminator, hidden_size=16, intermediate_size=32)
  (tmp_path / "config.json").write_text(
    json.dumps(
      {
        "kind": "pretraining",
        "hparams": {
          "max_seq_length": 32,
          "train_batch_size": 8,
          "untied_generator_embeddings": untied,
        },
        "architecture": {
          "embedding_size": 24,
          "discriminator": discriminator,
          "generator": generator,
        },
      }
    )
  )
  (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-300"\n')
  d = flops_lib.TransformerHparams(64, 2, s=32, v=1000, e=24, i=128, heads=2)
  g = flops_lib.TransformerHparams(16, 2, s=32, v=1000, e=None if untied else 24, i=32, heads=2)
  expected = d.get_train_flops(8, 300, discriminator=True) + g.get_train_flops(8, 300)
  assert glue.pretraining_flops(str(tmp_path)) == pytest.approx(expected)
  # A checkpoint prefix reads its directory's files; a dir with no config.json records nothing.
  assert glue.pretraining_flops(str(tmp_path / "ckpt-300")) == pytest.approx(expected)
  # An explicit earlier checkpoint counts its own step, not the run's newest.
  assert glue.pretraining_flops(str(tmp_path / "model.ckpt-100")) == pytest.approx(expected / 3)
  (tmp_path / "other").mkdir()
  assert glue.pretraining_flops(str(tmp_path / "other")) is None


def test_a_folder_without_glue_tasks_is_refused(tmp_path):
  proc = subprocess.run(
    [sys.executable, "-m", "bench.glue", "--random-init", "--init-name", "x", "--glue-dir",
     str(tmp_path), "--vocab-file", str(tmp_path / "v.txt")],
    cwd=REPO_ROOT, capture_output=True, text=True,
  )  # fmt: skip
  assert proc.returncode == 2
  assert "no GLUE task folder" in proc.stderr.strip().splitlines()[-1]
