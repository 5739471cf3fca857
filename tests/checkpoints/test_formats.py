"""`formats.detect`: each of the six model formats is told apart by content,
from files this test makes (an official checkpoint and what the converter and
publishing write from it), and anything else is one clear line."""

import json
import shutil

import numpy as np
import pytest

from electra_tf.checkpoints import convert
from electra_tf.checkpoints import formats
from tests.helpers.official_checkpoint_helper import spec_checkpoint_shapes
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint

DIMS = dict(V=50, H=32, L=2, I=64, E=16, Hg=8, Lg=2, Ig=32, P=64)
HPARAMS = json.dumps({"model_hparam_overrides": {"num_attention_heads": 4}})


def _official(directory, extra=None):
  shapes = spec_checkpoint_shapes("default", **DIMS)
  rng = np.random.default_rng(0)
  tensors = {
    n: (n.endswith("/gamma") + 0.1 * rng.normal(size=s)).astype(np.float32)
    for n, s in shapes.items()
  }
  tensors.update(extra or {})
  directory.mkdir()
  write_name_based_checkpoint(directory / "model.ckpt-3", tensors)
  return directory


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
  """{format: path} of one model in each of the six formats."""
  root = tmp_path_factory.mktemp("formats")
  official = _official(root / "official")
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(45)]
  vocab = root / "vocab.txt"
  vocab.write_text("".join(t + "\n" for t in tokens))
  head = {
    "task_specific/rte/classify/dense/kernel": np.zeros([DIMS["H"], 2], np.float32),
    "task_specific/rte/classify/dense/bias": np.zeros([2], np.float32),
  }
  paths = {
    formats.OFFICIAL: official,
    formats.FINETUNED: _official(root / "finetuned", head),
    formats.TRAINING: root / "training",
    formats.KERAS: root / "discriminator.keras",
    formats.HUGGINGFACE: root / "hf",
    formats.KERAS_HUB_PRESET: root / "preset",
  }
  convert.convert(str(official), str(paths[formats.TRAINING]), hparams=HPARAMS)
  convert.convert(str(official), str(paths[formats.KERAS]), part="discriminator", hparams=HPARAMS)
  for target, fmt in (
    ("huggingface", formats.HUGGINGFACE),
    ("keras-hub", formats.KERAS_HUB_PRESET),
  ):
    convert.publish(
      str(official), str(paths[fmt]), to=target, hparams=HPARAMS, vocab_file=str(vocab)
    )
  return {fmt: str(path) for fmt, path in paths.items()}


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_each_format_is_detected_by_content(sources, fmt, tmp_path):
  assert formats.detect(sources[fmt]).format == fmt
  # Names do not decide: the same content under a neutral name is the same format.
  renamed = tmp_path / "model_under_another_name"
  copy = shutil.copytree if fmt != formats.KERAS else shutil.copyfile
  if fmt in (formats.OFFICIAL, formats.FINETUNED, formats.TRAINING):
    copy = shutil.copytree
  copy(sources[fmt], renamed)
  assert formats.detect(str(renamed)).format == fmt


def test_a_checkpoint_prefix_is_its_checkpoint(sources):
  detected = formats.detect(sources[formats.OFFICIAL])
  assert detected.location.endswith("model.ckpt-3")
  assert formats.detect(detected.location).format == formats.OFFICIAL


def test_wrong_format_is_one_line(sources):
  with pytest.raises(ValueError) as e:
    formats.require(sources[formats.HUGGINGFACE], (formats.OFFICIAL, formats.TRAINING))
  message = str(e.value)
  assert "\n" not in message
  assert sources[formats.HUGGINGFACE] in message
  assert "Hugging Face ELECTRA directory" in message and "expected an official" in message


def test_what_is_no_model_says_so(tmp_path):
  readme = tmp_path / "README.keras"
  readme.write_text("# not a model\n")
  empty = tmp_path / "empty_dir"
  empty.mkdir()
  (tmp_path / "other").mkdir()
  (tmp_path / "other" / "config.json").write_text('{"something": 1}')
  cases = {
    str(readme): "is a file but not a model",
    str(empty): "holds no model",
    str(tmp_path / "other"): "holds no model",
    str(tmp_path / "missing"): "does not exist",
  }
  for path, expected in cases.items():
    with pytest.raises(ValueError, match=expected) as e:
      formats.detect(path)
    assert path in str(e.value) and "\n" not in str(e.value)
