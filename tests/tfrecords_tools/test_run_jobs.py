"""`text_corpus.run_jobs`: one spawned process per job, results in job order,
a job's error raised in the main process after the other jobs are stopped."""

import multiprocessing
import os
import time
import types

import pytest

from tfrecords_tools import text_corpus


def _job_result(job_id, options, cpu=None):
  return {"job": job_id, "of": options.num_processes}


_TEMPORARY_SHARD = ".pretrain_data.tfrecord-0-of-2.123.tmp.abc"


def _job_failing_or_writing(job_id, options, cpu=None):
  temporary = os.path.join(options.output_dir, _TEMPORARY_SHARD)
  if job_id == 1:
    deadline = time.monotonic() + 60
    while not os.path.exists(temporary) and time.monotonic() < deadline:
      time.sleep(0.05)  # fail while job 0 is writing its shard
    raise ValueError("corpus.txt, line 3: not text")
  with open(temporary, "w") as f:
    f.write("half a shard")
  time.sleep(120)  # stopped by the main process, never finishes
  return {"job": job_id}


def test_results_come_back_in_job_order():
  options = types.SimpleNamespace(num_processes=2)
  assert text_corpus.run_jobs(_job_result, options) == [{"job": 0, "of": 2}, {"job": 1, "of": 2}]


def test_a_job_error_is_raised_here_and_the_other_job_is_stopped(tmp_path):
  """The job killed mid-write cannot remove its temporary shard: run_jobs does."""
  (tmp_path / "kept.txt").write_text("not a shard")
  options = types.SimpleNamespace(num_processes=2, output_dir=str(tmp_path))
  start = time.monotonic()
  with pytest.raises(ValueError) as raised:
    text_corpus.run_jobs(_job_failing_or_writing, options)
  assert str(raised.value) == "corpus.txt, line 3: not text"  # the one line a CLI prints
  assert time.monotonic() - start < 100  # the writing job was killed, not waited for
  assert any("in job 1" in note for note in raised.value.__notes__)
  assert not multiprocessing.active_children()
  assert os.listdir(tmp_path) == ["kept.txt"]
