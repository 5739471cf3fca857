"""The dataset builder: exact records, seeds, processes, flags, bad input."""

import dataclasses
import hashlib
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from electra_tf import build_pretraining_dataset as cli
from electra_tf.data import records_info
from electra_tf.text.vocab import Vocab
from tests.conftest import REPO_ROOT
from tests.helpers import reference_hard_text
from tests.helpers.records import read_shards
from tests.helpers.reference_builder import reference_build
from tests.helpers.subprocesses import TF_START_UP_LINE
from tests.helpers.subprocesses import build_dataset_flags
from tests.helpers.subprocesses import tool_user_env
from tfrecords_tools import text_corpus
from tfrecords_tools.example_builder import ExampleBuilder
from tfrecords_tools.example_builder import examples_to_features


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
  """Three files of English-like and hard lines, plus a vocab that covers them."""
  return reference_hard_text.write_corpus(
    tmp_path_factory.mktemp("corpus"),
    num_files=3,
    lines_per_file=120,
    words=(
      "the of and a to in is was he for it with as his on be at by had "
      "electra model token text data run train"
    ).split(),
    max_words=25,
    seed=5,
    num_hard_lines=150,
    blank_prob=0.12,
    hard_prob=0.22,
  )


def _options(corpus, vocab, out, **kw):
  return text_corpus.BuildOptions(corpus_dir=corpus, vocab_file=vocab, output_dir=str(out), **kw)


def test_exact_records_of_the_original(original_fixtures, tmp_path):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "lee.txt").write_bytes((original_fixtures / "corpus" / "lee.txt").read_bytes())
  out = tmp_path / "out"
  code = cli.main(
    build_dataset_flags(corpus, original_fixtures / "vocab.txt", out, max_seq_length=128, seed=0)
  )
  assert code == 0
  ours = read_shards(out, 1000)
  original = read_shards(original_fixtures / "pretrain_tfrecords", 1000)
  assert sum(len(r) for r in original.values()) == 812
  assert ours == original


@pytest.mark.parametrize(
  "blanks,lower,strip,max_length,cr_as_space",
  [
    (True, True, True, 32, False),
    (False, True, False, 20, False),
    (True, False, True, 64, False),
    (True, True, True, 32, True),
  ],
)
def test_matches_plain_reference(
  small_corpus, tmp_path, blanks, lower, strip, max_length, cr_as_space
):
  corpus, vocab = small_corpus
  # Lone carriage returns inside lines: the original's reader drops them.
  assert any("\r" in open(os.path.join(corpus, n), newline="").read() for n in os.listdir(corpus))
  out = tmp_path / "out"
  stats = text_corpus.build_pretraining_dataset(
    _options(
      corpus,
      vocab,
      out,
      max_seq_length=max_length,
      seed=7,
      num_out_files=5,
      blanks_separate_docs=blanks,
      do_lower_case=lower,
      strip_accents=strip,
      carriage_return_as_space=cr_as_space,
    )
  )
  expected = reference_build(
    corpus, vocab, max_length, 1, 0, 7, 5, blanks, lower, strip, cr_as_space
  )
  if cr_as_space:  # the flag changes the records of this corpus
    assert expected != reference_build(corpus, vocab, max_length, 1, 0, 7, 5, blanks, lower, strip)
  got = read_shards(out, 5)
  assert got == expected
  assert stats[0]["examples"] == sum(len(r) for r in expected.values()) > 30
  assert not [n for n in os.listdir(out) if n.startswith(".")]  # no temporary shards


def test_builder_random_draw_order_and_truncation():
  # Two sentences exceed the budget: A is truncated to max_length - 2 and B
  # gets nothing, exactly as the original's truncation rule says.
  rng = random.Random(0)
  builder = ExampleBuilder(None, 10, cls_id=1, sep_id=2, rng=rng)
  assert builder.add_ids([5] * 4) is None
  example = builder.add_ids([6] * 9)
  ids, mask, seg = (a[0].tolist() for a in examples_to_features([example], 10, 1, 2))
  assert len(ids) == 10 and ids[0] == 1 and 2 in ids
  assert sum(mask) == 10
  assert seg[: ids.index(2) + 1] == [0] * (ids.index(2) + 1)
  # A blank line with an empty buffer adds nothing and emits nothing.
  assert builder.add_ids([], is_blank=True) is None


