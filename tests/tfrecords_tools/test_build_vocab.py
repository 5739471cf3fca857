"""The vocab learner: a usable BERT-layout WordPiece vocab, or a SentencePiece model with its settings."""

import json
import os
import random
import signal

import pytest
import sentencepiece
import tensorflow as tf

from electra_tf.text import tokenizer_for
from electra_tf.text import wordpiece as tokenization
from electra_tf.text.vocab import special_token_ids
from electra_tf.text.vocab import vocab_kind
from tests.helpers.subprocesses import run_python
from tests.helpers.translations import write_corpus
from tfrecords_tools import build_vocab


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
  rng = random.Random(0)
  words = (
    "Electra Café naïve model Training discriminator generator token "
    "replaced detection Élan the of and a to in is was"
  ).split()
  root = tmp_path_factory.mktemp("vocab_corpus")
  for f in range(2):
    lines = [
      " ".join(rng.choice(words) for _ in range(rng.randint(3, 15)))
      + rng.choice([".", ",", "!", ""])
      for _ in range(300)
    ]
    (root / f"part{f}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
  return root


def _lines(corpus_dir):
  return [l for p in sorted(corpus_dir.iterdir()) for l in p.read_text("utf-8").splitlines()]


def test_layout_size_and_coverage(corpus_dir, tmp_path):
  out = tmp_path / "vocab.txt"
  assert (
    build_vocab.main(["--corpus-dir", str(corpus_dir), "--vocab-size", "200", "--output", str(out)])
    == 0
  )
  tokens = out.read_text("utf-8").split("\n")[:-1]
  assert len(tokens) <= 200 and len(tokens) == len(set(tokens))
  assert tokens[0] == "[PAD]" and tokens[1] == "[unused0]" and tokens[99] == "[unused98]"
  assert special_token_ids(str(out)) == {"pad": 0, "unk": 100, "cls": 101, "sep": 102, "mask": 103}
  # Lower-cased and accent-stripped, as the builder's default tokenizer.
  learned = tokens[104:]
  assert not any(c.isupper() or c in "éïÉ" for t in learned for c in t)
  assert any(t.startswith("##") for t in learned)
  tok = tokenization.FullTokenizer(str(out))
  pieces = [p for line in _lines(corpus_dir) for p in tok.tokenize(line)]
  assert pieces.count("[UNK]") == 0


def test_cased_flags_are_respected(corpus_dir, tmp_path):
  out = tmp_path / "cased.txt"
  assert (
    build_vocab.main(
      [
        "--corpus-dir",
        str(corpus_dir),
        "--vocab-size",
        "300",
        "--output",
        str(out),
        "--no-lower-case",
        "--num-unused",
        "5",
      ]
    )
    == 0
  )
  tokens = out.read_text("utf-8").split("\n")[:-1]
  assert tokens[:10] == ["[PAD]"] + [f"[unused{i}]" for i in range(5)] + [
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
  ]
  assert any(any(c.isupper() for c in t) for t in tokens[10:])
  assert any("é" in t for t in tokens[10:])  # cased never strips accents


def test_an_existing_vocab_is_not_replaced_without_overwrite(tmp_path, corpus_dir, capsys):
  output = tmp_path / "vocab.txt"
  output.write_text("[PAD]\n[UNK]\n")
  argv = ["--corpus-dir", str(corpus_dir), "--vocab-size", "120", "--output", str(output)]
  assert build_vocab.main(argv) == 2
  err = capsys.readouterr().err
  assert f"--output {str(output)!r} exists; pass --overwrite" in err and len(err.splitlines()) == 1
  assert output.read_text() == "[PAD]\n[UNK]\n"
  assert build_vocab.main(argv + ["--overwrite"]) == 0
  assert len(output.read_text().splitlines()) > 2


def test_errors(tmp_path, corpus_dir):
  assert (
    build_vocab.main(
      [
        "--corpus-dir",
        str(tmp_path / "none"),
        "--vocab-size",
        "200",
        "--output",
        str(tmp_path / "v.txt"),
      ]
    )
    == 2
  )
  assert (
    build_vocab.main(
      ["--corpus-dir", str(corpus_dir), "--vocab-size", "50", "--output", str(tmp_path / "v.txt")]
    )
    == 2
  )


@pytest.mark.parametrize("size", ["0", "1000000000"])
def test_a_vocab_size_out_of_range_is_one_line_before_any_work(tmp_path, corpus_dir, capsys, size):
  """A typo of a few zeros made the trainer abort on a 70 GB allocation."""
  argv = ["--corpus-dir", str(corpus_dir), "--vocab-size", size, "--output", str(tmp_path / "v")]
  assert build_vocab.main(argv) == 2
  assert capsys.readouterr().err.strip() == (
    f"error: --vocab-size {size}: expected 1 to 1,000,000 (ELECTRA's is 30,522)"
  )
  assert not (tmp_path / "v").exists()


@pytest.fixture(scope="module")
def german_dir(tmp_path_factory):
  root = tmp_path_factory.mktemp("de")
  write_corpus(root, "de")
  return root


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_sentencepiece_models_keep_case_and_record_their_settings(german_dir, tmp_path, model_type):
  out = tmp_path / "de.model"
  argv = ["--corpus-dir", str(german_dir), "--vocab-size", "400", "--output", str(out)]
  argv += ["--character-coverage", "0.9995"]  # given, so recorded as given
  assert build_vocab.main(argv + ["--model-type", model_type]) == 0
  assert vocab_kind(str(out)) == "sentencepiece"
  assert special_token_ids(str(out)) == {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}
  settings = json.loads((tmp_path / "de.model.json").read_text())
  assert settings == {
    "kind": "sentencepiece",
    "model_type": model_type,
    "vocab_size": 400,
    "do_lower_case": False,
    "strip_accents": False,
    "character_coverage": 0.9995,
  }
  model = sentencepiece.SentencePieceProcessor(model_file=str(out))
  assert model.get_piece_size() == 400
  pieces = [model.id_to_piece(i) for i in range(400)]
  assert any(any(c.isupper() for c in p) for p in pieces)
  assert any(any(c in "äöüß" for c in p) for p in pieces)
  assert not any(tmp_path.glob(".*"))  # no temporary file left beside it


def test_sentencepiece_lower_casing_is_recorded_and_applied(german_dir, tmp_path, capsys):
  out = tmp_path / "uncased.model"
  argv = ["--corpus-dir", str(german_dir), "--vocab-size", "400", "--output", str(out)]
  argv += ["--model-type", "unigram", "--do-lower-case", "--do-strip-accents"]
  assert build_vocab.main(argv) == 0
  assert "Wrote a SentencePiece unigram model of 400 pieces" in capsys.readouterr().out
  settings = json.loads((tmp_path / "uncased.model.json").read_text())
  assert settings["do_lower_case"] and settings["strip_accents"]
  model = sentencepiece.SentencePieceProcessor(model_file=str(out))
  learned = [model.id_to_piece(i) for i in range(5, model.get_piece_size())]
  assert not any(c.isupper() or c in "äöüÄÖÜ" for p in learned for c in p)
  tok = tokenizer_for(str(out))  # reads the settings beside the model
  same = tok(tf.constant(["ÜBER die Äpfel", "uber die apfel"])).to_list()
  assert same[0] == same[1]
  # An existing model is refused like a vocab.txt; the settings stay untouched.
  assert build_vocab.main(argv) == 2
  assert "exists; pass --overwrite" in capsys.readouterr().err


def test_sentencepiece_errors_are_one_line(german_dir, tmp_path, capsys):
  out = tmp_path / "x.model"
  base = ["--corpus-dir", str(german_dir), "--output", str(out), "--model-type", "bpe"]
  assert build_vocab.main(base + ["--vocab-size", "20"]) == 2
  err = capsys.readouterr().err.strip()
  assert err.startswith("error: SentencePiece training failed: Vocabulary size is smaller than")
  assert len(err.splitlines()) == 1
  assert build_vocab.main(base + ["--vocab-size", "400", "--character-coverage", "1.5"]) == 2
  assert "--character-coverage 1.5: expected a share in (0, 1]" in capsys.readouterr().err
  wordpiece = base[:-2] + ["--vocab-size", "400"]
  assert build_vocab.main(wordpiece + ["--num-unused", "-3"]) == 2
  assert capsys.readouterr().err.strip() == (
    "error: --num-unused -3: expected 0 or more [unusedN] tokens"
  )
  assert build_vocab.main(base + ["--vocab-size", "400", "--input-sentence-size", "-5"]) == 2
  err = capsys.readouterr()
  assert err.err.strip() == (
    "error: --input-sentence-size -5: expected a number of lines, or 0 for every line"
  )
  assert "-5" not in err.out  # no "trains on at most -5 lines" before the refusal
  assert not out.exists() and not (tmp_path / "x.model.json").exists()


def test_split_long_line_cuts_at_spaces_and_drops_unsplittable_runs():
  line = " ".join(f"w{i}" for i in range(1000))
  pieces, skipped, skipped_chars = build_vocab.split_long_line(line, max_chars=50)
  assert all(len(p) <= 50 for p in pieces) and len(pieces) > 1
  assert " ".join(pieces).split() == line.split()  # the same words
  pieces, skipped, skipped_chars = build_vocab.split_long_line("ab " + "x" * 60 + " cd", 50)
  assert (pieces, skipped, skipped_chars) == (["ab", "cd"], 1, 60)
  assert build_vocab.split_long_line("short line", 50) == (["short line"], 0, 0)


def test_long_lines_give_the_same_counts_and_are_reported(tmp_path, monkeypatch, capsys, caplog):
  """A long line counts the same words as its pieces would; the run reports
  the split line, the dropped space-free run, the non-UTF-8 bytes and a
  vocab smaller than asked."""
  rng = random.Random(1)
  words = [f"tok{rng.randint(0, 300)}" for _ in range(3000)]
  long_line = " ".join(words) + " " + "z" * 400 + "\tend"
  short = "\n".join(" ".join(words[i : i + 10]) for i in range(0, 3000, 10)) + "\nend\n"
  whole = tmp_path / "whole"
  whole.mkdir()
  (whole / "a.txt").write_bytes(b"\xff" + long_line.encode() + b"\n\xfe\n")
  pieces = tmp_path / "pieces"
  pieces.mkdir()
  (pieces / "a.txt").write_text(short)
  monkeypatch.setattr(build_vocab, "MAX_PIECE_CHARS", 200)
  report = build_vocab.CountReport()
  counts = build_vocab.count_words(str(whole), report=report)
  assert counts == build_vocab.count_words(str(pieces))
  assert (report.bad_bytes, report.split_lines, report.skipped_words) == (2, 1, 1)
  assert report.skipped_chars == 400
  assert report.bad_bytes_example == str(whole / "a.txt")  # reported once, in the summary

  out = tmp_path / "vocab.txt"
  args = ["--corpus-dir", str(whole), "--vocab-size", "5000", "--output", str(out)]
  assert build_vocab.main(args) == 0
  err = capsys.readouterr().err
  assert "ignored 2 bytes that are not UTF-8" in err
  assert "split 1 lines longer than 200 characters" in err
  assert "skipped 1 words longer than 200 characters (400 characters" in err
  n_tokens = len(out.read_text("utf-8").splitlines())
  assert n_tokens < 5000
  assert f"the vocab has {n_tokens} tokens, fewer than --vocab-size 5000" in err


def test_batches_bound_lines_times_longest_line():
  lines = ["a" * n for n in (1, 5, 200, 3, 900, 7, 50)] * 20
  batches = list(build_vocab._batches(lines, max_cells=1000))
  assert sorted(l for b in batches for l in b) == sorted(lines)
  assert all(len(b) * max(map(len, b)) <= 1000 or len(b) == 1 for b in batches)


@pytest.mark.slow
def test_a_multi_megabyte_line_stays_within_bounded_memory(tmp_path):
  """A 3 MB line among 2,000 short ones: before, the normaliser's batch grew as
  lines × longest line (tens of GB here); now the run's peak RSS stays near
  TensorFlow's own footprint. The address-space limit turns a regression into
  a failed run instead of a swapping machine."""
  rng = random.Random(2)
  words = "alpha beta gamma delta epsilon zeta eta theta".split()
  lines = [" ".join(rng.choice(words) for _ in range(10)) for _ in range(2000)]
  lines.insert(1000, " ".join(f"{rng.choice(words)}{rng.randint(0, 99)}" for _ in range(500_000)))
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("\n".join(lines) + "\n")
  assert len(lines[1000]) > 3_000_000
  script = (
    "import resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))\n"
    "from tfrecords_tools import build_vocab\n"
    "code = build_vocab.main(sys.argv[1:])\n"
    # VmHWM: this process's own peak. ru_maxrss would also count the pytest
    # parent's resident size at fork time, which Linux keeps across exec.
    "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
    "print('peak_rss_kb', hwm.split()[1])\n"
    "sys.exit(code)\n"
  )
  out = tmp_path / "vocab.txt"
  result = run_python(
    ["-c", script, "--corpus-dir", str(corpus), "--vocab-size", "500", "--output", str(out)]
  )
  assert result.returncode == 0, result.stderr[-3000:]
  # The old batching needed tens of GB here and died under the 6 GB
  # address-space limit; now the run peaks near TensorFlow's own footprint.
  peak_kb = int(result.stdout.split("peak_rss_kb")[1].split()[0])
  assert 0 < peak_kb < 3 * 2**20, f"peak RSS {peak_kb / 2**20:.2f} GB"
  assert "split 1 lines longer than 10000 characters" in result.stderr
  tokens = out.read_text("utf-8").splitlines()
  # Digits occur only in the long line: its words were counted. (Which
  # digit pieces come out is the learner's choice: tensorflow-text's made
  # "##99", the `tokenizers` trainer merges "alpha9" first.)
  assert {"alpha", "theta", "##9"} <= set(tokens)


def test_ctrl_c_ends_in_one_line_and_writes_nothing(tmp_path, corpus_dir, monkeypatch, capsys):
  """Ctrl-C while the corpus is counted: one line, exit 130, no vocab or
  settings file (they are written only once complete)."""

  def interrupted(*args, **kwargs):
    raise KeyboardInterrupt

  monkeypatch.setattr(build_vocab, "learn_vocab", interrupted)
  out = tmp_path / "vocab.txt"
  argv = ["--corpus-dir", str(corpus_dir), "--vocab-size", "1000", "--output", str(out)]
  assert build_vocab.main(argv) == 130
  assert capsys.readouterr().err == "interrupted (Ctrl-C); nothing written\n"
  assert list(tmp_path.iterdir()) == []


def test_ctrl_c_inside_sentencepiece_training_is_an_interruption_not_a_failure(
  tmp_path, corpus_dir, monkeypatch, capsys
):
  """SentencePiece's trainer turns its iterator's KeyboardInterrupt into a
  RuntimeError; it still ends as Ctrl-C (exit 130, one line), not as a
  failed training with the bad-input status."""
  real_sentences = build_vocab.sentencepiece_sentences

  def ctrl_c_midway(*args, **kwargs):
    for i, line in enumerate(real_sentences(*args, **kwargs)):
      if i == 20:
        raise KeyboardInterrupt
      yield line

  monkeypatch.setattr(build_vocab, "sentencepiece_sentences", ctrl_c_midway)
  out = tmp_path / "sp.model"
  assert build_vocab.main(_vocab_argv(corpus_dir, out, "--model-type", "bpe")) == 130
  assert capsys.readouterr().err.splitlines()[-1:] == ["interrupted (Ctrl-C); nothing written"]
  assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_sigterm_and_sighup_stop_build_vocab_as_ctrl_c_does(
  tmp_path, corpus_dir, monkeypatch, capsys, signum
):
  """A scheduler's SIGTERM or a closed terminal's SIGHUP while the corpus is
  counted: one line naming the signal, exit 128 + the signal, nothing written
  (before, the process died without a word)."""
  real_learn_vocab = build_vocab.learn_vocab

  def stopped_while_learning(*args, **kwargs):
    os.kill(os.getpid(), signum)
    return real_learn_vocab(*args, **kwargs)

  monkeypatch.setattr(build_vocab, "learn_vocab", stopped_while_learning)
  out = tmp_path / "vocab.txt"
  assert build_vocab.main(_vocab_argv(corpus_dir, out)) == 128 + signum
  name = signal.Signals(signum).name
  assert capsys.readouterr().err.splitlines()[-1:] == [f"stopped ({name}); nothing written"]
  assert list(tmp_path.iterdir()) == []


def test_a_named_pipe_in_the_corpus_dir_is_named_not_read(tmp_path, capsys):
  """Reading a FIFO blocks until something writes to it, and build_vocab
  reads its corpus more than once: it names the pipe instead. (The record
  builder reads each file once and takes a pipe that something feeds.)"""
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("some text here\n")
  os.mkfifo(corpus / "pipe")
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "200", "--output", str(tmp_path / "v.txt")]
  assert build_vocab.main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err == [
    f"error: --corpus-dir {str(corpus)!r}: 'pipe' is not a regular file (a named pipe, socket "
    "or device); expected text files only: move it out of the folder"
  ]
  assert not (tmp_path / "v.txt").exists()


