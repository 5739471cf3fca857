"""Pre-trains or evaluates an ELECTRA model: `python -m electra_tf.run_pretraining`.

The original's command line and semantics (`run_pretraining.py` flags, `run_pretraining.py:train_or_eval`):

  python -m electra_tf.run_pretraining --data-dir DIR --model-name NAME \\
      --hparams '{"model_size": "small", "num_train_steps": 1000000}'

- data: `<data-dir>/pretrain_tfrecords/pretrain_data.tfrecord*` (hparam
  `pretrain_tfrecords`); the model: `<data-dir>/models/<model-name>`;
- exactly one of `do_train` / `do_eval`; training resumes from the newest
  checkpoint and stops at the absolute step `num_train_steps`;
- a re-run must build the model the dir holds (its `config.json`) unless
  `debug`, which deletes the model dir first, as the original does;
- one trainer per model dir (`<model_dir>/train.lock`);
- exit status (`electra_tf.utils.exit_codes`): 0 done, 2 bad input (one
  line on stderr), 143 stopped by SIGTERM after saving a checkpoint (129
  for SIGHUP, 130 for Ctrl-C).

The work is done by `electra_tf.training.pretraining_run`, through
`ElectraPretrainer.fit` (see docs/keras.md). Evaluation writes
`<model_dir>/results/unsup_results.txt`, a JSON twin and the original's `.pkl`.
"""

import argparse
import sys

from electra_tf.hparams_input import add_run_flags
from electra_tf.runtime import distribution
from electra_tf.training import held_out_evaluation
from electra_tf.training import pretraining_run
from electra_tf.training import run_status
from electra_tf.utils import exit_codes
from electra_tf.utils import interrupts


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  add_run_flags(parser, "trained")
  args = parser.parse_args(argv)
  try:
    config = pretraining_run.make_config(args.model_name, args.data_dir, args.hparams)
    # Decided once, before anything starts TensorFlow (multi-worker needs that).
    strategy = distribution.setup_distribution(config)
    inputs = pretraining_run.validate_config(config)
  except Exception as e:  # pylint: disable=broad-except
    line = run_status.input_error_line(e)
    if line is None:
      raise
    # Bad input: one clear line, no traceback, nothing trained.
    print(f"run_pretraining: error: {line}", file=sys.stderr, flush=True)
    return exit_codes.BAD_INPUT
  return run_status.run_to_exit_status(
    "run_pretraining",
    lambda: pretraining_run.train_or_eval(
      config, inputs, strategy, held_out_evaluation.held_out_callbacks(config, strategy)
    ),
  )


if __name__ == "__main__":
  interrupts.exit_with(main())
