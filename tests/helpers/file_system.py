"""Real file-system faults for tests: a read-only directory and a small
(full) file system, made with mounts in a private mount namespace.

`unshare -m` (as root) or `unshare -rm` (user namespaces, as anyone) gives a
command its own mounts: a read-only bind mount of a directory, or a small
tmpfs, that nobody else sees and that vanish with the command. Where neither
works, a non-root user gets a directory without write permission instead
(root ignores permissions, so root without namespaces has no read-only
directory and the test skips); a full disk has no stand-in (`/dev/full`
is a file, and an output directory cannot live on it).
"""

import functools
import os
import shlex
import shutil
import subprocess
import tempfile

import pytest


@functools.lru_cache(maxsize=None)
def unshare_flags():
  """The `unshare` flags that let this user mount in a new mount namespace
  (`-m` as root, `-rm` through a user namespace), or None."""
  if shutil.which("unshare") is None:
    return None
  candidates = (["-m"], ["-rm"]) if os.geteuid() == 0 else (["-rm"],)
  probe = tempfile.mkdtemp(prefix="mount-probe-")
  try:
    for flags in candidates:
      try:
        done = subprocess.run(
          ["unshare", *flags, "mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", probe],
          capture_output=True,
          timeout=30,
        )
      except (OSError, subprocess.TimeoutExpired):
        continue
      if done.returncode == 0:
        return flags
    return None
  finally:
    os.rmdir(probe)


def read_only_command(directory, argv):
  """`argv` run with `directory` read-only (a bind mount of itself), or with
  its write permission removed where no mount is possible (non-root only).
  Skips the test when neither is possible."""
  flags = unshare_flags()
  directory = shlex.quote(str(directory))
  if flags is not None:
    script = (
      f"mount --bind {directory} {directory} && mount -o remount,bind,ro {directory} && exec \"$@\""
    )
    return ["unshare", *flags, "sh", "-c", script, "sh", *map(str, argv)]
  if os.geteuid() == 0:
    pytest.skip(
      "no read-only directory possible: running as root (which ignores permissions) and "
      "`unshare -m`/`unshare -rm` cannot mount here"
    )
  os.chmod(directory, 0o555)
  return list(map(str, argv))


def small_file_system_script(directory, size, script):
  """The argv of a shell `script` run with a tmpfs of `size` (e.g. "480k")
  mounted on `directory`; `$FS` names it in the script, which may grow it
  with `mount -o remount,size=... "$FS"`. Skips the test where no mount is
  possible."""
  flags = unshare_flags()
  if flags is None:
    pytest.skip(
      "no small file system possible: `unshare -m`/`unshare -rm` cannot mount here, and a "
      "full disk has no stand-in (/dev/full is a file, not a directory to write into)"
    )
  mount = f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(directory))}"
  return ["unshare", *flags, "sh", "-c", f'FS={shlex.quote(str(directory))}; {mount} && {script}']