@pytest.mark.slow
def test_multi_process_is_reproducible_and_matches_reference(small_corpus, tmp_path):
  # Each job must start from random.seed(11): then its shards equal the
  # seeded single-job reference, which also makes runs reproducible.
  corpus, vocab = small_corpus
  out = tmp_path / "out"
  proc = subprocess.run(
    [sys.executable, "-m", "electra_tf.build_pretraining_dataset"]
    + build_dataset_flags(
      corpus, vocab, out, max_seq_length=24, num_processes=2, seed=11, num_out_files=6
    ),
    check=True,
    cwd=REPO_ROOT,
    capture_output=True,
    text=True,
    env=tool_user_env(),
  )
  # The job processes' TensorFlow start-up lines are quieted like the tool's own.
  assert not TF_START_UP_LINE.search(proc.stderr), proc.stderr[:2000]
  got = read_shards(out, 6)
  expected = {}
  for job in range(2):
    expected.update(reference_build(corpus, vocab, 24, 2, job, 11, 6))
  assert got == expected
  assert sum(len(r) for r in expected.values()) > 50
  # Both jobs wrote: shards 0, 2, 4 come from job 0 and 1, 3, 5 from job 1.
  assert all(got[i] for i in range(6))


def test_job_cpus_pins_only_when_jobs_fill_the_cores(monkeypatch):
  monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {4, 6, 9}, raising=False)
  assert text_corpus.job_cpus(1) == [None]
  assert text_corpus.job_cpus(2) == [None, None]  # fewer jobs than cores
  assert text_corpus.job_cpus(3) == [4, 6, 9]
  assert text_corpus.job_cpus(5) == [4, 6, 9, 4, 6]  # round robin


@pytest.mark.slow
@pytest.mark.skipif(
  not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) != 2,
  reason="needs exactly 2 usable cores (as CI has)",
)
def test_job_processes_run_pinned_to_their_own_core(small_corpus, tmp_path):
  corpus, vocab = small_corpus
  stats = text_corpus.build_pretraining_dataset(
    text_corpus.BuildOptions(
      corpus_dir=corpus,
      vocab_file=vocab,
      output_dir=str(tmp_path / "out"),
      max_seq_length=24,
      num_processes=2,
      seed=11,
      num_out_files=4,
    )
  )
  cpus = sorted(os.sched_getaffinity(0))
  assert [s["cpus"] for s in sorted(stats, key=lambda s: s["job_id"])] == [[cpus[0]], [cpus[1]]]


def test_blanks_separate_docs_flag_parses_false():
  parser = cli.make_parser()
  base = ["--vocab-file", "v", "--output-dir", "o", "--corpus-dir", "c"]
  assert parser.parse_args(base).blanks_separate_docs is True
  assert parser.parse_args(base + ["--blanks-separate-docs", "false"]).blanks_separate_docs is False
  assert parser.parse_args(base + ["--blanks-separate-docs", "False"]).blanks_separate_docs is False
  assert parser.parse_args(base + ["--blanks-separate-docs", "true"]).blanks_separate_docs is True
  args = parser.parse_args(base + ["--no-lower-case", "--no-strip-accents"])
  assert args.do_lower_case is False and args.strip_accents is False
  with pytest.raises(SystemExit):
    parser.parse_args(base + ["--blanks-separate-docs", "maybe"])


def test_records_info_names_the_vocab_and_settings_and_goes_with_the_shards(small_corpus, tmp_path):
  corpus, vocab = small_corpus
  out = tmp_path / "out"
  text_corpus.build_pretraining_dataset(
    _options(corpus, vocab, out, num_out_files=2, max_seq_length=16, seed=3)
  )
  info = records_info.read_records_info(str(out))
  read = Vocab.read(vocab)
  assert info["vocab"] == read.fingerprint()
  assert info["vocab"]["sha256"] == hashlib.sha256(open(vocab, "rb").read()).hexdigest()
  assert info["settings"] == {
    "source": corpus, "max_seq_length": 16, "num_out_files": 2, "do_lower_case": True,
    "strip_accents": True, "seed": 3,
  }  # fmt: skip
  # Removing the shards (an interrupted build, --overwrite) removes what describes them.
  assert text_corpus.remove_shards(str(out)) == 3
  assert os.listdir(out) == []


