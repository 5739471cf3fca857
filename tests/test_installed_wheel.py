"""The built wheel, installed alone into a fresh venv, works without the
repository: every command's `--help` (through the console scripts' entry
points), a preset by name and by the docs' `configs/` path, and a tiny
end-to-end run through the installed scripts (vocab -> records -> 5 steps of
pre-training -> SavedModel export -> loading it).

No network: the wheel is built with `pip wheel --no-build-isolation` from a
copy of the package sources, and the fresh venv sees this venv's
site-packages (TensorFlow and the other dependencies) through one `.pth`
line. The `.pth` files inside that directory are not processed, so this
venv's editable install of electra_tf is not importable there; the tests
check that `electra_tf` comes from the installed wheel. Every command runs
with a temporary directory as its working directory.
"""

import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import sysconfig
import tomllib

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

# What the wheel is built from: the sources, the metadata and the licence files.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "NOTICE", "electra_tf", "tfrecords_tools")
SCRIPTS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
# A TensorFlow start-up takes long on a loaded machine.
TIMEOUT = 900

# Run by the fresh venv's python: where the packages come from, the presets,
# the dist-info, and each console script's entry point called with --help.
_CHECKS = """
import contextlib, importlib.metadata, importlib.resources, io, json, sys
import electra_tf, tfrecords_tools
from electra_tf.hparams_input import load_hparams

dist = importlib.metadata.distribution("electra_tf")
helps = {}
for ep in dist.entry_points:
  if ep.group == "console_scripts":
    main = ep.load()
    sys.argv = [ep.name, "--help"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      try:
        status = main()
      except SystemExit as e:
        status = e.code
    helps[ep.name] = {"value": ep.value, "status": status, "stdout": out.getvalue()}
print(json.dumps({
  "sys_path": sys.path,
  "modules": [electra_tf.__file__, tfrecords_tools.__file__],
  "presets": str(importlib.resources.files("electra_tf.configs").joinpath("presets")),
  "dist_files": sorted(str(f) for f in dist.files),
  "by_name": load_hparams("small++"),
  "by_docs_path": load_hparams("configs/base.json"),
  "helps": helps,
}))
"""

_LOAD = """
import json, sys
import tensorflow as tf
import electra_tf
from electra_tf import serving

model = serving.load(sys.argv[1])
out = model.signatures["serving_default"](
  text_a=tf.constant(["the generator replaced a token .", "which token was replaced"]),
  text_b=tf.constant(["", "the discriminator learns"]),
)
print(json.dumps({"module": electra_tf.__file__, "shapes": {k: v.shape.as_list() for k, v in out.items()},
                  "rtd_probs": out["rtd_probs"].numpy().tolist()}))
"""


