"""electra_tf: ELECTRA (google-research/electra) on TensorFlow 2 / Keras 3."""

import os as _os
import sys as _sys

_QUIET_MARKER = "ELECTRA_TF_QUIET_TF_START_UP"


def _quiet_tensorflow_start_up():
  """For `python -m electra_tf.<tool>` / `tfrecords_tools.<tool>` runs: hide
  TensorFlow's C++ start-up lines (CUDA probes and cuInit errors on machines
  without a GPU, oneDNN notices), which are printed before its logging is set
  up and so ignore `TF_CPP_MIN_LOG_LEVEL`. A user who set
  `TF_CPP_MIN_LOG_LEVEL` sees everything they asked for; imported as a
  library, nothing changes. Python errors still surface: only C++ log lines
  written while `tensorflow` is imported are dropped."""
  # A process that a quieted tool spawns (the builder's job processes)
  # inherits the marker and is quieted too.
  spawned_by_quiet_tool = _os.environ.get(_QUIET_MARKER) == "1"
  started_as_tool = _sys.argv[:1] == ["-m"] and "TF_CPP_MIN_LOG_LEVEL" not in _os.environ
  if not (started_as_tool or spawned_by_quiet_tool) or "tensorflow" in _sys.modules:
    return
  _os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
  _os.environ[_QUIET_MARKER] = "1"
  saved_stderr = _os.dup(2)
  devnull = _os.open(_os.devnull, _os.O_WRONLY)
  _os.dup2(devnull, 2)
  try:
    import tensorflow  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  finally:
    _os.dup2(saved_stderr, 2)
    _os.close(saved_stderr)
    _os.close(devnull)


_quiet_tensorflow_start_up()

from electra_tf.configs.bert_config import BertConfig
from electra_tf.configs.hparams import load_hparams
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.configs.pretraining import get_bert_config
from electra_tf.configs.pretraining import get_generator_config

__version__ = "0.1.0"

from electra_tf.checkpoints.official import load_official_checkpoint  # noqa: E402
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor  # noqa: E402
from electra_tf.models.electra_pretrainer import ElectraPretrainer  # noqa: E402
from electra_tf.task_models.classifier import ElectraClassifier  # noqa: E402
from electra_tf.task_models.question_answerer import ElectraQuestionAnswerer  # noqa: E402
from electra_tf.task_models.token_tagger import ElectraTokenTagger  # noqa: E402
