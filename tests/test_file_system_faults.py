"""File-system faults as one line, leaving nothing behind: an output that is
not writable (a real read-only bind mount) for the five commands that write,
a disk that fills up (a real small tmpfs) for the dataset builder and for a
pre-training checkpoint save, and stale temporary checkpoints at start-up.
Each check runs the real command lines in a private mount namespace
(`tests.helpers.file_system`)."""

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.helpers import file_system
from tests.helpers import pretraining_data
from tests.helpers.subprocesses import TF_START_UP_LINE
from tests.helpers.subprocesses import quiet_env

pytestmark = pytest.mark.slow


def _message_lines(text):
  return [line for line in text.splitlines() if line.strip() and not TF_START_UP_LINE.search(line)]


def _run(command):
  return subprocess.run(
    command, cwd=REPO_ROOT, env=quiet_env(), capture_output=True, text=True, timeout=600
  )


def _write_corpus(directory, num_files=2, lines=200):
  directory.mkdir()
  words = [f"w{i}" for i in range(40)]
  for f in range(num_files):
    rows = (" ".join(words[(f + 7 * i + j) % 40] for j in range(12)) for i in range(lines))
    (directory / f"part{f}.txt").write_text("\n".join(rows) + "\n")
  return directory


# Runs every command's `main` in one process (one TensorFlow start-up) and
# prints {name: [exit status, stderr]} as JSON.
_RUN_MAINS = """
import contextlib, io, json, sys
from electra_tf import build_pretraining_dataset, convert_checkpoint, export_saved_model
from electra_tf import run_pretraining
from tfrecords_tools import build_vocab
mains = {"builder": build_pretraining_dataset.main, "run_pretraining": run_pretraining.main,
         "build_vocab": build_vocab.main, "build_vocab_before_counting": build_vocab.main,
         "converter": convert_checkpoint.main, "exporter": export_saved_model.main}
results = {}
for name, argv in json.loads(sys.argv[1]).items():
  err = io.StringIO()
  with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
    try:
      code = mains[name](argv)
    except SystemExit as e:
      code = e.code
  results[name] = [code, err.getvalue()]
print(json.dumps(results))
"""


def test_read_only_outputs_are_one_line_before_any_work(tmp_path):
  read_only = tmp_path / "read_only"
  data_dir = pretraining_data.make_data_dir(read_only / "data")
  vocab = data_dir / "vocab.txt"
  corpus = _write_corpus(tmp_path / "corpus")
  missing = tmp_path / "missing"  # inputs that would fail later: the output is checked first
  hparams = json.dumps(pretraining_data.self_made_hparams(vocab_file=str(vocab)))
  outputs = {
    "builder": read_only / "records",
    "run_pretraining": data_dir / "models" / "m",
    "build_vocab": read_only / "vocab_new.txt",
    "build_vocab_before_counting": read_only / "vocab_new.txt",
    "converter": read_only / "discriminator.keras",
    "exporter": read_only / "export",
  }
  argvs = {
    "builder": ["--corpus-dir", corpus, "--vocab-file", vocab, "--output-dir", outputs["builder"]],
    "run_pretraining": ["--data-dir", data_dir, "--model-name", "m", "--hparams", hparams],
    "build_vocab": ["--corpus-dir", corpus, "--vocab-size", 60, "--output", outputs["build_vocab"]],
    "build_vocab_before_counting": [
      "--corpus-dir",
      missing,
      "--vocab-size",
      60,
      "--output",
      outputs["build_vocab"],
    ],
    "converter": [
      "--input",
      missing,
      "--output",
      outputs["converter"],
      "--part",
      "discriminator",
    ],
    "exporter": ["--checkpoint", missing, "--export-dir", outputs["exporter"]],
  }
  argvs = {name: [str(a) for a in argv] for name, argv in argvs.items()}
  before = sorted(p.relative_to(read_only) for p in read_only.rglob("*"))
  command = file_system.read_only_command(
    read_only, [sys.executable, "-c", _RUN_MAINS, json.dumps(argvs)]
  )
  done = _run(command)
  assert done.returncode == 0, done.stderr[-3000:]
  results = json.loads(done.stdout.strip().splitlines()[-1])
  for name, (code, stderr) in results.items():
    lines = _message_lines(stderr)
    assert code == 2, (name, stderr)
    assert len(lines) == 1, (name, stderr)
    assert "not writable" in lines[0] and repr(str(outputs[name])) in lines[0], (name, lines)
  assert sorted(p.relative_to(read_only) for p in read_only.rglob("*")) == before


