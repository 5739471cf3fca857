"""Task models as presets in keras-hub's layout: `save_to_preset` /
`from_preset` give back the same model, keras-hub reads the backbone and
tokenizer of what electra_tf writes, a keras-hub backbone preset starts
fine-tuning with its encoder bit-exact, and a wrong preset is one line."""

import os
import shutil

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf.interop import keras_hub as keras_hub_preset
from electra_tf.serving import export as export_lib
from tests.helpers.task_models import TINY_SIZE
from tests.helpers.task_models import pretrained_dir

TEXTS = ["the cat sat on the mat", "a dog ran fast"]


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
  model_dir = str(tmp_path_factory.mktemp("pretrained"))
  pretrained_dir(model_dir)
  return electra_tf.ElectraClassifier.from_checkpoint(
    model_dir, os.path.join(model_dir, "vocab.txt"), num_classes=3, max_seq_length=16, **TINY_SIZE
  )


def _weights(model):
  return {n: np.asarray(v) for n, v in model.official_name_map().items()}


def _assert_same_weights(actual, expected, names=None):
  for name in names or expected:
    np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


def test_task_preset_round_trips_and_keras_hub_reads_its_backbone(classifier, tmp_path):
  preset = str(tmp_path / "preset")
  assert classifier.save_to_preset(preset) == preset
  assert {
    "config.json",
    "metadata.json",
    "model.weights.h5",
    "tokenizer.json",
    "task.json",
    "task.weights.h5",
  } <= set(os.listdir(preset))
  restored = electra_tf.ElectraClassifier.from_preset(preset)
  assert type(restored) is electra_tf.ElectraClassifier
  assert restored.get_config()["num_classes"] == 3
  _assert_same_weights(_weights(restored), _weights(classifier))
  pairs = (tf.constant(TEXTS), tf.constant(TEXTS))
  np.testing.assert_array_equal(restored(pairs), classifier(pairs))
  # keras-hub's own loaders read the backbone and the tokenizer.
  backbone = keras_hub.models.ElectraBackbone.from_preset(preset)
  assert backbone.num_layers == classifier.bert_config["num_hidden_layers"]
  tokenizer = keras_hub.models.ElectraTokenizer.from_preset(preset)
  ours = classifier.preprocessor.tokenizer(tf.constant(TEXTS)).to_list()
  assert [[int(i) for i in row] for row in tokenizer(tf.constant(TEXTS))] == ours
  # The preset is another model for other classes, and is never overwritten.
  with pytest.raises(ValueError, match="holds an ElectraClassifier; load it with") as e:
    electra_tf.ElectraTokenTagger.from_preset(preset)
  assert "\n" not in str(e.value)
  with pytest.raises(
    ValueError, match="^save_to_preset: preset_dir '.*' exists and is not empty"
  ) as e:
    classifier.save_to_preset(preset)
  assert "\n" not in str(e.value)
  # A corrupt task weights file stops with one line.
  broken = str(tmp_path / "broken")
  shutil.copytree(preset, broken)
  with open(os.path.join(broken, "task.weights.h5"), "r+b") as f:
    f.truncate(100)
  with pytest.raises(ValueError, match="task.weights.h5") as e:
    electra_tf.ElectraClassifier.from_preset(broken)
  assert "\n" not in str(e.value)


def test_backbone_preset_starts_fine_tuning_and_has_no_trained_head(classifier, tmp_path):
  """A keras-hub backbone preset (no task.json): every task model starts from
  its encoder, bit-exact; its discriminator has no head, so exporting one
  refuses in one line."""
  preset = str(tmp_path / "backbone")
  encoder = classifier.finetuning_model.encoder
  keras_hub_preset.write_task_preset(None, encoder, classifier.preprocessor.tokenizer, preset)
  assert not os.path.exists(os.path.join(preset, "task.json"))
  expected = _weights(classifier)
  encoder_names = [n for n in expected if n.startswith("electra/")]
  for cls, kwargs in (
    (electra_tf.ElectraClassifier, {"num_classes": 2}),
    (electra_tf.ElectraQuestionAnswerer, {}),
    (electra_tf.ElectraTokenTagger, {"num_tags": 4}),
  ):
    model = cls.from_preset(preset, max_seq_length=16, **kwargs)
    _assert_same_weights(_weights(model), expected, encoder_names)
    assert model.preprocessor.tokenizer.vocabulary == classifier.preprocessor.tokenizer.vocabulary
  assert model(tf.constant(TEXTS)).shape[:2] == (2, 16)
  discriminator, _ = export_lib.load_model(checkpoint=preset, kind="discriminator")
  assert getattr(discriminator, "head", None) is None  # an ElectraBackbone
  with pytest.raises(ValueError, match="has no replaced-token-detection head") as e:
    export_lib.export(
      discriminator, "discriminator", keras_hub_preset.preset_vocab(preset)[0], str(tmp_path / "e")
    )
  assert "\n" not in str(e.value)


def test_export_keeps_keras_contract(classifier, tmp_path):
  with pytest.raises(ValueError, match="export format 'tflite'; expected one of") as e:
    classifier.export(str(tmp_path / "x"), format="tflite")
  assert "\n" not in str(e.value)
  with pytest.raises(ValueError, match="unexpected arguments \\['version'\\]"):
    classifier.export(str(tmp_path / "x"), version=1)
  existing = tmp_path / "exists"
  existing.mkdir()
  with pytest.raises(ValueError, match="already exists; pass overwrite=True"):
    classifier.export(str(existing))
