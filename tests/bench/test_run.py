"""A full `python -m bench` run writes its tables into docs/benchmarks.md
between the generated-section markers and nowhere else (on a temporary copy
of the page; no benchmark is run)."""

import json
import subprocess

import pytest

from bench import run
from tests.conftest import REPO_ROOT


@pytest.fixture
def page(tmp_path):
  copy = tmp_path / "benchmarks.md"
  copy.write_text((REPO_ROOT / "docs" / "benchmarks.md").read_text())
  return copy


def _outside(text):
  start = text.index(run.DOCS_START) + len(run.DOCS_START)
  return text[:start], text[text.index(run.DOCS_END) :]


def test_the_page_has_one_generated_section():
  text = (REPO_ROOT / "docs" / "benchmarks.md").read_text()
  assert text.count(run.DOCS_START) == 1 and text.count(run.DOCS_END) == 1
  assert text.index(run.DOCS_START) < text.index(run.DOCS_END)


def test_writes_between_the_markers_only(page):
  before = page.read_text()
  run.write_docs_section(str(page), "\n### bench_x: y\n| a |\n|---|\n| 101 |\n\n")
  after = page.read_text()
  assert _outside(after) == _outside(before)
  assert f"{run.DOCS_START}\n### bench_x: y\n| a |\n|---|\n| 101 |\n{run.DOCS_END}" in after
  run.write_docs_section(str(page), "### bench_x: y\n| a |\n|---|\n| 202 |")
  again = page.read_text()
  assert _outside(again) == _outside(before)
  assert "| 101 |" not in again and "| 202 |" in again


@pytest.mark.parametrize(
  "text", ["no markers", f"{run.DOCS_END}\n{run.DOCS_START}", f"{run.DOCS_START}\n{run.DOCS_START}"]
)
def test_refuses_a_page_without_one_ordered_pair(tmp_path, text):
  bad = tmp_path / "bad.md"
  bad.write_text(text)
  with pytest.raises(ValueError):
    run.write_docs_section(str(bad), "table")
  assert bad.read_text() == text


def _fake_benchmarks(monkeypatch, returncode=0):
  def fake_run(cmd, cwd=None):
    out = cmd[cmd.index("--json") + 1]
    with open(out, "w") as f:
      json.dump({"benchmark": "fake", "rows": [{"name": "row", "examples_per_s": 1.5}]}, f)
    return subprocess.CompletedProcess(cmd, returncode)

  monkeypatch.setattr(run.subprocess, "run", fake_run)
  monkeypatch.setattr(run, "BENCHMARKS", ("bench_a", "bench_b"))


def test_a_full_run_writes_the_page(monkeypatch, tmp_path, page):
  _fake_benchmarks(monkeypatch)
  before = page.read_text()
  assert run.main(["--output-dir", str(tmp_path / "out"), "--docs-page", str(page)]) == 0
  after = page.read_text()
  assert _outside(after) == _outside(before)
  assert "### bench_a: fake" in after and "### bench_b: fake" in after
  assert "| row | 1.5 |" in after


@pytest.mark.parametrize(
  "argv, returncode",
  [(["--quick"], 0), (["--only", "bench_a"], 0), ([], 1)],
  ids=["quick", "only", "failed"],
)
def test_partial_or_failed_runs_leave_the_page(monkeypatch, tmp_path, page, argv, returncode):
  _fake_benchmarks(monkeypatch, returncode)
  before = page.read_text()
  run.main(argv + ["--output-dir", str(tmp_path / "out"), "--docs-page", str(page)])
  assert page.read_text() == before
