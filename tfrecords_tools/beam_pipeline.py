"""Runs a corpus builder's jobs as an Apache Beam pipeline (`--runner`).

The local builders split a corpus into `num_processes` jobs; job j reads the
files (TFDS documents, OpenWebText archives) with `index % num_processes == j`,
draws from its own `random.Random(seed)` and writes the shards with
`index % num_processes == j`. Here every job id is one Beam element, and a
worker runs exactly the local job function on it, so the shards are the same,
record for record, whatever the runner and however many workers it has.

Retries and duplicate attempts are safe: a job writes its shards under hidden
names unique to the attempt and renames them into place only when all of its
records are written (`ExampleWriter`); a failed attempt removes its temporary
files; a rerun of a job writes the same bytes under the same final names. The
last step removes temporary files left by attempts that were killed outright
and checks that every shard exists.

Progress is reported as Beam counters in the namespace `electra_tf.build`:
`files` (corpus files, TFDS documents or OpenWebText archives read), `lines`,
`examples`, `bytes` and `jobs` (jobs finished).

Beam is imported only by this module, which only `--runner` loads.

Example:

```python
from tfrecords_tools import text_corpus
options = text_corpus.BuildOptions(corpus_dir="corpus", vocab_file="vocab.txt",
                                   output_dir="out", seed=0, num_processes=4)
beam_args = pipeline_options("DirectRunner", ["--direct_num_workers=2"])
counters = run_jobs_on_beam(text_corpus.run_job, options, beam_args)
```
"""

import contextlib
import logging
import os
import re
import signal
import sys
import threading

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options import pipeline_options as beam_pipeline_options
from apache_beam.options.pipeline_options import PipelineOptions
import tensorflow as tf

from electra_tf.utils import interrupts
from tfrecords_tools import example_writer

# Beam imports this module as each SDK worker process starts (`--beam_plugins`,
# from `pipeline_options`). A terminal's Ctrl-C reaches those processes too:
# there it ends the worker at once, without a traceback (SIGINT's default
# action); the main process cancels the build and reports it in one line.
_main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
if getattr(_main_spec, "name", None) == "apache_beam.runners.worker.sdk_worker_main":
  signal.signal(signal.SIGINT, signal.SIG_DFL)

COUNTER_NAMESPACE = "electra_tf.build"
COUNTERS = ("files", "lines", "examples", "bytes", "jobs")


def pipeline_options(runner, beam_args):
  """`PipelineOptions` for `--runner runner` plus Beam's own flags.

  Args:
    runner: a Beam runner name (DirectRunner, PrismRunner, DataflowRunner,
      FlinkRunner, SparkRunner, ...).
    beam_args: the command line's remaining flags, passed to Beam as they are.

  Raises:
    ValueError: a flag no Beam option knows, or a bad value for one (one
      line, before anything is submitted).
  """
  flags = ["--runner", runner, f"--beam_plugins={__name__}"] + list(beam_args)
  # Beam only warns about flags it cannot parse; a typo such as
  # --temp-location would otherwise be dropped silently.
  unknown = _unknown_flags(flags)
  if unknown:
    raise ValueError(
      f"unknown command-line flags {unknown}: expected the builder's flags or Beam pipeline "
      "options (such as --project, --region, --temp_location, --direct_num_workers)"
    )
  return PipelineOptions(flags)


class _OptionsParser(beam_pipeline_options._BeamArgumentParser):  # pylint: disable=protected-access
  """Beam's options parser, whose errors (a bad value for an option) raise
  ValueError, for one line, instead of printing Beam's whole usage and exiting."""

  def error(self, message):
    raise ValueError(message)


