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
- every record of every file is checksum-verified before training; with a
  `seed`, the input position is saved with each checkpoint and a resumed
  run continues with the next batch (the same batches as an uninterrupted
  run);
- exit status: 0 done, 2 bad input (one line on stderr), 1 corrupt data met
  while training, 143 stopped by SIGTERM after saving a checkpoint.

The work is done by `electra_tf.training.pretraining_run`: training goes
through `ElectraPretrainer.fit` with the callbacks of
`electra_tf.training.callbacks`, the same path a user's own Keras script takes
(see docs/keras.md). Evaluation writes `<model_dir>/results/unsup_results.txt` (`name = value` lines), a JSON
twin and the `.pkl` the original's config names.
"""

import argparse
import sys

from electra_tf.configs.hparams import add_run_flags
from electra_tf.training import pretraining_run

# 128 + SIGTERM, what a shell reports for a process the signal ended.
EXIT_PREEMPTED = 128 + 15


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  add_run_flags(parser, "trained")
  args = parser.parse_args(argv)
  try:
    config = pretraining_run.make_config(args.data_dir, args.model_name, args.hparams)
    strategy = pretraining_run.early_strategy(config)
    files = pretraining_run.validate_config(config)
  except ValueError as e:
    # Bad input: one clear line, no traceback, nothing trained.
    print(f"run_pretraining: error: {e}", file=sys.stderr, flush=True)
    return 2
  try:
    pretraining_run.train_or_eval(config, files, strategy)
  except pretraining_run.TrainingPreempted as e:
    # Non-zero, so schedulers do not take a preempted job as finished.
    print(f"run_pretraining: {e}; re-run to resume.", file=sys.stderr, flush=True)
    return EXIT_PREEMPTED
  except pretraining_run.TrainingDataError as e:
    print(f"run_pretraining: error: {e}", file=sys.stderr, flush=True)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
