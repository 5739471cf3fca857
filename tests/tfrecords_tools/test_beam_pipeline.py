"""The builders on Apache Beam (`--runner`): same shards as the local builder,
retries that leave nothing behind, bad input caught before submission."""

import json
import os
import subprocess
import sys

import pytest

from electra_tf import build_pretraining_dataset as cli
from tests.conftest import REPO_ROOT
from tests.helpers import reference_hard_text
from tests.helpers.records import read_shards
from tests.helpers.reference_builder import reference_build
from tests.helpers.subprocesses import build_dataset_flags
from tfrecords_tools import example_writer
from tfrecords_tools import text_corpus

beam = pytest.importorskip("apache_beam")

from tfrecords_tools import beam_pipeline  # noqa: E402

NUM_JOBS = 2
NUM_OUT_FILES = 6


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
  """Six small files (three per job) of words and hard lines, and a vocab."""
  return reference_hard_text.write_corpus(
    tmp_path_factory.mktemp("beam_corpus"),
    num_files=6,
    lines_per_file=60,
    words="the of and a to in is was beam worker shard record job run".split(),
    max_words=20,
    seed=3,
  )


def _flags(corpus_dir, vocab, out, *extra):
  flags = build_dataset_flags(
    corpus_dir,
    vocab,
    out,
    max_seq_length=24,
    seed=5,
    num_processes=NUM_JOBS,
    num_out_files=NUM_OUT_FILES,
  )
  return flags + list(extra)


def _expected(corpus_dir, vocab):
  expected = {}
  for job in range(NUM_JOBS):
    expected.update(reference_build(corpus_dir, vocab, 24, NUM_JOBS, job, 5, NUM_OUT_FILES))
  return expected


def _raw_shards(out):
  """{file name: bytes} of everything in `out` (hidden files included)."""
  return {name: (out / name).read_bytes() for name in sorted(os.listdir(out))}


@pytest.mark.slow
def test_beam_multi_process_build_equals_local_build(corpus, tmp_path):
  corpus_dir, vocab = corpus
  local_out = tmp_path / "local"
  assert cli.main(_flags(corpus_dir, vocab, local_out)) == 0
  beam_out = tmp_path / "beam"
  code = cli.main(
    _flags(
      corpus_dir,
      vocab,
      beam_out,
      "--runner",
      "DirectRunner",
      "--direct_num_workers",
      "2",
      "--direct_running_mode",
      "multi_processing",
    )
  )
  assert code == 0
  local, beamed = _raw_shards(local_out), _raw_shards(beam_out)
  shards = [f"pretrain_data.tfrecord-{i}-of-{NUM_OUT_FILES}" for i in range(6)]
  assert sorted(beamed) == shards + ["records_info.json"]
  assert beamed == local  # same names, same bytes (the records info too)
  expected = _expected(corpus_dir, vocab)
  assert read_shards(beam_out, NUM_OUT_FILES) == expected
  assert all(expected[i] for i in range(NUM_OUT_FILES))


_FAIL_MARKER_ENV = "ELECTRA_TF_TEST_FAIL_MARKER"


def _job_failing_once(job_id, options, on_file=None):
  """`text_corpus.run_job`, except that job 1's first attempt dies after its
  third file, with records already written to its temporary shards."""
  marker = os.environ[_FAIL_MARKER_ENV]
  files_read = []

  def fail_on_third_file(writer):
    files_read.append(1)
    if on_file is not None:
      on_file(writer)
    if job_id == 1 and len(files_read) == 3 and not os.path.exists(marker):
      temp_files = [n for n in os.listdir(options.output_dir) if n.startswith(".")]
      with open(marker, "w") as f:
        json.dump({"records_written": writer.n_written, "temp_files": temp_files}, f)
      raise RuntimeError("injected worker failure")

  return text_corpus.run_job(job_id, options, on_file=fail_on_third_file)


@pytest.mark.slow
def test_retried_job_leaves_no_partial_or_duplicate_shard(corpus, tmp_path, monkeypatch):
  corpus_dir, vocab = corpus
  marker = tmp_path / "failed_once"
  monkeypatch.setenv(_FAIL_MARKER_ENV, str(marker))
  # Small tokenizer batches, so records are written before the failure (this
  # runner runs bundles in this process).
  monkeypatch.setattr(example_writer, "TOKENIZE_BATCH_LINES", 16)
  out = tmp_path / "out"
  options = text_corpus.BuildOptions(
    corpus_dir=corpus_dir,
    vocab_file=vocab,
    output_dir=str(out),
    max_seq_length=24,
    seed=5,
    num_processes=NUM_JOBS,
    num_out_files=NUM_OUT_FILES,
  )
  text_corpus.check_options(options)
  text_corpus.prepare_output_dir(options.output_dir, overwrite=False)
  # The bundle-based DirectRunner retries a failed bundle (up to 4 attempts),
  # as Dataflow, Flink and Spark do.
  beam_options = beam_pipeline.pipeline_options("BundleBasedDirectRunner", [])
  counters = beam_pipeline.run_jobs_on_beam(_job_failing_once, options, beam_options)
  # The failure happened, mid-job: records were in job 1's temporary shards.
  failure = json.loads(marker.read_text())
  assert failure["records_written"] > 0
  assert len(failure["temp_files"]) == len(range(1, NUM_OUT_FILES, NUM_JOBS))
  # The retry finished the job: every shard complete, nothing else left.
  # (run_jobs_on_beam alone: the records info is the build's, written after it)
  assert sorted(os.listdir(out)) == [
    f"pretrain_data.tfrecord-{i}-of-{NUM_OUT_FILES}" for i in range(NUM_OUT_FILES)
  ]
  expected = _expected(corpus_dir, vocab)
  assert read_shards(out, NUM_OUT_FILES) == expected
  # This runner's counters include the failed attempt's work (and job 0's,
  # when it shared job 1's bundle and was rerun with it).
  assert counters["jobs"] >= NUM_JOBS
  assert counters["examples"] >= sum(len(r) for r in expected.values())


