"""electra_tf: ELECTRA (google-research/electra) on TensorFlow 2 / Keras 3."""

import os as _os
import signal as _signal
import sys as _sys
import tempfile as _tempfile

from electra_tf.utils import console_logging as _console_logging
from electra_tf.utils import interrupts as _interrupts

_QUIET_MARKER = "ELECTRA_TF_QUIET_TF_START_UP"
# Set to 1 to see everything TensorFlow prints while it is imported: the one
# way to read a fatal C++ error (an abort leaves no Python code to replay it).
_VERBOSE_IMPORT = "ELECTRA_TF_VERBOSE_IMPORT"


def _command_name():
  """The command this process runs (`run_pretraining`), or None for a library
  import: `python -m <package>.<tool>` (runpy sets argv[0] to "-m" while the
  package is imported) or the installed console script `electra-<tool>`."""
  argv = getattr(_sys, "argv", [])
  if argv[:1] == ["-m"]:
    orig = getattr(_sys, "orig_argv", [])  # ["python", "-m", "<module>", ...]
    return orig[orig.index("-m") + 1].rsplit(".", 1)[-1] if "-m" in orig[:-1] else "electra_tf"
  script = _os.path.basename(argv[0]) if argv else ""
  tool = script[len("electra-") :].replace("-", "_")
  packages = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
  is_tool = lambda package: _os.path.isfile(_os.path.join(packages, package, tool + ".py"))
  if script.startswith("electra-") and (is_tool("electra_tf") or is_tool("tfrecords_tools")):
    return tool
  return None


_COMMAND = _command_name()


def _interrupted(error):
  """Whether `error` is Ctrl-C, or wraps one (from a C++ call)."""
  while error is not None:
    if isinstance(error, KeyboardInterrupt):
      return True
    error = error.__cause__ or error.__context__
  return False


def _import_failed_in_one_line(error, what="TensorFlow"):
  """A command whose import of `what` failed: one line naming
  the error and the likely cause, exit status 1."""
  text = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
  lowered = text.lower()
  if isinstance(error, MemoryError) or "map segment" in lowered or "cannot allocate" in lowered:
    cause = f"too little memory for {what} (a `ulimit -v` limit?)"
  else:
    cause = f"a broken or mismatched {what} installation?"
  print(
    f"{_COMMAND or 'electra_tf'}: error: {what} could not be loaded ({text}): {cause} "
    f"{_VERBOSE_IMPORT}=1 shows the whole error",
    file=_sys.stderr,
    flush=True,
  )
  _os._exit(1)


def _quiet_tensorflow_start_up():
  """For commands (`python -m` or a console script): hide TensorFlow's C++ start-up lines (CUDA probes,
  oneDNN notices), printed before `TF_CPP_MIN_LOG_LEVEL` applies, unless the
  user set it or `ELECTRA_TF_VERBOSE_IMPORT=1`. What TensorFlow writes to fd 2
  while it is imported goes to a temporary file, shown only if it raises."""
  # A process that a quieted tool spawns (the builder's job processes)
  # inherits the marker and is quieted too.
  spawned_by_quiet_tool = _os.environ.get(_QUIET_MARKER) == "1"
  started_as_tool = _COMMAND is not None and "TF_CPP_MIN_LOG_LEVEL" not in _os.environ
  verbose = _os.environ.get(_VERBOSE_IMPORT, "") not in ("", "0")
  if verbose or not (started_as_tool or spawned_by_quiet_tool) or "tensorflow" in _sys.modules:
    return
  _os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
  _os.environ[_QUIET_MARKER] = "1"
  _sys.stderr.flush()
  saved_stderr = _os.dup(2)
  failed = True
  load_error = None  # the library could not be loaded: said in one line below
  with _tempfile.TemporaryFile() as captured:
    _os.dup2(captured.fileno(), 2)
    try:
      import tensorflow  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import

      failed = False
    except BaseException as e:
      failed = not _interrupted(e)  # Ctrl-C is not a broken install: its lines say nothing
      if isinstance(e, (ImportError, MemoryError, OSError)):
        load_error = e
      raise
    finally:
      _sys.stderr.flush()
      _os.dup2(saved_stderr, 2)
      _os.close(saved_stderr)
      if failed:  # the import raised: show what it printed before the traceback
        captured.seek(0)
        hidden = captured.read()
        if hidden:
          _os.write(2, hidden if hidden.endswith(b"\n") else hidden + b"\n")
      if load_error is not None:
        _import_failed_in_one_line(load_error)  # in place of the traceback


