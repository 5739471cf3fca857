"""SIGTERM and SIGHUP stop the commands as Ctrl-C does (`electra_tf.utils.interrupts`),
with one line and exit status 128 + the signal; training saves on SIGHUP as on SIGTERM."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from electra_tf.checkpoints import checkpointing
from electra_tf.training import run_status
from electra_tf.utils import exit_codes
from electra_tf.utils import interrupts
from tests.conftest import REPO_ROOT
from tests.helpers.subprocesses import TF_START_UP_LINE


def test_sigterm_and_sighup_raise_stopped_and_are_remembered():
  before = {s: signal.getsignal(s) for s in interrupts.STOP_SIGNALS}
  with interrupts.ctrl_c_remembered():
    with pytest.raises(interrupts.Stopped) as raised:
      signal.raise_signal(signal.SIGTERM)
    assert raised.value.signum == signal.SIGTERM
    with pytest.raises(interrupts.Stopped):  # remembered for `check()`
      interrupts.check()
    with pytest.raises(interrupts.Stopped) as raised:
      signal.raise_signal(signal.SIGHUP)
    assert raised.value.signum == signal.SIGHUP
  assert {s: signal.getsignal(s) for s in interrupts.STOP_SIGNALS} == before
  interrupts.check()


def test_run_stoppable_reports_sigterm_in_one_line(capsys):
  def work():
    try:
      signal.raise_signal(signal.SIGTERM)
    finally:
      pass  # what a builder's cleanup would do

  assert interrupts.run_stoppable("export_saved_model", work) == exit_codes.PREEMPTED
  assert capsys.readouterr().err == "export_saved_model: stopped (SIGTERM)\n"
  assert interrupts.run_stoppable("convert_checkpoint", lambda: 7) == 7
  with pytest.raises(KeyboardInterrupt):  # Ctrl-C: the `python -m` hook reports it
    interrupts.run_stoppable("x", lambda: signal.raise_signal(signal.SIGINT))


def test_run_status_sigterm_before_training(capsys):
  def run():
    signal.raise_signal(signal.SIGTERM)

  assert run_status.run_to_exit_status("run_finetuning", run) == 143
  assert capsys.readouterr().err == "run_finetuning: stopped (SIGTERM); nothing more saved\n"


def test_sighup_preemption_is_129_with_its_name():
  e = checkpointing.TrainingPreempted(5, "/m/model.ckpt-5", signum=signal.SIGHUP)
  assert str(e).startswith("stopped (SIGHUP): stopped at global step 5")
  assert 128 + e.signum == exit_codes.HANGUP == 129
  assert signal.SIGHUP in interrupts.STOP_SIGNALS


_CHILD = textwrap.dedent(
  """
  import os, sys, time
  from electra_tf.utils import interrupts
  out = sys.argv[1]
  def work():
    os.makedirs(out)
    try:
      print("ready", flush=True)
      time.sleep(60)
    except BaseException:
      os.rmdir(out)  # what an export removes on Ctrl-C
      raise
  sys.exit(interrupts.run_stoppable("export_saved_model", work))
  """
)


@pytest.mark.parametrize("signum,status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_real_signal_to_a_child_stops_it_in_one_line(tmp_path, signum, status):
  out = tmp_path / "exp"
  child = subprocess.Popen(
    [sys.executable, "-c", _CHILD, str(out)],
    cwd=REPO_ROOT,
    env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="3"),
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
  )
  assert child.stdout.readline() == "ready\n"
  child.send_signal(signum)
  _, err = child.communicate(timeout=60)
  assert child.returncode == status
  lines = [line for line in err.splitlines() if not TF_START_UP_LINE.search(line)]
  assert lines == [f"export_saved_model: stopped ({signal.Signals(signum).name})"]
  assert not out.exists()
