"""Start-up check of the pre-training TFRecords: every record's checksums.

    python -m bench.bench_record_check [--quick] [--json out.json]

Writes a 1 GB corpus of max_seq_length=128 pre-training records (16 shards,
in a temporary directory; 64 MB with --quick) and times:

- `record_check`: `electra_tf.data.record_check.check_tfrecord_files`, the
  check `run_pretraining` runs before training (TensorFlow's C++ reader
  verifying both crc32c of every record, in one tf.data pass);
- `validate_pretraining_files`: that check plus parsing the first 100
  records of each file, the whole start-up validation;
- `python_crc32c`: the same checksums in pure Python (no crc32c package is a
  dependency), timed on a 4 MB sample;
- `plain_read`: reading the bytes with Python, no checks: the ceiling.

The files were just written, so they are read from the page cache: the
figures are CPU cost, not disk speed.
"""

import os
import shutil
import struct
import tempfile
import time

import numpy as np

from bench import common

GIB = 1 << 30
NUM_SHARDS = 16
MAX_SEQ_LENGTH = 128


def _crc32c_table():
  poly = 0x82F63B78
  table = []
  for i in range(256):
    crc = i
    for _ in range(8):
      crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    table.append(crc)
  return table


_TABLE = _crc32c_table()


def _python_crc32c(data):
  crc = 0xFFFFFFFF
  for byte in data:
    crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
  return crc ^ 0xFFFFFFFF


def _masked(crc):
  return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _python_check(path, max_bytes):
  """Pure-Python framing and checksum check of the first `max_bytes`."""
  checked = 0
  with open(path, "rb") as f:
    while checked < max_bytes:
      header = f.read(12)
      if not header:
        break
      (length,) = struct.unpack("<Q", header[:8])
      assert _masked(_python_crc32c(header[:8])) == struct.unpack("<I", header[8:])[0]
      data = f.read(length)
      assert _masked(_python_crc32c(data)) == struct.unpack("<I", f.read(4))[0]
      checked += 16 + length
  return checked


def _write_corpus(directory, total_bytes):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from tfrecords_tools.example_builder import serialize_examples  # pylint: disable=g-import-not-at-top

  rng = np.random.default_rng(0)
  ids = rng.integers(5, 30522, size=(512, MAX_SEQ_LENGTH))
  records = list(serialize_examples(ids, np.ones_like(ids), np.zeros_like(ids)))
  per_shard = total_bytes // NUM_SHARDS
  paths = []
  for shard in range(NUM_SHARDS):
    path = os.path.join(directory, f"pretrain_data.tfrecord-{shard}-of-{NUM_SHARDS}")
    written = 0
    with tf.io.TFRecordWriter(path) as writer:
      while written < per_shard:
        record = records[written % len(records)]
        writer.write(record)
        written += len(record) + 16
    paths.append(path)
  return paths


def run(quick=False):
  from electra_tf.data import pretraining_dataset  # pylint: disable=g-import-not-at-top
  from electra_tf.data import record_check  # pylint: disable=g-import-not-at-top

  directory = tempfile.mkdtemp(prefix="bench_record_check_")
  try:
    paths = _write_corpus(directory, (64 << 20) if quick else GIB)
    size_mb = sum(os.path.getsize(p) for p in paths) / 1e6
    rows = []

    start = time.perf_counter()
    for path in paths:
      with open(path, "rb") as f:
        while f.read(16 << 20):
          pass
    seconds = time.perf_counter() - start
    rows.append({"name": "plain_read", "mb": round(size_mb), "mb_per_s": round(size_mb / seconds)})

    record_check.check_tfrecord_files(paths[:1])  # tracing and start-up
    start = time.perf_counter()
    counts = record_check.check_tfrecord_files(paths)
    seconds = time.perf_counter() - start
    rows.append(
      {
        "name": "record_check",
        "mb": round(size_mb),
        "records": sum(counts),
        "seconds": round(seconds, 2),
        "mb_per_s": round(size_mb / seconds),
      }
    )

    start = time.perf_counter()
    pretraining_dataset.validate_pretraining_files(paths, MAX_SEQ_LENGTH, vocab_size=30522)
    seconds = time.perf_counter() - start
    rows.append(
      {
        "name": "validate_pretraining_files",
        "mb": round(size_mb),
        "seconds": round(seconds, 2),
        "mb_per_s": round(size_mb / seconds),
      }
    )

    sample = 4 << 20
    start = time.perf_counter()
    checked = _python_check(paths[0], sample)
    seconds = time.perf_counter() - start
    rows.append(
      {
        "name": "python_crc32c",
        "mb": round(checked / 1e6, 1),
        "seconds": round(seconds, 2),
        "mb_per_s": round(checked / 1e6 / seconds, 2),
      }
    )
    return rows
  finally:
    shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
  common.main(run, "TFRecord checksum check before pre-training (MB/s)")
