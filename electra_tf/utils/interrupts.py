"""Ctrl-C that Python swallowed, honoured anyway; SIGTERM and SIGHUP as stops too.

A KeyboardInterrupt raised inside a finaliser (TensorFlow runs many) is
printed and ignored by Python. Within `ctrl_c_remembered()` every Ctrl-C is
also remembered, and `check()`, called between pieces of work, raises it
again. SIGTERM and SIGHUP raise `Stopped`, a KeyboardInterrupt that
remembers its signal, so partial output is removed as on Ctrl-C; the
command ends with exit status 128 + the signal (`stop_status`, `stopped_line`).

Example:
  >>> with ctrl_c_remembered():
  ...   check()  # nothing pressed: returns
  >>> stop_status(Stopped(signal.SIGTERM)), stopped_line("export_saved_model", Stopped(signal.SIGTERM))
  (143, 'export_saved_model: stopped (SIGTERM)')
"""

import contextlib
import signal
import sys
import threading

# The signals that stop the work within `ctrl_c_remembered()`.
STOP_SIGNALS = tuple(
  getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

_pressed = threading.Event()


def install_stop_handler(handler, signals=STOP_SIGNALS):
  """Installs `handler` for each of `signals` that is not ignored (as under
  `nohup`). Returns {signal: previous handler} for `restore_handlers`; empty
  outside the main thread."""
  previous = {}
  for signum in signals:
    try:
      if signal.getsignal(signum) == signal.SIG_IGN:
        continue
      previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread: signals are not ours to handle
      break
  return previous


def restore_handlers(previous):
  """Gives back the handlers `install_stop_handler` returned."""
  for signum, handler in previous.items():
    signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


_signal_seen = [signal.SIGINT]


class Stopped(KeyboardInterrupt):
  """A stop by SIGTERM or SIGHUP: handled like Ctrl-C, reported with its own name."""

  def __init__(self, signum):
    super().__init__(signal_name(signum))
    self.signum = int(signum)


def signal_name(signum):
  """'Ctrl-C' for SIGINT, else the signal's name ('SIGTERM')."""
  return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def _stop(signum):
  return KeyboardInterrupt() if signum == signal.SIGINT else Stopped(signum)


def _on_sigint(signum, frame):
  del frame
  _signal_seen[0] = signal.SIGINT if signum is None else signum
  _pressed.set()
  raise _stop(_signal_seen[0])


def stop_signal_of(error):
  """The signal `error` (or an error it was raised in place of, as TensorFlow
  wraps a KeyboardInterrupt) stands for, or None when it is no stop."""
  seen = set()
  while error is not None and id(error) not in seen:
    seen.add(id(error))
    if isinstance(error, Stopped):
      return error.signum
    if isinstance(error, KeyboardInterrupt):
      return signal.SIGINT
    error = error.__cause__ or error.__context__
  return None


def stop_status(error):
  """The exit status for stop `error`: 128 + its signal (130 for Ctrl-C, 143 for SIGTERM)."""
  return 128 + int(stop_signal_of(error) or signal.SIGINT)


def stopped_phrase(signum):
  """`interrupted (Ctrl-C)` for SIGINT, else `stopped (SIGTERM)` (the signal's name)."""
  return "interrupted (Ctrl-C)" if signum == signal.SIGINT else f"stopped ({signal_name(signum)})"


def stopped_line(tool, error):
  """`<tool>: interrupted (Ctrl-C)` or `<tool>: stopped (SIGTERM)`."""
  return f"{tool}: {stopped_phrase(stop_signal_of(error) or signal.SIGINT)}"


@contextlib.contextmanager
def ctrl_c_remembered():
  """Within: Ctrl-C raises KeyboardInterrupt as usual, SIGTERM and SIGHUP
  raise `Stopped`, and each is remembered for `check()`. Handlers installed
  inside take over while they are installed."""
  _pressed.clear()
  _signal_seen[0] = signal.SIGINT
  previous = install_stop_handler(_on_sigint)
  previous_hook = sys.unraisablehook

  def quiet_about_ctrl_c(unraisable):
    # Python's "Exception ignored … KeyboardInterrupt" block: `check()` reports it, in one line.
    if not isinstance(unraisable.exc_value, KeyboardInterrupt):
      previous_hook(unraisable)

  sys.unraisablehook = quiet_about_ctrl_c
  try:
    yield
  finally:
    sys.unraisablehook = previous_hook
    restore_handlers(previous)
    _pressed.clear()


def stop_seen():
  """The stop signal received within `ctrl_c_remembered()` so far, or None (for
  where the exception that carried it was replaced)."""
  return _signal_seen[0] if _pressed.is_set() else None


@contextlib.contextmanager
def stops_held():
  """Within: Ctrl-C, SIGTERM and SIGHUP are held back, so that what is
  written within is written whole; the first received is raised on leaving.
  Outside the main thread nothing changes."""
  received = []

  def remember(signum, frame):
    del frame
    received.append(signum)

  previous = install_stop_handler(remember)
  try:
    yield
  finally:
    restore_handlers(previous)
  if received:
    raise _stop(received[0])


def exit_with(status):
  """`sys.exit(status)` for a command's `__main__`, ignoring stop signals from
  now on, so that a late one during shutdown does not replace that status."""
  install_stop_handler(signal.SIG_IGN)
  sys.exit(status)


def check():
  """Raises KeyboardInterrupt if Ctrl-C was pressed (and swallowed) since
  `ctrl_c_remembered()` began; `Stopped` for a SIGTERM or SIGHUP."""
  if _pressed.is_set():
    raise _stop(_signal_seen[0])


def run_stoppable(tool, work):
  """Returns `work()`, run within `ctrl_c_remembered()`; a SIGTERM or SIGHUP
  that stops it ends it with one line on stderr (`<tool>: stopped (SIGTERM)`)
  and returns 128 + the signal. Ctrl-C propagates."""
  with ctrl_c_remembered():
    try:
      return work()
    except BaseException as e:
      signum = stop_signal_of(e)
      if signum is None or signum == signal.SIGINT:
        raise
      error = e
  sys.stdout.flush()
  print(stopped_line(tool, error), file=sys.stderr, flush=True)
  return stop_status(error)
