"""electra_tf: ELECTRA (google-research/electra) on TensorFlow 2 / Keras 3."""

import os as _os
import sys as _sys
import tempfile as _tempfile

_QUIET_MARKER = "ELECTRA_TF_QUIET_TF_START_UP"
# Set to 1 to see everything TensorFlow prints while it is imported: the one
# way to read a fatal C++ error (an abort leaves no Python code to replay it).
_VERBOSE_IMPORT = "ELECTRA_TF_VERBOSE_IMPORT"


def _quiet_tensorflow_start_up():
  """For `python -m electra_tf.<tool>` / `tfrecords_tools.<tool>` runs: hide
  TensorFlow's C++ start-up lines (CUDA probes and cuInit errors on machines
  without a GPU, oneDNN notices), which are printed before its logging is set
  up and so ignore `TF_CPP_MIN_LOG_LEVEL`. A user who set
  `TF_CPP_MIN_LOG_LEVEL` or `ELECTRA_TF_VERBOSE_IMPORT=1` sees everything;
  imported as a library, nothing changes. What TensorFlow writes to fd 2
  while it is imported goes to a temporary file, dropped when the import
  succeeds and written to the real stderr when it raises."""
  # A process that a quieted tool spawns (the builder's job processes)
  # inherits the marker and is quieted too.
  spawned_by_quiet_tool = _os.environ.get(_QUIET_MARKER) == "1"
  started_as_tool = _sys.argv[:1] == ["-m"] and "TF_CPP_MIN_LOG_LEVEL" not in _os.environ
  verbose = _os.environ.get(_VERBOSE_IMPORT, "") not in ("", "0")
  if verbose or not (started_as_tool or spawned_by_quiet_tool) or "tensorflow" in _sys.modules:
    return
  _os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
  _os.environ[_QUIET_MARKER] = "1"
  _sys.stderr.flush()
  saved_stderr = _os.dup(2)
  failed = True
  with _tempfile.TemporaryFile() as captured:
    _os.dup2(captured.fileno(), 2)
    try:
      import tensorflow  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import

      failed = False
    finally:
      _sys.stderr.flush()
      _os.dup2(saved_stderr, 2)
      _os.close(saved_stderr)
      if failed:  # the import raised: show what it printed before the traceback
        captured.seek(0)
        hidden = captured.read()
        if hidden:
          _os.write(2, hidden if hidden.endswith(b"\n") else hidden + b"\n")


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

__all__ = [
  "BertConfig",
  "ElectraClassifier",
  "ElectraPretrainer",
  "ElectraQuestionAnswerer",
  "ElectraTextPreprocessor",
  "ElectraTokenTagger",
  "PretrainingConfig",
  "__version__",
  "get_bert_config",
  "get_generator_config",
  "load_hparams",
  "load_official_checkpoint",
]
