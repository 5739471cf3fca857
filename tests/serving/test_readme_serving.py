"""The serving commands of docs/serve.md run as written (extracted from the
page, so the two cannot drift), and loading an export in plain TensorFlow
behaves as the page says: without `import tensorflow_text` a fresh process fails with
"Op type not registered", with it (or `electra_tf.serving.load`) it works."""

import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from electra_tf.serving import loading
from tests.helpers import doc_blocks
from tests.helpers.pretraining_data import pretrain_on_self_made_data
from tests.helpers.pretraining_data import self_made_hparams

PAGE = "docs/serve.md"


def serving_blocks():
  """The page's ```bash blocks for a model dir in $DATA_DIR (export and
  inspection, the XLA export, then one that needs a TF Serving server) and its
  ```python block; its blocks on the demo's output run in tests/test_demo.py."""
  blocks = [b for b in doc_blocks.page_blocks(PAGE) if b.kind != "demo"]
  bash = [b.code for b in blocks if b.lang == "bash"]
  # The Python block that queries a served model in $DATA_DIR (the page's
  # other Python blocks need a Keras task model in hand).
  python = [b.code for b in blocks if b.lang == "python" and "DATA_DIR" in b.code]
  assert len(bash) == 3 and len(python) == 1, f"{PAGE} lost its serving commands"
  assert "--jit-compile" in bash[1], f"the second serving command of {PAGE} is the XLA export"
  return bash, python[0]


def _env(data_dir):
  env = dict(os.environ, DATA_DIR=str(data_dir))
  # `python` in docs/serve.md is this interpreter (the venv's).
  env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  return env


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """A 1-step `electra_small` run (tiny sizes) exported by the commands of docs/serve.md."""
  data_dir = tmp_path_factory.mktemp("readme")
  pretrain_on_self_made_data(data_dir, self_made_hparams(num_train_steps=1), "electra_small")
  bash, _ = serving_blocks()
  result = _run_bash(bash[0], data_dir)
  assert result.returncode == 0, result.stderr[-3000:]
  return data_dir, result.stdout


def _run_bash(commands, data_dir):
  return subprocess.run(
    ["bash", "-e", "-c", commands],
    env=_env(data_dir),
    cwd=data_dir,
    capture_output=True,
    text=True,
    timeout=600,
  )


def _run_python(code, data_dir):
  return subprocess.run(
    [sys.executable, "-c", code],
    env=_env(data_dir),
    cwd=data_dir,
    capture_output=True,
    text=True,
    timeout=600,
  )


@pytest.mark.slow
def test_readme_export_commands(exported):
  data_dir, stdout = exported
  version = data_dir / "serving" / "electra_small" / "1"
  assert (version / "saved_model.pb").is_file()
  assert "tensorflow_text" in (version / "assets" / "README.txt").read_text()
  assert "electra_tf.serving.load" in stdout  # the export says how to load it
  assert "text_a" in stdout and "rtd_probs" in stdout  # saved_model_cli listed the signature


@pytest.mark.slow
def test_readme_python_snippet_in_a_fresh_process(exported):
  data_dir, _ = exported
  _, python = serving_blocks()
  result = _run_python(python, data_dir)
  assert result.returncode == 0, result.stderr[-3000:]
  probs = [float(x) for x in re.findall(r"\d+\.\d*", result.stdout)]
  # rtd_probs [1, S]: the export serves the length the model was trained at.
  trained = self_made_hparams()["max_seq_length"]
  assert len(probs) == trained and all(0 <= p <= 1 for p in probs), result.stdout


@pytest.mark.slow
def test_readme_xla_export_serves_like_the_plain_one(exported):
  data_dir, _ = exported
  bash, python = serving_blocks()
  result = _run_bash(bash[1], data_dir)
  assert result.returncode == 0, result.stderr[-3000:]
  compare = python + (
    "\nxla = tf.saved_model.load(path.replace('electra_small/', 'electra_small_xla/'))"
    "\nrequest = dict(text_a=tf.constant(['The chef cooked the meal.']), text_b=tf.constant(['']))"
    "\nplain = model.signatures['serving_default'](**request)"
    "\ncompiled = xla.signatures['serving_default'](**request)"
    # Past the real tokens the two differ by design: the XLA export runs 16 positions.
    "\nreal = plain['input_mask'].numpy() == 1"
    "\ndiff = abs(plain['rtd_probs'].numpy() - compiled['rtd_probs'].numpy())[real]"
    "\nprint('MAXDIFF', diff.max(), 'REAL', int(real.sum()))"
  )
  result = _run_python(compare, data_dir)
  assert result.returncode == 0, result.stderr[-3000:]
  diff, real = re.search(r"MAXDIFF (\S+) REAL (\d+)", result.stdout).groups()
  assert float(diff) <= 1e-5 and int(real) > 0, result.stdout
  readme = data_dir / "serving" / "electra_small_xla" / "1" / "assets" / "README.txt"
  assert "--xla_cpu_compilation_enabled=true" in readme.read_text()


@pytest.mark.slow
def test_plain_load_without_tensorflow_text_fails_as_documented(exported):
  data_dir, _ = exported
  path = str(data_dir / "serving" / "electra_small" / "1")
  code = (
    "import sys\nimport tensorflow as tf\n"
    f"try:\n  tf.saved_model.load({path!r})\n"
    "except Exception as e:\n  print(type(e).__name__, e)\n  sys.exit(3)\n"
  )
  result = _run_python(code, data_dir)
  assert result.returncode == 3, result.stdout + result.stderr[-2000:]
  assert "Op type not registered" in result.stdout
  assert loading.TOKENIZER_OP in result.stdout
  # The hint electra_tf gives for exactly this error names the fix.
  hint = loading.load_error_hint(Exception(result.stdout), path)
  assert "import tensorflow_text" in str(hint) and path in str(hint)


def test_load_error_hint_only_for_the_tokenizer_op():
  error = tf.errors.NotFoundError(
    None, None, "Op type not registered 'FastWordpieceTokenizeWithOffsets' in binary"
  )
  hint = loading.load_error_hint(error, "/x/1")
  assert isinstance(hint, ValueError)
  assert str(hint).startswith("cannot load the SavedModel '/x/1': import tensorflow_text")
  assert loading.load_error_hint(tf.errors.NotFoundError(None, None, "no file"), "/x/1") is None
