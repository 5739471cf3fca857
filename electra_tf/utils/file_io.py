"""Atomic file writes (a reader sees the previous file or the new one, never a
half-written one) and the checks of input and output paths.

Local and `scheme://` paths (through `tf.io.gfile`) alike are written to a
hidden temporary name beside the destination (one file system; globs such as
`pretrain_data.tfrecord*` never match it), then renamed over it.
"""

import contextlib
import errno
import fnmatch
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import tempfile
import unicodedata

from electra_tf.utils import interrupts


def _is_remote(path):
  return "://" in path


def temporary_path(path, suffix=""):
  """A hidden temporary name beside `path`, unique to this process, ending in `suffix`."""
  directory, name = os.path.split(path)
  return os.path.join(directory, f".{name}.{os.getpid()}.tmp{suffix}")


# `temporary_path`'s names: the target's name, the writer's pid, the suffix.
_TEMPORARY_NAME = re.compile(r"\.(.+)\.(\d+)\.tmp(.*)", re.S)


@contextlib.contextmanager
def atomic_path(path, suffix="", weights=()):
  """Yields a temporary path to write `path`'s content to; on success renames
  it to `path`, on any error removes it and `path` is untouched.

  For writers that need a file or directory name (`tf.io.TFRecordWriter`,
  `model.save`). The parent directory is created. A local directory renames
  into place only where `path` does not exist yet.

  Args:
    path: destination file or directory, local or `scheme://…`.
    suffix: ending of the temporary name (e.g. `.keras`).
    weights: the variables (or arrays) written there, if any: where the file
      system has less room than they take, an `OSError` (ENOSPC) is raised
      before anything is written (h5py's writer, finding the disk full part
      way, crashes the process).

  Example:
  >>> import tensorflow as tf
  >>> with atomic_path("records.tfrecord") as tmp:
  ...   with tf.io.TFRecordWriter(tmp) as writer:
  ...     writer.write(b"payload")
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  # An .h5 file's groups and attributes take about 3 kB a variable; the JSON files beside it 32 kB.
  needed = 32768 + sum(math.prod(w.shape) * tf.as_dtype(w.dtype).size + 4096 for w in weights)
  free = free_bytes(path) if weights else None
  if free is not None and free < needed:
    error = OSError(
      errno.ENOSPC,
      f"no space left on device for {path!r}: writing it needs about {megabytes(needed)}, "
      f"{megabytes(free)} free there; nothing was written",
    )
    error.needed = needed
    raise error
  directory = os.path.dirname(path) or "."
  tf.io.gfile.makedirs(directory)
  if not _is_remote(path):
    remove_dead_staging(directory, os.path.basename(path))
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


@contextlib.contextmanager
def replaced_together(directory, label):
  """Yields a new, empty, hidden staging directory inside the local
  `directory` to write a set of entries into; when the block ends without
  error, they replace their namesakes in `directory` together (the old ones
  renamed aside, the new ones in, then the old ones removed), and other
  entries there stay. On any error or Ctrl-C `directory` keeps its previous
  entries. The hidden names (`.<label>.<pid>.tmp`) are not numbers, so TF
  Serving never loads them as versions.

  Args:
    directory: the local directory the entries go to; created if needed.
    label: a name for the hidden staging directory (e.g. the version).

  Example:
  >>> with replaced_together("export", "1") as staging:
  ...   write_atomic(os.path.join(staging, "1", "saved_model.pb"), b"graph")
  >>> os.listdir("export")
  ['1']
  """
  os.makedirs(directory, exist_ok=True)
  remove_dead_staging(directory, label)
  staging = temporary_path(os.path.join(directory, label))
  aside = temporary_path(os.path.join(directory, label), ".old")
  _remove(staging)
  os.mkdir(staging)
  try:
    yield staging
    interrupts.check()  # a Ctrl-C swallowed while writing: keep the old set
    names = sorted(os.listdir(staging))
    try:
      for name in names:
        target = os.path.join(directory, name)
        if os.path.lexists(target):
          os.makedirs(aside, exist_ok=True)
          os.replace(target, os.path.join(aside, name))
        os.replace(os.path.join(staging, name), target)
    except BaseException:
      # Judged from what is where (not from a log that an interrupt may cut
      # short): a name gone from staging was moved in, one in `aside` is old.
      for name in names:
        target = os.path.join(directory, name)
        if not os.path.lexists(os.path.join(staging, name)) and os.path.lexists(target):
          os.replace(target, os.path.join(staging, name))
        if os.path.lexists(os.path.join(aside, name)):
          os.replace(os.path.join(aside, name), target)
      raise
    _remove(aside)
  finally:
    _remove(staging)
    if os.path.isdir(aside) and not os.listdir(aside):
      os.rmdir(aside)


def remove_dead_staging(directory, label):
  """Removes the temporary entries (`temporary_path`) of `directory/label` that
  a process that is gone (SIGKILL, the OOM killer) left: the partial file or
  folder of `atomic_path` and `write_atomic`, the staging and set-aside folders
  of `replaced_together(directory, label)`."""
  for name in os.listdir(directory):
    match = _TEMPORARY_NAME.fullmatch(name)
    if not match or match.group(1) != label:
      continue
    pid = int(match.group(2))
    if pid != os.getpid() and not _process_exists(pid):
      if match.group(3) == ".old":
        # An old entry set aside goes back where nothing stands (nothing is lost).
        for entry in os.listdir(os.path.join(directory, name)):
          if not os.path.lexists(os.path.join(directory, entry)):
            os.replace(os.path.join(directory, name, entry), os.path.join(directory, entry))
      _remove(os.path.join(directory, name))


def _process_exists(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except (PermissionError, OverflowError):
    return True
  return True


@contextlib.contextmanager
def dirs_made(directory):
  """Makes `directory` and its missing parents; when the work within fails
  or is stopped, removes those it made that are still empty.

  Example:
  >>> root = tempfile.mkdtemp()
  >>> try:
  ...   with dirs_made(os.path.join(root, "a", "b")):
  ...     raise ValueError("failed")
  ... except ValueError:
  ...   os.listdir(root)
  []
  """
  import tensorflow as tf  # only here: file_io is imported by modules that must not load TensorFlow

  made = []
  path = directory.rstrip("/") or directory
  while path and not tf.io.gfile.exists(path):
    made.append(path)
    parent = os.path.dirname(path)
    if parent == path:
      break
    path = parent
  tf.io.gfile.makedirs(directory)
  try:
    yield directory
  except BaseException:
    for path in made:  # deepest first
      if tf.io.gfile.isdir(path) and not tf.io.gfile.listdir(path):
        tf.io.gfile.rmtree(path)
    raise


def check_data_file(path, expected="a data file"):
  """A one-line ValueError naming `path` unless it is a file to read (locally a
  regular file: a named pipe would block the read forever)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  # gfile, for scheme:// paths

  if not tf.io.gfile.exists(path):
    raise ValueError(f"data file {path!r} {not_there(path)}")
  if tf.io.gfile.isdir(path):
    raise ValueError(f"data file {path!r} is a directory; expected {expected}")
  if not _is_remote(path) and not os.path.isfile(path):
    raise ValueError(
      f"data file {path!r} is not a regular file (a named pipe, socket or device); expected "
      f"{expected}"
    )


