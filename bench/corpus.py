"""A real multi-megabyte English corpus built from the installed packages.

Docstrings of the `.py` files and the text of `.md`/`.rst`/`.txt` files under
the venv's site-packages, one paragraph line per line, a blank line between
documents, split into files of about 1 MB. Cached: built once per size.
When the installed packages hold less text than asked for (about 45 MB with
the `bench` extra), the documents repeat.
"""

import ast
import os
import pathlib
import site
import sys


def _site_packages():
  paths = [p for p in site.getsitepackages() if os.path.isdir(p)]
  return paths or [p for p in sys.path if p.endswith("site-packages")]


def _documents():
  for root in _site_packages():
    for dirpath, _, filenames in sorted(os.walk(root)):
      for name in sorted(filenames):
        path = os.path.join(dirpath, name)
        try:
          if name.endswith(".py"):
            tree = ast.parse(pathlib.Path(path).read_bytes())
            for node in ast.walk(tree):
              if isinstance(
                node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
              ):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 200:
                  yield doc
          elif name.endswith((".md", ".rst", ".txt")) and "LICENSE" not in name.upper():
            text = pathlib.Path(path).read_text("utf-8", errors="ignore")
            if len(text) > 200:
              yield text
        except (SyntaxError, ValueError, OSError, RecursionError):
          continue


def _repeated(documents):
  """`documents()` again and again (an endless iterator)."""
  while True:
    empty = True
    for doc in documents():
      empty = False
      yield doc
    if empty:
      raise ValueError("no documents with docstrings or text files found in site-packages")


def build_corpus(out_dir, megabytes, file_megabytes=1.0):
  """Writes ~`megabytes` MB of text into `out_dir`; returns the byte count."""
  out_dir = pathlib.Path(out_dir)
  marker = out_dir / ".complete"
  if marker.exists():
    return int(marker.read_text())
  out_dir.mkdir(parents=True, exist_ok=True)
  target = int(megabytes * 1e6)
  per_file = int(file_megabytes * 1e6)
  total, index, chunk = 0, 0, []
  chunk_bytes = 0
  for doc in _repeated(_documents):
    lines = [" ".join(p.split()) for p in doc.split("\n\n")]
    text = "\n".join(line for line in lines if line) + "\n\n"
    data = text.encode("utf-8")
    chunk.append(data)
    chunk_bytes += len(data)
    total += len(data)
    if chunk_bytes >= per_file or total >= target:
      (out_dir / f"part-{index:05d}.txt").write_bytes(b"".join(chunk))
      index, chunk, chunk_bytes = index + 1, [], 0
    if total >= target:
      break
  if chunk:
    (out_dir / f"part-{index:05d}.txt").write_bytes(b"".join(chunk))
  marker.write_text(str(total))
  return total
