"""Reading pre-training TFRecord shards back in tests."""

import os
import struct

import tensorflow as tf


def iter_tfrecords(path):
  """Record payloads of an uncompressed TFRecord file (framing: u64 length,
  u32 crc, data, u32 crc); much faster than a tf.data pipeline per file."""
  with open(path, "rb") as f:
    data = f.read()
  pos = 0
  while pos < len(data):
    length = struct.unpack("<Q", data[pos : pos + 8])[0]
    yield data[pos + 12 : pos + 12 + length]
    pos += 16 + length


def read_shards(output_dir, num_out_files):
  """{shard index: [ {feature: list} ]} of every shard, parsed."""
  shards = {}
  for i in range(num_out_files):
    path = os.path.join(output_dir, f"pretrain_data.tfrecord-{i}-of-{num_out_files}")
    assert os.path.exists(path), path
    records = []
    for raw in iter_tfrecords(path):
      example = tf.train.Example.FromString(raw)
      records.append({k: list(v.int64_list.value) for k, v in example.features.feature.items()})
    shards[i] = records
  return shards
