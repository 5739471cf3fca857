"""Newcomer sweep 26's bad cases of the Beam builder (bench/reports/newcomer_sweep_26.md
#07, #31, #37), one test per class: Beam's own reports of what the builder says in one
line (a bad Beam option value, a job's full disk, Ctrl-C to its worker processes)."""

import logging
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from electra_tf import build_pretraining_dataset as cli
from electra_tf.utils import interrupts
from tests.conftest import REPO_ROOT
from tests.helpers import model_formats
from tests.helpers.subprocesses import build_dataset_flags
from tests.helpers.subprocesses import tool_user_env
from tfrecords_tools import example_writer
from tfrecords_tools import text_corpus

pytest.importorskip("apache_beam")

from tfrecords_tools import beam_pipeline  # noqa: E402


def _corpus(tmp_path, files=("a.txt",)):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  for name in files:
    (corpus / name).write_text("w1 w2 w3 w4\nw5 w6 w7\n")
  return str(corpus), model_formats.write_vocab(tmp_path / "vocab.txt")


def test_a_bad_beam_option_value_is_one_line(tmp_path, capsys):
  """#31: a bad value for a Beam option printed Beam's 156-line usage first."""
  corpus, vocab = _corpus(tmp_path)
  flags = build_dataset_flags(corpus, vocab, tmp_path / "out", num_processes=1, num_out_files=1)
  runner = ["--runner", "DirectRunner"]
  assert cli.main([*flags, *runner, "--direct_running_mode", "processes"]) == 2
  assert capsys.readouterr().err == (
    "error: argument --direct_running_mode: invalid choice: 'processes' (choose from "
    "'in_memory', 'multi_threading', 'multi_processing')\n"
  )
  assert cli.main([*flags, *runner, "--direct_num_workers", "two"]) == 2
  err = capsys.readouterr().err
  assert err == "error: argument --direct_num_workers: invalid int value: 'two'\n", err
  assert not (tmp_path / "out").exists()


def _job_on_a_full_disk(job_id, options, on_file=None):
  raise example_writer.OutputFullError(
    f"no space left on device for the shards in --output-dir {options.output_dir!r}"
  )


def test_a_full_disk_in_a_beam_job_is_the_builders_one_line(tmp_path, capsys, caplog, monkeypatch):
  """#37: Beam logged the job's one-line error with its traceback, and the line
  ended in Beam's "[while running 'RunJob']"."""
  corpus, vocab = _corpus(tmp_path)
  monkeypatch.setattr(text_corpus, "run_job", _job_on_a_full_disk)
  out = tmp_path / "out"
  flags = build_dataset_flags(corpus, vocab, out, num_processes=1, num_out_files=1)
  assert cli.main([*flags, "--runner", "DirectRunner"]) == 2
  err = capsys.readouterr().err
  assert err == f"error: no space left on device for the shards in --output-dir '{out}'\n", err
  reports = [r for r in caplog.records if r.name.startswith("apache_beam") and r.exc_info]
  assert not reports, [r.getMessage() for r in reports]
  assert os.listdir(out) == []


def test_after_ctrl_c_beams_worker_errors_are_quiet(caplog, monkeypatch):
  """#07 (in process): once a stop signal came, the errors of Beam's ending
  workers (logged, or raised in its threads) are not reported; before it
  they are. Beam's SDK workers import this module (`--beam_plugins`)."""
  options = beam_pipeline.pipeline_options("DirectRunner", []).get_all_options()
  assert options["beam_plugins"] == [beam_pipeline.__name__]
  thread_errors = []
  monkeypatch.setattr(threading, "excepthook", lambda args: thread_errors.append(args.exc_value))
  beam_logger = logging.getLogger("apache_beam.runners.portability.fn_api_runner.worker_handlers")

  def worker_ends():
    beam_logger.error("Error closing worker_handler", exc_info=RuntimeError("grpc"))
    thread = threading.Thread(target=lambda: exec("raise RuntimeError('exited with -2')"))
    thread.start()
    thread.join()

  with interrupts.ctrl_c_remembered(), beam_pipeline.ctrl_c_reports_quieted():
    worker_ends()
    assert [str(e) for e in thread_errors] == ["exited with -2"]
    assert [r.getMessage() for r in caplog.records] == ["Error closing worker_handler"]
    caplog.clear()
    with pytest.raises(KeyboardInterrupt):
      os.kill(os.getpid(), signal.SIGINT)
      time.sleep(5)
    worker_ends()
  assert len(thread_errors) == 1, thread_errors
  assert not caplog.records, [r.getMessage() for r in caplog.records]


def _pgroup_processes(pgid):
  """Live processes of process group `pgid` (Linux /proc)."""
  found = []
  for entry in os.listdir("/proc"):
    try:
      with open(f"/proc/{entry}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
      continue
    if fields[0] != "Z" and int(fields[2]) == pgid:
      found.append(int(entry))
  return found


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the processes in /proc")
def test_ctrl_c_to_a_multi_process_beam_build_is_one_line(tmp_path):
  """#07: Ctrl-C to the process group of a Beam build with worker processes
  printed ~198 lines (the workers' tracebacks, gRPC and Beam errors) before the
  builder's line. The job blocks reading a named pipe nobody writes to."""
  corpus, vocab = _corpus(tmp_path, files=("c.txt",))
  os.mkfifo(os.path.join(corpus, "a_pipe"))
  out = tmp_path / "out"
  flags = build_dataset_flags(corpus, vocab, out, num_processes=1, num_out_files=1)
  beam = ["--runner", "DirectRunner", "--direct_num_workers", "1"]
  builder = subprocess.Popen(
    [sys.executable, "-m", "electra_tf.build_pretraining_dataset", *flags, *beam]
    + ["--direct_running_mode", "multi_processing"],
    cwd=REPO_ROOT,
    env=tool_user_env(),
    stdout=subprocess.PIPE,
    stderr=subprocess.STDOUT,
    text=True,
    start_new_session=True,  # its own process group, as a terminal's foreground job
  )
  watchdog = threading.Timer(300, lambda: os.killpg(builder.pid, signal.SIGKILL))
  watchdog.start()
  try:
    for line in builder.stdout:
      if line.endswith(": Creating example writer\n"):
        break
    time.sleep(1)
    os.killpg(builder.pid, signal.SIGINT)
    rest = builder.stdout.read()
    assert builder.wait(timeout=120) == 130, rest
  finally:
    watchdog.cancel()
    builder.kill()
  assert rest.strip().splitlines()[-1].startswith("interrupted (Ctrl-C); removed the "), rest
  assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
  assert "CRITICAL" not in rest and "ERROR" not in rest and "Error" not in rest, rest
  assert os.listdir(out) == []
  deadline = time.time() + 30
  while _pgroup_processes(builder.pid) and time.time() < deadline:
    time.sleep(0.2)
  assert not _pgroup_processes(builder.pid)
