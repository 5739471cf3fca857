"""The packaged hparam presets: by name, by the docs' `configs/<name>.json`
path from any directory, and a local file winning over the packaged one."""

import json
import pathlib

import pytest

from electra_tf import hparams_input
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.hparams_input import load_hparams

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_checkout_preset_is_packaged_and_builds_a_config(tmp_path):
  checkout = sorted(p.stem for p in (REPO_ROOT / "configs").glob("*.json"))
  assert hparams_input.preset_names() == checkout
  assert {"small", "small++", "base", "large", "debug"} <= set(checkout)
  for name in checkout:
    values = load_hparams(name)
    assert values == json.loads((REPO_ROOT / "configs" / f"{name}.json").read_text()), name
    PretrainingConfig("m", str(tmp_path), **values)  # strict: every key is an hparam


def test_docs_path_finds_the_packaged_preset_outside_a_checkout(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  assert load_hparams("configs/small++.json")["generator_hidden_size"] == 1.0
  assert load_hparams("./configs/base.json")["model_size"] == "base"
  # A file of that name in the working directory is the one read.
  (tmp_path / "configs").mkdir()
  (tmp_path / "configs" / "small.json").write_text('{"learning_rate": 0.1}')
  assert load_hparams("configs/small.json") == {"learning_rate": 0.1}
  assert load_hparams("small")["learning_rate"] == 5e-4


def test_an_unknown_name_lists_the_presets(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  with pytest.raises(ValueError, match=r"preset name \(base, debug, large, small, small\+\+\)"):
    load_hparams("smal")
  with pytest.raises(ValueError, match="'configs/smal.json' does not exist"):
    load_hparams("configs/smal.json")
  with pytest.raises(ValueError, match="no preset 'huge'"):
    hparams_input.load_preset("huge")
