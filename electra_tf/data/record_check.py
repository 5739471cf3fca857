"""Whole-file TFRecord integrity check: every record's framing and checksums.

A record is `uint64 length | uint32 masked crc32c(length) | data | uint32
masked crc32c(data)`. TensorFlow's own reader verifies both checksums in C++
(a Python crc32c runs at a few MB/s), but ends quietly at a file cut inside a
header, so the framed sizes of the records read are also added up against the
file size. A failure raises `CorruptRecordError` naming the file, the record
index and its byte offset.
"""

import re
import struct

import tensorflow as tf

# Bytes of framing around each record's data: length, its crc, the data's crc.
FRAMING_BYTES = 8 + 4 + 4
_READ_BUFFER_BYTES = 16 << 20
_BATCH = 4096
GZIP_MAGIC = b"\x1f\x8b"
_DATA_LOSS_OFFSET = re.compile(r"(corrupted|truncated) record at (\d+)")


class CorruptRecordError(ValueError):
  """A TFRecord file that fails the check: `path`, the bad record's 0-based
  `index` and byte `offset`."""

  def __init__(self, path, index, offset, problem):
    self.path, self.index, self.offset = path, index, offset
    super().__init__(
      f"TFRecord file {path!r}: record {index} at byte {offset} {problem}; "
      f"the {index} record(s) before it are intact. Rebuild the file or drop it "
      "from the file pattern."
    )


def record_offsets(path, stop_offset=None):
  """Byte offsets of the record headers of `path`, read from the framing
  alone (no checksums), up to `stop_offset` (exclusive) or the end.

  Args:
    path: a TFRecord file (local or `scheme://`).
    stop_offset: stop before the first record starting at or after this byte.

  Returns:
    A list of ints, the offset of each record.

  Example:
  >>> import tensorflow as tf
  >>> with tf.io.TFRecordWriter("offsets.tfrecord") as w:
  ...   w.write(b"ab"); w.write(b"cde")
  >>> record_offsets("offsets.tfrecord")
  [0, 18]
  """
  size = tf.io.gfile.stat(path).length
  offsets = []
  offset = 0
  with tf.io.gfile.GFile(path, "rb") as f:
    while offset + 8 <= size and (stop_offset is None or offset < stop_offset):
      f.seek(offset)
      (length,) = struct.unpack("<Q", f.read(8))
      offsets.append(offset)
      offset += FRAMING_BYTES + length
  return offsets


def _locate(path, offset):
  """(index, start byte) of the record holding byte `offset`: TensorFlow's
  reader reports a record's header or data offset."""
  offsets = record_offsets(path, stop_offset=offset + 1)
  return (len(offsets) - 1, offsets[-1]) if offsets else (0, 0)


def _framed_size_error(path, count, data_bytes):
  """The error for a file whose records do not add up to its size, or None."""
  size = tf.io.gfile.stat(path).length
  end = count * FRAMING_BYTES + data_bytes
  if end == size:
    return None
  if _is_gzip(path):
    return CompressedRecordError(path)
  # The reader stops quietly when fewer than a header's bytes are left.
  return CorruptRecordError(
    path, count, end, f"is cut short inside its header (the file ends at byte {size})"
  )


class CompressedRecordError(CorruptRecordError):
  """A GZIP-compressed TFRecord file where uncompressed ones are expected."""

  def __init__(self, path):
    self.path, self.index, self.offset = path, 0, 0
    ValueError.__init__(
      self,
      f"TFRecord file {path!r} is GZIP-compressed; expected uncompressed TFRecords (as the "
      "builders write them): decompress it first (gunzip, or tf.data with "
      "compression_type='GZIP')",
    )


def _is_gzip(path):
  with tf.io.gfile.GFile(path, "rb") as f:
    return f.read(2) == GZIP_MAGIC


