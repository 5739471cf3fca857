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


def add_runner_flag(parser):
  parser.add_argument(
    "--runner",
    default=None,
    help=(
      "Run the jobs as an Apache Beam pipeline on this runner (DirectRunner, PrismRunner, "
      "DataflowRunner, FlinkRunner, SparkRunner); other unknown flags go to Beam as pipeline "
      "options. Needs `pip install -e '.[beam]'`. Default: local job processes."
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
      parser.error(f"unrecognized arguments: {' '.join(rest)} (Beam options need --runner)")
    return args, None
  try:
    from tfrecords_tools import beam_pipeline  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ValueError(
      f"--runner {args.runner} needs Apache Beam: pip install -e '.[beam]' ({e})"
    ) from e
  return args, beam_pipeline.pipeline_options(args.runner, rest)
