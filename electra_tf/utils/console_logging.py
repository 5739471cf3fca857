"""A command's console: log lines as plain text (`plain_console_logging`),
and streams a command's output cannot fail on (`robust_console_streams`)."""

import logging
import os
import sys


class _PlainFormatter(logging.Formatter):
  """INFO as the message alone; WARNING and above prefixed by their level."""

  def format(self, record):
    message = record.getMessage()
    if record.levelno >= logging.WARNING:
      return f"{record.levelname.lower()}: {message}"
    return message


class _CurrentStreamHandler(logging.StreamHandler):
  """Writes to whatever `sys.stdout` / `sys.stderr` is when a record comes
  (not the stream of the moment it was made, which may be closed since)."""

  def __init__(self, name):
    super().__init__()
    self._name = name

  def emit(self, record):
    self.stream = getattr(sys, self._name)
    super().emit(record)


def plain_console_logging(level=logging.INFO):
  """Sends the absl logger's records to the console without the `INFO:absl:`
  prefix: INFO and below to stdout, WARNING and above to stderr as
  `warning: message`. For entry points only.

  Example:
  >>> plain_console_logging()
  >>> logging.getLogger("absl").info("Training for rte")
  Training for rte
  """
  logger = logging.getLogger("absl")
  info = _CurrentStreamHandler("stdout")
  info.addFilter(lambda record: record.levelno < logging.WARNING)
  warnings = _CurrentStreamHandler("stderr")
  warnings.setLevel(logging.WARNING)
  for handler in (info, warnings):
    handler.setFormatter(_PlainFormatter())
  logger.handlers = [info, warnings]
  logger.setLevel(level)
  logger.propagate = False


class ClosedPipeSafeStream:
  """A text stream whose writes to a pipe the reader has closed (`... | head`)
  are dropped, so the command finishes its work instead of dying in a
  BrokenPipeError. Everything else is the stream's.

  Args:
    stream: the text stream to write to (`sys.stdout`).
  """

  def __init__(self, stream):
    self._stream = stream

  def write(self, text):
    try:
      return self._stream.write(text)
    except BrokenPipeError:
      self._to_devnull()
      return len(text)

  def writelines(self, lines):
    for line in lines:
      self.write(line)

  def flush(self):
    try:
      self._stream.flush()
    except BrokenPipeError:
      self._to_devnull()

  def _to_devnull(self):
    # The reader is gone: what is buffered and whatever comes later goes nowhere.
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
      os.dup2(devnull, self._stream.fileno())
    finally:
      os.close(devnull)

  def __getattr__(self, name):
    return getattr(self._stream, name)


def robust_console_streams():
  """Makes `sys.stdout` and `sys.stderr` streams a command's work cannot fail
  on: output to a gone reader is dropped (`ClosedPipeSafeStream`), a stream
  closed at start (`>&-`) writes nowhere, and a character the encoding lacks
  is escaped. For entry points, before anything keeps a reference to them."""
  for fd, name in ((1, "stdout"), (2, "stderr")):
    stream = getattr(sys, name)
    if stream is None:
      # The descriptor gets /dev/null too, so a file opened later cannot take it.
      devnull = os.open(os.devnull, os.O_WRONLY)
      if devnull != fd:
        os.dup2(devnull, fd)
        os.close(devnull)
      stream = open(fd, "w", encoding="utf-8", closefd=False)  # pylint: disable=consider-using-with
    elif hasattr(stream, "reconfigure"):
      stream.reconfigure(errors="backslashreplace")
    if not isinstance(stream, ClosedPipeSafeStream):
      setattr(sys, name, ClosedPipeSafeStream(stream))
