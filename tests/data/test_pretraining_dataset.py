"""The pre-training input pipeline and its start-up validation."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data import pretraining_dataset as pretrain_data
from tfrecords_tools.example_builder import serialize_examples


def _write(path, rows, length=8, extra=None):
  """Writes `rows` examples whose input_ids are row-index based."""
  with tf.io.TFRecordWriter(str(path)) as writer:
    for i in range(rows):
      feats = {
        "input_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[i + 1] * length)),
        "input_mask": tf.train.Feature(int64_list=tf.train.Int64List(value=[1] * length)),
        "segment_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[0] * length)),
      }
      feats.update(extra or {})
      writer.write(tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString())


@pytest.fixture
def shards(tmp_path):
  for i in range(3):
    _write(tmp_path / f"pretrain_data.tfrecord-{i}-of-4", 10)
  _write(tmp_path / "pretrain_data.tfrecord-3-of-4", 0)  # empty shard, as the builder makes
  return str(tmp_path / "pretrain_data.tfrecord*")


def test_dataset_shapes_dtypes_and_drop_remainder(shards):
  ds = pretrain_data.get_dataset(shards, 8, batch_size=7, is_training=True, seed=1)
  assert ds.element_spec["input_ids"].shape.as_list() == [7, 8]
  seen = []
  for batch in ds.take(20):
    assert set(batch) == {"input_ids", "input_mask", "segment_ids"}
    for t in batch.values():
      assert t.dtype == tf.int32 and t.shape == (7, 8)
    seen.extend(batch["input_ids"][:, 0].numpy().tolist())
  # Infinite (repeat), and records from every file are mixed in.
  assert len(seen) == 140 and set(seen) == set(range(1, 11))


def test_eval_also_repeats_and_drops_remainder(shards):
  ds = pretrain_data.get_dataset(shards.split(","), 8, batch_size=4, is_training=False, seed=0)
  batches = list(ds.take(10))
  assert all(b["input_ids"].shape == (4, 8) for b in batches)


def test_comma_separated_patterns_and_input_context(tmp_path, shards):
  other = tmp_path / "more"
  other.mkdir()
  _write(other / "x.tfrecord", 3)
  files = pretrain_data.find_files(shards + "," + str(other / "*.tfrecord"))
  assert len(files) == 5
  # `dir/*` matches the builders' records info too; it is no record file.
  (other / "records_info.json").write_text("{}")
  assert pretrain_data.find_files(str(other / "*")) == [str(other / "x.tfrecord")]
  context = tf.distribute.InputContext(
    num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=2
  )
  ds = pretrain_data.get_dataset(
    shards, 8, batch_size=8, is_training=True, input_context=context, seed=3
  )
  batch = next(iter(ds))
  assert batch["input_ids"].shape == (4, 8)  # per-replica batch
  context = tf.distribute.InputContext(num_input_pipelines=9, input_pipeline_id=0)
  with pytest.raises(ValueError, match="cannot be sharded"):
    pretrain_data.get_dataset(shards, 8, 8, True, input_context=context)


def test_records_from_the_builder_serialiser_decode(tmp_path):
  ids = np.arange(24).reshape(3, 8) * 1000
  mask = np.ones_like(ids)
  seg = np.zeros_like(ids)
  with tf.io.TFRecordWriter(str(tmp_path / "a.tfrecord")) as w:
    for record in serialize_examples(ids, mask, seg):
      w.write(record)
  ds = pretrain_data.get_dataset(str(tmp_path / "a.tfrecord"), 8, 3, False, seed=0)
  got = next(iter(ds))["input_ids"].numpy()
  # The file repeats, so a batch may hold a record twice; each must be intact.
  assert all(row in ids.tolist() for row in got.tolist())
  assert pretrain_data.validate_pretraining_files(str(tmp_path / "a.tfrecord"), 8, 24000)


def test_validation_errors_name_the_file(tmp_path, shards):
  checked = pretrain_data.validate_pretraining_files(shards, 8, vocab_size=11)
  assert len(checked.files) == 4 and checked.record_counts == [10, 10, 10, 0]
  with pytest.raises(ValueError, match="no pre-training files match"):
    pretrain_data.validate_pretraining_files(str(tmp_path / "nothing*"), 8)
  with pytest.raises(
    ValueError, match=r"pretrain_data.tfrecord-0-of-4.*length 8, expected max_seq_length=16"
  ):
    pretrain_data.validate_pretraining_files(shards, 16)
  with pytest.raises(ValueError, match="outside the vocab"):
    pretrain_data.validate_pretraining_files(shards, 8, vocab_size=5)
  with pytest.raises(ValueError, match="no pre-training files match"):
    pretrain_data.get_dataset(str(tmp_path / "nothing*"), 8, 2, True)
  # The records' folder instead of a pattern: named, not a failed read of a directory.
  folder = str(tmp_path)
  with pytest.raises(ValueError, match=f"matches the directory '{folder}'; give a pattern"):
    pretrain_data.validate_pretraining_files(folder, 8)

  missing = tmp_path / "missing.tfrecord"
  with tf.io.TFRecordWriter(str(missing)) as w:
    w.write(
      tf.train.Example(
        features=tf.train.Features(
          feature={"input_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[1] * 8))}
        )
      ).SerializeToString()
    )
  with pytest.raises(ValueError, match="missing.tfrecord.*missing feature 'input_mask'"):
    pretrain_data.validate_pretraining_files(str(missing), 8)

  floats = tmp_path / "floats.tfrecord"
  _write(floats, 1)
  with tf.io.TFRecordWriter(str(floats)) as w:
    w.write(
      tf.train.Example(
        features=tf.train.Features(
          feature={
            name: tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * 8))
            for name in pretrain_data.FEATURE_NAMES
          }
        )
      ).SerializeToString()
    )
  with pytest.raises(ValueError, match="floats.tfrecord.*expected an int64_list"):
    pretrain_data.validate_pretraining_files(str(floats), 8)

  good = tmp_path / "good.tfrecord"
  _write(good, 3)
  corrupt = tmp_path / "corrupt.tfrecord"
  corrupt.write_bytes(good.read_bytes()[:-7])
  with pytest.raises(ValueError, match=r"corrupt.tfrecord': record 2 at byte \d+ is cut short"):
    pretrain_data.validate_pretraining_files(str(corrupt), 8)
  garbage = tmp_path / "garbage.tfrecord"
  garbage.write_bytes(b"this is not a tfrecord file at all")
  with pytest.raises(ValueError, match="garbage.tfrecord"):
    pretrain_data.validate_pretraining_files(str(garbage), 8)

  empty = tmp_path / "empty"
  empty.mkdir()
  _write(empty / "e.tfrecord", 0)
  with pytest.raises(ValueError, match="hold no records"):
    pretrain_data.validate_pretraining_files(str(empty / "*"), 8)


def test_shared_fixture_records_validate(original_fixtures):
  pattern = str(original_fixtures / "pretrain_tfrecords" / "pretrain_data.tfrecord*")
  checked = pretrain_data.validate_pretraining_files(pattern, 128, vocab_size=7814)
  assert len(checked.files) == 1000 and sum(checked.record_counts) > 0
  with pytest.raises(ValueError, match="expected max_seq_length=64"):
    pretrain_data.validate_pretraining_files(pattern, 64)


def _first_ids(dataset, num_batches):
  return [b["input_ids"][:, 0].numpy().tolist() for b in dataset.take(num_batches)]


def test_seeded_stream_resumes_at_any_batch_across_epochs(tmp_path, shards):
  # 30 records in 4 files (one empty), batches of 7: epochs end mid-batch.
  full = _first_ids(pretrain_data.get_dataset(shards, 8, 7, True, seed=3), 16)
  assert sorted(sum(full[:4], [])[:30]) != sum(full[:4], [])[:30]  # shuffled
  assert sorted(sum(full, [])[:30]) == sorted([i + 1 for i in range(10)] * 3)  # one epoch
  counts = pretrain_data.validate_pretraining_files(shards, 8).record_counts
  for start in (1, 4, 5, 9):
    resumed = pretrain_data.get_dataset(
      shards, 8, 7, True, seed=3, start_batch=start, record_counts=counts
    )
    assert _first_ids(resumed, 16 - start) == full[start:], start
  assert _first_ids(pretrain_data.get_dataset(shards, 8, 7, True, seed=4), 16) != full
