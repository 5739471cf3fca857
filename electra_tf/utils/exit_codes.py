"""The exit statuses of every `python -m electra_tf.*` and `tfrecords_tools.*`
command line, in one place so that scripts and schedulers can rely on them
(docs/architecture.md tells what each means). A stop by a signal (128 + the
signal) comes after a checkpoint was saved or partial output removed.

Example:
  >>> BAD_INPUT, PREEMPTED
  (2, 143)
"""

import signal

OK = 0
CHECK_FAILED = 1  # a `--check` found a difference
BAD_INPUT = 2  # one line on stderr naming the file, flag or key
DIVERGED = 3  # NaN/Inf loss or weights; nothing of it saved
# Non-zero, so schedulers do not take a preempted job as finished.
PREEMPTED = 128 + signal.SIGTERM
INTERRUPTED = 128 + signal.SIGINT
# The terminal closed (an ssh session dropped): saved and stopped as for SIGTERM.
HANGUP = 128 + 1  # signal.SIGHUP (not defined on Windows)
