"""Pre-trains or evaluates an ELECTRA model: `python -m electra_tf.run_pretraining`.

The original's command line and semantics (`run_pretraining.py` flags, `run_pretraining.py:train_or_eval`):

  python -m electra_tf.run_pretraining --data-dir DIR --model-name NAME \\
      --hparams '{"model_size": "small", "num_train_steps": 1000000}'

- data: `<data-dir>/pretrain_tfrecords/pretrain_data.tfrecord*` (hparam
  `pretrain_tfrecords`, comma-separated globs); the model and its
  checkpoints: `<data-dir>/models/<model-name>`;
- exactly one of `do_train` / `do_eval`;
- training resumes from the newest checkpoint in the model dir and stops at
  the absolute step `num_train_steps` (nothing to do if already there);
- `debug` deletes the model dir before training, as the original does;
  otherwise a re-run must build the model the dir holds (its `config.json`):
  an architecture change (sizes, heads, layers, vocab, generator, objectives)
  is refused in one line, and `config.json` is rewritten only once the
  checkpoint is restored; evaluation takes the model's sizes from it;
- one trainer per model dir: `<model_dir>/train.lock` (pid and host) makes a
  second one stop with one line naming the first (a lock left by a killed
  run is taken over);
- every record of every file is checksum-verified before training; with a
  `seed`, the input position is saved with each checkpoint and a resumed
  run continues with the next batch (the same batches as an uninterrupted
  run);
- exit status (`electra_tf.utils.exit_codes`): 0 done, 2 bad input (one
  line on stderr; also corrupt data met while training, a model dir that
  is not writable, or a disk that fills up while saving a checkpoint: its
  partial files are removed and a re-run resumes from the last good one),
  143 stopped by SIGTERM after saving a checkpoint (129 for SIGHUP, the
  terminal closed; 130 for Ctrl-C).

The work is done by `electra_tf.training.pretraining_run`: training goes
through `ElectraPretrainer.fit` with the callbacks of
`electra_tf.training.callbacks`, the same path a user's own Keras script takes
(see docs/keras.md). Evaluation writes `<model_dir>/results/unsup_results.txt` (`name = value` lines), a JSON
twin and the `.pkl` the original's config names.
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
