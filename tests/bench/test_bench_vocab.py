"""bench.bench_vocab's corpus handling: held-out lines never reach training
(not even their repeats), and the repeated corpus adds up to its size."""

import os

from bench import bench_vocab


def test_held_out_lines_and_their_repeats_stay_out_of_training(tmp_path):
  source = tmp_path / "source"
  source.mkdir()
  lines = [f"line {i} of the corpus" for i in range(3000)]
  for f in range(3):  # every line three times, in three files
    (source / f"part-{f:05d}.txt").write_text("\n".join(lines) + "\n")
  train = tmp_path / "train"
  total, held_out = bench_vocab.split_corpus(str(source), str(train), str(tmp_path / "held.txt"))
  assert 0 < len(held_out) < 60 and len(set(held_out)) == len(held_out)
  trained = set()
  for name in os.listdir(train):
    trained |= set((train / name).read_text().splitlines())
  assert not trained & set(held_out)
  assert trained | set(held_out) == set(lines)
  assert total == sum((train / n).stat().st_size for n in os.listdir(train))
  assert not (train / ".complete").exists()  # build_vocab would read it as text
  # Cached: the second call reads what the first wrote.
  assert bench_vocab.split_corpus(str(source), str(train), str(tmp_path / "held.txt")) == (
    total,
    held_out,
  )


def test_the_linked_corpus_repeats_files_up_to_its_size(tmp_path):
  train = tmp_path / "train"
  train.mkdir()
  for f in range(2):
    (train / f"{f}.txt").write_bytes(b"x" * 300_000)
  total = bench_vocab.linked_corpus(str(train), str(tmp_path / "big"), 1)
  names = os.listdir(tmp_path / "big")
  assert total == 1_200_000 and len(names) == 4
  assert all(os.path.islink(tmp_path / "big" / n) for n in names)
