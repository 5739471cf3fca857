"""bench.compare_revisions: rows matched by name, ratios the right way up."""

import pytest

from bench import compare_revisions


def test_rows_are_matched_by_name_and_ratios_say_how_many_times_better():
  before = [
    {"name": "a", "latency_ms": 40.0, "latency_p90_ms": 50.0, "fp32_matmul_gflop_per_s": 90.0},
    {"name": "b", "examples_per_s": 100.0},
    {"name": "only before", "latency_ms": 1.0},
  ]
  after = [
    {"name": "b", "examples_per_s": 150.0},
    {"name": "a", "latency_ms": 20.0, "latency_p90_ms": 40.0, "fp32_matmul_gflop_per_s": 95.0},
    {"name": "only after", "latency_ms": 1.0},
  ]
  rows = {r["name"]: r for r in compare_revisions.compare(before, after)}
  assert set(rows) == {"a", "b"}
  assert rows["a"]["latency_ms"] == {"before": 40.0, "after": 20.0, "ratio": 2.0}
  assert rows["a"]["latency_p90_ms"]["ratio"] == 1.25
  assert rows["a"]["fp32_matmul_gflop_per_s"] == [90.0, 95.0]
  assert rows["b"]["examples_per_s"]["ratio"] == 1.5
  report = {
    "report": "r",
    "before": "0" * 40,
    "after": "1" * 40,
    "date": "today",
    "machine": "m",
    "rows": list(rows.values()),
  }
  text = compare_revisions.to_markdown(report)
  assert "| a | latency_ms | 40.0 | 20.0 | 2.0 |" in text
  assert "| b | examples_per_s | 100.0 | 150.0 | 1.5 |" in text
  assert "90, 95 GFLOP/s" in text and "Benchmark code" not in text
  report["bench_code"] = "after revision's on both sides"
  assert "Benchmark code: after revision's on both sides." in compare_revisions.to_markdown(report)


def test_an_unknown_revision_is_one_line():
  with pytest.raises(SystemExit, match="'no-such-rev' is not a commit"):
    compare_revisions.main(
      ["--before", "no-such-rev", "--benchmark", "bench_serving", "--report", "x"]
    )