GIT_LFS_POINTER_START = b"version https://git-lfs.github.com/spec/v1"
_GIT_LFS_POINTER_MAX_BYTES = 1024  # the Git LFS spec's limit on a pointer file


def check_not_lfs_pointer(path, data=None):
  """A one-line ValueError when the file `path` (its bytes `data`, where read
  already) is a Git LFS pointer, as a clone made without `git lfs` holds."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  # gfile, for scheme:// paths

  if data is None:
    try:
      if not _is_remote(path) and not os.path.isfile(path):
        return  # a named pipe would block the read; a directory is no pointer
      if tf.io.gfile.stat(path).length > _GIT_LFS_POINTER_MAX_BYTES:
        return
      with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read(_GIT_LFS_POINTER_MAX_BYTES + 1)
    except (OSError, tf.errors.OpError):
      return  # the reader names what is wrong with it
  if len(data) <= _GIT_LFS_POINTER_MAX_BYTES and data.startswith(GIT_LFS_POINTER_START):
    raise ValueError(
      f"{os.fspath(path)!r} is a Git LFS pointer ({len(data)} bytes), not the file: run git lfs "
      "pull in that clone"
    )


def _remove(path):
  """Removes the local file or directory `path`, if there."""
  if os.path.isdir(path) and not os.path.islink(path):
    shutil.rmtree(path, ignore_errors=True)
  elif os.path.lexists(path):
    os.remove(path)


def write_atomic(path, data):
  """Writes `data` to `path` through a temporary file (fsynced, when local) and a rename.

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
  remove_dead_staging(os.path.dirname(path) or ".", os.path.basename(path))
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


