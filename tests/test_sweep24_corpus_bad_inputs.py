"""Newcomer sweep 24's bad corpus and path cases (bench/reports/newcomer_sweep_24.md),
one test per class: a file name that is not UTF-8, glob characters in a
data dir's path, JSON-lines and CSV exports taken for prose, and
OpenWebText's outer archive in place of its contents."""

import os

import pytest

from electra_tf import build_pretraining_dataset
from tests.helpers.bad_inputs import one_line
from tests.helpers.pretraining_data import SPECIAL
from tfrecords_tools import build_vocab
from tfrecords_tools import openwebtext


def _vocab(tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(SPECIAL + ["the", "cat", "sat", "on", "mat"]) + "\n")
  return str(vocab)


def test_a_corpus_file_name_that_is_not_utf8_is_named(tmp_path, capsys):
  """A Latin-1 file name (unzip of a Windows archive): both corpus commands
  said only "'utf-8' codec can't decode byte 0xe9 in position 1"."""
  corpus = tmp_path / "c"
  corpus.mkdir()
  with open(os.path.join(os.fsencode(corpus), b"r\xe9sum\xe9.txt"), "w") as f:
    f.write("the cat sat on the mat\n" * 5)
  expected = (
    f"--corpus-dir '{corpus}' holds a file whose name is not UTF-8 ('r\\xe9sum\\xe9.txt'): "
    f"rename it (e.g. convmv -f latin1 -t utf8 --notest {corpus}/*)"
  )
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "120", "--output", str(tmp_path / "v.txt")]
  assert build_vocab.main(argv) == 2
  assert one_line(capsys).endswith(expected)
  argv = ["--corpus-dir", str(corpus), "--vocab-file", _vocab(tmp_path)]
  argv += ["--output-dir", str(tmp_path / "out"), "--num-processes", "1"]
  assert build_pretraining_dataset.main(argv) == 2
  assert one_line(capsys).endswith(expected)
  assert not (tmp_path / "out").exists()
  # The OpenWebText builder lists its archive folder the same way.
  with pytest.raises(ValueError, match=r"holds a file whose name is not UTF-8 \('r\\xe9sum"):
    openwebtext.list_archives(str(corpus))


def test_a_data_dir_with_glob_brackets_is_refused_before_any_work(tmp_path, capsys):
  """`--data-dir 'run[1]/d'`: run_pretraining found "no TFRecords" beside its
  shards, and the exporter and fine-tuning called a whole checkpoint
  unreadable: TensorFlow globs these paths, and `[1]` matches only `1`."""
  import types

  import tensorflow as tf

  from electra_tf import run_finetuning
  from electra_tf import run_pretraining
  from electra_tf.checkpoints import reader
  from electra_tf.training import pretraining_run

  data_dir = tmp_path / "run[1]" / "d"
  (data_dir / "pretrain_tfrecords").mkdir(parents=True)
  expected = (
    f"--data-dir '{data_dir}' holds glob characters ('[1]'): TensorFlow reads checkpoint and "
    "record paths as glob patterns, where '[1]' is a character class, so the files there would "
    "not be found; rename the folder"
  )
  for main in (run_pretraining.main, run_finetuning.main):
    assert main(["--data-dir", str(data_dir), "--model-name", "m", "--hparams", "{}"]) == 2
    assert one_line(capsys).endswith(expected)
  assert not (data_dir / "models").exists()
  argv = ["--data-dir", str(tmp_path), "--model-name", "m[2]", "--hparams", "{}"]
  assert run_pretraining.main(argv) == 2
  assert "--model-name 'm[2]' holds glob characters ('[2]')" in one_line(capsys)
  # `*`, `?` and a lone bracket match themselves: such folders work as before.
  for name in ("run*", "run?", "a[b", "x]y"):
    assert pretraining_run.file_io.glob_class(str(tmp_path / name / "d")) is None

  # The checkpoint reader (exporter, converter, init_checkpoint) says why.
  prefix = tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(data_dir / "models" / "m" / "ckpt"))
  with pytest.raises(reader.UnreadableCheckpointError, match=r"glob characters \('\[1\]'\)"):
    reader.check_checkpoint(prefix)
  plain = tmp_path / "plain"
  tf.io.gfile.rename(str(data_dir / "models"), str(plain))
  assert reader.checkpoint_problem(str(plain / "m" / os.path.basename(prefix))) is None

  # A pretrain_tfrecords pattern of the user's in such a folder: the hint to escape it.
  (data_dir / "pretrain_tfrecords" / "pretrain_data.tfrecord-0-of-1").write_bytes(b"")
  config = types.SimpleNamespace(
    data_dir=str(tmp_path),
    pretrain_tfrecords=str(data_dir / "pretrain_tfrecords" / "pretrain_data.tfrecord*"),
  )
  with pytest.raises(
    ValueError, match=r"read as a glob character class: escape it \('.*run\[\[\]1\]"
  ):
    pretraining_run.find_pretraining_files(config)
  config.pretrain_tfrecords = os.path.join(
    str(tmp_path), "run[[]1]", "d", "pretrain_tfrecords", "pretrain_data.tfrecord*"
  )
  assert len(pretraining_run.find_pretraining_files(config)) == 1


