"""How a training run ended, as a command line's exit status and one line on
stderr: the same for `run_pretraining` and `run_finetuning`."""

import sys

from electra_tf.checkpoints.checkpointing import CheckpointSaveError
from electra_tf.checkpoints.checkpointing import TrainingPreempted
from electra_tf.checkpoints.model_dir import ModelDirMismatch
from electra_tf.checkpoints.reader import UnreadableCheckpointError
from electra_tf.finetune.preprocessing import NoExamplesError
from electra_tf.training.callbacks import TrainingDiverged
from electra_tf.training.pretraining_run import InitCheckpointMismatch
from electra_tf.training.pretraining_run import TrainingDataError
from electra_tf.utils import exit_codes
from electra_tf.utils import file_io
from electra_tf.utils import interrupts
from electra_tf.utils.run_lock import ModelDirBusy

# Errors of bad input, said in one line.
_BAD_INPUT = (
  ModelDirMismatch,
  NoExamplesError,
  ModelDirBusy,
  TrainingDataError,
  CheckpointSaveError,
  UnreadableCheckpointError,
  InitCheckpointMismatch,
)


def input_error_line(error):
  """The one line for an error in a run's inputs, met while a command
  resolves them: a `ValueError` (bad input) or a remote file system out of
  reach (a `gs://` data dir without network); None for any other error."""
  if isinstance(error, ValueError):
    return str(error)
  return file_io.remote_file_system_error(error)


def run_to_exit_status(tool, run):
  """Calls `run()`; returns `electra_tf.utils.exit_codes`' status for how it
  ended, after printing `<tool>: …` on stderr for anything but success."""
  try:
    with interrupts.ctrl_c_remembered():
      run()
      # A Ctrl-C TensorFlow swallowed after the run's last check (say, in its
      # last evaluation batch) still ends the run as one.
      interrupts.check()
  except TrainingPreempted as e:
    print(f"{tool}: {e}; re-run to resume.", file=sys.stderr, flush=True)
    return 128 + e.signum  # PREEMPTED for SIGTERM, INTERRUPTED for Ctrl-C, HANGUP for SIGHUP
  except KeyboardInterrupt as e:
    # Ctrl-C (or SIGTERM, SIGHUP: `interrupts.Stopped`) before training
    # started (nothing to save; partial features and trial removed), or a second one.
    print(f"{interrupts.stopped_line(tool, e)}; nothing more saved", file=sys.stderr, flush=True)
    return interrupts.stop_status(e)
  except TrainingDiverged as e:
    print(f"{tool}: error: {e}; exit status {exit_codes.DIVERGED}", file=sys.stderr, flush=True)
    return exit_codes.DIVERGED
  except _BAD_INPUT as e:
    print(f"{tool}: error: {e}", file=sys.stderr, flush=True)
    return exit_codes.BAD_INPUT
  except Exception as e:  # pylint: disable=broad-except
    if not file_io.is_disk_full(e):
      raise
    # A write anywhere else in the run (a feature cache, a summary): its
    # atomic writer removed the partial file.
    happened, remedy = file_io.no_room_phrase(e)
    where = (str(e).strip().splitlines() or [""])[0]
    print(
      f"{tool}: error: {happened} ({where}); {remedy} and re-run (it resumes from its last "
      "checkpoint)",
      file=sys.stderr,
      flush=True,
    )
    return exit_codes.BAD_INPUT
  return exit_codes.OK
