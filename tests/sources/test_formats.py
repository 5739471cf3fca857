"""`formats.detect`: each of the six model formats is told apart by content,
from files this test makes (an official checkpoint and what the converter and
publishing write from it), and anything else is one clear line."""

import shutil

import pytest

from electra_tf.sources import formats
from tests.helpers.model_formats import write_six_formats


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
  """{format: path} of one model in each of the six formats."""
  return write_six_formats(tmp_path_factory.mktemp("formats"))[0]


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
