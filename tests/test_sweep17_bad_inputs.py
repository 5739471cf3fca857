"""Newcomer sweep 17's bad cases (bench/reports/newcomer_sweep_17.md), one
test per class: a stop signal the user ignored (`nohup`, a background job),
output piped to a reader that closes (`| head`), a full disk or read-only
file system for the vocab, corpus and reference writers, and the Python
API's paths (a task model saved as .h5, an empty checkpoint dir, a
directory as a portable export's file)."""

import os
import signal
import subprocess
import sys
import textwrap

import keras
import pytest

import electra_tf
from electra_tf.checkpoints import checkpointing
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.serving import portable
from electra_tf.text.tokenizer import ElectraTokenizer
from electra_tf.utils import interrupts
from tests.conftest import REPO_ROOT
from tests.helpers import file_system
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.subprocesses import TF_START_UP_LINE
from tests.helpers.subprocesses import quiet_env

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran"]


def _classifier():
  preprocessor = ElectraTextPreprocessor(ElectraTokenizer(vocabulary=VOCAB), max_seq_length=8)
  return electra_tf.ElectraClassifier(
    dict(TINY_ENCODER, vocab_size=len(VOCAB)), 2, preprocessor=preprocessor
  )


def _message_lines(text):
  return [line for line in text.splitlines() if line.strip() and not TF_START_UP_LINE.search(line)]


# A child that ignores SIGHUP and SIGINT (as `nohup` and a shell's background
# job do), then enters every place that installs stop handlers and is sent
# both signals there.
_IGNORING_CHILD = textwrap.dedent(
  """
  import os, signal, time
  signal.signal(signal.SIGHUP, signal.SIG_IGN)
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  from electra_tf.utils import interrupts
  def send_both():
    for signum in (signal.SIGHUP, signal.SIGINT):
      os.kill(os.getpid(), signum)
    time.sleep(0.2)
  with interrupts.ctrl_c_remembered():
    send_both()
    interrupts.check()
  with interrupts.stops_held():
    send_both()
  previous = interrupts.install_stop_handler(lambda signum, frame: print("handled", signum))
  send_both()
  interrupts.restore_handlers(previous)
  print("still running", signal.getsignal(signal.SIGHUP) == signal.SIG_IGN)
  """
)


