"""One trainer per model dir: a lock file holding the trainer's pid and host.

`run_pretraining` takes `<model_dir>/train.lock` and `run_finetuning` takes
`finetuning_models/<tasks>_model.lock` (its trials' dirs are deleted and
re-made) for as long as they train; a second trainer on the same dir stops
with one line naming the first. A lock whose process is gone (same host, pid
not alive: the trainer was killed with `kill -9`) is stale: it is taken over
with a note. A lock of another host cannot be checked from here, so it is
refused with the file to delete if that trainer is gone. Only the chief of a
multi-worker job takes it (the other workers train the same run).

The lock is created with `O_CREAT | O_EXCL`, atomic on local and POSIX
network file systems; a remote model dir (`gs://...`) is not locked.

Example:
  >>> import tempfile
  >>> directory = tempfile.mkdtemp()
  >>> with RunLock(os.path.join(directory, "train.lock"), "run_pretraining"):
  ...   RunLock(os.path.join(directory, "train.lock"), "run_pretraining").acquire()
  Traceback (most recent call last):
  ...
  electra_tf.utils.run_lock.ModelDirBusy: ...
"""

import json
import os
import socket
import sys
import time

LOCK_FILE = "train.lock"


class ModelDirBusy(ValueError):
  """Another live trainer holds the lock; the message names it."""


def _pid_alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True  # another user's live process
  return True


class RunLock:
  """The lock file at `path` for a trainer described as `what`.

  Use as a context manager, or `acquire()` / `release()`. Releasing is
  idempotent and removes the file only while it is still this process's.
  """

  def __init__(self, path, what="a trainer", log=None):
    self.path = os.fspath(path)
    self.what = what
    self.held = False
    self._log = log or (lambda line: print(line, file=sys.stderr, flush=True))

  def _content(self):
    return {
      "pid": os.getpid(),
      "host": socket.gethostname(),
      "started": time.strftime("%Y-%m-%d %H:%M:%S"),
      "what": self.what,
      "command": " ".join(sys.argv),
    }

  def _read(self):
    try:
      with open(self.path, encoding="utf-8") as f:
        return json.load(f)
    except (OSError, ValueError):
      return None

  def acquire(self):
    """Takes the lock; raises `ModelDirBusy` if a live trainer holds it."""
    if "://" in self.path:
      return self
    os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
    for _ in range(3):
      try:
        fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
      except FileExistsError:
        self._take_over_if_stale()
        continue
      with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(self._content(), indent=1) + "\n")
      self.held = True
      return self
    raise ModelDirBusy(f"{self.path}: could not take the lock (another trainer keeps taking it)")

  def _take_over_if_stale(self):
    holder = self._read()
    if holder is None:
      # Being written this instant, or not a lock electra_tf wrote.
      time.sleep(0.2)
      holder = self._read()
    if holder is None:
      raise ModelDirBusy(
        f"{self.path} exists but is not a readable lock; if no trainer uses this model dir, "
        "delete it"
      )
    pid, host = holder.get("pid"), holder.get("host")
    who = f"{holder.get('what', 'a trainer')} (pid {pid} on {host}, since {holder.get('started')})"
    if host != socket.gethostname():
      raise ModelDirBusy(
        f"{os.path.dirname(self.path)} is in use by {who}; it runs on another host, so it cannot "
        f"be checked from here: if it is gone, delete {self.path}"
      )
    if isinstance(pid, int) and _pid_alive(pid):
      raise ModelDirBusy(
        f"{os.path.dirname(self.path)} is in use by {who}: wait for it or stop it first "
        "(one trainer per model dir)"
      )
    self._log(f"note: taking over the stale lock {self.path} of {who}: that process is gone")
    try:
      os.remove(self.path)
    except FileNotFoundError:
      pass

  def release(self):
    if not self.held:
      return
    self.held = False
    holder = self._read()
    if holder is not None and holder.get("pid") == os.getpid():
      try:
        os.remove(self.path)
      except FileNotFoundError:
        pass

  def __enter__(self):
    return self.acquire()

  def __exit__(self, *exc):
    self.release()
    return False
