"""One trainer per model dir (`electra_tf.utils.run_lock`): a live holder
is named, a dead one's lock is taken over, another host's is refused, and
release removes only this process's lock."""

import json
import os
import socket
import subprocess
import sys

import pytest

from electra_tf.utils import run_lock


@pytest.fixture
def live_pid():
  """A real process that stays alive for the test."""
  proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
  yield proc.pid
  proc.kill()
  proc.wait()


def _write_lock(path, pid, host=None):
  content = {"pid": pid, "host": host or socket.gethostname(), "what": "run_pretraining x"}
  path.write_text(json.dumps(content))


def test_second_trainer_is_refused_naming_the_first(tmp_path, live_pid):
  path = tmp_path / "train.lock"
  _write_lock(path, live_pid)
  with pytest.raises(
    run_lock.ModelDirBusy, match=f"in use by run_pretraining x \\(pid {live_pid} on"
  ):
    run_lock.RunLock(path).acquire()
  assert json.loads(path.read_text())["pid"] == live_pid  # left alone
  _write_lock(path, live_pid, host="elsewhere.example")
  with pytest.raises(run_lock.ModelDirBusy, match="another host.*if it is gone, delete"):
    run_lock.RunLock(path).acquire()


def test_stale_lock_is_taken_over_with_a_note_and_released(tmp_path):
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  path = tmp_path / "d" / "train.lock"
  path.parent.mkdir()
  _write_lock(path, dead.pid)
  notes = []
  lock = run_lock.RunLock(path, "me", log=notes.append)
  with lock:
    held = json.loads(path.read_text())
    assert held["pid"] == os.getpid() and held["host"] == socket.gethostname()
    assert held["what"] == "me"
    assert len(notes) == 1 and f"stale lock {path}" in notes[0] and str(dead.pid) in notes[0]
    # The same lock in the same process is busy too: one trainer, not two.
    with pytest.raises(run_lock.ModelDirBusy):
      run_lock.RunLock(path).acquire()
  assert not path.exists()
  # A lock that another process took meanwhile is not removed by release.
  lock.acquire()
  _write_lock(path, os.getpid() + 1)
  lock.release()
  assert path.exists()
