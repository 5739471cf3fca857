"""Bad corpora and flags for `build_vocab` and the dataset builder, each one
line (exit status 2) or one warning: a corpus of random bytes, files that
are not text beside text, normalisation that changes most words
(Vietnamese tones, Devanagari vowel signs), a vocab short of --vocab-size
with the real reason, a directory as --output / --vocab-file, a file as
--output-dir."""

import os
import random

import pytest

from electra_tf import build_pretraining_dataset as builder_cli
from tests.helpers import pretraining_data
from tests.helpers.subprocesses import build_dataset_flags
from tfrecords_tools import build_vocab
from tfrecords_tools import text_checks

VIETNAMESE = (
  "Nhấn đôi để thêm văn bản Tôi là người Việt Nam chúng tôi đang học tiếng Anh ở trường "
  "đại học Hà Nội và thành phố Hồ Chí Minh có nhiều người"
).split()
HINDI = "मैं हिंदी में लिखता हूँ यह किताब बहुत अच्छी है हम स्कूल जाते हैं".split()
ENGLISH = "the model reads text and learns which tokens were replaced by the generator".split()


def _corpus(directory, words, lines=400, seed=0):
  rng = random.Random(seed)
  directory.mkdir(parents=True, exist_ok=True)
  text = "\n".join(" ".join(rng.choice(words) for _ in range(10)) for _ in range(lines))
  (directory / "a.txt").write_text(text + "\n", encoding="utf-8")
  return directory


def _random_bytes(path, size, seed=0):
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_bytes(random.Random(seed).randbytes(size))
  return path


def _lines(text):
  return [line for line in text.splitlines() if line.strip()]


def test_not_text_share():
  assert text_checks.not_text_share(" ".join(VIETNAMESE).encode()) == 0
  assert text_checks.not_text_share(b"") == 0
  assert text_checks.is_not_text(random.Random(1).randbytes(10_000))
  # A UTF-8 text with a few Latin-1 bytes stays text.
  assert not text_checks.is_not_text(b"caf\xe9 au lait, " * 20 + " ".join(ENGLISH).encode() * 5)


def test_build_vocab_refuses_a_corpus_of_random_bytes(tmp_path, capsys):
  corpus = tmp_path / "corpus"
  _random_bytes(corpus / "a.bin", 60_000)
  _random_bytes(corpus / "b.bin", 30_000, seed=1)
  out = tmp_path / "vocab.txt"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "1000", "--output", str(out)]
  assert build_vocab.main(argv) == 2
  err = _lines(capsys.readouterr().err)
  assert len(err) == 1, err
  assert "2 file(s) (100% of the corpus's 90,000 bytes, e.g. " in err[0] and "not text" in err[0]
  assert not out.exists()


def test_build_vocab_skips_a_binary_file_beside_text_and_says_so_once(tmp_path, capsys):
  corpus = _corpus(tmp_path / "corpus", ENGLISH, lines=2000)
  _random_bytes(corpus / "z.bin", 4_000)
  out = tmp_path / "vocab.txt"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "200", "--output", str(out)]
  assert build_vocab.main(argv) == 0
  err = capsys.readouterr().err
  skipped = [line for line in _lines(err) if "not text" in line]
  assert len(skipped) == 1 and "skipped 1 file(s)" in skipped[0], err
  assert "z.bin" in skipped[0]
  assert "not UTF-8 in" not in err  # the skipped file's bytes are not reported again


@pytest.mark.parametrize(
  "words, example", [(VIETNAMESE, '-> "'), (HINDI, "")], ids=["vietnamese", "devanagari"]
)
def test_build_vocab_says_once_when_accent_stripping_changes_most_words(
  tmp_path, capsys, words, example
):
  corpus = _corpus(tmp_path / "corpus", words)
  out = tmp_path / "vocab.txt"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "300", "--output", str(out)]
  assert build_vocab.main(argv) == 0
  lost = [line for line in _lines(capsys.readouterr().err) if "accent stripping" in line]
  assert len(lost) == 1, lost
  share = int(lost[0].split("accent stripping changes ")[1].split("%")[0])
  assert share >= 50, lost
  assert "--no-strip-accents" in lost[0] and example in lost[0]
  # With the flag the accents stay, and nothing is said.
  argv += ["--no-strip-accents", "--overwrite"]
  assert build_vocab.main(argv) == 0
  assert "accent stripping" not in capsys.readouterr().err
  vocab = out.read_text(encoding="utf-8")
  assert ("người" in vocab) if words is VIETNAMESE else ("हिंदी" in vocab)


def test_build_vocab_says_nothing_about_english(tmp_path, capsys):
  corpus = _corpus(tmp_path / "corpus", ENGLISH + ["The", "Generator"])
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "150"]
  assert build_vocab.main(argv + ["--output", str(tmp_path / "v.txt")]) == 0
  err = capsys.readouterr().err
  assert "accent stripping" not in err and "lower-casing" not in err


