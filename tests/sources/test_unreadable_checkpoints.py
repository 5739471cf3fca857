"""A checkpoint that cannot be read is named in one line with what is wrong
(`electra_tf.checkpoints.reader`), and `formats.detect`, the door of the
converter and the exporter, refuses it: a truncated `.data-*` file, a
missing `.index`, a `checkpoint` state file that is not one. Real
checkpoints written by `tf.train.CheckpointManager`, damaged on disk."""

import os

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.checkpoints import reader
from electra_tf.sources import formats


def _write_checkpoints(directory, steps=(3, 6)):
  """Checkpoints of `steps` in `directory` (a 4,000-float variable and a step)."""
  variable = tf.Variable(np.arange(4000, dtype=np.float32))
  step = tf.Variable(0, dtype=tf.int64)
  manager = tf.train.CheckpointManager(
    tf.train.Checkpoint(v=variable, step=step), str(directory), max_to_keep=None,
    checkpoint_name="model.ckpt",
  )  # fmt: skip
  for s in steps:
    step.assign(s)
    manager.save(checkpoint_number=s)
  return [os.path.join(str(directory), f"model.ckpt-{s}") for s in steps]


def _truncate(prefix, keep=0.5):
  (data,) = tf.io.gfile.glob(prefix + ".data-*")
  size = os.path.getsize(data)
  with open(data, "r+b") as f:
    f.truncate(int(size * keep))


def test_a_good_checkpoint_has_no_problem(tmp_path):
  old, new = _write_checkpoints(tmp_path)
  assert reader.checkpoint_problem(new) is None
  assert reader.readable_prefix(str(tmp_path)) == new
  assert reader.checkpoint_candidates(str(tmp_path)) == [new, old]
  assert reader.newest_readable(str(tmp_path)) == (new, [])


@pytest.mark.parametrize("keep", [0.5, 0.99, 0.0])
def test_a_truncated_data_file_is_named_with_the_bytes_missing(tmp_path, keep):
  old, new = _write_checkpoints(tmp_path)
  _truncate(new, keep)
  problem = reader.checkpoint_problem(new)
  assert problem is not None and "truncated" in problem, problem
  assert reader.newest_readable(str(tmp_path)) == (old, [(new, problem)])
  with pytest.raises(reader.UnreadableCheckpointError) as e:
    reader.readable_prefix(str(tmp_path))
  assert str(e.value).startswith(f"checkpoint {new!r} cannot be read: its .data-* file is ")
  assert "\n" not in str(e.value)


def test_a_missing_index_is_named_not_a_missing_state_file(tmp_path):
  old, new = _write_checkpoints(tmp_path)
  os.remove(new + ".index")
  with pytest.raises(reader.UnreadableCheckpointError) as e:
    formats.detect(str(tmp_path))
  message = str(e.value)
  assert "no usable `checkpoint` file" not in message
  assert f"names model.ckpt-6, but {new + '.index'!r} is missing" in message
  assert "older ones there: model.ckpt-3" in message
  # Given as a prefix: its data without its index.
  with pytest.raises(reader.UnreadableCheckpointError, match="its .index file is missing"):
    reader.readable_prefix(new)
  assert reader.newest_readable(str(tmp_path))[0] == old


@pytest.mark.parametrize(
  "content, words",
  [(bytes(range(128, 256)) * 3, "is not text"), (b"hello world {{\n", "is not a checkpoint state")],
)
def test_a_damaged_state_file_is_named_and_the_checkpoints_stay_findable(tmp_path, content, words):
  old, new = _write_checkpoints(tmp_path)
  (tmp_path / "checkpoint").write_bytes(content)
  state, problem = reader.read_state(str(tmp_path))
  assert state is None and words in problem, problem
  with pytest.raises(reader.UnreadableCheckpointError, match=words):
    formats.detect(str(tmp_path))
  # Training still finds them (newest first), and the prefix itself is readable.
  assert reader.checkpoint_candidates(str(tmp_path)) == [new, old]
  assert reader.latest_checkpoint(str(tmp_path)) == new
  assert formats.detect(new).location == new


def test_an_empty_directory_keeps_its_message(tmp_path):
  with pytest.raises(ValueError, match="no usable `checkpoint` file") as e:
    formats.detect(str(tmp_path))
  assert not isinstance(e.value, reader.UnreadableCheckpointError)
  assert reader.checkpoint_candidates(str(tmp_path)) == []
  assert reader.newest_readable(str(tmp_path)) == (None, [])


def test_a_missing_data_shard_is_named(tmp_path):
  _, new = _write_checkpoints(tmp_path)
  (data,) = tf.io.gfile.glob(new + ".data-*")
  os.remove(data)
  assert reader.checkpoint_problem(new) == "its .data-* file is missing"
