"""Lines of the `electra_tf` package at git revisions, by kind: blank,
comment, docstring and code (the rest), as the package-size figures of the
closing notes count them.

Usage (from the repository root):
  python bench/package_lines.py c128d1d 6bec3dc HEAD
"""

import ast
import subprocess
import sys


def _git(*args):
  return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def line_kinds(source):
  """(total, blank, comment, docstring, code) line counts of one module's text.

  Example:
  >>> line_kinds('\"\"\"Doc.\"\"\"\\n\\n# why\\nx = 1\\n')
  (4, 1, 1, 1, 1)
  """
  lines = source.splitlines()
  blank = sum(1 for line in lines if not line.strip())
  comment = sum(1 for line in lines if line.strip().startswith("#"))
  docstring = 0
  for node in ast.walk(ast.parse(source)):
    documented = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    if isinstance(node, documented) and ast.get_docstring(node, clean=False):
      docstring += node.body[0].end_lineno - node.body[0].lineno + 1
  return len(lines), blank, comment, docstring, len(lines) - blank - comment - docstring


def package_lines(revision, package="electra_tf"):
  """The summed `line_kinds` of every `.py` file of `package` at `revision`."""
  names = [
    n for n in _git("ls-tree", "-r", "--name-only", revision, package).split() if n.endswith(".py")
  ]
  totals = [0] * 5
  for name in names:
    for i, count in enumerate(line_kinds(_git("show", f"{revision}:{name}"))):
      totals[i] += count
  return tuple(totals)


def main(revisions):
  print("revision   total  blank  comment  docstring   code")
  for revision in revisions or ["HEAD"]:
    total, blank, comment, docstring, code = package_lines(revision)
    print(f"{revision:<9} {total:6} {blank:6} {comment:8} {docstring:10} {code:6}")


if __name__ == "__main__":
  main(sys.argv[1:])
