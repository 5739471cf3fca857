"""atomic_write: the shared writer of results, predictions and config files."""

import os

import pytest

from electra_tf.atomic_write import atomic_write


def test_writes_text_as_utf8_and_bytes_as_is(tmp_path):
  text_path = str(tmp_path / "new_dir" / "results.txt")
  atomic_write(text_path, "loss = 1.5\nname = café\n")
  with open(text_path, "rb") as f:
    assert f.read() == "loss = 1.5\nname = café\n".encode("utf-8")
  bytes_path = str(tmp_path / "results.pkl")
  atomic_write(bytes_path, b"\x00\x01")
  with open(bytes_path, "rb") as f:
    assert f.read() == b"\x00\x01"
  assert sorted(os.listdir(tmp_path)) == ["new_dir", "results.pkl"]
  assert os.listdir(tmp_path / "new_dir") == ["results.txt"]


def test_replaces_the_old_file(tmp_path):
  path = str(tmp_path / "eval_results.txt")
  atomic_write(path, "old\n")
  atomic_write(path, "new\n")
  with open(path) as f:
    assert f.read() == "new\n"
  assert os.listdir(tmp_path) == ["eval_results.txt"]


def test_failed_write_keeps_the_old_file_and_no_temporary(tmp_path):
  path = str(tmp_path / "eval_results.txt")
  atomic_write(path, "old\n")
  with pytest.raises(TypeError):
    atomic_write(path, 3.5)  # neither str nor bytes: fails inside the write
  with open(path) as f:
    assert f.read() == "old\n"
  assert os.listdir(tmp_path) == ["eval_results.txt"]


def test_remote_scheme_goes_through_gfile(tmp_path):
  # ram:// is TensorFlow's in-memory file system: a real non-local path.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  path = "ram://atomic_write_test/sub/results.json"
  atomic_write(path, '{"a": 1}')
  with tf.io.gfile.GFile(path, "rb") as f:
    assert f.read() == b'{"a": 1}'
  assert tf.io.gfile.listdir("ram://atomic_write_test/sub") == ["results.json"]
