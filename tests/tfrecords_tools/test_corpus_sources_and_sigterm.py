"""What every corpus reader (build_vocab, the builder) does with entries that
are not text files (broken symbolic links, sub-folders), the builder's one
source, build_vocab's flags of the other model type, and SIGTERM to the
builder: one line, exit 143, its shards removed, as Ctrl-C."""

import os
import signal
import threading
import time

import pytest

from electra_tf import build_pretraining_dataset as cli
from tests.helpers.subprocesses import build_dataset_flags
from tests.tfrecords_tools.test_build_pretraining_dataset import _children
from tests.tfrecords_tools.test_build_pretraining_dataset import _running
from tests.tfrecords_tools.test_build_pretraining_dataset import _start_blocked_builder
from tests.tfrecords_tools.test_build_pretraining_dataset import small_corpus  # noqa: F401  (fixture)
from tfrecords_tools import build_vocab

TEXT = (
  "the quick brown fox jumps over the lazy dog while electra models read token text\n"
  "a generator replaces words and the discriminator finds which were replaced\n"
) * 40


def _corpus(tmp_path, name="corpus"):
  corpus = tmp_path / name
  corpus.mkdir()
  (corpus / "part0.txt").write_text(TEXT)
  return corpus


def _vocab_argv(corpus, out, *more):
  return ["--corpus-dir", str(corpus), "--vocab-size", "150", "--output", str(out), *more]


def _err_lines(capsys):
  return [l for l in capsys.readouterr().err.splitlines() if l.strip()]


def test_build_vocab_refuses_a_broken_symlink_in_one_line(tmp_path, capsys):
  corpus = _corpus(tmp_path)
  os.symlink(tmp_path / "moved_away.txt", corpus / "part1.txt")
  out = tmp_path / "vocab.txt"
  assert build_vocab.main(_vocab_argv(corpus, out)) == 2
  err = _err_lines(capsys)
  assert len(err) == 1, err
  assert "'part1.txt' is a broken symbolic link" in err[0] and err[0].startswith("error: ")
  assert not out.exists() and not (tmp_path / "vocab.txt.json").exists()


def test_the_builder_refuses_a_broken_symlink_before_any_work(small_corpus, tmp_path, capsys):  # noqa: F811
  _, vocab = small_corpus
  corpus = _corpus(tmp_path)
  os.symlink(tmp_path / "moved_away.txt", corpus / "part1.txt")
  out = tmp_path / "out"
  assert cli.main(build_dataset_flags(corpus, vocab, out, num_processes=1, num_out_files=1)) == 2
  err = _err_lines(capsys)
  assert len(err) == 1 and "'part1.txt' is a broken symbolic link" in err[0], err
  assert not out.exists()


def test_build_vocab_skips_sub_folders_as_the_builder_does_and_says_so(tmp_path, capsys):
  corpus = _corpus(tmp_path)
  (corpus / "models").mkdir()
  (corpus / "models" / "notes.txt").write_text("zebra quagga okapi\n")
  out = tmp_path / "vocab.txt"
  assert build_vocab.main(_vocab_argv(corpus, out)) == 0
  err = capsys.readouterr().err
  assert "not a regular file" not in err and "named pipe" not in err
  assert "skipping 1 sub-folder(s) ('models'): sub-folders are not read" in err, err
  assert "zebra" not in out.read_text()
  # Only sub-folders: nothing to read, and the line says why.
  only = tmp_path / "data"
  (only / "corpus").mkdir(parents=True)
  (only / "corpus" / "a.txt").write_text(TEXT)
  assert build_vocab.main(_vocab_argv(only, tmp_path / "v2.txt")) == 2
  err = _err_lines(capsys)
  assert len(err) == 1 and "only sub-folders: sub-folders are not read" in err[0], err


