"""Runs every benchmark, each in its own child process (one process tree),
and writes `bench/results/benchmarks.{json,md}`.

  python -m bench            # everything
  python -m bench --quick    # a short smoke run of everything
  python -m bench --only bench_serving,bench_tokenizer
  python -m bench --only bench_record_check
"""

import argparse
import datetime
import json
import os
import subprocess
import sys

from bench.common import machine_description
from bench.common import write_atomic

BENCHMARKS = (
  "bench_pretraining_step",
  "bench_finetuning",
  "bench_hf_peer",
  "bench_build_dataset",
  "bench_beam",
  "bench_tokenizer",
  "bench_serving",
  "bench_record_check",
)
RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
_COLUMNS = (
  "name",
  "sequences_per_s",
  "examples_per_s",
  "mb_per_s",
  "tokens_per_s",
  "latency_ms",
  "utilisation_of_fp32_matmul",
  "peak_rss_mb",
)


def _markdown(results, started):
  lines = [f"Benchmarks run {started} on: {machine_description()}", ""]
  for result in results:
    lines.append(f"### {result['module']}: {result.get('benchmark', '')}")
    if "error" in result:
      lines.append(f"failed: {result['error']}")
      lines.append("")
      continue
    rows = result["rows"]
    columns = [c for c in _COLUMNS if any(c in row for row in rows)]
    extra = sorted({k for row in rows for k in row} - set(columns))
    columns += extra
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "---|" * len(columns))
    for row in rows:
      lines.append("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    lines.append("")
  return "\n".join(lines)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--only", default="", help="comma-separated benchmark modules")
  parser.add_argument("--output-dir", default=RESULTS_DIR)
  args = parser.parse_args(argv)
  modules = [m for m in args.only.split(",") if m] or list(BENCHMARKS)
  os.makedirs(args.output_dir, exist_ok=True)
  started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
  results = []
  for module in modules:
    out = os.path.join(args.output_dir, f"{module}.json")
    cmd = [sys.executable, "-m", f"bench.{module}", "--json", out] + (
      ["--quick"] if args.quick else []
    )
    print(f"== {' '.join(cmd)}", flush=True)
    proc = subprocess.run(cmd, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if proc.returncode != 0 or not os.path.exists(out):
      results.append({"module": module, "error": f"exit code {proc.returncode}"})
      continue
    with open(out) as f:
      result = json.load(f)
    result["module"] = module
    results.append(result)
  summary = {"started": started, "machine": machine_description(), "results": results}
  write_atomic(os.path.join(args.output_dir, "benchmarks.json"), json.dumps(summary, indent=2))
  markdown = _markdown(results, started)
  write_atomic(os.path.join(args.output_dir, "benchmarks.md"), markdown + "\n")
  print(markdown)
  return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
  sys.exit(main())
