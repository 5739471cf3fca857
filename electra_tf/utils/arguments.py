"""Checks of Python API arguments that a truthy value would silently turn
into something else (`overwrite="no"` replaces an export)."""

import numpy as np


def check_bools(**values):
  """A one-line ValueError naming the first argument that is not True or
  False (a NumPy bool counts).

  Example:
  >>> check_bools(overwrite=False, jit_compile=True)
  >>> check_bools(overwrite="no")
  Traceback (most recent call last):
  ...
  ValueError: overwrite='no'; expected True or False
  """
  for name, value in values.items():
    if not isinstance(value, (bool, np.bool_)):
      raise ValueError(f"{name}={value!r}; expected True or False")