def _write_vocab(path):
  words = pretraining_data.SPECIAL + [f"w{i}" for i in range(40)]
  path.write_text("\n".join(words) + "\n")
  return path


def test_builder_on_a_full_disk_says_so_in_one_line_and_removes_its_shards(tmp_path):
  # 0.5 MB of text make about as much of records; the file system holds 200 kB.
  corpus = _write_corpus(tmp_path / "corpus", num_files=4, lines=3000)
  vocab = _write_vocab(tmp_path / "vocab.txt")
  (tmp_path / "fs").mkdir()
  build = [
    sys.executable, "-m", "electra_tf.build_pretraining_dataset", "--corpus-dir", corpus,
    "--vocab-file", vocab, "--output-dir", "$FS/records", "--num-processes", 2,
    "--num-out-files", 4, "--seed", 0,
  ]  # fmt: skip
  script = (
    " ".join(str(a) if a == "$FS/records" else f"'{a}'" for a in build)
    + f" 2> '{tmp_path}/err'; echo $? > '{tmp_path}/rc'; ls -A \"$FS/records\" > '{tmp_path}/left'"
  )
  done = _run(file_system.small_file_system_script(tmp_path / "fs", "200k", script))
  assert done.returncode == 0, done.stderr
  lines = _message_lines((tmp_path / "err").read_text())
  assert (tmp_path / "rc").read_text().strip() == "2", lines
  assert len(lines) == 1, lines
  assert "no space left on device" in lines[0] and f"{tmp_path}/fs/records" in lines[0]
  text_mb = sum(f.stat().st_size for f in corpus.iterdir()) / 1e6
  assert re.search(rf"about [\d.]+ MB needed for the {text_mb:.2f} MB of text", lines[0]), lines[0]
  assert (tmp_path / "left").read_text() == ""


def test_checkpoint_save_on_a_full_disk_is_one_line_and_a_rerun_resumes(tmp_path):
  """A 480 kB file system holds the data and the step-0 checkpoint (about
  290 kB) but not the step-3 one; after the failed save the file system is
  grown and a re-run resumes from step 0, removing a stale `_temp` directory
  a killed save had left."""
  seed = pretraining_data.make_data_dir(tmp_path / "seed")
  fs = tmp_path / "fs"
  fs.mkdir()
  model_dir = fs / "data" / "models" / "m"
  hparams = json.dumps(
    pretraining_data.self_made_hparams(num_train_steps=6, vocab_file=str(fs / "data" / "vocab.txt"))
  )
  train = " ".join(
    f"'{a}'"
    for a in [
      sys.executable, "-m", "electra_tf.run_pretraining", "--data-dir", fs / "data",
      "--model-name", "m", "--hparams", hparams,
    ]
  )  # fmt: skip
  out = tmp_path
  script = (
    f"cp -r '{seed}' \"$FS/data\" && "
    f"{train} > '{out}/out1' 2> '{out}/err1'; echo $? > '{out}/rc1'; "
    f"ls -A '{model_dir}' > '{out}/left1'; "
    f"mkdir '{model_dir}/model.ckpt-9_temp' && echo partial > '{model_dir}/model.ckpt-9_temp/part' && "
    'mount -o remount,size=4m "$FS" && '
    f"{train} > '{out}/out2' 2> '{out}/err2'; echo $? > '{out}/rc2'; ls -A '{model_dir}' > '{out}/left2'"
  )
  done = _run(file_system.small_file_system_script(fs, "480k", script))
  assert done.returncode == 0, done.stderr
  lines = _message_lines((out / "err1").read_text())
  assert (out / "rc1").read_text().strip() == "2", lines
  assert len(lines) == 1, lines
  assert "no space left on device" in lines[0] and f"{model_dir}/model.ckpt-3 " in lines[0]
  assert f"last good checkpoint: {model_dir}/model.ckpt-0;" in lines[0], lines[0]
  left = (out / "left1").read_text().split()
  assert "model.ckpt-0.index" in left
  assert not [name for name in left if "ckpt-3" in name], left
  log = (out / "out2").read_text()
  assert (out / "rc2").read_text().strip() == "0", (out / "err2").read_text()[-3000:]
  assert "interrupted checkpoint save" in log and "model.ckpt-9_temp" in log
  assert f"Restored {model_dir}/model.ckpt-0 (global step 0)" in log
  left = (out / "left2").read_text().split()
  assert "model.ckpt-6.index" in left
  assert not [name for name in left if "_temp" in name], left