def test_a_stop_signal_the_user_ignored_stays_ignored():
  """`nohup run_pretraining …` stopped at step 98 on SIGHUP (129); a job
  started with SIGINT ignored stopped on SIGINT (130)."""
  done = subprocess.run(
    [sys.executable, "-c", _IGNORING_CHILD],
    cwd=REPO_ROOT,
    env=quiet_env(),
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert done.returncode == 0, done.stderr[-2000:]
  assert done.stdout.splitlines() == ["still running True"]
  # Not ignored: installed, and given back.
  previous = interrupts.install_stop_handler(lambda signum, frame: None, (signal.SIGHUP,))
  try:
    assert list(previous) == [signal.SIGHUP]
  finally:
    interrupts.restore_handlers(previous)


# A command's output to a pipe whose reader went away (`… | head -1`): the
# child writes its first line, the reader closes, then it writes on, logs
# (the commands' plain console logging) and finishes its work.
_PIPED_CHILD = textwrap.dedent(
  """
  import logging, sys, time
  import electra_tf
  from electra_tf.utils.console_logging import plain_console_logging
  plain_console_logging()
  print("first line", flush=True)
  time.sleep(1.0)  # the reader has closed the pipe by now
  for i in range(2000):
    print("more output", i)
  logging.getLogger("absl").info("a log line after the reader left")
  sys.stdout.flush()
  sys.stderr.write("work finished\\n")
  """
)


def test_output_to_a_closed_pipe_is_dropped_and_the_work_finishes():
  """`run_pretraining … | head -3` died in a BrokenPipeError traceback with
  an empty model dir left; `run_finetuning … | head -2` printed 19 logging
  tracebacks. Commands (here, a child started as one) drop the output."""
  env = dict(quiet_env(), ELECTRA_TF_QUIET_TF_START_UP="1")  # as a spawned command
  child = subprocess.Popen(
    [sys.executable, "-c", _PIPED_CHILD],
    cwd=REPO_ROOT,
    env=env,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
  )
  assert child.stdout.readline() == "first line\n"
  child.stdout.close()  # as `head -1` exits
  err = child.stderr.read()
  assert child.wait(timeout=120) == 0, err
  assert _message_lines(err) == ["work finished"]


def test_a_full_disk_under_build_vocab_and_the_corpus_writers_is_one_line(tmp_path):
  """build_vocab left `vocab.txt.json` without `vocab.txt` after an ENOSPC
  traceback; python_docs_corpus gave a chained ENOSPC traceback."""
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  words = [f"word{i}x" for i in range(3000)]
  (corpus / "a.txt").write_text("\n".join(" ".join(words[i : i + 10]) for i in range(0, 3000, 3)))
  (tmp_path / "fs").mkdir()
  py = f"'{sys.executable}'"
  script = (
    f"{py} -m tfrecords_tools.build_vocab --corpus-dir '{corpus}' --vocab-size 3000 "
    f"--output $FS/vocab.txt 2> '{tmp_path}/vocab_err'; echo $? > '{tmp_path}/vocab_rc'; "
    f"{py} -m tfrecords_tools.python_docs_corpus --output-dir $FS/docs --max-mb 1 "
    f"--num-files 2 2> '{tmp_path}/docs_err'; echo $? > '{tmp_path}/docs_rc'; "
    f"ls -A $FS > '{tmp_path}/left'"
  )
  done = subprocess.run(
    file_system.small_file_system_script(tmp_path / "fs", "8k", script),
    cwd=REPO_ROOT,
    env=quiet_env(),
    capture_output=True,
    text=True,
    timeout=600,
  )
  assert done.returncode == 0, done.stderr
  for name, flag, path in (
    ("vocab", "--output", "vocab.txt"),
    ("docs", "--output-dir", "docs"),
  ):
    lines = _message_lines((tmp_path / f"{name}_err").read_text())
    assert (tmp_path / f"{name}_rc").read_text().strip() == "2", lines
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: no space left on device writing {flag} "), lines
    assert f"fs/{path}" in lines[0], lines
  assert (tmp_path / "left").read_text() == ""  # no settings file without its vocab


def test_hparams_reference_write_on_a_read_only_page_is_one_line(tmp_path):
  """`hparams_reference --write` on a read-only file system gave an OSError
  traceback, even with the page already up to date."""
  pages = tmp_path / "pages"
  pages.mkdir()
  current = subprocess.run(
    [sys.executable, "-m", "electra_tf.hparams_reference"],
    cwd=REPO_ROOT,
    env=quiet_env(),
    capture_output=True,
    text=True,
    timeout=300,
  ).stdout
  from electra_tf.configs.reference import END
  from electra_tf.configs.reference import START

  (pages / "same.md").write_text(f"# page\n{current.rstrip()}\n")
  (pages / "old.md").write_text(f"# page\n{START}\nold\n{END}\n")
  runs = "; ".join(
    f"'{sys.executable}' -m electra_tf.hparams_reference --write '{pages}/{name}.md' "
    f"2> '{tmp_path}/{name}_err'; echo $? > '{tmp_path}/{name}_rc'"
    for name in ("same", "old")
  )
  argv = file_system.read_only_command(pages, ["sh", "-c", runs])
  subprocess.run(argv, cwd=REPO_ROOT, env=quiet_env(), timeout=600, check=True)
  assert (tmp_path / "same_rc").read_text().strip() == "0"  # up to date: nothing to write
  assert _message_lines((tmp_path / "same_err").read_text()) == []
  lines = _message_lines((tmp_path / "old_err").read_text())
  assert (tmp_path / "old_rc").read_text().strip() == "2", lines
  assert len(lines) == 1 and lines[0].startswith("error: --write ") and "old.md" in lines[0]
  assert (pages / "old.md").read_text().endswith(f"{START}\nold\n{END}\n")


def test_a_task_model_saved_as_h5_is_refused(tmp_path):
  """`clf.save("clf.h5")` wrote a file that loads back as "Unknown layer"."""
  model = _classifier()
  with pytest.raises(ValueError, match=r"the legacy HDF5 format cannot hold a task model"):
    model.save(str(tmp_path / "clf.h5"))
  assert os.listdir(tmp_path) == []
  model.save(str(tmp_path / "clf.keras"))
  assert isinstance(keras.saving.load_model(str(tmp_path / "clf.keras")), type(model))


def test_an_empty_checkpoint_dir_is_refused(tmp_path, monkeypatch):
  """`TrainingCheckpointManager(model, "")` wrote checkpoints into the working directory."""
  monkeypatch.chdir(tmp_path)
  model = _classifier()
  model.compile(num_train_steps=10)
  with pytest.raises(ValueError, match=r"model_dir ''; expected the directory for checkpoints"):
    checkpointing.TrainingCheckpointManager(model, "")
  assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["out", "out/", "missing/"])
def test_a_directory_as_a_portable_export_file_is_refused(tmp_path, name):
  """`export_portable(clf, "out/", "onnx")` replaced the directory `out`
  (and the file it held) with the ONNX file."""
  (tmp_path / "out").mkdir()
  (tmp_path / "out" / "keep.txt").write_text("keep")
  with pytest.raises(ValueError, match=r"(is a directory|ends in a path separator); expected"):
    portable.export_portable(_classifier(), os.path.join(str(tmp_path), name), "onnx")
  assert sorted(os.listdir(tmp_path)) == ["out"]
  assert (tmp_path / "out" / "keep.txt").read_text() == "keep"