def test_bad_inputs(small_corpus, tmp_path):
  corpus, vocab = small_corpus
  empty = tmp_path / "empty"
  empty.mkdir()
  with pytest.raises(ValueError, match="no text"):
    text_corpus.build_pretraining_dataset(_options(str(empty), vocab, tmp_path / "o1"))
  (empty / "blank.txt").write_text("")
  with pytest.raises(ValueError, match="no text"):
    text_corpus.build_pretraining_dataset(_options(str(empty), vocab, tmp_path / "o1"))
  with pytest.raises(ValueError, match="not a directory"):
    text_corpus.build_pretraining_dataset(_options(str(tmp_path / "nope"), vocab, tmp_path / "o1"))
  with pytest.raises(ValueError, match="does not exist"):
    text_corpus.build_pretraining_dataset(
      _options(corpus, str(tmp_path / "v.txt"), tmp_path / "o1")
    )
  with pytest.raises(ValueError, match=r"^--num-out-files must be >= 1, got 0$"):
    text_corpus.build_pretraining_dataset(_options(corpus, vocab, tmp_path / "o1", num_out_files=0))
  with pytest.raises(ValueError, match=r"^--max-seq-length 100000: expected at most 8,192"):
    text_corpus.build_pretraining_dataset(
      _options(corpus, vocab, tmp_path / "o2", max_seq_length=100000)
    )
  assert not (tmp_path / "o2").exists()
  bad_vocab = tmp_path / "bad_vocab.txt"
  bad_vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n")
  with pytest.raises(ValueError, match=r"\[MASK\]"):
    text_corpus.build_pretraining_dataset(_options(corpus, str(bad_vocab), tmp_path / "o1"))
  bad_vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nof\nthe\n")
  with pytest.raises(ValueError, match=r"--vocab-file '.*': token 'the' is on lines 6 and 8"):
    text_corpus.build_pretraining_dataset(_options(corpus, str(bad_vocab), tmp_path / "o1"))
  assert not (tmp_path / "o1").exists()
  busy = tmp_path / "busy"
  busy.mkdir()
  (busy / "keep.txt").write_text("precious")
  with pytest.raises(ValueError, match="not empty"):
    text_corpus.build_pretraining_dataset(_options(corpus, vocab, busy, num_out_files=2))
  assert (busy / "keep.txt").read_text() == "precious"
  # --overwrite replaces shards but keeps other files.
  text_corpus.build_pretraining_dataset(
    _options(corpus, vocab, busy, num_out_files=2, overwrite=True, max_seq_length=16)
  )
  assert (busy / "keep.txt").read_text() == "precious"
  assert cli.main(build_dataset_flags(empty, vocab, tmp_path / "o2")) == 2


def test_non_utf8_bytes_are_ignored_and_counted(small_corpus, tmp_path):
  _, vocab = small_corpus
  corpus = tmp_path / "c"
  corpus.mkdir()
  (corpus / "a.txt").write_bytes(b"the model \xff\xfe run\ncaf\xc3\xa9 \xe2\x82 data\n")
  out = tmp_path / "out"
  stats = text_corpus.build_pretraining_dataset(
    _options(str(corpus), vocab, out, max_seq_length=16, seed=1, num_out_files=1)
  )
  assert stats[0]["bad_bytes"] == 4
  assert read_shards(out, 1) == reference_build(str(corpus), vocab, 16, 1, 0, 1, 1)


def test_failed_job_leaves_no_complete_looking_shards(small_corpus, tmp_path, monkeypatch):
  corpus, vocab = small_corpus
  from tfrecords_tools import example_writer

  def boom(self, path):
    raise RuntimeError("disk on fire")

  monkeypatch.setattr(example_writer.ExampleWriter, "read_file", boom)
  out = tmp_path / "out"
  with pytest.raises(RuntimeError):
    text_corpus.build_pretraining_dataset(_options(corpus, vocab, out, num_out_files=3))
  assert os.listdir(out) == []


def test_progress_log_and_more_processes_than_files(small_corpus, tmp_path, capsys):
  corpus, vocab = small_corpus
  text_corpus.build_pretraining_dataset(
    _options(corpus, vocab, tmp_path / "o", max_seq_length=16, seed=0, num_out_files=4)
  )
  log = capsys.readouterr().out
  assert "Job 0: Creating example writer" in log
  assert "Job 0: Writing tf examples" in log
  assert re.search(
    r"Job 0: processed 1/3 files \(33\.3%\), ELAPSED: \d+s, ETA: \d+s, "
    r"\d+ examples written",
    log,
  )
  # "Done" counts from the same start as ELAPSED: never less than the last ELAPSED.
  elapsed = max(int(x) for x in re.findall(r"ELAPSED: (\d+)s", log))
  done = re.search(
    r"Job 0: Done! \d+ examples from [\d.]+ MB in ([\d.]+)s \(([\d.]+)s setting up", log
  )
  assert done and float(done.group(1)) >= elapsed and float(done.group(2)) > 0, log
  # A job with no files still writes (empty) shards; nothing is lost.
  options = _options(
    corpus, vocab, tmp_path / "o2", max_seq_length=16, seed=0, num_out_files=4, num_processes=4
  )
  text_corpus.prepare_output_dir(options.output_dir, overwrite=False)
  for job in range(4):
    text_corpus.run_job(job, options)
  shards = read_shards(tmp_path / "o2", 4)
  assert shards[3] == []
  assert all(shards[j] for j in range(3))


