"""The package's shape: rooms stacked in floors with every import pointing
down, no import cycles, few function-level imports (each with its reason),
every module imports on its own, library packages never import the corpus
builders, and entry points stay thin."""

import ast
import importlib.util
import pathlib

import pytest

from tests.conftest import REPO_ROOT
from tests.helpers.subprocesses import run_python

PACKAGES = ("electra_tf", "tfrecords_tools")
# A room is a direct child of electra_tf/ (a sub-package or a module), or
# tfrecords_tools/ or bench/. Floors, bottom first: a room imports only rooms
# on lower floors (never one on its own floor or above), at module or function
# level. docs/architecture.md explains what goes where.
FLOORS = (
  ("electra_tf.utils",),
  ("electra_tf.text", "electra_tf.data", "electra_tf.optimization"),
  ("electra_tf.configs",),
  ("electra_tf.runtime", "electra_tf.hparams_input"),
  ("electra_tf.layers", "electra_tf.pretraining"),
  ("electra_tf.models",),
  ("electra_tf.finetune",),
  ("electra_tf.checkpoints", "electra_tf.interop"),
  ("electra_tf.sources",),
  ("electra_tf.convert",),
  ("electra_tf.training",),
  ("electra_tf.serving",),
  ("electra_tf.task_models",),
  ("electra_tf",),  # the package's __init__: its public names
  ("tfrecords_tools",),
  (
    "electra_tf.build_pretraining_dataset",
    "electra_tf.convert_checkpoint",
    "electra_tf.export_saved_model",
    "electra_tf.flops_computation",
    "electra_tf.hparams_reference",
    "electra_tf.run_finetuning",
    "electra_tf.run_pretraining",
  ),
  ("electra_tf.demo",),
  ("bench",),
)
# Function-level imports of the project's own modules allowed in electra_tf/
# and tfrecords_tools/: only those deferring a heavy optional dependency,
# each with its reason in a comment on the line.
MAX_FUNCTION_LEVEL_IMPORTS = 9
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


def module_files(packages=PACKAGES):
  """{dotted module name: path} of every module of `packages`."""
  modules = {}
  for package in packages:
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


def import_graph(packages=PACKAGES):
  modules = module_files(packages)
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


def room_of(module):
  """The room of a dotted module name: `electra_tf.<child>`, `electra_tf`
  (the package's __init__), `tfrecords_tools` or `bench`."""
  parts = module.split(".")
  return ".".join(parts[:2]) if parts[0] == "electra_tf" and len(parts) > 1 else parts[0]


def floor_of():
  return {room: level for level, rooms in enumerate(FLOORS) for room in rooms}


def upward_imports(graph, floors):
  """`[(module, imported module)]` whose room is not on a lower floor than the
  importer's room (a package's __init__ may import its own submodules)."""
  bad = []
  for module, deps in sorted(graph.items()):
    room = room_of(module)
    for dep in sorted(deps):
      dep_room = room_of(dep)
      if dep_room == room:
        continue
      if room == "electra_tf" or floors[dep_room] >= floors[room]:
        if room == "electra_tf" and floors[dep_room] < floors[room]:
          continue
        bad.append((module, dep))
  return bad


def test_every_room_has_a_floor():
  rooms = {room_of(m) for m in module_files(PACKAGES + ("bench",))}
  floors = floor_of()
  assert rooms == set(floors), (
    f"rooms without a floor: {sorted(rooms - set(floors))}; "
    f"floors naming no room: {sorted(set(floors) - rooms)}"
  )


def test_upward_imports_are_found():
  floors = {"a": 0, "b": 1, "c": 1}
  graph = {"a.x": {"b.y"}, "b.y": {"a.x", "b.z"}, "b.z": set(), "c.w": {"b.y"}}
  assert upward_imports(graph, floors) == [("a.x", "b.y"), ("c.w", "b.y")]


def test_imports_only_point_down():
  """Every import, at module or function level, reaches a room on a lower
  floor; this also rules out cycles between rooms."""
  bad = upward_imports(import_graph(PACKAGES + ("bench",)), floor_of())
  floors = floor_of()
  assert not bad, "imports that do not point down the floors:\n" + "\n".join(
    f"  {m} (floor {floors[room_of(m)]}) imports {d} (floor {floors[room_of(d)]})" for m, d in bad
  )


def function_level_imports():
  """`[(module, line, source line)]`: imports of the project's own modules
  inside functions, in electra_tf/ and tfrecords_tools/."""
  modules = module_files()
  found = []
  for name, path in modules.items():
    text = path.read_text()
    lines = text.splitlines()
    for node in ast.walk(ast.parse(text, str(path))):
      if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        continue
      for sub in ast.walk(node):
        if isinstance(sub, ast.Import):
          targets = [alias.name for alias in sub.names]
        elif isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
          targets = [sub.module]
        else:
          continue
        if any(t.split(".")[0] in PACKAGES for t in targets):
          found.append((name, sub.lineno, lines[sub.lineno - 1].strip()))
  return found


def test_function_level_imports_are_few_and_explained():
  found = function_level_imports()
  listing = "\n".join(f"  {m}:{line}: {src}" for m, line, src in found)
  assert len(found) <= MAX_FUNCTION_LEVEL_IMPORTS, (
    f"{len(found)} function-level imports:\n{listing}"
  )
  unexplained = [
    (m, line, src)
    for m, line, src in found
    if "#" not in src or src.split("#", 1)[1].strip().startswith(("pylint", "noqa"))
  ]
  assert not unexplained, "function-level imports without a reason on the line:\n" + "\n".join(
    f"  {m}:{line}: {src}" for m, line, src in unexplained
  )


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


@pytest.mark.slow
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
    "runtime",
    "text",
    "data",
    "layers",
    "models",
    "pretraining",
    "optimization",
    "training",
    "checkpoints",
    "sources",
    "interop",
    "convert",
    "finetune",
    "serving",
    "task_models",
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
    "import electra_tf, electra_tf.training.pretraining_run, electra_tf.training.finetuning_run\n"
    "import electra_tf.serving.export, electra_tf.convert\n"
    "assert context.context()._context_handle is None, 'importing electra_tf started TF'\n"
  )
  result = run_python(["-c", script])
  assert result.returncode == 0, result.stderr[-3000:]


def test_import_electra_tf_loads_no_keras_hub_or_kagglesdk_module():
  """keras_hub (and the kagglesdk it pulls in, ~900 modules) is loaded when a
  keras-hub feature is used, not by `import electra_tf`: every builder and
  Beam worker imports the package."""
  import subprocess
  import sys

  code = (
    "import sys, electra_tf; "
    "print(sorted(m for m in sys.modules if m.split('.')[0] in ('keras_hub', 'kagglesdk'))[:5])"
  )
  result = subprocess.run(
    [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
  )
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(
  "package",
  [
    "electra_tf",
    "electra_tf.layers",
    "electra_tf.models",
    "electra_tf.serving",
    "electra_tf.text",
  ],
)
def test_public_packages_say_what_they_export(package):
  """Each package users import lists its public names in `__all__`: every
  name is there, and `from package import *` gives exactly those."""
  import importlib

  module = importlib.import_module(package)
  assert [name for name in module.__all__ if not hasattr(module, name)] == []
  namespace = {}
  exec(f"from {package} import *", namespace)  # noqa: S102
  assert sorted(k for k in namespace if k != "__builtins__") == sorted(module.__all__)
