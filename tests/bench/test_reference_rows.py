"""The peers' rows in the training-step benchmarks: which run where, and the
one-shape options of `bench.common.main`."""

import subprocess
import sys

import pytest

from bench import reference_rows
from tests.conftest import REPO_ROOT


def test_a_gpu_runs_the_published_shapes_and_a_quick_cpu_run_shrinks_them():
  runs, reason = reference_rows.rows_to_run(reference_rows.PRETRAINING_ROWS, quick=False, gpus=1)
  assert reason is None
  assert [(s["model_size"], s["seq"], s["batch"]) for _, s in runs][:2] == [
    ("base", 128, 176),
    ("base", 512, 24),
  ]
  assert not any(s["tiny"] for _, s in runs)
  runs, reason = reference_rows.rows_to_run(reference_rows.FINETUNING_ROWS, quick=True, gpus=0)
  ((row, shape),) = runs
  assert reason is None and shape["tiny"] and shape["batch"] < row["batch"]
  assert "smoke size of 384 x batch 32" in reference_rows.describe_shape(row, shape)
  runs, reason = reference_rows.rows_to_run(reference_rows.FINETUNING_ROWS, quick=False, gpus=0)
  assert runs == [] and "no GPU visible" in reason


@pytest.mark.parametrize(
  "module, args, expected",
  [
    ("bench.bench_tokenizer", ["--model-size", "base"], "--model-size is not an option"),
    ("bench.bench_finetuning", ["--batch", "0"], "--batch=0; expected a positive integer"),
    ("bench.bench_pretraining_step", ["--model-size", "huge"], "invalid choice: 'huge'"),
    (
      "bench.bench_finetuning",
      ["--precision", "mixed_bfloat16"],
      "--precision applies to one shape",
    ),
  ],
)
def test_shape_options_are_checked_before_any_work(module, args, expected):
  proc = subprocess.run(
    [sys.executable, "-m", module, *args],
    cwd=REPO_ROOT,
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert proc.returncode == 2 and expected in proc.stderr, proc.stderr
