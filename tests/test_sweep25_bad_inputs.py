"""Newcomer sweep 25's console-script cases (bench/reports/newcomer_sweep_25.md
#12, #13, #57, #58): an installed `electra-<command>` script is the same
command as `python -m`, so it stops on Ctrl-C in one line (exit 130), refuses
a Keras setting in one line (exit 2), hides TensorFlow's start-up lines and
survives a closed pipe. Scripts are written as pip writes them, so their
argv[0] is the script's path."""

import os
import subprocess
import sys

from tests.conftest import REPO_ROOT
from tests.helpers.subprocesses import tool_user_env

_CONSOLE_SCRIPT = """import sys
from {module} import main
if __name__ == "__main__":
    sys.exit(main())
"""
# A stand-in `tensorflow` first on the path (as in test_import_quieting.py):
# it writes a start-up line to fd 2, then raises Ctrl-C.
_FAKE_TENSORFLOW = 'import os\nos.write(2, b"{message}\\n")\nraise KeyboardInterrupt\n'
START_UP_LINE = "I tensorflow/core/fake_start_up.cc:1] oneDNN custom operations are on"


def _run_script(tmp_path, name, module, args, stdout=subprocess.PIPE, **env):
  bin_dir = tmp_path / "bin"
  bin_dir.mkdir(parents=True, exist_ok=True)
  script = bin_dir / name
  script.write_text(_CONSOLE_SCRIPT.format(module=module))
  paths = [str(tmp_path / "fake")] if (tmp_path / "fake").exists() else []
  env = tool_user_env(PYTHONPATH=os.pathsep.join([*paths, str(REPO_ROOT)]), **env)
  return subprocess.run(
    [sys.executable, str(script), *args],
    cwd=tmp_path,
    env=env,
    stdout=stdout,
    stderr=subprocess.PIPE,
    text=True,
    timeout=300,
  )


def test_a_console_script_stops_on_ctrl_c_in_one_line_without_start_up_lines(tmp_path):
  (tmp_path / "fake" / "tensorflow").mkdir(parents=True)
  (tmp_path / "fake" / "tensorflow" / "__init__.py").write_text(
    _FAKE_TENSORFLOW.format(message=START_UP_LINE)
  )
  done = _run_script(
    tmp_path, "electra-hparams-reference", "electra_tf.hparams_reference", ["--help"]
  )
  assert done.returncode == 130, done.stderr
  assert done.stderr.strip() == "hparams_reference: interrupted (Ctrl-C)", done.stderr
  # The corpus tools' scripts are commands too.
  done = _run_script(tmp_path, "electra-build-vocab", "tfrecords_tools.build_vocab", ["--help"])
  assert done.returncode == 130, done.stderr
  assert done.stderr.strip() == "build_vocab: interrupted (Ctrl-C)", done.stderr


def test_a_console_script_refuses_another_keras_backend_in_one_line(tmp_path):
  done = _run_script(
    tmp_path,
    "electra-run-pretraining",
    "electra_tf.run_pretraining",
    ["--data-dir", "d", "--model-name", "m"],
    KERAS_BACKEND="jax",
  )
  assert done.returncode == 2, done.stderr
  assert done.stderr.strip() == (
    "error: Keras is set to the 'jax' backend (KERAS_BACKEND); electra_tf runs on "
    "TensorFlow: set KERAS_BACKEND=tensorflow"
  )
  # A user's own script that imports electra_tf is a library user: an ImportError.
  for name in ("my-pretraining", "electra-my-own-tool"):
    done = _run_script(
      tmp_path, name, "electra_tf.run_pretraining", ["--help"], KERAS_BACKEND="jax"
    )
    assert done.returncode == 1 and "ImportError: Keras is set to the 'jax'" in done.stderr


def test_a_console_script_piped_into_head_finishes_its_work(tmp_path):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text(
    "".join(f"the quick brown fox jumps over the lazy dog {i} times\n" for i in range(200))
  )
  read, write = os.pipe()
  os.close(read)  # `| head -1` that has already exited: every write fails with EPIPE
  with os.fdopen(write, "w") as closed_pipe:
    done = _run_script(
      tmp_path,
      "electra-build-vocab",
      "tfrecords_tools.build_vocab",
      ["--corpus-dir", str(corpus), "--vocab-size", "120", "--output", str(tmp_path / "v.txt")],
      stdout=closed_pipe,
    )
  assert done.returncode == 0, done.stderr
  assert "Traceback" not in done.stderr, done.stderr
  assert (tmp_path / "v.txt").is_file() and (tmp_path / "v.txt.json").is_file()
