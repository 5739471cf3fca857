"""A command's log lines: the message alone on stdout for INFO, `warning: …`
on stderr, whatever streams are current when a record comes."""

import logging

from electra_tf.utils.console_logging import plain_console_logging


def test_info_is_the_message_on_stdout_and_warnings_say_so_on_stderr(capsys):
  logger = logging.getLogger("absl")
  saved = (list(logger.handlers), logger.level, logger.propagate)
  try:
    plain_console_logging()
    logger.info("Training for %s", "rte")
    logger.warning("No init_checkpoint")
    captured = capsys.readouterr()
    assert captured.out == "Training for rte\n"
    assert captured.err == "warning: No init_checkpoint\n"
  finally:
    logger.handlers, logger.level, logger.propagate = saved
