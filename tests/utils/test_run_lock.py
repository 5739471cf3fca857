"""One trainer per model dir (`electra_tf.utils.run_lock`), with real
processes: the kernel's flock decides, the lock file only names the holder.
A live holder is named; a lock file left by a dead process (its pid reused
by the new run, or another host's) is taken; of two starters at once
exactly one trains."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from electra_tf.utils import exit_codes
from electra_tf.utils import run_lock

# A trainer in miniature: takes the lock as the trainers do, and on a busy
# model dir prints one line and exits as run_status does. It starts when
# `<sync>/go` exists (after writing `<sync>/ready-<name>`) and, holding the
# lock, waits until `<sync>/release` exists.
_STARTER = """
import importlib.util, os, sys, time
path, sync, name, utils = sys.argv[1:5]
def module(name):  # by file: the package's __init__ would import TensorFlow (seconds)
  spec = importlib.util.spec_from_file_location(name, os.path.join(utils, name + ".py"))
  loaded = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(loaded)
  return loaded
exit_codes, run_lock = module("exit_codes"), module("run_lock")
def wait_for(file):  # never outlives a failed test by long
  deadline = time.time() + 120
  while not os.path.exists(os.path.join(sync, file)):
    if time.time() > deadline:
      sys.exit(9)
    time.sleep(0.001)
open(os.path.join(sync, "ready-" + name), "w").close()
wait_for("go")
lock = run_lock.RunLock(path, "run_pretraining " + name)
try:
  lock.acquire()
except run_lock.ModelDirBusy as e:
  print(f"run_pretraining: error: {e}", file=sys.stderr, flush=True)
  sys.exit(exit_codes.BAD_INPUT)
