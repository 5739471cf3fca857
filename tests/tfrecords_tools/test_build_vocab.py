"""The WordPiece vocab learner writes a usable BERT-layout vocab."""

import random

import pytest

from electra_tf.text import wordpiece as tokenization
from electra_tf.text.vocab import special_token_ids
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