def _vocab_argv(corpus_dir, out, *extra):
  return ["--corpus-dir", str(corpus_dir), "--vocab-size", "200", "--output", str(out), *extra]


def test_ctrl_c_before_the_write_leaves_the_old_vocab_and_says_nothing_written(
  tmp_path, corpus_dir, monkeypatch, capsys
):
  out = tmp_path / "vocab.txt"
  out.write_text("old\n")
  (tmp_path / "vocab.txt.json").write_text("{}")

  def interrupted(*args, **kwargs):
    raise KeyboardInterrupt

  monkeypatch.setattr(build_vocab, "learn_vocab", interrupted)
  assert build_vocab.main(_vocab_argv(corpus_dir, out, "--overwrite")) == 130
  assert capsys.readouterr().err == "interrupted (Ctrl-C); nothing written\n"
  assert out.read_text() == "old\n" and (tmp_path / "vocab.txt.json").read_text() == "{}"


def test_ctrl_c_after_the_write_says_what_was_written(tmp_path, corpus_dir, monkeypatch, capsys):
  """--overwrite, Ctrl-C during the [UNK] report: the new vocab and settings
  are complete, and the line says so (not "nothing written")."""
  out = tmp_path / "vocab.txt"
  out.write_text("old\n")
  (tmp_path / "vocab.txt.json").write_text("{}")

  def interrupted(*args, **kwargs):
    raise KeyboardInterrupt

  monkeypatch.setattr(build_vocab, "unknown_report", interrupted)
  assert build_vocab.main(_vocab_argv(corpus_dir, out, "--overwrite")) == 130
  err = capsys.readouterr().err.strip().splitlines()
  assert err[-1] == (
    f"interrupted (Ctrl-C) after the vocab was written: {out} and its settings {out}.json are "
    "complete; the report that follows them was cut short"
  )
  assert out.read_text().startswith("[PAD]\n")
  assert json.loads((tmp_path / "vocab.txt.json").read_text())["vocab_size"] > 104


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_while_writing_is_held_until_both_files_are_written(
  tmp_path, corpus_dir, monkeypatch, capsys, signum
):
  """A Ctrl-C (or SIGTERM) between the settings file and the vocab would
  leave a new settings file beside the old vocab: it is held back until both
  are written."""
  out = tmp_path / "vocab.txt"
  out.write_text("old\n")
  real_write_vocab = build_vocab.write_vocab

  def write_vocab_after_a_stop(tokens, output):
    os.kill(os.getpid(), signum)  # the settings file is written, the vocab is not
    real_write_vocab(tokens, output)

  monkeypatch.setattr(build_vocab, "write_vocab", write_vocab_after_a_stop)
  assert build_vocab.main(_vocab_argv(corpus_dir, out, "--overwrite")) == 128 + signum
  stopped = "interrupted (Ctrl-C)" if signum == signal.SIGINT else "stopped (SIGTERM)"
  assert f"{stopped} after the vocab was written" in capsys.readouterr().err
  tokens = out.read_text("utf-8").splitlines()
  assert tokens[0] == "[PAD]"
  assert json.loads((tmp_path / "vocab.txt.json").read_text())["vocab_size"] == len(tokens)