print("holding", flush=True)
wait_for("release")
lock.release()
"""


_UTILS = os.path.dirname(run_lock.__file__)


def _starter(path, sync, name):
  return subprocess.Popen(
    [sys.executable, "-c", _STARTER, str(path), str(sync), name, _UTILS],
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
  )


def _wait_for(path, procs, timeout=60):
  deadline = time.time() + timeout
  while not path.exists():
    assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
    assert time.time() < deadline, f"{path} never appeared"
    time.sleep(0.01)


@pytest.fixture
def holder(tmp_path):
  """A process holding `<tmp>/d/train.lock` until the test ends (or kills it)."""
  path = tmp_path / "d" / "train.lock"
  sync = tmp_path / "sync"
  sync.mkdir()
  (sync / "go").touch()
  proc = _starter(path, sync, "first")
  assert proc.stdout.readline() == "holding\n", proc.communicate()
  yield path, proc
  (sync / "release").touch()
  proc.wait(timeout=60)


def _write_lock(path, pid, host=None):
  content = {"pid": pid, "host": host or socket.gethostname(), "what": "run_pretraining x"}
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(content))


def test_a_live_holder_is_named_and_its_death_frees_the_lock(holder):
  path, proc = holder
  with pytest.raises(
    run_lock.ModelDirBusy, match=f"in use by run_pretraining first \\(pid {proc.pid} on "
  ):
    run_lock.RunLock(path).acquire()
  assert json.loads(path.read_text())["pid"] == proc.pid  # left alone
  # kill -9: no release ran, the file still names the holder, the kernel freed the lock.
  proc.kill()
  proc.wait()
  assert json.loads(path.read_text())["pid"] == proc.pid
  notes = []
  with run_lock.RunLock(path, "second", log=notes.append):
    assert json.loads(path.read_text())["what"] == "second"
  assert len(notes) == 1 and f"stale lock {path}" in notes[0] and str(proc.pid) in notes[0]
  assert not path.exists()


def test_a_suspended_holder_is_named_as_suspended_and_a_live_one_is_found(holder):
  """Sweep 25 #04 (borderline): a run suspended with Ctrl-Z in another
  terminal holds the lock for ever; "wait for it" alone would wait for ever."""
  path, proc = holder
  assert run_lock.live_holder(path)["pid"] == proc.pid
  os.kill(proc.pid, signal.SIGSTOP)
  try:
    deadline = time.monotonic() + 10
    while not run_lock._is_suspended(proc.pid) and time.monotonic() < deadline:
      time.sleep(0.02)
    with pytest.raises(run_lock.ModelDirBusy, match="it is suspended \\(Ctrl-Z or SIGSTOP\\)"):
      run_lock.RunLock(path).acquire()
  finally:
    os.kill(proc.pid, signal.SIGCONT)
  assert "suspended" not in run_lock.describe(run_lock.live_holder(path))
  proc.kill()
  proc.wait()
  assert run_lock.live_holder(path) is None  # the file stays, no process holds it


@pytest.mark.parametrize("pid", ["own", 1])
def test_a_restart_that_gets_the_same_pid_proceeds(tmp_path, pid):
  # A container restarted after a crash: its trainer gets the pid the lock
  # file names (often 1), and no process holds the lock.
  pid = os.getpid() if pid == "own" else pid
  path = tmp_path / "train.lock"
  _write_lock(path, pid)
  notes = []
  lock = run_lock.RunLock(path, "me", log=notes.append)
  with lock:
    held = json.loads(path.read_text())
    assert held["pid"] == os.getpid() and held["host"] == socket.gethostname()
    assert held["what"] == "me" and held["command"] and held["started"]
    assert len(notes) == 1 and "stale lock" in notes[0] and f"pid {pid} " in notes[0]
    # The same lock in the same process is busy too: one trainer, not two.
    with pytest.raises(run_lock.ModelDirBusy, match="in use by me"):
      run_lock.RunLock(path).acquire()
  assert not path.exists()


def test_of_two_starters_at_once_exactly_one_trains(tmp_path):
  path = tmp_path / "d" / "train.lock"
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  for attempt in range(4):
    sync = tmp_path / f"sync{attempt}"
    sync.mkdir()
    if attempt % 2:  # a stale lock file both would take over
      _write_lock(path, dead.pid)
    procs = {name: _starter(path, sync, name) for name in ("a", "b")}
    for name in procs:
      _wait_for(sync / f"ready-{name}", procs.values())
    (sync / "go").touch()  # both wait on this file: they start together
    codes = {}
    deadline = time.time() + 60
    while not codes and time.time() < deadline:
      codes = {n: p.poll() for n, p in procs.items() if p.poll() is not None}
      time.sleep(0.01)
    assert len(codes) == 1 and list(codes.values()) == [exit_codes.BAD_INPUT], codes
    (loser,) = codes
    (winner,) = set(procs) - {loser}
    assert procs[winner].stdout.readline() == "holding\n"
    err = procs[loser].communicate()[1].strip().splitlines()
    assert len(err) == 1, err
    assert f"in use by run_pretraining {winner} (pid {procs[winner].pid} on" in err[0]
    (sync / "release").touch()
    assert procs[winner].wait(timeout=60) == 0
    assert not path.exists()


def test_a_lock_file_of_another_host_is_taken_when_no_one_holds_it(tmp_path, monkeypatch):
  path = tmp_path / "train.lock"
  _write_lock(path, 4242, host="elsewhere.example")
  monkeypatch.setenv(run_lock.OTHER_HOSTS_VARIABLE, "refuse")
  with pytest.raises(run_lock.ModelDirBusy, match="another host.*if it is gone, delete"):
    run_lock.RunLock(path).acquire()
  assert json.loads(path.read_text())["host"] == "elsewhere.example"
  monkeypatch.delenv(run_lock.OTHER_HOSTS_VARIABLE)
  notes = []
  with run_lock.RunLock(path, "me", log=notes.append):
    assert json.loads(path.read_text())["host"] == socket.gethostname()
  assert len(notes) == 1 and "elsewhere.example" in notes[0] and "another host" in notes[0]


def test_release_removes_only_the_file_it_locked(tmp_path):
  path = tmp_path / "train.lock"
  lock = run_lock.RunLock(path, "me").acquire()
  replacement = tmp_path / "other"
  _write_lock(replacement, os.getpid() + 1)
  os.replace(replacement, path)  # someone else's lock file now
  lock.release()
  lock.release()  # idempotent
  assert json.loads(path.read_text())["pid"] == os.getpid() + 1
  # A starter that locked a file its holder then removed takes the new one.
  with run_lock.RunLock(path, "me") as again:
    assert again.held and json.loads(path.read_text())["what"] == "me"


def test_a_starter_that_loses_names_the_new_holder_not_the_stale_one(tmp_path):
  """The winner of a takeover writes its details a moment after taking the
  lock; a starter that loses in that moment waits for them rather than
  naming the dead trainer the file still holds."""
  import fcntl
  import threading

  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  path = tmp_path / "train.lock"
  _write_lock(path, dead.pid)
  fd = os.open(path, os.O_RDWR)  # another open file: its flock conflicts with RunLock's
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    content = {"pid": os.getpid(), "host": socket.gethostname(), "what": "run_pretraining new"}
    writer = threading.Timer(0.3, lambda: path.write_text(json.dumps(content)))
    writer.start()
    with pytest.raises(run_lock.ModelDirBusy, match=f"run_pretraining new \\(pid {os.getpid()} "):
      run_lock.RunLock(path).acquire()
    writer.join()
  finally:
    os.close(fd)
