"""Runs benchmarks on two revisions of this repository, one right after the
other on the same machine, and writes their rows side by side with the ratio
after / before: the "same run" comparison a performance change needs.

  python -m bench.compare_revisions --before 0ddce0b --after HEAD \\
      --benchmark bench_serving \\
      --benchmark "bench_pretraining_step --model-size small --seq-length 128 --batch 32" \\
      --report lean_graph

Each revision is checked out with `git worktree add --detach` into a temporary
folder and each benchmark runs there as `python -m bench.<name> --json ...`
with that folder first on `PYTHONPATH`, so the benchmark code and the library
are the revision's own. The order alternates (before, after; then after,
before for the next benchmark) so a machine that slows down over the run
does not favour one side. Rows are matched by `name`; the report is
`<report-dir>/<report>.{json,md}`.

`--bench-code after` runs the after revision's `bench/` on both sides (the
before tree gets it checked out over its own), for a benchmark option the
before revision did not have yet; the library measured is still each side's.
"""

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import tempfile

from bench.common import REPO_ROOT
from bench.common import machine_description
from bench.common import write_atomic

REPORT_DIR = os.path.join(REPO_ROOT, "bench", "reports")
# Columns compared; the ratio says how many times better "after" is (for a
# latency: before / after; for a rate: after / before).
RATES = ("sequences_per_s", "examples_per_s", "tokens_per_s", "mb_per_s")
LATENCIES = ("latency_ms", "latency_p90_ms")
MACHINE_COLUMNS = ("fp32_matmul_gflop_per_s", "bf16_matmul_gflop_per_s")


def _revision(rev):
  try:
    sha = subprocess.run(
      ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"],
      cwd=REPO_ROOT,
      check=True,
      capture_output=True,
      text=True,
    ).stdout.strip()
  except subprocess.CalledProcessError:
    raise SystemExit(f"compare_revisions: {rev!r} is not a commit of {REPO_ROOT}") from None
  return sha


def _run_benchmark(tree, command, json_path):
  """`python -m bench.<command> --json json_path` inside `tree`; its rows."""
  args = shlex.split(command)
  env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="2")
  cmd = [sys.executable, "-m", f"bench.{args[0]}", *args[1:], "--json", json_path]
  print(f"[{os.path.basename(tree)}] {' '.join(cmd[2:])}", flush=True)
  subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
  with open(json_path) as f:
    return json.load(f)["rows"]


def compare(before_rows, after_rows):
  """Rows of both sides matched by name, each with `before`, `after` and
  `ratio` (how many times better after is) for every measured column."""
  after_by_name = {r["name"]: r for r in after_rows}
  compared = []
  for row in before_rows:
    other = after_by_name.get(row["name"])
    if other is None:
      continue
    entry = {"name": row["name"]}
    for column in RATES + LATENCIES:
      if isinstance(row.get(column), (int, float)) and isinstance(other.get(column), (int, float)):
        b, a = row[column], other[column]
        better = (a / b) if column in RATES else (b / a)
        entry[column] = {"before": b, "after": a, "ratio": round(better, 2) if b and a else None}
    for column in MACHINE_COLUMNS:
      if column in row:
        entry[column] = [row[column], other.get(column)]
    if len(entry) > 1:
      compared.append(entry)
  return compared


def to_markdown(report):
  lines = [
    f"#### `{report['report']}`: {report['before'][:10]} → {report['after'][:10]}",
    "",
    "| row | column | before | after | × better |",
    "|---|---|---|---|---|",
  ]
  for entry in report["rows"]:
    for column in RATES + LATENCIES:
      if column in entry:
        c = entry[column]
        lines.append(
          f"| {entry['name']} | {column} | {c['before']} | {c['after']} | {c['ratio']} |"
        )
  rates = sorted(
    {f"{v:g}" for e in report["rows"] for v in e.get("fp32_matmul_gflop_per_s", []) if v}
  )
  lines += [
    "",
    f"Run {report['date']} on {report['machine']}; fp32 GEMM rate measured by the benchmarks: "
    f"{', '.join(rates) or 'not recorded'} GFLOP/s. Ratio: before/after for latencies, "
    "after/before for rates (above 1: the after revision is faster).",
  ]
  if report.get("bench_code"):
    lines[-1] += f" Benchmark code: {report['bench_code']}."
  return "\n".join(lines) + "\n"


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--before", required=True, help="a commit, tag or branch")
  parser.add_argument("--after", default="HEAD")
  parser.add_argument(
    "--benchmark",
    action="append",
    required=True,
    help="a benchmark module of bench/ with its arguments, e.g. 'bench_serving --quick'",
  )
  parser.add_argument(
    "--bench-code",
    choices=("own", "after"),
    default="own",
    help="whose bench/ runs on the before side: its own, or the after revision's",
  )
  parser.add_argument("--report", required=True, help="report name: <report>.{json,md}")
  parser.add_argument("--report-dir", default=REPORT_DIR)
  args = parser.parse_args(argv)
  before, after = _revision(args.before), _revision(args.after)
  rows = []
  with tempfile.TemporaryDirectory(prefix="compare_revisions_") as tmp:
    trees = {}
    for side, sha in (("before", before), ("after", after)):
      trees[side] = os.path.join(tmp, side)
      subprocess.run(
        ["git", "worktree", "add", "--detach", trees[side], sha],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
      )
    if args.bench_code == "after":
      subprocess.run(
        ["git", "checkout", after, "--", "bench"],
        cwd=trees["before"],
        check=True,
        capture_output=True,
      )
    try:
      for i, command in enumerate(args.benchmark):
        order = ("before", "after") if i % 2 == 0 else ("after", "before")
        result = {
          side: _run_benchmark(trees[side], command, os.path.join(tmp, f"{side}{i}.json"))
          for side in order
        }
        rows += compare(result["before"], result["after"])
    finally:
      for tree in trees.values():
        subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=REPO_ROOT, check=False)
  report = {
    "report": args.report,
    "before": before,
    "after": after,
    "benchmarks": args.benchmark,
    "bench_code": "after revision's on both sides"
    if args.bench_code == "after"
    else "each side's own",
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "machine": machine_description(),
    "rows": rows,
  }
  os.makedirs(args.report_dir, exist_ok=True)
  base = os.path.join(args.report_dir, args.report)
  write_atomic(base + ".json", json.dumps(report, indent=1) + "\n")
  write_atomic(base + ".md", to_markdown(report))
  print(to_markdown(report))


if __name__ == "__main__":
  main()
