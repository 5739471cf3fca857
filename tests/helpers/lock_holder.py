"""A process that holds a run lock (`electra_tf.utils.run_lock`) as a
trainer does, for tests of the refusal a second trainer gets."""

import contextlib
import os
import subprocess
import sys

from electra_tf.utils import run_lock

# Loads run_lock by file: the package's __init__ would import TensorFlow (seconds).
_HOLDER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("run_lock", sys.argv[1])
run_lock = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_lock)
run_lock.RunLock(sys.argv[2], sys.argv[3]).acquire()
print("holding", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def another_trainer_holding(path, what):
  """Holds the lock at `path` in another process described as `what`;
  yields its pid. At the end the process is killed (`kill -9`), as a
  crashed trainer: the kernel frees the lock, the file stays behind."""
  proc = subprocess.Popen(
    [sys.executable, "-c", _HOLDER, run_lock.__file__, os.fspath(path), what],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    text=True,
  )
  try:
    line = proc.stdout.readline()
    assert line == "holding\n", f"the lock holder did not start: {line!r}"
    yield proc.pid
  finally:
    proc.kill()
    proc.wait()
    proc.stdin.close()
    proc.stdout.close()
