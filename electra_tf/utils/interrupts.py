"""Ctrl-C that Python swallowed, honoured anyway.

Python turns SIGINT into a KeyboardInterrupt at the next bytecode of the
main thread. When that bytecode belongs to a finaliser (`__del__`, a weakref
callback: TensorFlow runs many), Python prints "Exception ignored …
KeyboardInterrupt" and goes on, and a long evaluation or export would then
finish as if nothing had been pressed. Within `ctrl_c_remembered()` every
Ctrl-C is also remembered, and `check()`, called between pieces of work,
raises it again where it can be caught.

Example:
  >>> with ctrl_c_remembered():
  ...   check()  # nothing pressed: returns
"""

import contextlib
import signal
import sys
import threading

_pressed = threading.Event()


def _on_sigint(signum, frame):
  del signum, frame
  _pressed.set()
  raise KeyboardInterrupt


@contextlib.contextmanager
def ctrl_c_remembered():
  """Within: Ctrl-C raises KeyboardInterrupt as usual and is remembered for
  `check()`. Handlers installed inside (a training run's save-on-Ctrl-C)
  take over while they are installed."""
  _pressed.clear()
  try:
    previous = signal.signal(signal.SIGINT, _on_sigint)
  except ValueError:  # not the main thread: signals are not ours to handle
    previous = None
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
    if previous is not None:
      signal.signal(signal.SIGINT, previous)
    _pressed.clear()


def check():
  """Raises KeyboardInterrupt if Ctrl-C was pressed (and swallowed) since
  `ctrl_c_remembered()` began."""
  if _pressed.is_set():
    raise KeyboardInterrupt
