"""The exit statuses of every `python -m electra_tf.*` and `tfrecords_tools.*`
command line, in one table so that scripts and schedulers can rely on them.

| status | meaning |
|---|---|
| 0 | done |
| 1 | a `--check` found a difference (`hparams_reference --check`) |
| 2 | bad input: one line on stderr naming the file, flag or key (also corrupt data met while training, an output that is not writable or a disk that fills up) |
| 3 | training diverged (NaN/Inf loss or weights, or too many float16 skipped steps); nothing of it saved |
| 129 | stopped by SIGHUP (the terminal closed) after saving a checkpoint, as for SIGTERM; re-run to resume |
| 130 | stopped by Ctrl-C (SIGINT): training runs save a checkpoint at the current step first (a second Ctrl-C stops at once), builders remove their partial output; re-run to resume |
| 143 | stopped by SIGTERM after saving a checkpoint (128 + 15, what a shell reports); re-run to resume; `export_saved_model` and `convert_checkpoint` remove their partial output, as on Ctrl-C |

Example:
  >>> BAD_INPUT, PREEMPTED
  (2, 143)
"""

import signal

OK = 0
CHECK_FAILED = 1
BAD_INPUT = 2
DIVERGED = 3
# Non-zero, so schedulers do not take a preempted job as finished.
PREEMPTED = 128 + signal.SIGTERM
INTERRUPTED = 128 + signal.SIGINT
# The terminal closed (an ssh session dropped): saved and stopped as for SIGTERM.
HANGUP = 128 + 1  # signal.SIGHUP (not defined on Windows)
