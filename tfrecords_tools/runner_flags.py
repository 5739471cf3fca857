"""`--runner`: the builders' switch from local job processes to Apache Beam.

Without `--runner` the command line is parsed strictly and Beam is never
imported. With it, every flag the builder does not define is handed to Beam
as a pipeline option (`--project`, `--region`, `--temp_location`,
`--direct_num_workers`, ...), and a flag Beam does not know either is an
error before anything runs.

Example:

```python
parser = argparse.ArgumentParser()
add_runner_flag(parser)
args, beam_options = parse_args(parser, ["--runner", "DirectRunner"])
```
"""

import dataclasses
import signal
import sys

from electra_tf.utils import exit_codes
from electra_tf.utils import extras
from electra_tf.utils import interrupts


def add_runner_flag(parser):
  parser.add_argument(
    "--runner",
    default=None,
    help=(
      "Run the jobs as an Apache Beam pipeline on this runner (DirectRunner, PrismRunner, "
      "DataflowRunner, FlinkRunner, SparkRunner); other unknown flags go to Beam as pipeline "
      "options. Needs the beam extra (`pip install 'electra_tf[beam]'`). Default: local job processes."
    ),
  )


def parse_args(parser, argv=None):
  """Returns (args, Beam `PipelineOptions` or None when `--runner` is absent).

  Raises:
    ValueError: a flag neither the builder nor Beam knows, or Beam missing.
  """
  args, rest = parser.parse_known_args(argv)
  if args.runner is None:
    if rest:
      parser.error(
        f"unrecognized arguments: {' '.join(rest)} (if they are Apache Beam pipeline options, "
        "add --runner)"
      )
    return args, None
  extras.require("apache_beam", "beam", f"--runner {args.runner}")
  from tfrecords_tools import beam_pipeline  # deferred: Apache Beam is an optional extra

  return args, beam_pipeline.pipeline_options(args.runner, rest)


def check_positive(args, *names):
  """The corpus tools' numeric flags (`--num-files`, `--max-mb`, ...): raises
  ValueError (one line) for a value of the flags named by their `dest`s in
  `names` that is not a positive number; a flag left at None is not given."""
  for name in names:
    value = getattr(args, name)
    if value is not None and not 0 < value < float("inf"):  # also refuses NaN
      raise ValueError(f"--{name.replace('_', '-')} {value}: expected a positive number")


def check_paths_given(args, *names):
  """Raises ValueError (one line) for a path flag, named by its `dest` in
  `names`, given as "" (an unset shell variable): it would mean the working
  directory."""
  for name in names:
    if not str(getattr(args, name)).strip():
      raise ValueError(
        f"--{name.replace('_', '-')} is empty (an unset shell variable?); expected a path"
      )


def options_from_args(options_class, args):
  """An `options_class` (a dataclass) whose fields take the values of the
  parsed flags of the same names; fields without a flag keep their defaults."""
  names = [f.name for f in dataclasses.fields(options_class) if hasattr(args, f.name)]
  return options_class(**{name: getattr(args, name) for name in names})


def run_builder(parser, argv, options_from_args, build):
  """The builders' `main`: parses `argv`, builds the options, runs `build` and
  prints how many examples were written.

  Args:
    parser: the builder's `argparse.ArgumentParser` (with `--runner`).
    argv: the command line without the program name; None means `sys.argv`.
    options_from_args: makes the builder's options from the parsed args.
    build: `build(options, beam_options)`; returns the Beam counters (a dict)
      or, for local jobs, one stats dict per job.

  Returns:
    The exit status (`electra_tf.utils.exit_codes`): 0, 2 after one
    `error: ...` line for bad input, 128 + the signal after Ctrl-C (130),
    SIGTERM (143) or SIGHUP (129), its shards removed, in one line.
  """
  options = None
  with interrupts.ctrl_c_remembered():
    try:
      args, beam_options = parse_args(parser, argv)
      options = options_from_args(args)
      stats = build(options, beam_options)
    except ValueError as e:
      print(f"error: {e}", file=sys.stderr)
      return exit_codes.BAD_INPUT
    except KeyboardInterrupt as e:
      # A stop: shards of a build that did not finish are not a dataset; the
      # build removed them and put an earlier build back (`build_undone`).
      undone = getattr(e, "build_undone", None)
      where = "; nothing written"
      if options is not None and undone is not None:
        removed, restored = undone
        where = f"; removed the {removed} shard(s) it had written to {options.output_dir}"
        if restored:
          where += f" and put the earlier build's {restored} file(s) back"
      # Beam may re-raise the stop as a plain KeyboardInterrupt: the signal seen tells.
      signum = interrupts.stop_seen() or interrupts.stop_signal_of(e) or signal.SIGINT
      print(f"{interrupts.stopped_phrase(signum)}{where}", file=sys.stderr, flush=True)
      return 128 + signum
  if beam_options is not None:
    print(f"Beam counters: {stats}")
    total = stats["examples"]
  else:
    total = sum(s["examples"] for s in stats)
  print(f"Wrote {total} examples to {options.output_dir}")
  return 0