def _unknown_flags(flags):
  """The flags in `flags` that no registered `PipelineOptions` class defines.

  Parses them as `PipelineOptions.get_all_options` does (Beam's own parser
  class and each options class's `_add_argparse_args`), but returns what is
  left over instead of logging it.
  """
  parser = _OptionsParser(allow_abbrev=False)
  classes = {str(cls): cls for cls in PipelineOptions.__subclasses__()}
  for cls in classes.values():
    cls._add_argparse_args(parser)  # pylint: disable=protected-access
  _, unknown = parser.parse_known_args(flags)
  return [arg.split("=", 1)[0] for arg in unknown if arg.startswith("-")]


class _ProgressCounters:
  """Turns an `ExampleWriter`'s running totals into Beam counter increments."""

  def __init__(self, counters):
    self._counters = counters
    self._seen = {"bytes": 0, "lines": 0, "examples": 0}

  def on_file(self, writer):
    self._counters["files"].inc()
    self._advance(bytes=writer.bytes_read, lines=writer.lines_read, examples=writer.n_written)

  def on_job_done(self, stats):
    self._advance(bytes=stats["bytes"], lines=stats["lines"], examples=stats["examples"])
    self._counters["jobs"].inc()

  def _advance(self, **totals):
    for name, total in totals.items():
      if total > self._seen[name]:
        self._counters[name].inc(total - self._seen[name])
        self._seen[name] = total


class RunJobFn(beam.DoFn):
  """Runs `job_fn(job_id, options, on_file=...)` for each job id; yields its stats.

  Args:
    job_fn: a builder's per-job function (`text_corpus.run_job`,
      `openwebtext.run_job`).
    options: the builder's options (`BuildOptions`, `OpenWebTextOptions`).
  """

  def __init__(self, job_fn, options):
    super().__init__()
    self._job_fn = job_fn
    self._options = options
    self._counters = None

  def setup(self):
    self._counters = {name: Metrics.counter(COUNTER_NAMESPACE, name) for name in COUNTERS}

  def process(self, job_id):
    progress = _ProgressCounters(self._counters)
    stats = self._job_fn(job_id, self._options, on_file=progress.on_file)
    progress.on_job_done(stats)
    yield stats


def finalize_output(job_stats, output_dir, num_out_files):
  """After every job: removes leftover temporary shards (of attempts killed
  before they could clean up) and checks that all shards exist.

  Returns:
    The number of examples written over all jobs.

  Raises:
    RuntimeError: a shard is missing (a job's output was lost).
  """
  names = set(tf.io.gfile.listdir(output_dir))
  for name in sorted(names):
    if name.startswith(example_writer.TEMP_PREFIXES):
      logging.info("removing temporary file of a failed attempt: %s", name)
      tf.io.gfile.remove(os.path.join(output_dir, name))
  missing = [
    example_writer.shard_name(i, num_out_files)
    for i in range(num_out_files)
    if example_writer.shard_name(i, num_out_files) not in names
  ]
  if missing:
    raise RuntimeError(f"{len(missing)} shards missing in {output_dir!r}, e.g. {missing[:3]}")
  return sum(s["examples"] for s in job_stats)


def add_build_steps(pipeline, job_fn, options):
  """Adds the jobs and the final check to `pipeline`; returns the job stats."""
  stats = (
    pipeline
    | "JobIds" >> beam.Create(list(range(options.num_processes)))
    # Spreads the job ids over the workers (Create may put them in one bundle).
    | "SpreadJobs" >> beam.Reshuffle()
    | "RunJob" >> beam.ParDo(RunJobFn(job_fn, options))
  )
  _ = (
    stats
    | "AllJobsDone" >> beam.combiners.ToList()
    | "FinalizeOutput" >> beam.Map(finalize_output, options.output_dir, options.num_out_files)
  )
  return stats


def counter_totals(result):
  """{counter name: value} of the build's counters in a finished pipeline's
  result (committed values where the runner has them, else attempted)."""
  totals = dict.fromkeys(COUNTERS, 0)
  query = result.metrics().query(MetricsFilter().with_namespace(COUNTER_NAMESPACE))
  for counter in query["counters"]:
    try:
      value = counter.committed
    except Exception:  # pylint: disable=broad-except
      value = None
    if value is None:
      value = counter.attempted
    totals[counter.key.metric.name] += value or 0
  return totals