@pytest.mark.slow
def test_more_processes_than_corpus_files_leave_no_shard_empty(small_corpus, tmp_path, capsys):
  """A process reads whole files: `--num-processes 4` on the 3-file corpus
  runs 3 jobs (and says so), so no shard is left empty."""
  corpus, vocab = small_corpus
  options = _options(
    corpus, vocab, tmp_path / "o", max_seq_length=16, seed=0, num_out_files=6, num_processes=4
  )
  text_corpus.build_pretraining_dataset(options)
  assert "using 3 process(es), so that no shard is left empty" in capsys.readouterr().err
  shards = read_shards(tmp_path / "o", 6)
  assert all(shards[j] for j in range(6)), {j: len(r) for j, r in shards.items()}
  # As many processes as files: nothing changes (and nothing is said).
  same = text_corpus.processes_for_files(dataclasses.replace(options, num_processes=3))
  assert same.num_processes == 3 and not capsys.readouterr().err


@pytest.mark.parametrize("blanks", [True, False])
def test_lines_too_long_for_an_example_are_reported(small_corpus, tmp_path, caplog, blanks):
  # The original keeps at most max_seq_length - 2 tokens of a line and drops
  # the rest silently; the records stay the original's, the loss is reported.
  _, vocab = small_corpus
  corpus = tmp_path / "c"
  corpus.mkdir()
  long_line = " ".join(["the model", "run data"] * 500)  # 9,499 characters
  (corpus / "a.txt").write_text(f"the model\n\n\ntext data\n{long_line}\nrun\n")
  (corpus / "b.txt").write_text("x" * 9000 + "\n")  # one word: [UNK]
  out = tmp_path / "out"
  options = _options(
    str(corpus), vocab, out, max_seq_length=16, seed=1, num_out_files=1, blanks_separate_docs=blanks
  )
  with caplog.at_level("WARNING"):
    text_corpus.build_pretraining_dataset(options)
  expected = reference_build(str(corpus), vocab, 16, 1, 0, 1, 1, blanks_separate_docs=blanks)
  assert read_shards(out, 1) == expected
  warnings = [r.getMessage() for r in caplog.records if "characters long" in r.getMessage()]
  assert len(warnings) == 2, warnings
  a_warning = next(w for w in warnings if "a.txt" in w)
  assert "a.txt: line 5 is 9,499 characters long (2,000 tokens)" in a_warning
  assert "at most 14 tokens" in a_warning and "1,986 of its tokens" in a_warning
  b_warning = next(w for w in warnings if "b.txt" in w)
  assert "b.txt: line 1 is 9,000 characters long (1 tokens)" in b_warning
  assert "[UNK]" in b_warning


def _children(pid):
  """Ids of the processes whose parent is `pid` (Linux /proc)."""
  kids = []
  for entry in os.listdir("/proc"):
    if entry.isdigit():
      try:
        with open(f"/proc/{entry}/stat") as f:
          fields = f.read().rsplit(")", 1)[1].split()
      except OSError:
        continue
      if int(fields[1]) == pid:
        kids.append(int(entry))
  return kids


