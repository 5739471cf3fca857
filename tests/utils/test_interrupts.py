"""`electra_tf.utils.interrupts`: a Ctrl-C that Python swallows in a
finaliser ("Exception ignored … KeyboardInterrupt") still stops the work at
the next `check()`."""

import gc
import signal
import sys

import pytest

from electra_tf.utils import interrupts


class _PressedInAFinaliser:
  def __del__(self):
    # What the SIGINT handler does when the signal lands while this runs.
    interrupts._on_sigint(signal.SIGINT, None)  # pylint: disable=protected-access


def test_a_ctrl_c_swallowed_in_a_finaliser_is_raised_at_the_next_check():
  unraisable = []
  hook = sys.unraisablehook
  sys.unraisablehook = unraisable.append  # what Python would print as "Exception ignored"
  try:
    with interrupts.ctrl_c_remembered():
      interrupts.check()  # nothing pressed yet
      _PressedInAFinaliser()  # dropped at once: its __del__ raises, Python swallows it
      gc.collect()
      with pytest.raises(KeyboardInterrupt):
        interrupts.check()
  finally:
    sys.unraisablehook = hook
  assert not unraisable  # Python's "Exception ignored" block is not printed: check() reports it
  interrupts.check()  # outside, nothing is remembered


def test_the_handler_is_installed_within_and_restored_after():
  before = signal.getsignal(signal.SIGINT)
  with interrupts.ctrl_c_remembered():
    assert signal.getsignal(signal.SIGINT) is interrupts._on_sigint  # pylint: disable=protected-access
    with pytest.raises(KeyboardInterrupt):
      signal.raise_signal(signal.SIGINT)
  assert signal.getsignal(signal.SIGINT) is before


def test_a_run_whose_last_ctrl_c_was_swallowed_ends_as_interrupted(capsys):
  """The run's last step swallowed a Ctrl-C (no later check in the run):
  `run_status` still ends it as interrupted, exit 130, in one line."""
  from electra_tf.training import run_status

  def run():
    _PressedInAFinaliser()
    gc.collect()

  assert run_status.run_to_exit_status("run_finetuning", run) == 130
  assert capsys.readouterr().err == "run_finetuning: interrupted (Ctrl-C); nothing more saved\n"