def _data_loss_error(path, error):
  """`CorruptRecordError` for a `DataLossError` raised while reading `path`."""
  if _is_gzip(path):
    return CompressedRecordError(path)
  match = _DATA_LOSS_OFFSET.search(error.message)
  if match is None:
    return CorruptRecordError(path, 0, 0, f"is unreadable ({error.message.strip()})")
  kind, offset = match.group(1), int(match.group(2))
  size = tf.io.gfile.stat(path).length
  problem = (
    "fails its checksum (corrupted)"
    if kind == "corrupted"
    else f"is cut short (the file ends at byte {size})"
  )
  return CorruptRecordError(path, *_locate(path, offset), problem)


def _file_stats(paths):
  """One tf.data pass over `paths` in order: yields (file index, records,
  data bytes) per batch of records; files without records yield nothing."""
  paths = list(paths)

  def per_file(index, path):
    records = tf.data.TFRecordDataset(path, buffer_size=_READ_BUFFER_BYTES).batch(_BATCH)
    return records.map(
      lambda batch: (
        index,
        tf.size(batch, out_type=tf.int64),
        tf.reduce_sum(tf.strings.length(batch, unit="BYTE")),
      )
    )

  indices = tf.range(len(paths), dtype=tf.int64)
  files = tf.data.Dataset.from_tensor_slices((indices, tf.constant(paths, tf.string)))
  return files.flat_map(per_file).prefetch(2)


def check_tfrecord_file(path):
  """Verifies every record of one TFRecord file; returns its record count.

  Args:
    path: a TFRecord file (uncompressed; local or `scheme://`).

  Returns:
    The number of records.

  Raises:
    CorruptRecordError: a checksum mismatch, or a record cut short (in its
      header, data or trailing checksum).

  Example:
  >>> import tensorflow as tf
  >>> with tf.io.TFRecordWriter("ok.tfrecord") as w:
  ...   w.write(b"payload")
  >>> check_tfrecord_file("ok.tfrecord")
  1
  """
  return check_tfrecord_files([path])[0]


def check_tfrecord_files(paths, log=None):
  """Verifies every record of every file of `paths` in one tf.data pass.

  Args:
    paths: TFRecord files (uncompressed; local or `scheme://`).
    log: optional callable taking one summary line.

  Returns:
    A list of record counts, one per path.

  Raises:
    CorruptRecordError: for the first file with a checksum mismatch or a
      record cut short.

  Example:
  >>> import tensorflow as tf
  >>> with tf.io.TFRecordWriter("two.tfrecord") as w:
  ...   w.write(b"a"); w.write(b"b")
  >>> check_tfrecord_files(["two.tfrecord"])
  [2]
  """
  paths = list(paths)
  counts = [0] * len(paths)
  data_bytes = [0] * len(paths)
  last_index = 0
  try:
    for index, n, num_bytes in _file_stats(paths).as_numpy_iterator():
      counts[index] += int(n)
      data_bytes[index] += int(num_bytes)
      last_index = int(index)
  except tf.errors.DataLossError as e:
    # The bad file is the last one that yielded records, or one after it.
    for index in range(last_index, len(paths)):
      try:
        for _ in _file_stats([paths[index]]):
          pass
      except tf.errors.DataLossError as file_error:
        raise _data_loss_error(paths[index], file_error) from None
    raise CorruptRecordError(paths[last_index], 0, 0, f"is unreadable ({e.message})") from None
  for path, count, num_bytes in zip(paths, counts, data_bytes):
    error = _framed_size_error(path, count, num_bytes)
    if error is not None:
      raise error
  if log is not None:
    log(f"checked {sum(counts)} records in {len(paths)} TFRecord file(s)")
  return counts


def find_corrupt_file(paths):
  """The first `CorruptRecordError` among `paths`, or None if all pass: which
  file a `DataLossError` raised mid-training came from."""
  for path in paths:
    try:
      check_tfrecord_file(path)
    except CorruptRecordError as e:
      return e
  return None
