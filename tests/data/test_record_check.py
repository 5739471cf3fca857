"""Whole-file TFRecord check: every record's checksums and framing."""

import pytest
import tensorflow as tf

from electra_tf.data import record_check

RECORD_DATA = 100  # bytes of data per record in these files
RECORD = RECORD_DATA + record_check.FRAMING_BYTES


@pytest.fixture
def good(tmp_path):
  path = tmp_path / "good.tfrecord"
  with tf.io.TFRecordWriter(str(path)) as writer:
    for i in range(250):
      writer.write(bytes([i % 256]) * RECORD_DATA)
  return path


def _variant(tmp_path, good, name, data):
  path = tmp_path / name
  path.write_bytes(data)
  return str(path)


def test_intact_file_counts_records(good):
  assert record_check.check_tfrecord_file(str(good)) == 250
  assert record_check.record_offsets(str(good))[:3] == [0, RECORD, 2 * RECORD]


def test_empty_file_has_no_records(tmp_path):
  (tmp_path / "empty.tfrecord").write_bytes(b"")
  assert record_check.check_tfrecord_files([str(tmp_path / "empty.tfrecord")]) == [0]


@pytest.mark.parametrize(
  "cut,problem",
  [
    (200 * RECORD + 50, "is cut short"),  # inside the data
    (200 * RECORD + 6, "is cut short inside its header"),  # inside the length
    (200 * RECORD + 12, "is cut short"),  # after the header
    (201 * RECORD - 2, "is cut short"),  # inside the data's checksum
  ],
)
def test_truncated_past_the_first_hundred_records(tmp_path, good, cut, problem):
  path = _variant(tmp_path, good, "cut.tfrecord", good.read_bytes()[:cut])
  with pytest.raises(record_check.CorruptRecordError, match=problem) as info:
    record_check.check_tfrecord_file(path)
  assert (info.value.index, info.value.offset) == (200, 200 * RECORD)
  assert "cut.tfrecord" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("byte_in_record", [2, 9, 40, RECORD - 1])
def test_flipped_bit_anywhere_in_a_record(tmp_path, good, byte_in_record):
  data = bytearray(good.read_bytes())
  data[173 * RECORD + byte_in_record] ^= 0x10
  path = _variant(tmp_path, good, "flip.tfrecord", bytes(data))
  with pytest.raises(record_check.CorruptRecordError, match="fails its checksum") as info:
    record_check.check_tfrecord_file(path)
  assert (info.value.index, info.value.offset) == (173, 173 * RECORD)


def test_find_corrupt_file_names_the_bad_one(tmp_path, good):
  bad = _variant(tmp_path, good, "bad.tfrecord", good.read_bytes()[: 3 * RECORD + 20])
  assert record_check.find_corrupt_file([str(good)]) is None
  error = record_check.find_corrupt_file([str(good), bad])
  assert error.path == bad and error.index == 3


@pytest.mark.parametrize("records", [150, 1])
def test_gzip_compressed_records_are_named_as_such(tmp_path, records):
  path = tmp_path / "pretrain_data.tfrecord-0-of-1"
  with tf.io.TFRecordWriter(str(path), options="GZIP") as writer:
    for i in range(records):
      writer.write(f"record {i}".encode())
  with pytest.raises(record_check.CompressedRecordError, match="is GZIP-compressed; expected"):
    record_check.check_tfrecord_files([str(path)])