def _running(pid):
  """Whether `pid` exists and is not a zombie (one its new parent has not reaped)."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().rsplit(")", 1)[1].split()[0] != "Z"
  except OSError:
    return False


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the job processes in /proc")
def _start_blocked_builder(small_corpus, tmp_path, out, **popen):
  """Starts the builder (2 jobs, 8 shards) on a corpus where each job blocks
  reading a named pipe nobody writes to (job 0 a_pipe, job 1 b_pipe), so the
  build never ends on its own; returns (process, its flags)."""
  _, vocab = small_corpus
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  for name in ("a_pipe", "b_pipe"):
    os.mkfifo(corpus / name)
  for name in ("c.txt", "d.txt"):
    (corpus / name).write_text("the model and the data\n")
  flags = build_dataset_flags(corpus, vocab, out, num_processes=2, num_out_files=8, seed=0)
  builder = subprocess.Popen(
    [sys.executable, "-m", "electra_tf.build_pretraining_dataset", *flags],
    cwd=REPO_ROOT,
    env=tool_user_env(),
    stdout=subprocess.PIPE,
    stderr=subprocess.STDOUT,
    text=True,
    **popen,
  )
  return builder, flags


@pytest.mark.slow
def test_ctrl_c_stops_the_jobs_and_removes_the_shards_in_one_line(small_corpus, tmp_path):
  """Ctrl-C (SIGINT to the terminal's whole process group) while both jobs
  are writing: the jobs stop, every shard they had begun is removed, and the
  builder says so in one line, exit 130, no traceback."""
  out = tmp_path / "out"
  # its own process group, as a terminal's foreground job
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
    os.killpg(builder.pid, signal.SIGINT)
    rest = builder.stdout.read()
    assert builder.wait(timeout=60) == 130, rest
  finally:
    watchdog.cancel()
    builder.kill()
  assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
  assert f"interrupted (Ctrl-C); removed the 8 shard(s) it had written to {out}" in rest
  assert os.listdir(out) == []
  deadline = time.time() + 30
  while any(_running(p) for p in jobs) and time.time() < deadline:
    time.sleep(0.2)
  assert not [p for p in jobs if _running(p)]


@pytest.mark.slow
def test_job_processes_die_with_a_killed_builder_and_the_rerun_names_partial_shards(
  small_corpus, tmp_path, capsys
):
  """`kill -9` of the builder's main process: its job processes, each blocked
  reading a corpus file that is a named pipe nobody writes to, die with it;
  the re-run says that the output holds partial shards of an interrupted
  build and that --overwrite is the way on."""
  out = tmp_path / "out"
  builder, flags = _start_blocked_builder(small_corpus, tmp_path, out)
  workers = []
  # The jobs never finish on their own: a builder that never reports both
  # jobs writing would block the loop below forever.
  watchdog = threading.Timer(600, builder.kill)
  watchdog.start()
  try:
    writing = set()
    for line in builder.stdout:
      if line.endswith(": Writing tf examples\n"):
        writing.add(line.split(":")[0])
        if len(writing) == 2:
          break
    assert writing == {"Job 0", "Job 1"}
    workers = [pid for pid in _children(builder.pid) if _running(pid)]
    with_jobs = [p for p in workers if b"spawn_main" in open(f"/proc/{p}/cmdline", "rb").read()]
    assert len(with_jobs) == 2, workers
    builder.kill()
    builder.wait()
    deadline = time.time() + 30
    while any(_running(p) for p in with_jobs) and time.time() < deadline:
      time.sleep(0.2)
    assert not [p for p in with_jobs if _running(p)]
  finally:
    watchdog.cancel()
    builder.kill()
    for pid in workers:
      if _running(pid):
        os.kill(pid, signal.SIGKILL)
  left = sorted(os.listdir(out))
  assert len(left) == 8 and all(name.startswith(".pretrain_data.tfrecord-") for name in left)
  assert cli.main(flags) == 2
  message = capsys.readouterr().err
  assert "its 8 entries are partial shards" in message and "interrupted build" in message
  assert "--overwrite" in message


def test_empty_output_and_output_in_the_corpus_dir_are_refused(small_corpus, tmp_path, capsys):
  """A corpus of blank lines writes no example; more shards than examples
  leaves some empty; the corpus dir as output dir would read the shards back
  as text: each a one-line refusal naming the culprit, nothing left."""
  corpus, vocab = small_corpus
  blank = tmp_path / "blank"
  blank.mkdir()
  (blank / "a.txt").write_text("\n\n   \n\n")
  with pytest.raises(ValueError, match="no example was written"):
    text_corpus.build_pretraining_dataset(_options(str(blank), vocab, tmp_path / "o1"))
  assert os.listdir(tmp_path / "o1") == []
  # More shards than examples: the original's layout (empty shards kept), said in one line.
  text_corpus.build_pretraining_dataset(
    _options(corpus, vocab, tmp_path / "o2", max_seq_length=16, seed=0, num_out_files=500)
  )
  warning = capsys.readouterr().err
  assert re.search(
    r"--num-out-files 500: only \d+ example\(s\), so \d+ shard\(s\) are empty", warning
  )
  assert len(os.listdir(tmp_path / "o2")) == 500 + 1  # and records_info.json
  with pytest.raises(ValueError, match="is --corpus-dir: the shards would be read back as text"):
    text_corpus.build_pretraining_dataset(_options(corpus, vocab, corpus, overwrite=True))


def test_a_rebuild_that_fails_or_is_interrupted_puts_the_earlier_build_back(
  small_corpus, tmp_path, monkeypatch, capsys
):
  """--overwrite sets the complete build aside until the new one is
  complete: an error or Ctrl-C in the rebuild leaves the earlier build, byte
  for byte, where it was; a finished rebuild leaves no trace of it."""
  corpus, vocab = small_corpus
  out = tmp_path / "out"
  argv = build_dataset_flags(corpus, vocab, out, max_seq_length=16, seed=0, num_out_files=2)
  assert cli.main(argv) == 0
  earlier = {p.name: p.read_bytes() for p in out.iterdir()}
  (out / "notes.txt").write_text("mine")
  blank = tmp_path / "blank"
  blank.mkdir()
  (blank / "a.txt").write_text("\n\n")
  blank_argv = build_dataset_flags(blank, vocab, out, max_seq_length=16, num_out_files=3)
  assert cli.main(blank_argv + ["--overwrite"]) == 2
  assert "no example was written" in capsys.readouterr().err
  assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != "notes.txt"} == earlier

  real_run_jobs = text_corpus.run_jobs

  def interrupted_after_the_jobs(run_job, options):
    real_run_jobs(run_job, options)  # the new shards are written, the info is not
    raise KeyboardInterrupt

  monkeypatch.setattr(text_corpus, "run_jobs", interrupted_after_the_jobs)
  other = build_dataset_flags(corpus, vocab, out, max_seq_length=16, seed=1, num_out_files=3)
  assert cli.main(other + ["--overwrite"]) == 130
  err = capsys.readouterr().err.strip().splitlines()
  assert err[-1] == (
    f"interrupted (Ctrl-C); removed the 3 shard(s) it had written to {out} and put the "
    f"earlier build's {len(earlier)} file(s) back"
  )
  assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != "notes.txt"} == earlier
  monkeypatch.undo()
  assert cli.main(other + ["--overwrite"]) == 0
  names = sorted(p.name for p in out.iterdir())
  assert text_corpus.PREVIOUS_BUILD not in names and "notes.txt" in names
  assert len([n for n in names if n.startswith("pretrain_data")]) == 3


def test_cr_only_line_ends_are_refused_and_windows_line_ends_read_as_unix(
  small_corpus, tmp_path, capsys
):
  """A file with old-Mac line ends ("\\r" only) would be read as one line
  (one example from a whole file): refused in one line, before anything is
  written. Windows line ends give the records of Unix ones."""
  corpus, vocab = small_corpus
  name = sorted(os.listdir(corpus))[0]
  data = open(os.path.join(corpus, name), "rb").read().replace(b"\r", b"")
  mac = tmp_path / "mac"
  mac.mkdir()
  (mac / "a.txt").write_bytes(b"fine text\n")
  (mac / "b.txt").write_bytes(data.replace(b"\n", b"\r"))
  out = tmp_path / "out"
  assert cli.main(build_dataset_flags(mac, vocab, out, max_seq_length=32, num_out_files=2)) == 2
  path = str(mac / "b.txt")
  assert capsys.readouterr().err == (
    f"error: --corpus-dir: {path!r} has CR-only line ends (old Mac format: '\\r' without "
    f"'\\n'), so it would be read as one line; convert it first, e.g. tr '\\r' '\\n' < {path} > "
    "converted.txt (Windows '\\r\\n' line ends are fine)\n"
  )
  assert not out.exists()
  records = {}
  for kind, line_end in (("unix", b"\n"), ("windows", b"\r\n")):
    (tmp_path / kind).mkdir()
    (tmp_path / kind / "a.txt").write_bytes(data.replace(b"\n", line_end))
    flags = build_dataset_flags(
      tmp_path / kind, vocab, tmp_path / f"out_{kind}", max_seq_length=32, num_out_files=2, seed=1
    )
    assert cli.main(flags) == 0
    records[kind] = read_shards(tmp_path / f"out_{kind}", 2)
  assert records["unix"] == records["windows"] and sum(map(len, records["unix"].values())) > 5
