"""The official GLUE SST-2 and CoLA files go through the commands of
docs/finetune.md ("Official GLUE: SST-2 and CoLA"), and the metric each run
reports is the original's: accuracy for SST-2, Matthews correlation for CoLA,
equal to the textbook definitions computed here on the same predictions.

The docs' block runs as written on the first rows of `../shared/data/glue`
(its copy commands in bash, its `run_finetuning` commands with their hparams
plus a tiny random-init model). The predictions come from the run itself:
the dev rows are also written as the task's `test.tsv` (GLUE's test layout),
and `"write_test_outputs": true` makes the run write their logits. The model
learns nothing in a few steps; only the metric's definition is checked.
"""

import json
import os
import shlex
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO_ROOT
from tests.conftest import SHARED_FIXTURES
from tests.helpers import doc_blocks
from tests.helpers.finetuning_testdata import write_vocab

GLUE_DIR = REPO_ROOT.parent / "shared" / "data" / "glue"
TRAIN_ROWS = 48
DEV_ROWS = 40
TASKS = {"sst": ("SST-2", "accuracy"), "cola": ("CoLA", "mcc")}
# A tiny random-init encoder and a handful of steps: the test is about what is
# reported, not about what is learned. Predictions must differ between
# sentences (else MCC is 0 whatever its definition): at the usual init scale a
# tiny encoder's [CLS] output hardly depends on the sentence, and a few steps
# teach it the majority class. So the weights start 25 times larger and the
# learning rate keeps them there.
TINY = {
  "model_size": "base",
  "embedding_size": 16,
  "model_hparam_overrides": {
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "initializer_range": 0.5,
  },
  "init_checkpoint": None,
  "max_seq_length": 32,
  "train_batch_size": 16,
  "eval_batch_size": 16,
  "predict_batch_size": 16,
  "num_train_epochs": 1.0,
  "learning_rate": 1e-7,
  "seed": 3,
  "write_test_outputs": True,
}


def _docs_block():
  for block in doc_blocks.page_blocks("docs/finetune.md"):
    # The section's block: its needs line names the official files (the page's
    # opening block names GLUE data too, but for any task).
    label = block.label.lower()
    if block.lang == "bash" and "official glue" in label and "run_finetuning" in block.code:
      return block
  raise AssertionError(
    "docs/finetune.md has no official-GLUE block (needs: the official GLUE files ...)"
  )