def run_jobs_on_beam(job_fn, options, beam_options):
  """Runs every job of a validated, prepared build on Beam and waits.

  Args:
    job_fn: the builder's per-job function.
    options: the builder's options (inputs checked, output dir prepared).
    beam_options: from `pipeline_options`.

  Returns:
    The build's counters (`counter_totals`).

  Raises:
    ValueError: a job's one-line error (a full disk, bad input), without the
      step Beam adds to it.
    KeyboardInterrupt: Ctrl-C (Beam re-raises it as a RuntimeError).
  """
  pipeline = beam.Pipeline(options=beam_options)
  add_build_steps(pipeline, job_fn, options)
  with ctrl_c_reports_quieted():
    try:
      result = pipeline.run()
      result.wait_until_finish()
    except Exception as e:
      if _caused_by_ctrl_c(e):
        # Beam re-raises a step's KeyboardInterrupt as a RuntimeError
        # ("KeyboardInterrupt [while running 'RunJob']"): Ctrl-C it is, for
        # the builder's one line.
        raise KeyboardInterrupt from None
      if isinstance(e, ValueError) and e.args and isinstance(e.args[0], str):
        e.args = (re.sub(r"( \[while running '[^']*'\])+$", "", e.args[0]), *e.args[1:])
      raise
  return counter_totals(result)


def _caused_by_ctrl_c(error):
  """Whether `error` is, or was raised while handling, a KeyboardInterrupt."""
  while error is not None:
    if isinstance(error, KeyboardInterrupt):
      return True
    error = error.__cause__ or error.__context__
  return False


def _after_a_stop(error):
  """Whether `error` (an exception or None) is a Ctrl-C's, or comes after a
  stop signal (worker handlers and SDK workers failing as they are cut off)."""
  return _caused_by_ctrl_c(error) or interrupts.stop_seen() is not None


class _DropOneLineReports(logging.Filter):
  """Drops Beam's records of what the builder reports in one line: a job's
  ValueError (a full disk, bad input), a Ctrl-C, and after a stop signal
  every record (its ending workers' "Python sdk harness failed", "Error
  closing worker_handler"); every other record passes."""

  def filter(self, record):
    error = record.exc_info[1] if isinstance(record.exc_info, tuple) else None
    return not record.name.startswith("apache_beam") or not (
      isinstance(error, ValueError) or _after_a_stop(error)
    )


@contextlib.contextmanager
def ctrl_c_reports_quieted():
  """Within: Beam does not report what the builder says in one line: the
  KeyboardInterrupt of the step it interrupts ("KeyboardInterrupt [while
  running 'RunJob']", with its traceback) and what fails after a stop signal
  (worker threads included), or a job's ValueError (a full disk).

  A logger's filter applies only to records logged to that logger itself,
  so the filter goes on every `apache_beam` logger there is (Beam creates
  them at import), and on the root logger's handlers for any made later."""
  drop = _DropOneLineReports()
  loggers = [logging.getLogger("apache_beam")] + [
    logger
    for name, logger in list(logging.Logger.manager.loggerDict.items())
    if name.startswith("apache_beam.") and isinstance(logger, logging.Logger)
  ]
  handlers = list(logging.getLogger().handlers)
  for each in loggers + handlers:
    each.addFilter(drop)
  previous_hook = threading.excepthook

  def quiet_after_a_stop(args):
    # "Exception in thread run_worker: … Worker subprocess exited with return code -2"
    if not _after_a_stop(args.exc_value):
      previous_hook(args)

  threading.excepthook = quiet_after_a_stop
  try:
    yield
  finally:
    threading.excepthook = previous_hook
    for each in loggers + handlers:
      each.removeFilter(drop)
