"""Runs every benchmark, each in its own child process (one process tree),
and writes `bench/results/benchmarks.{json,md}`. A full run (no `--quick`,
no `--only`) in which every benchmark succeeded also writes its tables into
docs/benchmarks.md, between the generated-section markers; the page's
hand-written text around them is left as it is.

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

from bench.common import REPO_ROOT
from bench.common import machine_description
from bench.common import replace_between_markers
from bench.common import write_atomic

BENCHMARKS = (
  "bench_pretraining_step",
  "bench_finetuning",
  "bench_hf_peer",
  "bench_build_dataset",
  "bench_beam",
  "bench_tokenizer",
  "bench_serving",
  "bench_quantization",
  "bench_record_check",
  "bench_vocab",
)
RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
DOCS_PAGE = os.path.join(REPO_ROOT, "docs", "benchmarks.md")
DOCS_START = "<!-- bench:generated:start (written by python -m bench) -->"
DOCS_END = "<!-- bench:generated:end -->"
_COLUMNS = (
  "name",
  "sequences_per_s",
  "examples_per_s",
  "mb_per_s",
  "tokens_per_s",
  "latency_ms",
  "utilisation_of_fp32_matmul",
  "peak_rss_mb",
  "wall_s",
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


def write_docs_section(path, markdown):
  """Replaces what lies between `DOCS_START` and `DOCS_END` in the page at
  `path`; every byte outside them stays as it was."""
  replace_between_markers(path, DOCS_START, DOCS_END, markdown)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--only", default="", help="comma-separated benchmark modules")
  parser.add_argument("--output-dir", default=RESULTS_DIR)
  parser.add_argument(
    "--docs-page",
    default=DOCS_PAGE,
    help="page whose generated section a full run rewrites ('' to leave it alone)",
  )
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
  succeeded = all("error" not in r for r in results)
  full_run = not args.quick and not args.only
  if full_run and succeeded and args.docs_page:
    write_docs_section(args.docs_page, markdown)
    print(f"wrote the figures into {args.docs_page}")
  elif full_run and args.docs_page:
    print(f"{args.docs_page} left as it was: a benchmark failed")
  return 0 if succeeded else 1


if __name__ == "__main__":
  sys.exit(main())
