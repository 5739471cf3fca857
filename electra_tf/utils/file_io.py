"""Atomic file writes, one way for every file the jobs write: a reader (or a
resumed job) sees the previous file or the new one, never a half-written one.

Local paths and `scheme://` paths (`gs://…`, through `tf.io.gfile`) behave
alike: the data goes to a hidden temporary name beside the destination (so
the rename stays on one file system and globs such as
`pretrain_data.tfrecord*` never match it), then is renamed over it. Files get
the usual permissions (0644 under umask 022).
"""

import contextlib
import os


def _is_remote(path):
  return "://" in path


def temporary_path(path, suffix=""):
  """A hidden temporary name beside `path`, unique to this process, ending
  in `suffix` (for writers that insist on an extension, such as `.keras`)."""
  directory, name = os.path.split(path)
  return os.path.join(directory, f".{name}.{os.getpid()}.tmp{suffix}")


@contextlib.contextmanager
def atomic_path(path, suffix=""):
  """Yields a temporary path to write `path`'s content to; on success renames
  it to `path`, on any error removes it and `path` is untouched.

  For writers that need a file or directory name rather than bytes
  (`tf.io.TFRecordWriter`, `model.save`, `tf.saved_model.save`). The parent
  directory is created. A local directory renames into place only where
  `path` does not exist yet.

  Args:
    path: destination file or directory, local or `scheme://…`.
    suffix: ending of the temporary name (e.g. `.keras`).

  Example:
  >>> import tensorflow as tf
  >>> with atomic_path("records.tfrecord") as tmp:
  ...   with tf.io.TFRecordWriter(tmp) as writer:
  ...     writer.write(b"payload")
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  directory = os.path.dirname(path) or "."
  tf.io.gfile.makedirs(directory)
  tmp = temporary_path(path, suffix)
  try:
    yield tmp
    if _is_remote(path):
      tf.io.gfile.rename(tmp, path, overwrite=True)
    else:
      os.replace(tmp, path)
  except BaseException:
    if tf.io.gfile.isdir(tmp):
      tf.io.gfile.rmtree(tmp)
    elif tf.io.gfile.exists(tmp):
      tf.io.gfile.remove(tmp)
    raise


def write_atomic(path, data):
  """Writes `data` to `path` through a temporary file and a rename.

  Local files are fsynced before the rename.

  Args:
    path: destination file, local or `scheme://…`; the parent directory is
      created.
    data: `str` (written as UTF-8) or `bytes`.

  Example:
  >>> write_atomic("eval_results.txt", "loss = 1.0\\n")
  >>> open("eval_results.txt").read()
  'loss = 1.0\\n'
  """
  if isinstance(data, str):
    data = data.encode("utf-8")
  if _is_remote(path):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    with atomic_path(path) as tmp:
      with tf.io.gfile.GFile(tmp, "wb") as f:
        f.write(data)
    return
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  tmp = temporary_path(path)
  try:
    with open(tmp, "wb") as f:
      f.write(data)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise
