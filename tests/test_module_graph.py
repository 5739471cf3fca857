"""The package's shape: no import cycles, every module imports on its own,
library packages never import the corpus builders, and entry points stay thin."""

import ast
import importlib.util
import pathlib

from tests.conftest import REPO_ROOT
from tests.helpers.subprocesses import run_python

PACKAGES = ("electra_tf", "tfrecords_tools")
# `python -m electra_tf.<name>` commands: the only electra_tf modules that may
# import tfrecords_tools (the builders sit between the library and the CLIs).
ENTRY_POINTS = {
  "electra_tf.build_pretraining_dataset",
  "electra_tf.convert_checkpoint",
  "electra_tf.demo",
  "electra_tf.export_saved_model",
  "electra_tf.flops_computation",
  "electra_tf.hparams_reference",
  "electra_tf.run_finetuning",
  "electra_tf.run_pretraining",
}
# Modules that need an optional extra: {module: the package it needs}.
OPTIONAL_EXTRAS = {"tfrecords_tools.beam_pipeline": "apache_beam"}


def module_files():
  """{dotted module name: path} of every module of the two packages."""
  modules = {}
  for package in PACKAGES:
    for path in sorted((REPO_ROOT / package).rglob("*.py")):
      parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
      if parts[-1] == "__init__":
        parts = parts[:-1]
      modules[".".join(parts)] = path
  return modules


def imported_modules(path, modules):
  """Project modules that `path` imports anywhere (module level or inside a
  function), resolved to the longest known module name."""
  found = set()
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    names = []
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
    for name in names:
      parts = name.split(".")
      while parts and ".".join(parts) not in modules:
        parts.pop()
      if parts:
        found.add(".".join(parts))
  return found


def import_graph():
  modules = module_files()
  graph = {}
  for name, path in modules.items():
    # A package's __init__ importing its own submodules is not a cycle.
    graph[name] = {
      m for m in imported_modules(path, modules) if m != name and not m.startswith(name + ".")
    }
  return graph


def find_cycle(graph):
  """One import cycle as a list of modules, or None."""
  state = {}
  stack = []

  def visit(node):
    state[node] = "open"
    stack.append(node)
    for nxt in sorted(graph[node]):
      if state.get(nxt) == "open":
        return stack[stack.index(nxt) :] + [nxt]
      if nxt not in state:
        cycle = visit(nxt)
        if cycle:
          return cycle
    stack.pop()
    state[node] = "done"
    return None

  for node in sorted(graph):
    if node not in state:
      cycle = visit(node)
      if cycle:
        return cycle
  return None


def test_find_cycle_reports_a_cycle():
  assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
  assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles():
  cycle = find_cycle(import_graph())
  assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_library_does_not_import_the_corpus_builders():
  offenders = {
    name: sorted(m for m in deps if m.startswith("tfrecords_tools"))
    for name, deps in import_graph().items()
    if name.startswith("electra_tf") and name not in ENTRY_POINTS
  }
  offenders = {k: v for k, v in offenders.items() if v}
  assert not offenders, f"electra_tf library modules importing tfrecords_tools: {offenders}"


def test_entry_points_are_thin():
  """The `python -m` modules parse flags and call the library; the work
  lives in the packages."""
  modules = module_files()
  sizes = {name: len(modules[name].read_text().splitlines()) for name in ENTRY_POINTS}
  too_long = {name: n for name, n in sizes.items() if n > 200 and name != "electra_tf.demo"}
  assert not too_long, f"entry points over 200 lines: {too_long}"


def test_every_module_imports_on_its_own():
  """Imports each module into a fresh `sys.modules` (third-party packages stay
  loaded, so this is fast): a module that only works after another module of
  the project was imported first fails here."""
  names = sorted(module_files())
  # Modules of optional extras import only where the extra is installed.
  names = [
    n for n in names if n not in OPTIONAL_EXTRAS or importlib.util.find_spec(OPTIONAL_EXTRAS[n])
  ]
  script = (
    "import sys, importlib, traceback\n"
    "import numpy, tensorflow, keras, tensorflow_text  # third-party: load once\n"
    "failed = []\n"
    f"for name in {names!r}:\n"
    "  for m in [m for m in sys.modules if m.split('.')[0] in ('electra_tf', 'tfrecords_tools')]:\n"
    "    del sys.modules[m]\n"
    "  try:\n"
    "    importlib.import_module(name)\n"
    "  except Exception:\n"
    "    failed.append(name + ': ' + traceback.format_exc().splitlines()[-1])\n"
    "print('\\n'.join(failed))\n"
    "sys.exit(1 if failed else 0)\n"
  )
  result = run_python(["-c", script])
  assert result.returncode == 0, result.stdout + result.stderr[-3000:]


def test_tests_mirror_the_packages():
  """Each electra_tf package with tests has them under tests/<package>/."""
  tests_root = pathlib.Path(__file__).parent
  for package in (
    "configs",
    "text",
    "data",
    "layers",
    "models",
    "pretraining",
    "optimization",
    "training",
    "checkpoints",
    "finetune",
    "serving",
    "utils",
  ):
    assert (REPO_ROOT / "electra_tf" / package / "__init__.py").exists(), package
    assert list((tests_root / package).glob("test_*.py")), f"no tests under tests/{package}/"


def test_importing_the_package_does_not_start_tensorflow():
  """No eager op at import time: MultiWorkerMirroredStrategy must be created
  before TensorFlow's context starts ("Collective ops must be configured at
  program startup")."""
  script = (
    "import tensorflow\n"
    "from tensorflow.python.eager import context\n"
    "import electra_tf, electra_tf.training.pretraining_run, electra_tf.finetune.runner\n"
    "import electra_tf.serving.export, electra_tf.checkpoints.convert\n"
    "assert context.context()._context_handle is None, 'importing electra_tf started TF'\n"
  )
  result = run_python(["-c", script])
  assert result.returncode == 0, result.stderr[-3000:]