def _stops_in_one_line():
  """For commands: an uncaught Ctrl-C ends with one line and exit
  status 130 instead of a traceback; so do SIGTERM and SIGHUP while this
  package is imported (143, 129). Returns the signals given a handler here."""
  if _COMMAND is None:
    return ()
  previous = _sys.excepthook

  def hook(kind, error, traceback):
    verbose = _os.environ.get(_VERBOSE_IMPORT, "") not in ("", "0")
    if isinstance(error, ImportError) and not verbose:
      # A library that cannot be loaded (tensorflow_text under `ulimit -v`);
      # the error's text names the file.
      _import_failed_in_one_line(error, "a library")
    if not _interrupted(error):
      return previous(kind, error, traceback)
    signum = _interrupts.stop_signal_of(error) or _signal.SIGINT
    _sys.stdout.flush()
    print(f"{_COMMAND}: {_interrupts.stopped_phrase(signum)}", file=_sys.stderr)
    _sys.stderr.flush()
    _os._exit(128 + int(signum))  # the shell's status for the signal (130 for Ctrl-C)

  _sys.excepthook = hook

  def stop(signum, frame):
    del frame
    raise _interrupts.Stopped(signum)

  # Only while importing: a handler left in place would keep a process
  # blocked in C++ (a collective, a pipe) from dying on SIGTERM.
  handled = tuple(s for s in _interrupts.STOP_SIGNALS if s != _signal.SIGINT)
  return tuple(_interrupts.install_stop_handler(stop, handled))


def _keras_setting_problem():
  """What in the environment keeps Keras from running on TensorFlow (another
  backend, or `TF_USE_LEGACY_KERAS`), or None."""
  if "keras" in _sys.modules:
    return None  # the user's own Keras, already set up: theirs to choose
  legacy = _os.environ.get("TF_USE_LEGACY_KERAS", "").strip().lower()
  if legacy in ("1", "true", "yes"):
    return (
      f"TF_USE_LEGACY_KERAS={_os.environ['TF_USE_LEGACY_KERAS']} asks TensorFlow for Keras 2 "
      "(tf_keras); electra_tf runs on Keras 3: unset it"
    )
  backend = _os.environ.get("KERAS_BACKEND", "").strip()
  where = "KERAS_BACKEND"
  if not backend:
    keras_home = _os.environ.get("KERAS_HOME") or _os.path.join(_os.path.expanduser("~"), ".keras")
    where = _os.path.join(keras_home, "keras.json")
    try:
      import json as _json  # pylint: disable=g-import-not-at-top

      with open(where, encoding="utf-8") as f:
        backend = str(_json.load(f).get("backend", "")).strip()
    except (OSError, ValueError, AttributeError):
      backend = ""
  if backend and backend != "tensorflow":
    return (
      f"Keras is set to the {backend!r} backend ({where}); electra_tf runs on TensorFlow: "
      "set KERAS_BACKEND=tensorflow"
    )
  return None


_KERAS_SETTING_PROBLEM = _keras_setting_problem()
if _KERAS_SETTING_PROBLEM is not None:
  if _COMMAND is not None:  # a command: one line, as for any bad input
    print(f"error: {_KERAS_SETTING_PROBLEM}", file=_sys.stderr, flush=True)
    _os._exit(2)
  raise ImportError(_KERAS_SETTING_PROBLEM)

if _COMMAND is not None or _os.environ.get(_QUIET_MARKER) == "1":
  # A command piped into `head`, run with stdout closed or an ASCII-only
  # encoding finishes its work: its console output cannot fail.
  _console_logging.robust_console_streams()
_STOPS_HANDLED_WHILE_IMPORTING = _stops_in_one_line()
_quiet_tensorflow_start_up()

from electra_tf.configs.bert_config import BertConfig
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.configs.pretraining import get_bert_config
from electra_tf.configs.pretraining import get_generator_config
from electra_tf.hparams_input import load_hparams

__version__ = "0.1.0"

from electra_tf.checkpoints.official import load_official_checkpoint  # noqa: E402
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor  # noqa: E402
from electra_tf.models.electra_backbone import ElectraBackbone  # noqa: E402
from electra_tf.models.electra_pretrainer import ElectraPretrainer  # noqa: E402
from electra_tf.task_models.classifier import ElectraClassifier  # noqa: E402
from electra_tf.task_models.question_answerer import ElectraQuestionAnswerer  # noqa: E402
from electra_tf.task_models.token_tagger import ElectraTokenTagger  # noqa: E402

for _signum in _STOPS_HANDLED_WHILE_IMPORTING:  # imported: back to the default
  _signal.signal(_signum, _signal.SIG_DFL)

__all__ = [
  "BertConfig",
  "ElectraBackbone",
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