def test_a_short_vocab_gives_the_real_reason(tmp_path, capsys):
  corpus = _corpus(tmp_path / "corpus", ENGLISH)
  out = tmp_path / "vocab.txt"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "5000", "--output", str(out)]
  assert build_vocab.main(argv) == 0
  n = len(out.read_text().splitlines())
  short = [line for line in _lines(capsys.readouterr().err) if "fewer than --vocab-size" in line]
  assert len(short) == 1, short
  assert f"the vocab has {n} tokens" in short[0]
  assert f"even the pieces seen once give only {n} tokens" in short[0]
  assert f"({len(set(ENGLISH))} distinct words after normalisation)" in short[0]


def test_shortfall_between_two_thresholds():
  reason = build_vocab.shortfall_reason([(100, 200), (20, 9000), (60, 900)], 1000, 50_000)
  assert reason.endswith("N=60 gives 900 tokens, N=20 already 9000, more than --vocab-size 1000")


def test_build_vocab_overwrite_onto_a_directory_is_one_line(tmp_path, capsys):
  corpus = _corpus(tmp_path / "corpus", ENGLISH)
  target = tmp_path / "out"
  target.mkdir()
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "150", "--output", str(target)]
  assert build_vocab.main(argv + ["--overwrite"]) == 2
  err = _lines(capsys.readouterr().err)
  assert len(err) == 1 and f"--output {str(target)!r} is a directory" in err[0], err
  assert os.listdir(target) == []


def test_builder_refuses_a_corpus_of_random_bytes_and_leaves_nothing(tmp_path, capsys):
  vocab = pretraining_data.make_data_dir(tmp_path / "data") / "vocab.txt"
  corpus = tmp_path / "corpus"
  _random_bytes(corpus / "a.bin", 50_000)
  out = tmp_path / "records"
  assert builder_cli.main(build_dataset_flags(corpus, vocab, out, num_out_files=2)) == 2
  err = _lines(capsys.readouterr().err)
  assert len(err) == 1 and "100% of the corpus's 50,000 bytes" in err[0], err
  assert "no shards were written" in err[0]
  assert not out.exists()


@pytest.mark.slow
def test_builder_skips_a_binary_file_and_warns_once(tmp_path, capsys):
  vocab = pretraining_data.make_data_dir(tmp_path / "data") / "vocab.txt"
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  rng = random.Random(0)
  words = [f"w{i}" for i in range(40)]
  for name in ("a.txt", "b.txt"):
    lines = (" ".join(rng.choice(words) for _ in range(12)) for _ in range(300))
    (corpus / name).write_text("\n".join(lines) + "\n")
  _random_bytes(corpus / "c.bin", 3_000)
  (corpus / "d.txt").write_bytes(b"w1 w2 \xff w3\n" * 50)  # a few stray bytes: kept
  out = tmp_path / "records"
  argv = build_dataset_flags(corpus, vocab, out, num_out_files=2, num_processes=2, seed=0)
  assert builder_cli.main(argv) == 0
  err = capsys.readouterr().err
  skipped = [line for line in _lines(err) if "not text" in line]
  assert len(skipped) == 1 and "skipped 1 file(s)" in skipped[0] and "c.bin" in skipped[0], err
  stray = [line for line in _lines(err) if "not UTF-8" in line and "not text" not in line]
  assert len(stray) == 1 and "ignored 50 bytes that are not UTF-8 in 1 file(s)" in stray[0], err
  assert sorted(os.listdir(out)) == [
    "pretrain_data.tfrecord-0-of-2",
    "pretrain_data.tfrecord-1-of-2",
    "records_info.json",
  ]


def test_builder_warns_once_about_accent_stripping(tmp_path, capsys):
  corpus = _corpus(tmp_path / "corpus", VIETNAMESE, lines=50)
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(pretraining_data.SPECIAL + ["nhan", "đoi"]) + "\n")
  argv = build_dataset_flags(corpus, vocab, tmp_path / "records", num_out_files=1)
  assert builder_cli.main(argv) == 0
  lost = [line for line in _lines(capsys.readouterr().err) if "accent stripping" in line]
  assert len(lost) == 1 and "--no-strip-accents" in lost[0], lost
  argv += ["--no-strip-accents", "--overwrite"]
  assert builder_cli.main(argv) == 0
  assert "accent stripping" not in capsys.readouterr().err


def test_builder_paths_of_the_wrong_kind_are_one_line(tmp_path, capsys):
  data_dir = pretraining_data.make_data_dir(tmp_path / "data")
  corpus = _corpus(tmp_path / "corpus", ENGLISH, lines=20)
  argv = build_dataset_flags(corpus, data_dir, tmp_path / "records")
  assert builder_cli.main(argv) == 2
  err = _lines(capsys.readouterr().err)
  assert len(err) == 1 and f"--vocab-file {str(data_dir)!r} is a directory" in err[0], err
  assert not (tmp_path / "records").exists()
  a_file = corpus / "a.txt"
  assert builder_cli.main(build_dataset_flags(corpus, data_dir / "vocab.txt", a_file)) == 2
  err = _lines(capsys.readouterr().err)
  assert len(err) == 1 and f"--output-dir {str(a_file)!r} is a file" in err[0], err
