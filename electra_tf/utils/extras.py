"""Optional dependencies (pyproject.toml's extras): one import point, so that
every missing extra is reported by one line naming the extra to install.

Example:
  >>> require("json", "test", "the example").dumps([1])
  '[1]'
  >>> try:
  ...   require("no_such_module_xyz", "tfds", "--tfds-name lm1b")
  ... except MissingExtra as e:
  ...   print(e)
  --tfds-name lm1b needs the optional 'tfds' extra (no_such_module_xyz is not installed): pip install 'electra_tf[tfds]'
"""

import importlib


class MissingExtra(ImportError, ValueError):
  """An optional dependency is not installed. Also a `ValueError`, so the
  command lines report it as bad input: one line, exit status 2."""


def require(module, extra, needed_by):
  """Imports and returns `module`, which the optional `extra` installs.

  Args:
    module: the dotted module name to import.
    extra: the extra of pyproject.toml that installs it.
    needed_by: what needs it, as the user asked for it (a flag, an hparam).

  Raises:
    MissingExtra: it (or a module it imports) is not installed; the message
      is one line ending in the `pip install` command.
  """
  try:
    return importlib.import_module(module)
  except ImportError as e:
    missing = e.name or module
    raise MissingExtra(
      f"{needed_by} needs the optional '{extra}' extra ({missing} is not installed): "
      f"pip install 'electra_tf[{extra}]'"
    ) from None