class DuplicateKeyError(ValueError):
  """A JSON object names a key twice (`json` would keep the last silently)."""

  def __init__(self, key):
    super().__init__(f"key {key!r} is given more than once")
    self.key = key


def object_with_unique_keys(pairs):
  """`json`'s `object_pairs_hook` that raises `DuplicateKeyError` for a key given twice."""
  seen = set()
  for key, _ in pairs:
    if key in seen:
      raise DuplicateKeyError(key)
    seen.add(key)
  return dict(pairs)


def read_json(path, what):
  """The JSON value in `path` (local or `scheme://…`), or None when there is no
  such file; a one-line ValueError naming `what` when it is not JSON or gives a key twice.

  Example:
  >>> write_atomic("settings.json", '{"a": 1}')
  >>> read_json("settings.json", "settings file"), read_json("none.json", "settings file")
  ({'a': 1}, None)
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  # gfile, for scheme:// paths

  if not tf.io.gfile.exists(path):
    return None
  try:
    with tf.io.gfile.GFile(path, "r") as f:
      return json.load(f, object_pairs_hook=object_with_unique_keys)
  except DuplicateKeyError as e:
    raise ValueError(f"{what} {path!r}: {e}; give each key once") from None
  except (ValueError, UnicodeDecodeError) as e:
    raise ValueError(f"{what} {path!r} is not valid JSON ({json_error(e)})") from None


def utf8_text(data, path):
  """The text of bytes read from data file `path`, without a leading byte-order
  mark; a one-line ValueError naming the file and line when it is not UTF-8.

  Example:
  >>> utf8_text(b"\\xef\\xbb\\xbfsentence\\tlabel\\n", "train.tsv")
  'sentence\\tlabel\\n'
  """
  try:
    return data.decode("utf-8-sig")
  except UnicodeDecodeError as e:
    line = data.count(b"\n", 0, e.start) + 1
    raise ValueError(f"{path}, line {line}: not UTF-8 text ({e.reason})") from None


def line_text(data, path):
  """`utf8_text` of a line-based data file, read at "\\n" only: a carriage
  return that ends no line is a one-line ValueError naming the file and line.

  Example:
  >>> line_text(b"a\\tb\\r\\n", "train.tsv")
  'a\\tb\\r\\n'
  """
  text = utf8_text(data, path)
  lone = re.search("\r(?!\n)", text)
  if lone:
    line = text.count("\n", 0, lone.start()) + 1
    cause = (
      "its lines end in a lone \\r (classic Mac); save it with \\n or \\r\\n line ends"
      if "\n" not in text
      else "a carriage return (\\r) inside a line; lines end in \\n, and a text may not hold \\r"
    )
    raise ValueError(f"{path}, line {line}: {cause}")
  return text


def content_identity(data):
  """`{"size": bytes, "sha256": hex}` of bytes read from a file, for caches."""
  return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def check_output_files(paths, writable=True):
  """One-line ValueErrors, before any work, for the output files of `paths`,
  (how the user named it, path) pairs (an empty path is skipped): a directory,
  or with `writable` a place where no file can be created."""
  for what, path in paths:
    if not path:
      continue
    if os.path.isdir(path):
      raise ValueError(f"{what}={path!r} is a directory; expected a file path")
    if writable:
      check_writable(path, what)


def is_directly_in(path, folder):
  """Whether `path` is a file directly in `folder` (links resolved)."""
  return os.path.dirname(os.path.realpath(path)) == os.path.realpath(folder)


def broken_link(path):
  """The words "a broken symbolic link (to '…', which does not exist)" when
  `path` is a local link to nothing (its target moved or deleted), else None."""
  if _is_remote(path) or not os.path.islink(path) or os.path.exists(path):
    return None
  return f"a broken symbolic link (to {os.readlink(path)!r}, which does not exist)"


def not_there(path):
  """What a reader says of a missing `path`: "does not exist", or "is a broken
  symbolic link (to '…', which does not exist)" (`broken_link`)."""
  broken = broken_link(path)
  return f"is {broken}" if broken else "does not exist"


def unfinished_write(path):
  """The words for a hidden temporary name that `temporary_path` makes (a
  writer's partial file, `.<name>.<pid>.tmp…`), never a finished file; else None."""
  match = _TEMPORARY_NAME.fullmatch(os.path.basename(path))
  if not match:
    return None
  if not _is_remote(path) and _process_exists(int(match.group(2))):
    return f"the partial file of a write still running (process {match.group(2)}); wait for it"
  return (
    f"the partial file of a write that was stopped (process {match.group(2)} is gone); run the "
    "command that wrote it again (that removes it) or delete it"
  )