@pytest.mark.parametrize("existing", [False, True])
def test_an_output_that_is_a_directory_is_refused_before_any_work(
  tmp_path, corpus_dir, capsys, existing
):
  vocabs = tmp_path / "some" / "vocabs"
  if existing:
    vocabs.mkdir(parents=True)
  output = str(vocabs) + ("" if existing else os.sep)
  assert build_vocab.main(_vocab_argv(corpus_dir, output)) == 2
  what = "is a directory" if existing else "ends in a path separator"
  assert capsys.readouterr().err == (
    f"error: --output {output!r} {what}; expected a file path for the vocab (such as "
    f"{os.path.join(output, 'vocab.txt')!r})\n"
  )
  left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
  assert left == (["some", "some/vocabs"] if existing else [])


def test_cr_only_line_ends_are_refused_and_windows_line_ends_read_as_unix(
  tmp_path, corpus_dir, capsys
):
  text = (corpus_dir / "part0.txt").read_text("utf-8")
  mac = tmp_path / "mac"
  mac.mkdir()
  (mac / "a.txt").write_bytes(text.replace("\n", "\r").encode("utf-8"))
  out = tmp_path / "vocab.txt"
  assert build_vocab.main(_vocab_argv(mac, out)) == 2
  path = str(mac / "a.txt")
  assert capsys.readouterr().err == (
    f"error: --corpus-dir: {path!r} has CR-only line ends (old Mac format: '\\r' without "
    f"'\\n'), so it would be read as one line; convert it first, e.g. tr '\\r' '\\n' < {path} > "
    "converted.txt (Windows '\\r\\n' line ends are fine)\n"
  )
  assert not out.exists() and not (tmp_path / "vocab.txt.json").exists()
  # Windows line ends: the same vocab as Unix ones.
  unix, windows = tmp_path / "unix", tmp_path / "windows"
  unix.mkdir()
  windows.mkdir()
  (unix / "a.txt").write_bytes(text.encode("utf-8"))
  (windows / "a.txt").write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
  argv = ["--learner", "tensorflow-text"]  # deterministic
  assert build_vocab.main(_vocab_argv(unix, tmp_path / "u.txt", *argv)) == 0
  assert build_vocab.main(_vocab_argv(windows, tmp_path / "w.txt", *argv)) == 0
  assert (tmp_path / "u.txt").read_text() == (tmp_path / "w.txt").read_text()


def test_a_wordpiece_learner_with_a_sentencepiece_model_type_is_refused(tmp_path, capsys):
  (tmp_path / "corpus").mkdir()
  (tmp_path / "corpus" / "a.txt").write_text("one line of text\n")
  argv = ["--corpus-dir", str(tmp_path / "corpus"), "--output", str(tmp_path / "sp.model")]
  argv += ["--vocab-size", "50"]
  with pytest.raises(SystemExit) as exit_info:
    build_vocab.main(argv + ["--model-type", "unigram", "--learner", "tensorflow-text"])
  assert exit_info.value.code == 2
  err = capsys.readouterr().err
  assert "--learner tensorflow-text picks a WordPiece learner; --model-type unigram" in err
  assert not (tmp_path / "sp.model").exists()
