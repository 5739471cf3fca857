"""What every benchmark module shares: a `main` that runs it in its own
process, adds that process's peak memory, and writes the figures as JSON."""

import argparse
import inspect
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

# The original's vocab from the shared fixtures (../shared beside the repo);
# benchmarks fall back to a vocab of their own when it is absent.
FIXTURE_VOCAB = os.path.join(
  os.path.dirname(os.path.abspath(__file__)),
  "..",
  "..",
  "shared",
  "fixtures",
  "original",
  "vocab.txt",
)


def machine_description():
  """One line naming the CPU, core count and memory of this machine."""
  cpu = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        if line.startswith("model name"):
          cpu = line.split(":", 1)[1].strip()
          break
  except OSError:
    pass
  try:
    with open("/proc/meminfo") as f:
      mem_kb = int(f.readline().split()[1])
    mem = f"{mem_kb / 2**20:.0f} GiB"
  except (OSError, ValueError, IndexError):
    mem = "? GiB"
  return f"{cpu}, {os.cpu_count()} cores, {mem}, Python {platform.python_version()}"


def peak_rss_mb():
  """Peak resident memory of this process in MiB (Linux reports KiB)."""
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def call_in_child(module, function, **kwargs):
  """Runs `module.function(**kwargs)` in a fresh Python process and returns
  its dict with that process's own `peak_rss_mb` added, so that every row's
  memory is its own and not the maximum over the rows before it.

  Example:
    >>> call_in_child("bench.common", "machine_description_row")["peak_rss_mb"] > 0
    True
  """
  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "result.json")
    code = "import sys\nfrom bench.common import _child\n_child(*sys.argv[1:])"
    args = [sys.executable, "-c", code, module, function, json.dumps(kwargs), out]
    proc = subprocess.run(args, cwd=REPO_ROOT)
    if proc.returncode != 0 or not os.path.exists(out):
      raise RuntimeError(f"{module}.{function}({kwargs}) failed with exit code {proc.returncode}")
    with open(out) as f:
      return json.load(f)


def _child(module, function, kwargs_json, out):
  import importlib  # pylint: disable=g-import-not-at-top

  result = getattr(importlib.import_module(module), function)(**json.loads(kwargs_json))
  result = dict(result)
  result.setdefault("peak_rss_mb", round(peak_rss_mb(), 1))
  write_atomic(out, json.dumps(result))


def machine_description_row():
  """The machine description as a row (a cheap child for `call_in_child`)."""
  return {"machine": machine_description()}


def fresh_keras_session(precision):
  """Clears Keras' state and sets `precision` as the global dtype policy, so
  every row of a benchmark starts from the same state."""
  import keras  # pylint: disable=g-import-not-at-top

  keras.utils.clear_session()
  keras.mixed_precision.set_global_policy(precision)


def write_atomic(path, text):
  """Writes `text` to `path` through a temporary file, so an interrupted run
  never leaves a half-written result over the last good one.

  Not `electra_tf.write_atomic`: importing `electra_tf` loads TensorFlow,
  which must stay out of the PyTorch peer's process and the orchestrator."""
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    f.write(text)
  os.replace(tmp, path)


def main(run, description):
  """Runs `run(quick: bool) -> list[dict]` and writes rows with peak memory.

  Each row is one measured configuration; `name` says what it is.
  """
  parser = argparse.ArgumentParser(description=description)
  parser.add_argument("--json", help="write the rows here")
  parser.add_argument("--quick", action="store_true", help="a short smoke run")
  shape = parser.add_argument_group(
    "one shape instead of the benchmark's rows (benchmarks of a training step only)"
  )
  shape.add_argument("--model-size", choices=("small", "base", "large"))
  shape.add_argument("--seq-length", type=int)
  shape.add_argument("--batch", type=int, help="global batch")
  shape.add_argument(
    "--precision",
    choices=("float32", "mixed_float16", "mixed_bfloat16"),
    help="the Keras dtype policy of the one shape (default: mixed_float16 with XLA on a GPU, "
    "float32 on a CPU)",
  )
  args = parser.parse_args()
  sized = {
    k: v
    for k, v in (
      ("model_size", args.model_size),
      ("seq_length", args.seq_length),
      ("batch", args.batch),
      ("precision", args.precision),
    )
    if v is not None
  }
  if args.precision and not {"model_size", "seq_length", "batch"} & sized.keys():
    parser.error("--precision applies to one shape: give --model-size, --seq-length or --batch")
  for name, value in sized.items():
    if name not in inspect.signature(run).parameters:
      parser.error(f"--{name.replace('_', '-')} is not an option of this benchmark")
    if name not in ("model_size", "precision") and value < 1:
      parser.error(f"--{name.replace('_', '-')}={value}; expected a positive integer")
  start = time.time()
  rows = run(quick=args.quick, **sized)
  for row in rows:
    row.setdefault("peak_rss_mb", round(peak_rss_mb(), 1))
  result = {
    "benchmark": description,
    "seconds": round(time.time() - start, 1),
    "machine": machine_description(),
    "rows": rows,
  }
  text = json.dumps(result, indent=2)
  if args.json:
    write_atomic(args.json, text)
  print(text)
  sys.stdout.flush()


def replace_between_markers(path, start_marker, end_marker, markdown):
  """Replaces what lies between `start_marker` and `end_marker` in the page at
  `path` with `markdown`; every byte outside the markers stays as it was."""
  with open(path, encoding="utf-8") as f:
    text = f.read()
  if text.count(start_marker) != 1 or text.count(end_marker) != 1:
    raise ValueError(f"{path}: needs exactly one {start_marker!r} and one {end_marker!r}")
  start = text.index(start_marker) + len(start_marker)
  end = text.index(end_marker)
  if end < start:
    raise ValueError(f"{path}: {end_marker!r} comes before {start_marker!r}")
  write_atomic(path, text[:start] + "\n" + markdown.strip("\n") + "\n" + text[end:])
