"""Every `>>>` example in the packages' docstrings (the library, the corpus
tools and the benchmarks) runs and prints what it says (examples that need a
model or data on disk are written as plain usage text instead)."""

import doctest
import importlib
import os
import pkgutil

import pytest

import bench
import electra_tf
import tfrecords_tools


def _has_examples(package, name):
  # The benchmarks' modules import optional extras at the top; only those with
  # examples are imported here, read first as text.
  path = os.path.join(package.__path__[0], *name.split(".")[1:]) + ".py"
  with open(path, encoding="utf-8") as f:
    return ">>> " in f.read()


def _modules():
  names = []
  for package in (electra_tf, tfrecords_tools):
    names += [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
  names += [
    m.name
    for m in pkgutil.iter_modules(bench.__path__, "bench.")
    if not m.ispkg and _has_examples(bench, m.name)
  ]
  return sorted(names)


def _needs_beam(name):
  return name == "tfrecords_tools.beam_pipeline"


@pytest.mark.slow
@pytest.mark.parametrize("module_name", _modules())
def test_docstring_examples_run(module_name, tmp_path, monkeypatch):
  if _needs_beam(module_name):
    pytest.importorskip("apache_beam", reason="the beam extra is not installed")
  monkeypatch.chdir(tmp_path)  # examples write their files into the working directory
  module = importlib.import_module(module_name)
  result = doctest.testmod(
    module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True
  )
  assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"


def test_examples_are_found():
  """Guards the test above against silently finding nothing."""
  from electra_tf.pretraining import positions

  finder = doctest.DocTestFinder()
  assert sum(len(t.examples) for t in finder.find(positions)) >= 2
  assert os.path.basename(positions.__file__) == "positions.py"
  assert {"bench.common", "bench.paper_claim"} <= set(_modules())
