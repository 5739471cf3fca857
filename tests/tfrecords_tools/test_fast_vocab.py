"""build_vocab's fast path: words counted with `str.translate` equal the
in-graph tokenizer's on hard text, files are read in bounded pieces, the
`tokenizers` trainer writes the BERT layout, and long runs print a progress
line."""

import collections
import io
import random
import unicodedata

import pytest
import tensorflow as tf

from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers.reference_hard_text import hard_lines
from tfrecords_tools import build_vocab

FLAGS = [(True, True), (True, False), (False, False)]


def _graph_words(lines, do_lower_case, strip_accents, per_line=False):
  """The in-graph tokenizer's words of `lines` (each line's list with `per_line`)."""
  tok = ElectraTokenizer(
    vocabulary=["[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"],
    do_lower_case=do_lower_case,
    strip_accents=strip_accents,
  )
  out = tok.normalize_words(tf.constant([l.encode("utf-8") for l in lines]))
  if per_line:
    return [[w.decode("utf-8") for w in row] for row in out.to_list()]
  return [w.decode("utf-8") for w in out.flat_values.numpy().tolist()]


@pytest.fixture(scope="module")
def hard():
  lines = hard_lines(400)
  # NFD input, every control character, Greek sigma in final and other
  # places, Unicode line/paragraph separators, a BOM and a lone U+FFFD.
  lines += [unicodedata.normalize("NFD", l) for l in lines[:60]]
  lines.append("".join(chr(c) for c in range(0x20)) + "x\x7f\x85y\u2028z\u2029w\ufeffv\ufffdu")
  lines += ["ΟΔΟΣ ΣΑΣ", "ΣΊΣΥΦΟΣ.", "Σ", "aΣ b", "ΑΣ\u0301 x", "όσος ΌΣΟΣ"]
  # Corpus lines end at "\n" (some hard lines hold one).
  return [piece for line in lines for piece in line.split("\n")]


@pytest.mark.parametrize("do_lower_case, strip_accents", FLAGS)
def test_the_words_equal_the_in_graph_tokenizers(hard, do_lower_case, strip_accents):
  normalizer = build_vocab.WordNormalizer(do_lower_case, strip_accents)
  expected = _graph_words(hard, do_lower_case, strip_accents)
  # Lines with a capital sigma come last when lower-casing: the same words.
  assert collections.Counter(normalizer.words("\n".join(hard))) == collections.Counter(expected)
  # Line by line, in the same order.
  rows = _graph_words(hard, do_lower_case, strip_accents, per_line=True)
  for line, row in zip(hard, rows):
    assert normalizer.words(line) == row, line


def test_only_plain_spaces_separate_words_after_the_table():
  """`str.split()` splits at every Unicode space: none but " " may survive."""
  for flags in FLAGS:
    table = build_vocab.translate_table(*flags)
    for cp, image in enumerate(table):
      out = chr(image) if isinstance(image, int) else (image or "")
      assert not any(c.isspace() and c != " " for c in out), (flags, hex(cp))


def test_file_pieces_cut_after_newlines_and_keep_every_byte():
  rng = random.Random(3)
  lines = ["".join(rng.choice("abc é世\t") for _ in range(rng.randint(0, 40))) for _ in range(500)]
  data = ("\n".join(lines) + "\n").encode("utf-8")
  pieces = list(build_vocab._file_pieces(io.BytesIO(data), size=64))
  assert b"".join(pieces) == data
  assert all(p.endswith(b"\n") for p in pieces[:-1])
  # A line longer than a piece is cut after a space, else between characters.
  long_line = ("é" * 100 + " " + "世" * 100).encode("utf-8")
  pieces = list(build_vocab._file_pieces(io.BytesIO(long_line), size=64))
  assert b"".join(pieces) == long_line
  for p in pieces:
    p.decode("utf-8")  # no character split


