"""Fine-tunes and evaluates a pre-trained ELECTRA model on GLUE, SQuAD, MRQA
and chunking (`run_finetuning.py` flags, the original's `finetune/` package).

Usage:
  python -m electra_tf.run_finetuning --data-dir DIR --model-name NAME \
      --hparams '{"model_size": "small", "task_names": ["rte"]}'

Reads `<data-dir>/finetuning_data/<task>/`, starts from the checkpoint in
`<data-dir>/models/<model-name>` and writes everything under that model
directory (`configure_finetuning.py` output paths). Featurised records are
reused while their settings and data are unchanged; re-running the same
command resumes an interrupted trial. A pre-training model dir's
`config.json` gives the encoder's sizes and vocab unless `--hparams` set them.

Exit status (`electra_tf.utils.exit_codes`): 0 done, 2 bad input (one line on stderr, nothing written),
143 stopped by SIGTERM after saving a checkpoint (129 for SIGHUP, the terminal closed; 130 for
Ctrl-C); stopped while it builds features, it removes them and the new trial.
"""

import argparse
import sys

from absl import logging

from electra_tf.hparams_input import add_run_flags
from electra_tf.runtime import distribution
from electra_tf.training import finetuning_run as runner
from electra_tf.training import run_status
from electra_tf.training.finetuning_run import ModelRunner  # noqa: F401  (public API)
from electra_tf.training.finetuning_run import get_finetuning_bert_config  # noqa: F401
from electra_tf.training.finetuning_run import median_results  # noqa: F401
from electra_tf.training.finetuning_run import results_lines  # noqa: F401
from electra_tf.training.finetuning_run import run_finetuning  # noqa: F401
from electra_tf.training.finetuning_run import write_results  # noqa: F401
from electra_tf.utils import exit_codes
from electra_tf.utils import interrupts
from electra_tf.utils.console_logging import plain_console_logging


def _check_before_work(inputs):
  """Checks what would otherwise fail after the data is read: the starting
  model and the epochs."""
  config = inputs.config
  if config.do_train and not config.num_train_epochs > 0:
    raise ValueError(f"hparam num_train_epochs={config.num_train_epochs}; expected > 0")
  if config.init_checkpoint:
    try:
      if inputs.source_error:
        raise ValueError(inputs.source_error)
      inputs.source.check_starts_finetuning()
    except ValueError as e:
      raise ValueError(
        f"hparam init_checkpoint (the model to fine-tune; by default the pre-trained "
        f"<data-dir>/models/<model-name>): {e}"
      ) from None


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  add_run_flags(parser, "fine-tuned", presets=False)
  args = parser.parse_args(argv)
  logging.set_verbosity(logging.INFO)
  plain_console_logging()
  try:
    inputs = runner.make_inputs(args.model_name, args.data_dir, args.hparams)
    # Collective ops (multi-worker) must be configured before TF starts.
    strategy = distribution.setup_distribution(inputs.config)
    inputs = runner.validate_inputs(inputs)
    _check_before_work(inputs)
  except Exception as e:  # pylint: disable=broad-except
    line = run_status.input_error_line(e)
    if line is None:
      raise
    # Bad input: one clear line, no traceback, nothing trained.
    print(f"run_finetuning: error: {line}", file=sys.stderr, flush=True)
    return exit_codes.BAD_INPUT
  return run_status.run_to_exit_status(
    "run_finetuning", lambda: runner.run_finetuning(inputs.config, strategy, inputs)
  )


if __name__ == "__main__":
  interrupts.exit_with(main())
