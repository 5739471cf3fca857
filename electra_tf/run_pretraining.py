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
- `debug` deletes the model dir before training, as the original does.

The work is done by `electra_tf.training.pretraining_run`: training goes
through `ElectraPretrainer.fit` with the callbacks of
`electra_tf.training.callbacks`, the same path a user's own Keras script takes
(see the README). Evaluation writes `<model_dir>/results/unsup_results.txt` (`name = value` lines), a JSON
twin and the `.pkl` the original's config names.
"""

import argparse
import sys

from electra_tf.training import pretraining_run


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument(
    "--data-dir", required=True, help="Location of data files (model weights, etc)."
  )
  parser.add_argument("--model-name", required=True, help="The name of the model being trained.")
  parser.add_argument(
    "--hparams", default="{}", help="JSON dict of model hyperparameters, or a path ending in .json."
  )
  args = parser.parse_args(argv)
  try:
    config = pretraining_run.make_config(args.data_dir, args.model_name, args.hparams)
    strategy = pretraining_run.early_strategy(config)
    files = pretraining_run.validate_config(config)
  except ValueError as e:
    # Bad input: one clear line, no traceback, nothing trained.
    print(f"run_pretraining: error: {e}", file=sys.stderr, flush=True)
    return 2
  pretraining_run.train_or_eval(config, files, strategy)
  return 0


if __name__ == "__main__":
  sys.exit(main())