def test_counts_do_not_depend_on_the_read_size(tmp_path, monkeypatch):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  lines = hard_lines(200)
  (corpus / "a.txt").write_text("\n".join(lines[:100]) + "\n", encoding="utf-8")
  (corpus / "b.txt").write_bytes(("\n".join(lines[100:]) + "\n").encode() + b"\xff\n")
  report = build_vocab.CountReport()
  whole = build_vocab.count_words(str(corpus), report=report)
  monkeypatch.setattr(build_vocab, "READ_CHUNK_BYTES", 97)
  small_report = build_vocab.CountReport()
  assert build_vocab.count_words(str(corpus), report=small_report) == whole
  assert (report.bad_bytes, report.bad_bytes_files) == (1, 1)
  assert (small_report.bad_bytes, small_report.bad_bytes_files) == (1, 1)
  assert small_report.total_bytes == report.total_bytes
  # And they equal the in-graph tokenizer's words of every line.
  expected = collections.Counter(_graph_words(lines, True, True))
  assert whole == expected


def test_rare_words_are_dropped_past_the_bound(tmp_path, monkeypatch):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  text = "\n".join(f"common w{i}" for i in range(300)) + "\n"
  (corpus / "a.txt").write_text(text)
  monkeypatch.setattr(build_vocab, "MAX_DISTINCT_WORDS", 50)
  monkeypatch.setattr(build_vocab, "READ_CHUNK_BYTES", 100)
  report = build_vocab.CountReport()
  counts = build_vocab.count_words(str(corpus), report=report)
  assert counts["common"] == 300 and len(counts) <= 2 * 50 + 20
  assert report.pruned_words > 0
  assert any("dropped" in line and "rare distinct words" in line for line in report.summary())


@pytest.mark.parametrize("learner", build_vocab.LEARNERS)
def test_both_learners_write_the_bert_layout(learner):
  rng = random.Random(0)
  words = "electra cafe naive model training discriminator generator token".split()
  counts = collections.Counter(
    rng.choice(words) + rng.choice(["", "s", "ing"]) for _ in range(3000)
  )
  tokens = build_vocab.learn_vocab(counts, 200, learner=learner)
  assert tokens[:104] == build_vocab.reserved_tokens()
  assert len(tokens) == len(set(tokens)) <= 200 and "##" not in tokens
  assert any(t.startswith("##") for t in tokens) and "electra" in tokens


def test_an_unknown_learner_is_one_line():
  with pytest.raises(ValueError, match="--learner 'x': expected one of tokenizers, "):
    build_vocab.learn_vocab({"a": 1}, 200, learner="x")


def test_a_long_count_prints_progress_lines(tmp_path, monkeypatch, capsys):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  for f in range(3):
    (corpus / f"{f}.txt").write_text("the quick brown fox\n" * 200)
  monkeypatch.setattr(build_vocab, "PROGRESS_SECONDS", 0.0)
  out = tmp_path / "vocab.txt"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "150", "--output", str(out)]
  assert build_vocab.main(argv) == 0
  lines = capsys.readouterr().out.splitlines()
  progress = [l for l in lines if l.startswith("counting words: ")]
  assert len(progress) == 3, lines
  assert progress[-1].startswith("counting words: 0.0/0.0 MB read (100.0%), 2,400 words")
  assert "ETA: 0s" in progress[-1]
  assert any(l.startswith("counted 2,400 words (4 distinct) in 0.0 MB") for l in lines)
  assert any(l.startswith("learned ") and "tokenizers learner" in l for l in lines)


def test_the_tensorflow_text_learner_is_still_there(tmp_path, capsys):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("low lower newest widest\n" * 50)
  out = tmp_path / "vocab.txt"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "150", "--output", str(out)]
  assert build_vocab.main(argv + ["--learner", "tensorflow-text"]) == 0
  assert "tensorflow-text learner" in capsys.readouterr().out
  assert out.read_text().splitlines()[:104] == build_vocab.reserved_tokens()