PROSE = (
  "The cat sat on the mat, and then it slept.\n"
  "Name, age and place: nobody asked.\n"
  '{Braces} start this line, "quoted" words too.\n'
  "\n"
  "a,b\n"
  "Then the dog barked, twice.\n"
)


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_a_json_lines_or_csv_export_as_corpus_is_warned_about(tmp_path, capsys, kind):
  """A `datasets` JSON-lines export or a pandas CSV as the corpus: taken
  as prose by both corpus commands, keys, quotes and row numbers becoming
  tokens of every example, without a word."""
  import json

  from tfrecords_tools import text_checks

  corpus = tmp_path / "c"
  corpus.mkdir()
  sentences = [f"the cat sat on the mat {i}, then slept." for i in range(30)]
  if kind == "jsonl":
    name = "train.jsonl"
    text = "".join(json.dumps({"id": i, "text": s}) + "\n" for i, s in enumerate(sentences))
    expected = (
      f"warning: {corpus / name}: every sampled line is a JSON object (a JSON-lines export, such "
      "as Dataset.to_json?): its keys and quotes would be read as text; write its 'text' field "
      "out, one sentence a line"
    )
  else:
    name = "corpus.csv"
    text = ",id,text\n" + "".join(f'{i},doc-{i},"{s}\n{s}"\n' for i, s in enumerate(sentences))
    expected = (
      f"warning: {corpus / name}: its first line ',id,text' and every sampled row look like CSV "
      "(a spreadsheet or pandas export?): the header, row numbers and quotes would be read as "
      "text; write its 'text' column out, one sentence a line"
    )
  (corpus / name).write_text(text)
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "120", "--output", str(tmp_path / "v.txt")]
  assert build_vocab.main(argv) == 0
  assert expected in capsys.readouterr().err.splitlines()
  argv = ["--corpus-dir", str(corpus), "--vocab-file", _vocab(tmp_path), "--max-seq-length", "16"]
  argv += ["--output-dir", str(tmp_path / "out"), "--num-processes", "1", "--num-out-files", "1"]
  assert build_pretraining_dataset.main(argv) == 0
  assert expected in capsys.readouterr().err.splitlines()
  # Ordinary prose (commas, braces, quotes, a short "a,b" line) is not an export.
  assert text_checks.export_format_warning("p.txt", PROSE.encode()) is None
  (corpus / name).write_text(PROSE * 5)
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "120", "--output", str(tmp_path / "w.txt")]
  assert build_vocab.main(argv) == 0
  assert "export?" not in capsys.readouterr().err


def test_openwebtexts_outer_archive_in_place_of_its_contents_is_refused(tmp_path, capsys):
  """The downloaded openwebtext.tar.xz put in openwebtext/ (its inner .xz
  archives as members): each was read as a document of compressed bytes,
  examples of [UNK], rc 0. A binary member later in an archive is refused
  by the job that meets it."""
  import io
  import lzma
  import tarfile

  from tfrecords_tools import build_openwebtext_pretraining_dataset as owt_cli

  def tar_xz(path, members):
    with tarfile.open(path, "w:xz") as tar:
      for name, data in members.items():
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

  data_dir = tmp_path / "d"
  (data_dir / "openwebtext").mkdir(parents=True)
  _vocab(data_dir)
  inner = tmp_path / "urlsf_subset00-1_data.xz"
  tar_xz(inner, {"0001-doc.txt": b"the cat sat on the mat\n" * 20})
  outer = data_dir / "openwebtext" / "openwebtext.tar.xz"
  tar_xz(outer, {"openwebtext/urlsf_subset00-1_data.xz": inner.read_bytes()})
  argv = ["--data-dir", str(data_dir), "--max-seq-length", "16", "--num-out-files", "2"]
  assert owt_cli.main(argv) == 2
  assert one_line(capsys).endswith(
    f"error: OpenWebText archive '{outer}': member 'openwebtext/urlsf_subset00-1_data.xz' is an "
    f"archive (xz), not a document: extract 'openwebtext.tar.xz' so that "
    f"'{data_dir / 'openwebtext'}' holds the archives of .txt documents it contains "
    "(OpenWebText's urlsf_subset*.xz files)"
  )
  assert not (data_dir / "pretrain_tfrecords").exists()
  # A member of random bytes after a good one: the job refuses it, no shard is kept.
  outer.unlink()
  noise = lzma.compress(bytes(range(256)) * 40)[:8000]  # compressed: not text
  tar_xz(inner, {"0001-doc.txt": b"the cat sat\n" * 20, "0002-doc.txt": b"x" + noise})
  (data_dir / "openwebtext" / inner.name).write_bytes(inner.read_bytes())
  with pytest.raises(ValueError, match=r"member '0002-doc.txt' is not text \(\d+% of its bytes"):
    openwebtext.build_openwebtext(
      openwebtext.OpenWebTextOptions(data_dir=str(data_dir), num_out_files=2, seed=0)
    )
  assert not os.listdir(data_dir / "pretrain_tfrecords")
