"""The tools' quieting of TensorFlow's start-up (`electra_tf/__init__.py`):
what TensorFlow writes to stderr while it is imported is hidden when the
import succeeds and shown when it fails, so a broken TensorFlow install is
not a silent exit. A stand-in `tensorflow` package first on the path plays
TensorFlow (writing to fd 2 as its C++ code does), so no real import runs."""

import os
import subprocess
import sys

from tests.conftest import REPO_ROOT
from tests.helpers.subprocesses import tool_user_env

_FAKE_TENSORFLOW = """import os
os.write(2, b"{message}\\n")
{ending}
"""
MESSAGE = "F tensorflow/core/fake_cpu_check.cc:42] this TensorFlow needs AVX2"


def _tool_with_fake_tensorflow(tmp_path, ending, **env):
  package = tmp_path / "tensorflow"
  package.mkdir(parents=True)
  (package / "__init__.py").write_text(_FAKE_TENSORFLOW.format(message=MESSAGE, ending=ending))
  env = tool_user_env(PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO_ROOT)]), **env)
  return subprocess.run(
    [sys.executable, "-m", "electra_tf.hparams_reference", "--help"],
    cwd=REPO_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=120,
  )


def test_a_failing_tensorflow_import_shows_what_it_wrote(tmp_path):
  done = _tool_with_fake_tensorflow(tmp_path, 'raise ImportError("no usable TensorFlow")')
  assert done.returncode != 0
  assert MESSAGE in done.stderr, done.stderr
  # The Python error follows what TensorFlow wrote, once, in one line (no traceback).
  assert done.stderr.count(MESSAGE) == 1
  assert done.stderr.index(MESSAGE) < done.stderr.index("ImportError: no usable TensorFlow")
  assert done.returncode == 1 and "Traceback" not in done.stderr
  assert done.stderr.strip().splitlines()[-1] == (
    "hparams_reference: error: TensorFlow could not be loaded (ImportError: no usable "
    "TensorFlow): a broken or mismatched TensorFlow installation? ELECTRA_TF_VERBOSE_IMPORT=1 "
    "shows the whole error"
  )


def test_too_little_memory_for_tensorflow_is_named(tmp_path):
  """Under `ulimit -v` TensorFlow's shared objects fail to map: a 33-line
  traceback that never said memory."""
  ending = 'raise ImportError("libfake.so: failed to map segment from shared object")'
  done = _tool_with_fake_tensorflow(tmp_path, ending)
  assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
  assert "too little memory for TensorFlow (a `ulimit -v` limit?)" in done.stderr


def test_a_succeeding_import_stays_quiet_unless_asked(tmp_path):
  # The stand-in imports fine but is no TensorFlow: the tool then fails on
  # the first TensorFlow name it uses, after the quieted import.
  quiet = _tool_with_fake_tensorflow(tmp_path / "a", "", ELECTRA_TF_VERBOSE_IMPORT="0")
  assert quiet.returncode != 0 and "Error" in quiet.stderr
  assert MESSAGE not in quiet.stderr, quiet.stderr
  verbose = _tool_with_fake_tensorflow(tmp_path / "b", "", ELECTRA_TF_VERBOSE_IMPORT="1")
  assert MESSAGE in verbose.stderr, verbose.stderr


def test_ctrl_c_while_tensorflow_is_imported_is_one_line_and_status_130(tmp_path):
  """Ctrl-C during start-up: no traceback and none of TensorFlow's hidden lines
  (a KeyboardInterrupt is not a broken install), the tool named, exit 130."""
  done = _tool_with_fake_tensorflow(tmp_path, "raise KeyboardInterrupt")
  assert done.returncode == 130, done.stderr
  assert done.stderr.strip() == "hparams_reference: interrupted (Ctrl-C)", done.stderr
  assert MESSAGE not in done.stderr


def test_an_error_tensorflow_raises_in_place_of_ctrl_c_is_one_line_too(tmp_path):
  """A KeyboardInterrupt inside a C++ call comes back wrapped in another error."""
  ending = (
    "try:\n    raise KeyboardInterrupt\nexcept KeyboardInterrupt as e:\n"
    "    raise RuntimeError('MISMATCH: REPLACED BY KeyboardInterrupt') from e"
  )
  done = _tool_with_fake_tensorflow(tmp_path, ending)
  assert done.returncode == 130, done.stderr
  assert done.stderr.strip() == "hparams_reference: interrupted (Ctrl-C)", done.stderr


def test_a_library_that_fails_to_load_after_tensorflow_is_named_too(tmp_path):
  """Under `ulimit -v` TensorFlow loaded but tensorflow_text did not: the same
  33-line traceback, from the first module that imports it."""
  package = tmp_path / "tensorflow_text"
  package.mkdir()
  (package / "__init__.py").write_text(
    'raise ImportError("libpybinds.so: failed to map segment from shared object")'
  )
  env = tool_user_env(PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO_ROOT)]))
  done = subprocess.run(
    [sys.executable, "-m", "electra_tf.run_pretraining", "--help"],
    cwd=REPO_ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
  assert (
    done.stderr.strip()
    .splitlines()[-1]
    .startswith(
      "run_pretraining: error: a library could not be loaded (ImportError: libpybinds.so: failed "
      "to map segment from shared object): too little memory for a library (a `ulimit -v` limit?)"
    )
  )
