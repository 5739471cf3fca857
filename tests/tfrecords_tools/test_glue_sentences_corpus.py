"""The task-adaptive corpus from GLUE training files: training sentences
only, labels dropped, de-duplicated, shuffled with a fixed seed, every file
filled, bad input named."""

import json
import os

import pytest

from tfrecords_tools import glue_sentences_corpus


def _write_glue(root):
  (root / "SST-2").mkdir(parents=True)
  (root / "CoLA").mkdir()
  (root / "SST-2" / "train.tsv").write_text(
    "sentence\tlabel\na warm film \t1\ndull\t0\na warm film\t1\nfunny and  smart\t1\n"
  )
  (root / "SST-2" / "dev.tsv").write_text("sentence\tlabel\na dev sentence\t1\n")
  (root / "CoLA" / "train.tsv").write_text("src\t1\t\tThe cat sat.\nsrc\t0\t*\tCat the sat.\n")


def test_training_sentences_once_each_in_every_file(tmp_path):
  _write_glue(tmp_path / "glue")
  manifest = glue_sentences_corpus.build(
    str(tmp_path / "glue"), str(tmp_path / "out"), num_files=2, sentences_per_document=2
  )
  texts = [(tmp_path / "out" / "corpus" / f["path"]).read_text() for f in manifest["files"]]
  lines = [line for text in texts for line in text.splitlines() if line]
  # whitespace normalised, the duplicate dropped, no label, no dev sentence
  assert sorted(lines) == ["Cat the sat.", "The cat sat.", "a warm film", "dull", "funny and smart"]
  assert all(texts) and all(text.endswith("\n\n") for text in texts)  # documents end blank
  assert manifest["sentences_read"] == 6 and manifest["sentences_unique"] == 5
  assert (
    manifest["inputs"]["SST-2"]["rows"] == 4 and len(manifest["inputs"]["CoLA"]["sha256"]) == 64
  )
  written = json.loads((tmp_path / "out" / "manifest.json").read_text())
  assert written == manifest
  # The same inputs give the same files (the shuffle is seeded).
  again = glue_sentences_corpus.build(
    str(tmp_path / "glue"), str(tmp_path / "again"), num_files=2, sentences_per_document=2
  )
  assert [f["sha256"] for f in again["files"]] == [f["sha256"] for f in manifest["files"]]


def test_bad_input_is_one_line_naming_the_file(tmp_path, capsys):
  _write_glue(tmp_path / "glue")
  (tmp_path / "glue" / "CoLA" / "train.tsv").write_text("src\t1\n")
  with pytest.raises(ValueError, match=r"CoLA/train.tsv:1: 2 columns; expected at least 4"):
    glue_sentences_corpus.build(str(tmp_path / "glue"), str(tmp_path / "out"))
  argv = ["--glue-dir", str(tmp_path / "none"), "--output-dir", str(tmp_path / "out")]
  assert glue_sentences_corpus.main(argv) == 2
  err = capsys.readouterr().err
  assert err.count("\n") == 1 and "SST-2/train.tsv: no such file" in err


def test_sentences_only_drops_the_phrases_inside_longer_rows(tmp_path):
  _write_glue(tmp_path / "glue")
  with open(tmp_path / "glue" / "SST-2" / "train.tsv", "a") as f:
    # "warm film" is inside "a warm film"; "film a" and "smart" + "er" are not runs of its words.
    f.write("warm film\t1\nfilm a\t0\nsmarter\t1\nfunny\t1\n")
  manifest = glue_sentences_corpus.build(
    str(tmp_path / "glue"), str(tmp_path / "out"), num_files=1, sentences_only=True
  )
  text = (tmp_path / "out" / "corpus" / manifest["files"][0]["path"]).read_text()
  assert sorted(line for line in text.splitlines() if line) == [
    "Cat the sat.", "The cat sat.", "a warm film", "dull", "film a", "funny and smart", "smarter",
  ]  # fmt: skip
  assert manifest["sentences_only"] is True and manifest["sentences_unique"] == 7


def test_ctrl_c_while_writing_removes_the_files_written(tmp_path, monkeypatch, capsys):
  """Part of a corpus (and no manifest) is not the corpus: Ctrl-C after the
  first file removes it and says so in one line, exit 130."""
  _write_glue(tmp_path / "glue")
  real_write = glue_sentences_corpus.write_atomic
  calls = []

  def interrupted_on_the_second_file(path, text):
    calls.append(path)
    if len(calls) == 2:
      raise KeyboardInterrupt
    real_write(path, text)

  monkeypatch.setattr(glue_sentences_corpus, "write_atomic", interrupted_on_the_second_file)
  argv = ["--glue-dir", str(tmp_path / "glue"), "--output-dir", str(tmp_path / "out")]
  assert glue_sentences_corpus.main(argv + ["--num-files", "3"]) == 130
  assert capsys.readouterr().err == (
    "glue_sentences_corpus: interrupted (Ctrl-C); removed the 1 corpus file(s) it had written\n"
  )
  assert os.listdir(tmp_path / "out") == []  # no corpus/, no staging folder
  assert not (tmp_path / "out" / "manifest.json").exists()