def test_finalize_removes_temporary_files_and_checks_every_shard(tmp_path):
  (tmp_path / "pretrain_data.tfrecord-0-of-2").write_bytes(b"")
  (tmp_path / ".pretrain_data.tfrecord-1-of-2.123.tmp.abc").write_bytes(b"partial")
  (tmp_path / "keep.txt").write_text("other")
  with pytest.raises(RuntimeError, match="1 shards missing"):
    beam_pipeline.finalize_output([{"examples": 3}], str(tmp_path), 2)
  assert sorted(os.listdir(tmp_path)) == ["keep.txt", "pretrain_data.tfrecord-0-of-2"]
  (tmp_path / "pretrain_data.tfrecord-1-of-2").write_bytes(b"")
  assert beam_pipeline.finalize_output([{"examples": 3}, {"examples": 4}], str(tmp_path), 2) == 7


def test_bad_input_is_reported_before_the_pipeline_runs(corpus, tmp_path, capsys, monkeypatch):
  corpus_dir, vocab = corpus

  def no_pipeline(*args, **kwargs):
    raise AssertionError("the pipeline must not be submitted")

  monkeypatch.setattr(beam_pipeline, "run_jobs_on_beam", no_pipeline)
  runner = ["--runner", "DirectRunner"]
  out = tmp_path / "out"
  assert cli.main(_flags(corpus_dir, str(tmp_path / "missing.txt"), out, *runner)) == 2
  assert "--vocab-file" in capsys.readouterr().err
  empty = tmp_path / "empty"
  empty.mkdir()
  assert cli.main(_flags(str(empty), vocab, out, *runner)) == 2
  assert "holds no text" in capsys.readouterr().err
  busy = tmp_path / "busy"
  busy.mkdir()
  (busy / "notes.txt").write_text("keep")
  assert cli.main(_flags(corpus_dir, vocab, busy, *runner)) == 2
  assert "not empty" in capsys.readouterr().err
  assert os.listdir(busy) == ["notes.txt"]
  # A misspelt Beam option is an error too, not a warning Beam drops.
  assert cli.main(_flags(corpus_dir, vocab, out, *runner, "--temp-location", "x")) == 2
  assert "--temp-location" in capsys.readouterr().err
  assert not out.exists()
  # Beam options without --runner are not silently ignored either.
  with pytest.raises(SystemExit):
    cli.main(_flags(corpus_dir, vocab, out, "--direct_num_workers", "2"))
  assert "Apache Beam pipeline options, add --runner" in capsys.readouterr().err


@pytest.mark.slow
def test_beam_is_not_imported_without_runner(corpus, tmp_path):
  corpus_dir, vocab = corpus
  script = (
    "import sys\n"
    "from electra_tf import build_pretraining_dataset as cli\n"
    f"assert cli.main({_flags(corpus_dir, vocab, tmp_path / 'out')!r}) == 0\n"
    "assert 'apache_beam' not in sys.modules\n"
  )
  subprocess.run([sys.executable, "-c", script], check=True, cwd=REPO_ROOT, capture_output=True)
  assert len(os.listdir(tmp_path / "out")) == NUM_OUT_FILES + 1  # and records_info.json


def _job_interrupted(job_id, options, on_file=None):
  """A job that Ctrl-C stops as it starts."""
  raise KeyboardInterrupt


def test_ctrl_c_in_a_beam_job_ends_in_the_builders_one_line(
  corpus, tmp_path, capsys, caplog, monkeypatch
):
  """Beam logs a step's KeyboardInterrupt ("KeyboardInterrupt [while running
  'RunJob']" and its traceback) and re-raises it as a RuntimeError: the
  build says it in its own one line instead, as without --runner."""
  corpus_dir, vocab = corpus
  monkeypatch.setattr(text_corpus, "run_job", _job_interrupted)
  out = tmp_path / "out"
  assert cli.main(_flags(corpus_dir, vocab, out, "--runner", "DirectRunner")) == 130
  err = capsys.readouterr().err
  assert err.strip().splitlines()[-1].startswith("interrupted (Ctrl-C); removed the "), err
  assert "Traceback" not in err and "while running" not in err, err
  reports = [r for r in caplog.records if r.name.startswith("apache_beam") and r.exc_info]
  assert not reports, [r.getMessage() for r in reports]
  assert os.listdir(out) == []
  # Only Ctrl-C (and the builder's one-line ValueErrors) is quieted: Beam's
  # other errors are still logged.
  with beam_pipeline.ctrl_c_reports_quieted():
    try:
      raise RuntimeError("a real error")
    except RuntimeError:
      beam_pipeline.logging.getLogger("apache_beam.runners.common").exception("boom")
  assert [r.getMessage() for r in caplog.records if r.name.startswith("apache_beam")] == ["boom"]