class FreshVenv:
  """A venv with only the built wheel installed, and a working directory outside the repo."""

  def __init__(self, root):
    self.root = root
    self.work = root / "work"
    self.work.mkdir()
    self.python = root / "venv" / "bin" / "python"
    self.env = {
      k: v
      for k, v in os.environ.items()
      if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    }
    self.env.update(
      PATH=f"{root / 'venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
      PYTHONNOUSERSITE="1",
      TF_CPP_MIN_LOG_LEVEL="3",
      CUDA_VISIBLE_DEVICES="",
    )

  def run(self, argv, what):
    result = subprocess.run(
      [str(a) for a in argv],
      cwd=self.work,
      env=self.env,
      capture_output=True,
      text=True,
      timeout=TIMEOUT,
    )
    assert result.returncode == 0, (
      f"{what}: exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result

  def script(self, name, *args):
    return self.run([self.root / "venv" / "bin" / name, *args], name)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
  root = tmp_path_factory.mktemp("installed_wheel")
  source = root / "source"
  source.mkdir()
  for name in SOURCES:
    path = REPO_ROOT / name
    if path.is_dir():
      shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    else:
      shutil.copy2(path, source / name)
  build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
  build += ["--no-index", "--disable-pip-version-check", "-q", "-w", root / "dist", source]
  fresh = FreshVenv(root)
  fresh.run(build, "pip wheel")
  (wheel,) = (root / "dist").glob("electra_tf-*.whl")
  fresh.run([sys.executable, "-m", "venv", "--without-pip", root / "venv"], "python -m venv")
  site_packages = pathlib.Path(
    fresh.run(
      [fresh.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], "venv"
    ).stdout.strip()
  )
  # This venv's dependencies; its own .pth files (the editable electra_tf) stay unprocessed.
  (site_packages / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
  # The fresh venv's python runs pip (importable through that line), so it
  # installs into the fresh venv and the scripts start the fresh python;
  # --ignore-installed: the editable electra_tf it sees is not to be removed.
  install = [fresh.python, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed"]
  fresh.run(install + ["--disable-pip-version-check", "-q", wheel], "pip install")
  fresh.site_packages = site_packages
  return fresh


def test_the_wheel_alone_gives_the_commands_presets_and_licence(venv):
  checks = json.loads(venv.run([venv.python, "-c", _CHECKS], "checks").stdout.splitlines()[-1])
  site = str(venv.site_packages)
  for module in checks["modules"]:
    assert module.startswith(site + os.sep), f"{module} is not the installed wheel's copy"
  assert str(REPO_ROOT) not in checks["sys_path"], checks["sys_path"]
  assert checks["presets"].startswith(site)
  dist_info = [f for f in checks["dist_files"] if ".dist-info/" in f]
  assert {pathlib.PurePath(f).name for f in dist_info} >= {"LICENSE", "NOTICE", "entry_points.txt"}
  for name in ("small", "small++", "base", "large", "debug"):
    assert f"electra_tf/configs/presets/{name}.json" in checks["dist_files"], name
  # A preset by name and by the docs' path, in a working directory without configs/.
  assert not (venv.work / "configs").exists()
  assert checks["by_name"] == json.loads((REPO_ROOT / "configs" / "small++.json").read_text())
  assert checks["by_docs_path"] == json.loads((REPO_ROOT / "configs" / "base.json").read_text())
  # Every console script of pyproject.toml: installed, on the fresh python, and its --help helps.
  assert {n: h["value"] for n, h in checks["helps"].items()} == SCRIPTS
  for name, help_ in checks["helps"].items():
    assert help_["status"] == 0 and help_["stdout"].startswith("usage: "), (name, help_)
    first_line = (venv.root / "venv" / "bin" / name).read_text().splitlines()[0]
    assert first_line == f"#!{venv.python}", (name, first_line)
  assert (
    "small++" in checks["helps"]["electra-run-pretraining"]["stdout"]
  )  # --hparams lists presets


def test_tiny_end_to_end_through_the_installed_scripts(venv):
  rng = random.Random(0)
  words = (
    "the a small masked language model generator replaces tokens and a discriminator learns "
    "which tokens of the input text were replaced while pre training on every position"
  ).split()
  corpus = venv.work / "corpus"
  corpus.mkdir()
  (venv.work / "data").mkdir()
  for part in range(2):
    docs = [
      "\n".join(
        " ".join(rng.choice(words) for _ in range(rng.randint(6, 14))) + "."
        for _ in range(rng.randint(3, 6))
      )
      for _ in range(40)
    ]
    (corpus / f"part{part}.txt").write_text("\n\n".join(docs) + "\n")
  venv.script(
    "electra-build-vocab",
    "--corpus-dir",
    "corpus",
    "--vocab-size",
    "160",
    "--output",
    "data/vocab.txt",
  )
  vocab_size = len((venv.work / "data" / "vocab.txt").read_text().splitlines())
  venv.script(
    "electra-build-pretraining-dataset",
    *["--corpus-dir", "corpus", "--vocab-file", "data/vocab.txt"],
    *["--output-dir", "data/pretrain_tfrecords", "--max-seq-length", "32"],
    *["--num-processes", "1", "--num-out-files", "1"],
  )
  hparams = {
    "model_size": "small",
    "vocab_size": vocab_size,
    "embedding_size": 16,
    "max_seq_length": 32,
    "model_hparam_overrides": {
      "hidden_size": 32,
      "num_hidden_layers": 1,
      "num_attention_heads": 2,
      "intermediate_size": 64,
    },
    "train_batch_size": 4,
    "num_train_steps": 5,
    "num_warmup_steps": 2,
    "save_checkpoints_steps": 5,
  }
  (venv.work / "hparams.json").write_text(json.dumps(hparams))
  venv.script(
    "electra-run-pretraining",
    "--data-dir",
    "data",
    "--model-name",
    "tiny",
    "--hparams",
    "hparams.json",
  )
  assert (venv.work / "data" / "models" / "tiny" / "model.ckpt-5.index").exists()
  venv.script(
    "electra-export-saved-model", "--checkpoint", "data/models/tiny", "--export-dir", "export"
  )
  loaded = json.loads(
    venv.run([venv.python, "-c", _LOAD, "export/1"], "load").stdout.splitlines()[-1]
  )
  assert loaded["module"].startswith(str(venv.site_packages) + os.sep)
  assert loaded["shapes"]["rtd_probs"] == [2, 32]
  assert loaded["shapes"]["sequence_output"] == [2, 32, 32]
  probs = [p for row in loaded["rtd_probs"] for p in row]
  assert all(0.0 <= p <= 1.0 for p in probs) and len(set(probs)) > 1
