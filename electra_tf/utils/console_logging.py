"""A command's log lines as plain text: `plain_console_logging`."""

import logging
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
  """Sends the absl logger's records (which the library logs through) to the
  console without Python logging's `INFO:absl:` prefix: INFO and below to
  stdout as the message alone, WARNING and above to stderr as
  `warning: message`. For entry points only; a library import changes
  nothing.

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
