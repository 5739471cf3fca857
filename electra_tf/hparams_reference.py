"""Prints the hparam reference, or checks/rewrites its page, docs/hparams.md.

python -m electra_tf.hparams_reference                 # print it
python -m electra_tf.hparams_reference --check docs/hparams.md
python -m electra_tf.hparams_reference --write docs/hparams.md

Run from the repository root, `--check`/`--write` without a path mean docs/hparams.md.
"""

import argparse
import sys

from electra_tf.configs.reference import END
from electra_tf.configs.reference import PAGE
from electra_tf.configs.reference import START
from electra_tf.configs.reference import page_section
from electra_tf.configs.reference import reference_markdown
from electra_tf.utils import exit_codes
from electra_tf.utils import interrupts
from electra_tf.utils.file_io import check_writable
from electra_tf.utils.file_io import full_disk_as_bad_input
from electra_tf.utils.file_io import not_there
from electra_tf.utils.file_io import write_atomic


def main(argv=None):
  parser = argparse.ArgumentParser(description="The hparam reference (markdown).")
  mode = parser.add_mutually_exclusive_group()
  mode.add_argument(
    "--check", nargs="?", const=PAGE, help=f"page (default {PAGE}): exit 1 if its reference differs"
  )
  mode.add_argument(
    "--write", nargs="?", const=PAGE, help=f"page (default {PAGE}): replace its reference in place"
  )
  args = parser.parse_args(argv)
  # SIGTERM and SIGHUP after the import end in one line too (the page is
  # written atomically, so a stop leaves it whole).
  return interrupts.run_stoppable("hparams_reference", lambda: _run(args))


def _run(args):
  text = reference_markdown()
  path = args.check or args.write
  if path is None:
    print(text)
    return 0
  flag = "--check" if args.check else "--write"
  try:
    with open(path, encoding="utf-8") as f:
      page = f.read()
  except FileNotFoundError:
    print(f"error: {flag} {path!r} {not_there(path)}; expected the hparams page", file=sys.stderr)
    return exit_codes.BAD_INPUT
  except IsADirectoryError:
    print(f"error: {flag} {path!r} is a directory; expected the hparams page", file=sys.stderr)
    return exit_codes.BAD_INPUT
  except UnicodeDecodeError:
    print(f"error: {flag} {path!r} is not UTF-8 text; expected the hparams page", file=sys.stderr)
    return exit_codes.BAD_INPUT
  current = page_section(page)
  if current is None:
    print(f"{path}: no hparam reference markers ({START!r} … {END!r})", file=sys.stderr)
    return exit_codes.BAD_INPUT
  if args.write:
    if current == text:
      return exit_codes.OK  # up to date: nothing to write
    try:
      check_writable(path, "--write")
      with full_disk_as_bad_input("--write", path):
        write_atomic(path, page.replace(current, text))
    except ValueError as e:
      print(f"error: {e}", file=sys.stderr)
      return exit_codes.BAD_INPUT
  elif current != text:
    print(
      f"{path}: the hparam reference is out of date; run "
      f"python -m electra_tf.hparams_reference --write {path}",
      file=sys.stderr,
    )
    return exit_codes.CHECK_FAILED
  return exit_codes.OK


if __name__ == "__main__":
  sys.exit(main())
