"""`text_corpus.run_jobs`: one spawned process per job, results in job order,
a job's error raised in the main process after the other jobs are stopped."""

import multiprocessing
import time
import types

import pytest

from tfrecords_tools import text_corpus


def _job_result(job_id, options, cpu=None):
  return {"job": job_id, "of": options.num_processes}


def _job_failing_or_sleeping(job_id, options, cpu=None):
  if job_id == 1:
    raise ValueError("corpus.txt, line 3: not text")
  time.sleep(120)  # stopped by the main process, never finishes
  return {"job": job_id}


def test_results_come_back_in_job_order():
  options = types.SimpleNamespace(num_processes=2)
  assert text_corpus.run_jobs(_job_result, options) == [{"job": 0, "of": 2}, {"job": 1, "of": 2}]


def test_a_job_error_is_raised_here_and_the_other_job_is_stopped():
  options = types.SimpleNamespace(num_processes=2)
  start = time.monotonic()
  with pytest.raises(ValueError) as raised:
    text_corpus.run_jobs(_job_failing_or_sleeping, options)
  assert str(raised.value) == "corpus.txt, line 3: not text"  # the one line a CLI prints
  assert time.monotonic() - start < 100  # the sleeping job was killed, not waited for
  assert any("in job 1" in note for note in raised.value.__notes__)
  assert not multiprocessing.active_children()
