"""The demo's built-in corpus: docstrings of the Python standard library and
of electra_tf's own pinned dependencies (NumPy, Keras, TensorFlow, ...).

Why this corpus: it exists wherever the package is installed (Python ships
the standard library; pip installed the dependencies with electra_tf), it is
real English prose, it is the same for a given Python and dependency version,
so demo runs are comparable, and it needs no download.

Layout written: text files in the original's corpus format (one "sentence" per
line — here one docstring paragraph per line — and a blank line between
documents). A document is all the docstrings of one source file, so the
builder can pack examples to full length (single docstrings are short).

Usage:
  python -m tfrecords_tools.python_docs_corpus --output-dir DIR [--max-mb 8]
"""

import argparse
import ast
import contextlib
import os
import re
import sys
import sysconfig

from electra_tf.utils import exit_codes
from electra_tf.utils import file_io
from electra_tf.utils import interrupts
from electra_tf.utils.file_io import atomic_path
from tfrecords_tools import runner_flags

_SKIP_DIRS = {
  "test",
  "tests",
  "idle_test",
  "site-packages",
  "dist-packages",
  "lib2to3",
  "__pycache__",
  "turtledemo",
}


def _paragraphs(docstring):
  """Prose paragraphs of a docstring, each collapsed to one line; code
  (doctest prompts, indented blocks) and option tables are left out."""
  paragraphs, current = [], []
  for raw in docstring.expandtabs().splitlines() + [""]:
    line = raw.strip()
    is_code = raw.startswith("    ") or line.startswith((">>>", "...", "$ ", "%"))
    if not line or is_code:
      if current:
        paragraphs.append(" ".join(current))
      current = []
      continue
    current.append(line)
  keep = []
  for paragraph in paragraphs:
    words = paragraph.split()
    letters = sum(c.isalpha() for c in paragraph)
    # prose has several words and is mostly letters
    if (
      len(words) >= 4
      and letters >= 0.6 * len(paragraph)
      and not re.match(r"^[-=~*]{3,}", paragraph)
    ):
      keep.append(paragraph)
  return keep


DEPENDENCY_PACKAGES = ("numpy", "keras", "tensorflow", "absl", "keras_hub")
# --num-files: every file is open at once while the corpus is written (a
# process may open 1024 files).
MAX_FILES = 512


def default_roots():
  """The standard library, then each installed dependency package's folder."""
  import importlib.util

  roots = [sysconfig.get_paths()["stdlib"]]
  for name in DEPENDENCY_PACKAGES:
    spec = importlib.util.find_spec(name)
    if spec is not None and spec.submodule_search_locations:
      roots.append(list(spec.submodule_search_locations)[0])
  return roots


def iter_docstring_documents(roots):
  """Yields lists of paragraphs, one list per source file, in a fixed order."""
  for root in roots:
    yield from _iter_root(root)


def _iter_root(root):
  for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
    for filename in sorted(filenames):
      if not filename.endswith(".py"):
        continue
      try:
        with open(os.path.join(dirpath, filename), encoding="utf-8") as f:
          tree = ast.parse(f.read())
      except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        continue  # a few stdlib files are templates or deliberately broken
      paragraphs = []
      for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
          docstring = ast.get_docstring(node)
          if docstring:
            paragraphs.extend(_paragraphs(docstring))
      if paragraphs:
        yield paragraphs


def write_python_docs_corpus(output_dir, max_megabytes=8.0, num_files=8, roots=None):
  """Writes the corpus as `num_files` text files; returns (paths, bytes written).

  Args:
    output_dir: directory to write `python_docs_<i>.txt` into (created).
    max_megabytes: stop after about this much text.
    num_files: documents are dealt round-robin over this many files, so that
      multi-process dataset building has files to split.
    roots: directories to read; defaults to `default_roots()`.
  """
  roots = roots or default_roots()
  paths = [os.path.join(output_dir, f"python_docs_{i}.txt") for i in range(num_files)]
  written = 0
  limit = int(max_megabytes * 2**20)
  # A first run that fails or is stopped leaves no empty output dir.
  with file_io.dirs_made(output_dir), contextlib.ExitStack() as stack:
    # Files close (LIFO) before their temporary names are renamed into place;
    # an error or an empty result leaves no file behind.
    tmp_paths = [stack.enter_context(atomic_path(p)) for p in paths]
    files = [stack.enter_context(open(t, "w", encoding="utf-8")) for t in tmp_paths]
    for index, paragraphs in enumerate(iter_docstring_documents(roots)):
      text = "\n".join(paragraphs) + "\n\n"
      files[index % num_files].write(text)
      written += len(text.encode("utf-8"))
      if written >= limit:
        break
    if written == 0:
      raise ValueError(f"no docstrings found under {roots!r}")
  return paths, written


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--output-dir", required=True)
  parser.add_argument("--max-mb", type=float, default=8.0)
  parser.add_argument("--num-files", type=int, default=8)
  args = parser.parse_args(argv)
  try:
    runner_flags.check_positive(args, "max_mb", "num_files")
    runner_flags.check_paths_given(args, "output_dir")
    if args.num_files > MAX_FILES:
      raise ValueError(
        f"--num-files {args.num_files}: expected at most {MAX_FILES} (each file is open while "
        "the corpus is written; the builder splits files over processes, not into shards)"
      )
    with (
      interrupts.ctrl_c_remembered(),  # SIGTERM and SIGHUP stop it as Ctrl-C does
      file_io.full_disk_as_bad_input("--output-dir", args.output_dir),
    ):
      paths, written = write_python_docs_corpus(args.output_dir, args.max_mb, args.num_files)
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return exit_codes.BAD_INPUT
  except KeyboardInterrupt as e:
    print(f"{interrupts.stopped_line('python_docs_corpus', e)}; nothing written", file=sys.stderr)
    return interrupts.stop_status(e)
  print(
    f"wrote {written / 2**20:.2f} MB of Python docstrings to {len(paths)} files in {args.output_dir}"
  )
  return 0


if __name__ == "__main__":
  sys.exit(main())
