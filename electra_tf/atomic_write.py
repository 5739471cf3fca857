"""Atomic file writes for every result, prediction and config file the jobs
write: a reader (or a resumed job) sees the previous file or the new one,
never a half-written one."""

import os


def atomic_write(path, data):
  """Writes `data` to `path` through a temporary file and a rename.

  Local paths: the temporary file sits beside `path` (so the rename stays on
  one file system), is fsynced, then `os.replace`d over `path`; it is removed
  if anything fails. Paths with a scheme (`gs://…`) go through `tf.io.gfile`
  with the same temporary-then-rename order. The parent directory is created.

  Args:
    path: destination file, local or `scheme://…`.
    data: `str` (written as UTF-8) or `bytes`.

  Example:
  >>> atomic_write("/tmp/eval_results.txt", "loss = 1.0\\n")
  """
  if isinstance(data, str):
    data = data.encode("utf-8")
  directory = os.path.dirname(path) or "."
  tmp = f"{path}.{os.getpid()}.tmp"  # per process: concurrent writers do not share it
  if "://" in path:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(tmp, "wb") as f:
      f.write(data)
    tf.io.gfile.rename(tmp, path, overwrite=True)
    return
  os.makedirs(directory, exist_ok=True)
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