def test_the_builder_says_it_skips_sub_folders(small_corpus, tmp_path, capsys):  # noqa: F811
  _, vocab = small_corpus
  corpus = _corpus(tmp_path)
  (corpus / "models").mkdir()
  out = tmp_path / "out"
  assert cli.main(build_dataset_flags(corpus, vocab, out, num_processes=1, num_out_files=1)) == 0
  err = capsys.readouterr().err
  assert err.count("skipping 1 sub-folder(s) ('models'): sub-folders are not read") == 1, err


def test_corpus_dir_and_tfds_name_are_refused_before_any_work(small_corpus, tmp_path, capsys):  # noqa: F811
  corpus, vocab = small_corpus
  out = tmp_path / "out"
  argv = build_dataset_flags(corpus, vocab, out, num_processes=1, num_out_files=1)
  assert cli.main(argv + ["--tfds-name", "wikipedia/20230601.en"]) == 2
  err = _err_lines(capsys)
  assert len(err) == 1, err
  assert "give one (--corpus-dir or --tfds-name), not both" in err[0]
  assert not out.exists()


@pytest.mark.parametrize(
  "model_type, flag, message",
  [
    (
      None,
      ["--character-coverage", "0.5"],
      "--character-coverage applies to --model-type unigram or bpe",
    ),
    (
      None,
      ["--input-sentence-size", "100"],
      "--input-sentence-size applies to --model-type unigram or bpe",
    ),
    ("bpe", ["--num-unused", "5"], "--num-unused applies to --model-type wordpiece"),
    ("unigram", ["--num-unused", "99"], "--num-unused applies to --model-type wordpiece"),
  ],
)
def test_flags_of_the_other_model_type_are_refused_in_one_line(
  tmp_path, capsys, model_type, flag, message
):
  corpus = _corpus(tmp_path)
  out = tmp_path / ("vocab.txt" if model_type is None else "sp.model")
  more = flag + ([] if model_type is None else ["--model-type", model_type])
  assert build_vocab.main(_vocab_argv(corpus, out, *more)) == 2
  err = _err_lines(capsys)
  assert len(err) == 1 and err[0].startswith(f"error: {message}"), err
  assert not out.exists() and not os.path.exists(f"{out}.json")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the job processes in /proc")
@pytest.mark.parametrize(
  "signum, to_group",
  [(signal.SIGTERM, False), (signal.SIGTERM, True), (signal.SIGHUP, False)],
  ids=["sigterm-pid", "sigterm-group", "sighup-pid"],
)
def test_sigterm_stops_the_jobs_and_removes_the_shards_in_one_line(
  small_corpus,  # noqa: F811
  tmp_path,
  signum,
  to_group,
):
  """SIGTERM (`kill PID`, a scheduler; or to the whole process group) or
  SIGHUP (the terminal closed) while both jobs are writing: as Ctrl-C, the
  jobs stop, every shard and partial file they had begun is removed, one
  line, exit 128 + the signal (143, 129), no traceback."""
  out = tmp_path / "out"
  builder, _ = _start_blocked_builder(small_corpus, tmp_path, out, start_new_session=True)
  watchdog = threading.Timer(600, builder.kill)
  watchdog.start()
  try:
    writing = set()
    for line in builder.stdout:
      if line.endswith(": Writing tf examples\n"):
        writing.add(line.split(":")[0])
        if len(writing) == 2:
          break
    jobs = [p for p in _children(builder.pid) if _running(p)]
    if to_group:
      os.killpg(builder.pid, signum)
    else:
      builder.send_signal(signum)
    rest = builder.stdout.read()
    assert builder.wait(timeout=60) == 128 + signum, rest
  finally:
    watchdog.cancel()
    builder.kill()
  assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
  name = signal.Signals(signum).name
  assert f"stopped ({name}); removed the 8 shard(s) it had written to {out}" in rest, rest
  assert os.listdir(out) == []
  deadline = time.time() + 30
  while any(_running(p) for p in jobs) and time.time() < deadline:
    time.sleep(0.2)
  assert not [p for p in jobs if _running(p)]