def _commands(code):
  """The block's commands, continuation lines joined, comments dropped."""
  joined = code.replace("\\\n", " ")
  return [line.strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def _slice(source, target, rows, header):
  with open(source, encoding="utf-8") as f:
    lines = f.readlines()
  target.parent.mkdir(parents=True, exist_ok=True)
  target.write_text("".join(lines[: rows + (1 if header else 0)]), encoding="utf-8")


@pytest.fixture(scope="module")
def glue_slice(tmp_path_factory):
  """GLUE's folders with the first rows of the official files."""
  missing = [
    str(GLUE_DIR / folder / split)
    for folder, _ in TASKS.values()
    for split in ("train.tsv", "dev.tsv")
    if not (GLUE_DIR / folder / split).is_file()
  ]
  if missing:
    pytest.skip(f"official GLUE files not found: {', '.join(missing)} (../shared/data/glue)")
  root = tmp_path_factory.mktemp("glue")
  for task, (folder, _) in TASKS.items():
    header = task != "cola"  # CoLA's files have no header row
    _slice(GLUE_DIR / folder / "train.tsv", root / folder / "train.tsv", TRAIN_ROWS, header)
    _slice(GLUE_DIR / folder / "dev.tsv", root / folder / "dev.tsv", DEV_ROWS, header)
  return root


@pytest.fixture(scope="module")
def docs_run(glue_slice, tmp_path_factory):
  """Runs the docs' block on the slice; returns the data dir and the hparams
  of each `run_finetuning` command by task."""
  data_dir = tmp_path_factory.mktemp("data")
  vocab = SHARED_FIXTURES / "vocab.txt"
  if not vocab.is_file():  # the original's vocab; a tiny one does as well for this test
    vocab = data_dir / "tiny_vocab.txt"
    write_vocab(str(vocab))
  env = dict(os.environ, DATA_DIR=str(data_dir), GLUE_DIR=str(glue_slice), TF_CPP_MIN_LOG_LEVEL="3")
  hparams_by_task = {}
  for command in _commands(_docs_block().code):
    if "electra_tf.run_finetuning" not in command:
      subprocess.run(["bash", "-c", command], env=env, check=True, cwd=REPO_ROOT)
      continue
    argv = shlex.split(os.path.expandvars(command.replace("$DATA_DIR", str(data_dir))))
    assert argv[:3] == ["python", "-m", "electra_tf.run_finetuning"], command
    at = argv.index("--hparams") + 1
    documented = json.loads(argv[at])
    (task,) = documented["task_names"]
    if task == "cola":
      # The dev rows as GLUE's test file (index, sentence) so the run writes their logits.
      dev = (data_dir / "finetuning_data" / "cola" / "dev.tsv").read_text().splitlines()
      test = ["index\tsentence"] + [f"{i}\t{r.split(chr(9))[3]}" for i, r in enumerate(dev)]
    else:
      dev = (data_dir / "finetuning_data" / task / "dev.tsv").read_text().splitlines()[1:]
      test = ["index\tsentence"] + [f"{i}\t{r.split(chr(9))[0]}" for i, r in enumerate(dev)]
    (data_dir / "finetuning_data" / task / "test.tsv").write_text("\n".join(test) + "\n")
    hparams = {**documented, **TINY, "vocab_file": str(vocab)}
    argv[at] = json.dumps(hparams)
    proc = subprocess.run(
      [sys.executable, *argv[1:]], env=env, cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    hparams_by_task[task] = (argv[argv.index("--model-name") + 1], documented)
  assert sorted(hparams_by_task) == ["cola", "sst"], "the block must run SST-2 and CoLA"
  return data_dir, hparams_by_task


def _dev_labels(data_dir, task):
  lines = (data_dir / "finetuning_data" / task / "dev.tsv").read_text().splitlines()
  if task == "cola":
    return [int(line.split("\t")[1]) for line in lines]
  return [int(line.split("\t")[-1]) for line in lines[1:]]


@pytest.mark.slow
def test_the_docs_place_the_files_as_the_readers_expect(docs_run, glue_slice):
  data_dir, _ = docs_run
  for task, (folder, _) in TASKS.items():
    for split in ("train.tsv", "dev.tsv"):
      copied = data_dir / "finetuning_data" / task / split
      assert copied.read_bytes() == (glue_slice / folder / split).read_bytes()


def test_the_docs_use_the_original_recipe_for_small(docs_run):
  _, runs = docs_run
  for task, (_, documented) in runs.items():
    assert documented["model_size"] == "small", task
    assert documented["learning_rate"] == 3e-4, task


@pytest.mark.parametrize("task", sorted(TASKS))
def test_reported_metric_is_the_originals_on_the_same_predictions(docs_run, task):
  data_dir, runs = docs_run
  model_name = runs[task][0]
  folder, metric = TASKS[task]
  model_dir = data_dir / "models" / model_name
  results = json.loads((model_dir / "results" / f"{task}_results.json").read_text())
  assert len(results) == 1 and sorted(results[0]) == [task]
  reported = results[0][task]
  assert sorted(reported) == sorted([metric, "loss"]), reported
  logits = json.loads(
    (model_dir / "test_predictions" / f"{task}_test_1_predictions.json").read_text()
  )
  labels = _dev_labels(data_dir, task)
  # Every dev row was read (CoLA: no header row skipped; SST-2: the header skipped).
  assert sorted(int(eid) for eid in logits) == list(range(len(labels)))
  assert len(labels) == DEV_ROWS
  predictions = [int(np.argmax(logits[str(i)])) for i in range(len(labels))]
  # Both classes predicted, so that the check can tell the metrics apart.
  assert sorted(set(predictions)) == [0, 1], predictions
  if metric == "accuracy":
    expected = 100.0 * np.mean(np.equal(labels, predictions))
  else:
    # For two classes Matthews' coefficient is the phi coefficient: Pearson's
    # correlation of the 0/1 labels with the 0/1 predictions.
    expected = 100.0 * np.corrcoef(labels, predictions)[0, 1]
  assert reported[metric] == pytest.approx(expected, abs=1e-6), (predictions, labels)
  text = (model_dir / "results" / f"{task}_results.txt").read_text()
  assert f"{task}: {metric}: {reported[metric]:.2f}" in text


# SST-2's 67k training rows take about 40 s: the slow tier reads them.
@pytest.mark.parametrize(
  "task", [pytest.param(t, marks=[pytest.mark.slow] if t == "sst" else []) for t in sorted(TASKS)]
)
def test_the_readers_take_every_row_of_the_whole_official_files(task, tmp_path):
  """SST-2's header is skipped and CoLA's first line is a row: every row of
  the official train and dev files is an example, with its own label."""
  from electra_tf.finetune import task_builder
  from electra_tf.text import wordpiece
  from tests.helpers.finetuning_testdata import finetuning_config

  folder, _ = TASKS[task]
  if not (GLUE_DIR / folder).is_dir():
    pytest.skip(f"official GLUE files not found in {GLUE_DIR / folder}")
  (tmp_path / "finetuning_data").mkdir()
  (tmp_path / "finetuning_data" / task).symlink_to(GLUE_DIR / folder)
  vocab = tmp_path / "vocab.txt"
  write_vocab(str(vocab))
  config = finetuning_config("m", str(tmp_path), task_names=[task], vocab_file=str(vocab))
  (reader,) = task_builder.get_tasks(config, wordpiece.FullTokenizer(str(vocab)))
  for split in ("train", "dev"):
    lines = (GLUE_DIR / folder / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
    rows = [line.split("\t") for line in (lines if task == "cola" else lines[1:])]
    label_column = 1 if task == "cola" else -1
    examples = reader.get_examples(split)
    assert [e.label for e in examples] == [row[label_column] for row in rows]
    assert [e.text_a for e in examples] == [row[3 if task == "cola" else 0] for row in rows]
    reader.check_examples(split)
