"""build_vocab on small alphabets: SentencePiece's character coverage is
chosen from the corpus (1.0 for Vietnamese, whose every letter is a real
one; SentencePiece's 0.9995 for many ideographs) unless given, every build
reports the [UNK] share of a sample's characters and tokens, and Korean
under the WordPiece defaults is told that accent stripping splits its
syllables. Real text: Django's Vietnamese, Korean and Chinese catalogues."""

import json

import pytest

from tests.helpers.translations import catalogue_messages
from tfrecords_tools import build_vocab


def _corpus(root, language, max_lines=None):
  lines = [line for document in catalogue_messages(language) for line in document]
  lines = lines[:max_lines] if max_lines else lines
  corpus = root / language
  corpus.mkdir()
  (corpus / f"{language}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
  return corpus, lines


def _unknown_lines(out):
  lines = [line for line in out.splitlines() if line.startswith("[UNK] ")]
  assert len(lines) == 2, out
  return lines


@pytest.fixture(scope="module")
def vietnamese(tmp_path_factory):
  return _corpus(tmp_path_factory.mktemp("coverage"), "vi")


def test_a_small_alphabet_gets_every_character(vietnamese, tmp_path, capsys):
  corpus, lines = vietnamese
  out = tmp_path / "vi.model"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "1300", "--output", str(out)]
  assert build_vocab.main(argv + ["--model-type", "unigram"]) == 0
  stdout = capsys.readouterr().out
  alphabet = len({c for line in lines for c in line if not c.isspace()})
  assert f"character coverage 1.0: the corpus has {alphabet} distinct characters" in stdout
  assert json.loads((tmp_path / "vi.model.json").read_text())["character_coverage"] == 1.0
  characters, tokens = _unknown_lines(stdout)
  assert characters.startswith(f"[UNK] characters: 0 of the {alphabet} distinct characters")
  assert tokens.startswith("[UNK] tokens: 0 of the sample's ")


def test_a_given_coverage_is_honoured_and_its_losses_reported(vietnamese, tmp_path, capsys):
  corpus, _ = vietnamese
  out = tmp_path / "vi.model"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "1300", "--output", str(out)]
  argv += ["--model-type", "unigram", "--character-coverage", "0.9995"]
  assert build_vocab.main(argv) == 0
  captured = capsys.readouterr()
  stdout = captured.out
  assert "character coverage 1.0" not in stdout
  assert json.loads((tmp_path / "vi.model.json").read_text())["character_coverage"] == 0.9995
  characters, tokens = _unknown_lines(stdout)
  # SentencePiece's default drops real Vietnamese letters.
  lost = int(characters.split()[2])
  assert lost > 0 and "get no piece (e.g. " in characters, characters
  assert int(tokens.split()[2]) >= lost
  warned = [line for line in captured.err.splitlines() if "--character-coverage 0.9995" in line]
  assert len(warned) == 1 and "1.0 gives each one" in warned[0], captured.err


def test_many_ideographs_keep_sentencepiece_coverage(tmp_path):
  _, lines = _corpus(tmp_path, "zh_Hans")
  alphabet = len({c for line in lines for c in line if not c.isspace()})
  share = build_vocab.ALPHABET_SHARE_OF_VOCAB
  coverage, why = build_vocab.choose_character_coverage(lines, share * alphabet - share)
  assert coverage == build_vocab.LARGE_ALPHABET_COVERAGE, why
  assert build_vocab.choose_character_coverage(lines, share * alphabet)[0] == 1.0
  many = ["".join(chr(0x4E00 + i) for i in range(build_vocab.SMALL_ALPHABET_CHARS + 1))]
  assert build_vocab.choose_character_coverage(many, 10**6)[0] == 0.9995


def test_korean_under_the_wordpiece_defaults_is_told_why(tmp_path, capsys):
  corpus, _ = _corpus(tmp_path, "ko", max_lines=300)
  out = tmp_path / "vocab.txt"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "8000", "--output", str(out)]
  assert build_vocab.main(argv) == 0
  captured = capsys.readouterr()
  err = captured.err.splitlines()
  hangul = [line for line in err if "decomposes the Hangul syllables" in line]
  assert len(hangul) == 1 and "--no-strip-accents" in hangul[0], err
  assert "conjoining jamo" in hangul[0]
  short = [line for line in err if "fewer than --vocab-size" in line]
  assert len(short) == 1 and "jamo" in short[0] and "too small" not in short[0], short
  _unknown_lines(captured.out)  # WordPiece reports its [UNK] shares too
  # Kept syllables: no Hangul note.
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "8000", "--output", str(tmp_path / "k.txt")]
  assert build_vocab.main(argv + ["--no-strip-accents"]) == 0
  err = capsys.readouterr().err
  assert "Hangul" not in err and "jamo" not in err
