"""write_atomic: the shared writer of results, predictions and config files."""

import os

import pytest

from electra_tf.utils.file_io import check_writable
from electra_tf.utils.file_io import write_atomic


def test_writes_text_as_utf8_and_bytes_as_is(tmp_path):
  text_path = str(tmp_path / "new_dir" / "results.txt")
  write_atomic(text_path, "loss = 1.5\nname = café\n")
  with open(text_path, "rb") as f:
    assert f.read() == "loss = 1.5\nname = café\n".encode("utf-8")
  bytes_path = str(tmp_path / "results.pkl")
  write_atomic(bytes_path, b"\x00\x01")
  with open(bytes_path, "rb") as f:
    assert f.read() == b"\x00\x01"
  assert sorted(os.listdir(tmp_path)) == ["new_dir", "results.pkl"]
  assert os.listdir(tmp_path / "new_dir") == ["results.txt"]


def test_replaces_the_old_file(tmp_path):
  path = str(tmp_path / "eval_results.txt")
  write_atomic(path, "old\n")
  write_atomic(path, "new\n")
  with open(path) as f:
    assert f.read() == "new\n"
  assert os.listdir(tmp_path) == ["eval_results.txt"]


def test_failed_write_keeps_the_old_file_and_no_temporary(tmp_path):
  path = str(tmp_path / "eval_results.txt")
  write_atomic(path, "old\n")
  with pytest.raises(TypeError):
    write_atomic(path, 3.5)  # neither str nor bytes: fails inside the write
  with open(path) as f:
    assert f.read() == "old\n"
  assert os.listdir(tmp_path) == ["eval_results.txt"]


def test_remote_scheme_goes_through_gfile(tmp_path):
  # ram:// is TensorFlow's in-memory file system: a real non-local path.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  path = "ram://atomic_write_test/sub/results.json"
  write_atomic(path, '{"a": 1}')
  with tf.io.gfile.GFile(path, "rb") as f:
    assert f.read() == b'{"a": 1}'
  assert tf.io.gfile.listdir("ram://atomic_write_test/sub") == ["results.json"]


def test_files_get_the_usual_permissions(tmp_path):
  old = os.umask(0o022)
  try:
    path = str(tmp_path / "results.txt")
    write_atomic(path, "x")
    assert os.stat(path).st_mode & 0o777 == 0o644
  finally:
    os.umask(old)


def test_atomic_path_renames_on_success_and_cleans_up_on_error(tmp_path):
  from electra_tf.utils.file_io import atomic_path  # pylint: disable=g-import-not-at-top

  path = str(tmp_path / "out" / "shard.tfrecord")
  with atomic_path(path) as tmp:
    assert os.path.basename(tmp).startswith(".")  # hidden: globs on the name skip it
    assert not os.path.exists(path)
    with open(tmp, "w") as f:
      f.write("done")
  assert open(path).read() == "done"
  with pytest.raises(RuntimeError):
    with atomic_path(path) as tmp:
      with open(tmp, "w") as f:
        f.write("half")
      raise RuntimeError("writer failed")
  assert open(path).read() == "done"
  assert os.listdir(tmp_path / "out") == ["shard.tfrecord"]


def test_atomic_path_keeps_a_required_suffix_and_handles_directories(tmp_path):
  from electra_tf.utils.file_io import atomic_path  # pylint: disable=g-import-not-at-top

  with atomic_path(str(tmp_path / "model.keras"), suffix=".keras") as tmp:
    assert tmp.endswith(".keras")
    open(tmp, "w").close()
  with pytest.raises(ValueError):
    with atomic_path(str(tmp_path / "export" / "1")) as tmp:
      os.makedirs(os.path.join(tmp, "variables"))
      raise ValueError("save failed")
  assert os.listdir(tmp_path / "export") == []


def test_an_output_directory_that_is_a_file_is_named(tmp_path):
  (tmp_path / "out").write_text("a file")
  check_writable(str(tmp_path / "out"), "--output")  # a file output may replace a file
  with pytest.raises(ValueError, match=r"^--export-dir '.*out' is a file; expected a directory$"):
    check_writable(str(tmp_path / "out"), "--export-dir", directory=True)
  check_writable(str(tmp_path / "new"), "--export-dir", directory=True)