def char_name(char):
  """`char`'s code point and Unicode name, to tell it from its ASCII look-alike.

  Example:
  >>> char_name(chr(0xA0)), char_name(chr(0x430))
  ('U+00A0 NO-BREAK SPACE', 'U+0430 CYRILLIC SMALL LETTER A')
  """
  return f"U+{ord(char):04X} {unicodedata.name(char, 'UNNAMED')}"


def json_error(error):
  """The first line of an error reading a JSON file; a `json.JSONDecodeError`'s
  names the character at its position when it is not ASCII (a pasted no-break
  space looks like a space)."""
  char = ""
  if isinstance(error, json.JSONDecodeError):
    char = error.doc[error.pos : error.pos + 1]
  if not char or char.isascii():
    return str(error).partition("\n")[0]
  plain = "a plain space" if char.isspace() else "its ASCII form"
  return f"{error}: the character there is {char_name(char)}, not ASCII: replace it with {plain}"


def list_names(directory, what):
  """`tf.io.gfile.listdir(directory)`, refusing in one line naming `what` (a
  flag) and the entry a name that is not UTF-8 (gfile fails on it with a bare
  codec error)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  try:
    return tf.io.gfile.listdir(directory)
  except UnicodeDecodeError:
    bad = None
    if not _is_remote(directory):
      for name in os.listdir(os.fsencode(directory)):
        try:
          name.decode("utf-8")
        except UnicodeDecodeError:
          bad = name
          break
    shown = f" ({repr(bad)[1:]})" if bad else ""
    raise ValueError(
      f"{what} {os.fspath(directory)!r} holds a file whose name is not UTF-8{shown}: rename it "
      f"(e.g. convmv -f latin1 -t utf8 --notest {shlex.quote(os.fspath(directory))}/*)"
    ) from None


def glob_class(path):
  """The first `[...]` in `path` that a glob reads as a character class
  (`run[1]` then matches only `run1`), or None: TensorFlow globs checkpoint
  prefixes and TFRecord patterns, so a folder so named hides its own files.

  Example:
  >>> glob_class("runs/run[1]/d"), glob_class("runs/run*/d"), glob_class("a[b")
  ('[1]', None, None)
  """
  path = os.fspath(path)
  if fnmatch.fnmatchcase(path, path):
    return None
  found = re.search(r"\[!?\]?[^\]]*\]", path)
  return found.group(0) if found else "[...]"


def check_no_glob_class(path, what, fix="rename the folder"):
  """A one-line ValueError naming `what` (a flag or hparam) when `path` holds
  a glob character class (`glob_class`)."""
  found = glob_class(path) if path else None
  if found:
    raise ValueError(
      f"{what} {os.fspath(path)!r} holds glob characters ({found!r}): TensorFlow reads "
      f"checkpoint and record paths as glob patterns, where {found!r} is a character class, "
      f"so the files there would not be found; {fix}"
    )


def check_data_dir(data_dir):
  """A one-line ValueError naming `--data-dir` when it does not exist."""
  if data_dir and not _is_remote(data_dir) and not os.path.isdir(data_dir):
    hint = ""
    if os.fspath(data_dir).startswith("~"):
      hint = " (a quoted ~ is not expanded by the shell: write the path out)"
    broken = broken_link(data_dir)
    hint = f": it is {broken}" if broken else hint
    raise ValueError(f"--data-dir {os.fspath(data_dir)!r} does not exist{hint}")


def check_writable(path, what, directory=False):
  """Raises ValueError (one line naming `what` and `path`) unless files can
  be created where `path` will be written.

  An existing directory is tried from inside, anything else from the nearest
  existing directory above it, by creating and deleting a hidden file there
  (so read-only mounts, permissions and ACLs all count). Remote
  (`scheme://`) paths are not checked.

  Args:
    path: the output file or directory.
    what: how the user named it (a flag such as `--output-dir`, or "model dir").
    directory: `path` is an output directory, so an existing file there is
      refused too.

  Example:
  >>> check_writable("new_dir/vocab.txt", "--output")
  >>> write_atomic("notes.txt", "a file")
  >>> check_writable("notes.txt/records", "--output-dir")
  Traceback (most recent call last):
  ...
  ValueError: --output-dir 'notes.txt/records' cannot be created: '.../notes.txt' is a file
  """
  if not os.fspath(path).strip():
    raise ValueError(f"{what} is empty; expected a path")
  if _is_remote(path):
    return
  full = os.path.abspath(path)
  longest = max(full.split(os.sep), key=lambda name: len(os.fsencode(name)))
  if len(os.fsencode(longest)) > 240:
    # File systems take 255 bytes a name; staging names add a few to it.
    raise ValueError(
      f"{what} {path!r} has a name of {len(os.fsencode(longest))} bytes "
      f"({longest[:20]!r}…); expected at most 240"
    )
  if directory and os.path.exists(full) and not os.path.isdir(full):
    raise ValueError(f"{what} {path!r} is a file; expected a directory")
  directory = full if os.path.isdir(full) else os.path.dirname(full)
  while not os.path.exists(directory):
    if os.path.islink(directory):  # a link to nothing: no directory can be made there
      raise ValueError(
        f"{what} {path!r} cannot be created: {directory!r} is a symbolic link to "
        f"{os.readlink(directory)!r}, which does not exist"
      )
    directory = os.path.dirname(directory)
  if not os.path.isdir(directory):
    raise ValueError(f"{what} {path!r} cannot be created: {directory!r} is a file")
  try:
    handle, probe = tempfile.mkstemp(prefix=".write-check-", dir=directory)
  except OSError as e:
    raise ValueError(
      f"{what} {path!r} is not writable (in {directory!r}: {e.strerror or e})"
    ) from None
  os.close(handle)
  os.remove(probe)


# A full file system or quota, or a file past the file-size limit (`ulimit -f`).
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def is_disk_full(error):
  """Whether `error` (an `OSError`, a TensorFlow or another library's error)
  says that a write found no room (`no_room_phrase` says which)."""
  if getattr(error, "errno", None) in _NO_ROOM:
    return True
  # TensorFlow's file writers report ENOSPC as ResourceExhaustedError (text only).
  text = str(error)
  return any(os.strerror(code) in text for code in _NO_ROOM)


def remote_file_system_error(error):
  """The one line for a TensorFlow file-system error on a remote (`scheme://`)
  path; None for any other error."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  remote = re.search(r"\b[a-z][a-z0-9+.-]*://[^\s'\"()]+", str(error))
  if not isinstance(error, tf.errors.OpError) or remote is None:
    return None
  first = (str(error).strip().splitlines() or [""])[0][:200]
  if isinstance(error, tf.errors.UnimplementedError):
    scheme = remote.group(0).split("://")[0]
    return (
      f"cannot read {remote.group(0)}: TensorFlow has no {scheme}:// file system ({first}); "
      "use a local path or gs://, or install the package that adds it (tensorflow-io for s3)"
    )
  return f"cannot read {remote.group(0)} ({first}); check the network and the credentials"


def no_room_phrase(error):
  """`(what happened, what to do)` for an error `is_disk_full` accepts."""
  if getattr(error, "errno", None) == errno.EFBIG or os.strerror(errno.EFBIG) in str(error):
    return "a file reached this process's file-size limit (ulimit -f)", "raise the limit"
  return "no space left on device", "free some space"


def free_bytes(path):
  """Bytes free for this user on the file system of `path` (or of its nearest
  existing parent); None where that cannot be known."""
  if _is_remote(path):
    return None
  path = os.path.abspath(path)
  while not os.path.exists(path):
    path = os.path.dirname(path)
  try:
    return shutil.disk_usage(path).free
  except OSError:
    return None


def megabytes(num_bytes):
  """`num_bytes` for a message: "1.25 MB" (None: "unknown")."""
  return "unknown" if num_bytes is None else f"{num_bytes / 1e6:.2f} MB"


@contextlib.contextmanager
def full_disk_as_bad_input(what, path):
  """Runs a command's writing of `path` (`what`: its flag) so that a full disk
  becomes a one-line `ValueError`, after removing `path` if this run created
  it. Other errors pass unchanged.

  Example:
  >>> with full_disk_as_bad_input("--output", "out.txt"):
  ...   write_atomic("out.txt", "fits")
  """
  created = not os.path.lexists(path)
  try:
    yield
  except Exception as e:  # pylint: disable=broad-except
    if not is_disk_full(e):
      raise
    if created:
      _remove(path)
    happened, remedy = no_room_phrase(e)
    needed = f"about {megabytes(e.needed)} needed, " if hasattr(e, "needed") else ""
    raise ValueError(
      f"{happened} writing {what} {path!r} ({needed}{megabytes(free_bytes(path))} free); "
      f"nothing was left behind; {remedy} and run again"
    ) from None
