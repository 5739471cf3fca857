"""A corrupt newest checkpoint in a real pre-training run: training and
evaluation fall back to the previous one with a line, the converter and the
exporter refuse in one line (exit status 2); a damaged `checkpoint` state
file is rewritten; and a disk that fills up while the converter writes a
Hugging Face directory or the exporter a SavedModel leaves nothing behind
(a real small tmpfs, `tests.helpers.file_system`)."""

import json
import os
import subprocess
import sys

import pytest

from electra_tf import convert_checkpoint
from electra_tf import export_saved_model
from electra_tf.checkpoints import reader
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.training import pretraining_run
from tests.conftest import REPO_ROOT
from tests.helpers import file_system
from tests.helpers import pretraining_data
from tests.helpers.subprocesses import TF_START_UP_LINE
from tests.helpers.subprocesses import quiet_env

pytestmark = pytest.mark.slow


def _lines(text):
  return [line for line in text.splitlines() if line.strip() and not TF_START_UP_LINE.search(line)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  """A tiny run with checkpoints at steps 0, 3 and 6."""
  root = tmp_path_factory.mktemp("run") / "data"
  hparams = pretraining_data.self_made_hparams(num_train_steps=6, seed=0)
  assert pretraining_data.pretrain_on_self_made_data(root, hparams) == 6
  return root, hparams


def _truncate_newest(model_dir):
  newest = os.path.join(model_dir, "model.ckpt-6")
  (data,) = [n for n in os.listdir(model_dir) if n.startswith("model.ckpt-6.data-")]
  path = os.path.join(model_dir, data)
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) // 2)
  return newest


def test_a_truncated_newest_checkpoint(trained, tmp_path, capsys):
  root, hparams = trained
  model_dir = root / "models" / "m"
  newest = _truncate_newest(model_dir)
  capsys.readouterr()

  # The converter and the exporter refuse in one line and write nothing.
  out = tmp_path / "disc.keras"
  argv = ["--input", str(model_dir), "--output", str(out), "--part", "discriminator"]
  assert convert_checkpoint.main(argv) == 2
  err = _lines(capsys.readouterr().err)
  assert len(err) == 1 and f"checkpoint {newest!r} cannot be read: its .data-* file" in err[0]
  assert "truncated" in err[0] and not out.exists()
  export_dir = tmp_path / "export"
  argv = ["--checkpoint", str(model_dir), "--export-dir", str(export_dir)]
  assert export_saved_model.main(argv) == 2
  err = _lines(capsys.readouterr().err)
  assert len(err) == 1 and f"checkpoint {newest!r} cannot be read" in err[0], err
  assert not export_dir.exists()

  # Evaluation evaluates the previous one, saying so.
  config = PretrainingConfig(
    "m", str(root), **dict(hparams, do_train=False, do_eval=True, num_eval_steps=1)
  )
  results = pretraining_run.train_or_eval(config)
  log = capsys.readouterr().out
  assert results["global_step"] == 3
  assert f"checkpoint {newest} cannot be read (its .data-* file is truncated" in log
  assert f"falling back to {model_dir}/model.ckpt-3, the newest readable checkpoint" in log

  # Training resumes from it, and the re-saved step 6 is readable again.
  config = PretrainingConfig("m", str(root), **dict(hparams, num_train_steps=9))
  assert pretraining_run.train_or_eval(config) == 9
  log = capsys.readouterr().out
  fallback = [line for line in log.splitlines() if "falling back" in line]
  assert len(fallback) == 1 and newest in fallback[0], log
  assert f"Restored {model_dir}/model.ckpt-3 (global step 3)" in log
  assert reader.checkpoint_problem(newest) is None
  assert pretraining_data.latest_step(model_dir) == 9


def test_a_damaged_state_file_is_rewritten_and_none_readable_is_one_line(trained, capsys):
  root, hparams = trained
  model_dir = root / "models" / "m"
  (model_dir / "checkpoint").write_bytes(bytes(range(128, 256)))
  step = pretraining_data.latest_step
  config = PretrainingConfig("m", str(root), **dict(hparams, num_train_steps=9))
  assert pretraining_run.train_or_eval(config) == 9
  log = capsys.readouterr().out
  assert "`checkpoint` state file" in log and "is not text" in log
  assert "rewrote it from the checkpoints there" in log
  assert step(model_dir) == 9
  # Every checkpoint unreadable: one line, exit status 2, nothing trained.
  for name in os.listdir(model_dir):
    if ".data-" in name:
      with open(model_dir / name, "r+b") as f:
        f.truncate(64)
  done = subprocess.run(
    [sys.executable, "-m", "electra_tf.run_pretraining", "--data-dir", str(root), "--model-name",
     "m", "--hparams", json.dumps(dict(hparams, num_train_steps=12))],
    cwd=REPO_ROOT, env=quiet_env(), capture_output=True, text=True, timeout=600,
  )  # fmt: skip
  err = _lines(done.stderr)
  assert done.returncode == 2, done.stderr[-2000:]
  assert len(err) == 1 and f"no readable checkpoint in {model_dir}" in err[0], err


def test_a_full_disk_while_publishing_or_exporting_leaves_nothing(tmp_path):
  seed = tmp_path / "seed"
  hparams = pretraining_data.self_made_hparams(num_train_steps=1, seed=0)
  pretraining_data.pretrain_on_self_made_data(seed, hparams)
  model_dir = seed / "models" / "m"
  fs = tmp_path / "fs"
  fs.mkdir()
  out = tmp_path
  publish = [sys.executable, "-m", "electra_tf.convert_checkpoint", "--input", model_dir,
             "--output", "$FS/hf", "--to", "huggingface"]  # fmt: skip
  export = [sys.executable, "-m", "electra_tf.export_saved_model", "--checkpoint", model_dir,
            "--export-dir", "$FS/export"]  # fmt: skip

  def shell(argv):
    return " ".join(f'"{a}"' if str(a).startswith("$FS") else f"'{a}'" for a in argv)

  # The Hugging Face directory is about 130 kB, the SavedModel about 13 MB.
  script = (
    f"{shell(publish)} > '{out}/out1' 2> '{out}/err1'; echo $? > '{out}/rc1'; "
    f'ls -A "$FS" > \'{out}/left1\'; mount -o remount,size=1m "$FS"; '
    f"{shell(export)} > '{out}/out2' 2> '{out}/err2'; echo $? > '{out}/rc2'; "
    f"ls -A \"$FS\" > '{out}/left2'"
  )
  done = subprocess.run(
    file_system.small_file_system_script(fs, "48k", script),
    cwd=REPO_ROOT, env=quiet_env(), capture_output=True, text=True, timeout=900,
  )  # fmt: skip
  assert done.returncode == 0, done.stderr
  for n, flag in ((1, "--output"), (2, "--export-dir")):
    err = _lines((out / f"err{n}").read_text())
    assert (out / f"rc{n}").read_text().strip() == "2", err
    assert len(err) == 1 and "no space left on device" in err[0], err
    assert flag in err[0] and "nothing was left behind" in err[0]
    assert (out / f"left{n}").read_text() == "", n
