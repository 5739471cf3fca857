"""One trainer per model dir: a lock the kernel holds for the whole run.

A trainer takes its model dir's lock file (`<model_dir>/train.lock`) for as
long as it trains; a second trainer on the same dir stops with one line
naming the first. The lock is `fcntl.flock` on a descriptor the trainer keeps open, so
the kernel releases it however the process ends. The file holds the
holder's pid, host, command and start time, read only for the message.

On a file system whose locks do not reach other hosts, a lock file naming
another host is taken over with a note, or refused with
`ELECTRA_TF_RUN_LOCK_OTHER_HOSTS=refuse`. A remote model dir is not locked.

Example:
  >>> import tempfile
  >>> directory = tempfile.mkdtemp()
  >>> with RunLock(os.path.join(directory, "train.lock"), "run_pretraining"):
  ...   RunLock(os.path.join(directory, "train.lock"), "run_pretraining").acquire()
  Traceback (most recent call last):
  ...
  electra_tf.utils.run_lock.ModelDirBusy: ...
"""

import errno
import fcntl
import json
import os
import socket
import sys
import time

LOCK_FILE = "train.lock"
# "refuse": a lock file naming another host is refused even when no process holds the lock.
OTHER_HOSTS_VARIABLE = "ELECTRA_TF_RUN_LOCK_OTHER_HOSTS"


class ModelDirBusy(ValueError):
  """The model dir cannot be taken: another live trainer holds its lock (or
  the lock's setting is not one it knows)."""


def describe(holder):
  """A lock holder (a dict from the lock file, or None) in words, for messages."""
  if not holder:
    return "another trainer (its lock file names no holder yet)"
  suspended = ""
  if holder.get("host") == socket.gethostname() and _is_suspended(holder.get("pid")):
    suspended = "; it is suspended (Ctrl-Z or SIGSTOP): resume it with fg or kill -CONT, or end it"
  return (
    f"{holder.get('what', 'a trainer')} (pid {holder.get('pid')} on {holder.get('host')}, "
    f"since {holder.get('started')}{suspended})"
  )


def _is_suspended(pid):
  """Whether the local process `pid` is stopped (a job suspended and
  forgotten makes no progress, so waiting for it would wait forever)."""
  try:
    with open(f"/proc/{int(pid)}/stat") as f:
      # The state follows the command name, which is in parentheses.
      return f.read().rpartition(")")[2].split()[0] in ("T", "t")
  except (OSError, TypeError, ValueError, IndexError):
    return False


def _parse(data):
  try:
    holder = json.loads(data.decode("utf-8"))
  except (UnicodeDecodeError, ValueError):
    return None
  return holder if isinstance(holder, dict) else None


def _names_a_live_local_process(holder):
  """False for no holder, or one on this host whose pid is gone; True
  otherwise (another host's process cannot be checked from here)."""
  if not holder:
    return False
  if holder.get("host") != socket.gethostname():
    return True
  try:
    os.kill(int(holder.get("pid")), 0)
  except ProcessLookupError:
    return False
  except (PermissionError, TypeError, ValueError, OverflowError):
    return True
  return True


def live_holder(path):
  """The holder (a dict, maybe empty) of the lock file at `path` while a live
  trainer holds it; None when no process does or there is no such file."""
  try:
    fd = os.open(os.fspath(path), os.O_RDONLY)
  except OSError:
    return None
  try:
    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
  except OSError as e:
    if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
      return None  # a file system without locks: nothing can be told
    return _parse(os.pread(fd, 1 << 16, 0)) or {}
  finally:
    os.close(fd)  # also drops the shared lock taken above
  return None


class RunLock:
  """The lock file at `path` for a trainer described as `what`.

  Use as a context manager, or `acquire()` / `release()` (idempotent; it
  removes the file while still holding the lock).
  """

  def __init__(self, path, what="a trainer", log=None):
    self.path = os.fspath(path)
    self.what = what
    self.held = False
    self._fd = None
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
      with open(self.path, "rb") as f:
        return _parse(f.read())
    except OSError:
      return None

  def _busy(self):
    # The holder writes its details just after taking the lock: wait for them.
    deadline = time.monotonic() + 2.0
    holder = self._read()
    while not _names_a_live_local_process(holder) and time.monotonic() < deadline:
      time.sleep(0.05)
      holder = self._read()
    return ModelDirBusy(
      f"{os.path.dirname(self.path) or '.'} is in use by {describe(holder)}: wait for it or "
      "stop it first (one trainer per model dir)"
    )

  def _lock(self, fd):
    """Takes the flock on `fd` without waiting; False when another holds it."""
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      return False
    except OSError as e:
      if e.errno in (errno.EAGAIN, errno.EACCES):
        return False
      raise ModelDirBusy(
        f"{self.path}: the file system refuses a lock ({e.strerror}); a model dir there cannot "
        "be kept to one trainer"
      ) from None
    return True

  def _is_current_file(self, fd):
    """Whether `fd` is still the file at `path` (a releasing holder removes it)."""
    try:
      on_disk = os.stat(self.path)
    except FileNotFoundError:
      return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (on_disk.st_dev, on_disk.st_ino)

  def acquire(self):
    """Takes the lock; raises `ModelDirBusy` if a live trainer holds it."""
    if "://" in self.path:
      return self
    other_hosts = os.environ.get(OTHER_HOSTS_VARIABLE, "")
    if other_hosts not in ("", "refuse"):
      # Checked on every run: a value read as "off" would leave the protection off silently.
      raise ModelDirBusy(f"{OTHER_HOSTS_VARIABLE}={other_hosts!r}: expected 'refuse' (or unset)")
    if self.held:
      return self
    os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
    for _ in range(10):
      fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
      try:
        if not self._lock(fd):
          raise self._busy()
        if not self._is_current_file(fd):
          os.close(fd)
          continue
        self._take(fd)
      except BaseException:
        if fd != self._fd:
          os.close(fd)
        raise
      return self
    raise ModelDirBusy(f"{self.path}: could not take the lock (another trainer keeps taking it)")

  def _take(self, fd):
    """With the flock held: notes a holder the file still names, then writes
    this process's details."""
    os.lseek(fd, 0, os.SEEK_SET)
    previous = _parse(os.read(fd, 1 << 16))
    here = socket.gethostname()
    if previous is not None:
      who = describe(previous)
      if previous.get("host") != here:
        if os.environ.get(OTHER_HOSTS_VARIABLE) == "refuse":
          raise ModelDirBusy(
            f"{os.path.dirname(self.path) or '.'} is in use by {who}; it runs on another host "
            f"and {OTHER_HOSTS_VARIABLE}=refuse: if it is gone, delete {self.path}"
          )
        self._log(
          f"note: taking the lock {self.path} last held by {who} on another host: no process "
          "holds it now (on a file system whose locks do not reach other hosts, make sure that "
          f"trainer has stopped, or set {OTHER_HOSTS_VARIABLE}=refuse)"
        )
      else:
        self._log(f"note: taking over the stale lock {self.path} of {who}: that process is gone")
    content = (json.dumps(self._content(), indent=1) + "\n").encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, content, 0)
    self._fd = fd
    self.held = True

  def release(self):
    if not self.held:
      return
    fd, self._fd, self.held = self._fd, None, False
    try:
      if self._is_current_file(fd):
        os.remove(self.path)
    except FileNotFoundError:
      pass
    finally:
      os.close(fd)  # the kernel releases the flock

  def __enter__(self):
    return self.acquire()

  def __exit__(self, *exc):
    self.release()
    return False
