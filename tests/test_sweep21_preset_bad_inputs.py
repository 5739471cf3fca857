"""Newcomer sweep 21's bad keras-hub presets (bench/reports/newcomer_sweep_21.md):
a preset whose config.json was edited by hand, and one copied without its
tokenizer's vocabulary (the rest: test_sweep21_bad_inputs.py)."""

import json
import os
import re
import shutil

import pytest

import electra_tf
from electra_tf import convert_checkpoint
from electra_tf.interop import keras_hub
from electra_tf.models.electra_backbone import ElectraBackbone
from electra_tf.sources import any_format
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.bad_inputs import one_line

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(25)]


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
  """A backbone preset (2 layers, hidden 16, embeddings 8) as `save_to_preset` writes it."""
  encoder = ElectraBackbone(dict(TINY_ENCODER, num_hidden_layers=2), embedding_size=8)
  encoder.build()
  path = str(tmp_path_factory.mktemp("presets") / "preset")
  return keras_hub.write_task_preset(None, encoder, ElectraTokenizer(vocabulary=VOCAB), path)


def _edited(preset, tmp_path, name, **changes):
  path = tmp_path / name
  shutil.copytree(preset, path)
  content = json.loads((path / "config.json").read_text())
  content["config"].update(changes)
  (path / "config.json").write_text(json.dumps(content))
  return str(path)


def test_an_edited_preset_config_is_named_not_its_weights(preset, tmp_path, capsys, recwarn):
  """hidden_dim or num_layers edited in config.json: after Keras warnings that
  blamed the Keras version, the error blamed model.weights.h5, cut off at
  "Example error message for object <Dense ...>:"; fewer layers loaded
  silently (the file's last layers dropped)."""
  hidden = _edited(preset, tmp_path, "hidden", hidden_dim=32)
  argv = ["--input", hidden, "--output", str(tmp_path / "enc.keras"), "--part", "discriminator"]
  assert convert_checkpoint.main(argv) == 2
  config, weights = os.path.join(hidden, "config.json"), os.path.join(hidden, "model.weights.h5")
  err = one_line(capsys)
  assert f"{weights!r} does not fit the model {config!r} builds (was config.json edited?): " in err
  assert not [w for w in recwarn if "Keras version" in str(w.message)]
  for layers in (3, 1):
    path = _edited(preset, tmp_path, f"layers{layers}", num_layers=layers)
    with pytest.raises(ValueError, match="was config.json edited") as e:
      any_format.load(path, "discriminator")
    if layers == 1:  # Keras loaded the first layer and dropped the file's second silently
      stored, built = re.search(
        r"holds (\d+) variables, the config's model (\d+)$", str(e.value)
      ).groups()
      assert int(stored) > int(built)
  assert not [w for w in recwarn if "Keras version" in str(w.message)]


def test_a_preset_without_its_vocabulary_is_named(preset, tmp_path):
  """A preset copied without assets/tokenizer/vocabulary.txt: from_checkpoint
  said it had "no electra_tf config.json recording its vocab"; the intact
  preset still loads."""
  intact = electra_tf.ElectraClassifier.from_checkpoint(preset, num_classes=2, max_seq_length=16)
  assert intact.predict(["w1 w2"], verbose=0).shape == (1, 2)
  copy = tmp_path / "copy"
  shutil.copytree(preset, copy)
  (copy / "assets" / "tokenizer" / "vocabulary.txt").unlink()
  expected = (
    f"{str(copy / 'assets' / 'tokenizer' / 'vocabulary.txt')!r} is missing: the keras-hub "
    f"preset {str(copy)!r} has no vocabulary (copied without its assets/?)"
  )
  for load in (
    lambda: electra_tf.ElectraClassifier.from_checkpoint(
      str(copy), num_classes=2, max_seq_length=16
    ),
    lambda: electra_tf.ElectraClassifier.from_preset(str(copy), num_classes=2),
  ):
    with pytest.raises(ValueError) as e:
      load()
    assert str(e.value) == expected
  # A vocab of one's own still loads it.
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join(t + "\n" for t in VOCAB))
  model = electra_tf.ElectraClassifier.from_checkpoint(
    str(copy), num_classes=2, max_seq_length=16, vocab_file=str(vocab)
  )
  assert model.predict(["w1 w2"], verbose=0).shape == (1, 2)


def test_a_preset_of_a_tokenizer_built_from_a_vocab_file_is_written(tmp_path):
  """`write_task_preset` with `ElectraTokenizer(vocab_file=...)` failed in
  `list(None)` (only a `vocabulary=` tokenizer worked)."""
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join(t + "\n" for t in VOCAB))
  encoder = ElectraBackbone(TINY_ENCODER, embedding_size=8)
  encoder.build()
  tokenizer = ElectraTokenizer(vocab_file=str(vocab))
  path = keras_hub.write_task_preset(None, encoder, tokenizer, str(tmp_path / "preset"))
  assert keras_hub.preset_vocab(path)[0].endswith("vocabulary.txt")
  with open(keras_hub.preset_vocab(path)[0], encoding="utf-8") as f:
    assert f.read().split() == VOCAB
