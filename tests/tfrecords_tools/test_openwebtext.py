"""OpenWebText builder on small .xz archives made by the test."""

import io
import os
import random
import tarfile

import pytest

from electra_tf.text import wordpiece as tokenization
from tests.helpers import reference_hard_text
from tests.helpers.records import read_shards
from tests.helpers.reference_builder import ReferenceWriter
from tfrecords_tools import build_openwebtext_pretraining_dataset as owt_cli
from tfrecords_tools import openwebtext


def _make_data_dir(root, n_archives=3, docs_per_archive=4, seed=2):
  rng = random.Random(seed)
  words = "open web text reddit link page news story the a of to and in".split()
  hard = reference_hard_text.hard_lines(60)
  owt = root / "openwebtext"
  owt.mkdir(parents=True)
  all_lines = []
  for a in range(n_archives):
    with tarfile.open(owt / f"urlsf_subset00-{a}_data.xz", "w:xz") as tar:
      for d in range(docs_per_archive):
        lines = []
        for _ in range(rng.randint(3, 30)):
          r = rng.random()
          lines.append(
            ""
            if r < 0.2
            else rng.choice(hard)
            if r < 0.3
            else " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
          )
        all_lines += lines
        data = "\n".join(lines).encode("utf-8")
        info = tarfile.TarInfo(f"{a:04d}{d:03d}-doc.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
  tokens = reference_hard_text.make_vocab(all_lines, [tokenization.BasicTokenizer()])
  (root / "vocab.txt").write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  return root


def _reference(data_dir, max_length, num_jobs, seed, num_out_files):
  expected = {}
  for job in range(num_jobs):
    random.seed(seed)
    writer = ReferenceWriter(
      str(data_dir / "vocab.txt"),
      max_length,
      num_jobs,
      job,
      num_out_files,
      blanks_separate_docs=False,
    )
    names = sorted(os.listdir(data_dir / "openwebtext"))
    names = [n for i, n in enumerate(names) if i % num_jobs == job]
    random.shuffle(names)
    for name in names:
      with tarfile.open(data_dir / "openwebtext" / name) as tar:
        contents = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
      members = sorted(contents)
      random.shuffle(members)
      for member in members:
        # The original reads each extracted member with a GFile, whose line reader drops "\r".
        text = contents[member].decode("utf-8", "ignore")
        writer.write_lines(text.replace("\r", "").split("\n"))
    expected.update(writer.out)
  return expected


def test_openwebtext_matches_reference_and_leaves_no_temp_files(tmp_path):
  data_dir = _make_data_dir(tmp_path / "data")
  code = owt_cli.main(
    ["--data-dir", str(data_dir), "--max-seq-length", "24", "--seed", "4", "--num-out-files", "5"]
  )
  assert code == 0
  got = read_shards(data_dir / "pretrain_tfrecords", 5)
  expected = _reference(data_dir, 24, 1, 4, 5)
  assert got == expected
  assert sum(len(v) for v in expected.values()) > 20
  assert sorted(os.listdir(data_dir)) == ["openwebtext", "pretrain_tfrecords", "vocab.txt"]


def test_openwebtext_bad_input(tmp_path):
  data_dir = _make_data_dir(tmp_path / "data", n_archives=1)
  (data_dir / "openwebtext" / "zz_broken.xz").write_bytes(b"not an archive")
  with pytest.raises(ValueError, match="zz_broken.xz"):
    openwebtext.build_openwebtext(
      openwebtext.OpenWebTextOptions(data_dir=str(data_dir), num_out_files=2, seed=0)
    )
  assert not [n for n in os.listdir(data_dir / "pretrain_tfrecords")]
  assert owt_cli.main(["--data-dir", str(tmp_path / "missing")]) == 2
  (tmp_path / "novocab").mkdir()
  with pytest.raises(ValueError, match="holds no vocab.txt"):
    openwebtext.build_openwebtext(
      openwebtext.OpenWebTextOptions(data_dir=str(tmp_path / "novocab"))
    )


@pytest.mark.slow
def test_openwebtext_on_beam_matches_reference(tmp_path):
  pytest.importorskip("apache_beam")
  data_dir = _make_data_dir(tmp_path / "data", n_archives=4)
  flags = ["--data-dir", str(data_dir), "--max-seq-length", "24", "--seed", "4"]
  flags += ["--num-processes", "2", "--num-out-files", "4", "--runner", "DirectRunner"]
  assert owt_cli.main(flags) == 0
  got = read_shards(data_dir / "pretrain_tfrecords", 4)
  expected = _reference(data_dir, 24, 2, 4, 4)
  assert got == expected
  assert all(expected[i] for i in range(4))
  assert len(os.listdir(data_dir / "pretrain_tfrecords")) == 4 + 1  # and records_info.json
