"""`ElectraClassifier`: raw text in, the original's head and names, `.keras`
round trip, SavedModel export, and the README example run as written."""

import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf.checkpoints import finetuned as checkpoint_io
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.model import FinetuningModel
from electra_tf.text import wordpiece
from tests.conftest import REPO_ROOT
from tests.helpers.finetuning_testdata import write_vocab

TINY = {
  "hidden_size": 16,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 32,
}
PREMISES = ["the cat sat on the mat", "a dog ran fast", "it was a great film", "the movie is awful"]
HYPOTHESES = ["a cat is on a mat", "a dog is slow", "the film was good", "the movie is great"]
LABELS = [0, 2, 0, 2]


def _pretrained_dir(tmp_path, model_size="base", overrides=TINY, embedding_size=8):
  """A name-based checkpoint of an encoder (what the original releases)."""
  model_dir = tmp_path / "pretrained"
  model_dir.mkdir()
  vocab_size = write_vocab(str(model_dir / "vocab.txt"))
  classifier = electra_tf.ElectraClassifier(
    dict(electra_tf.get_bert_config(_Size(model_size, vocab_size, overrides)).to_dict()),
    3,
    embedding_size=embedding_size,
  )
  classifier.build()
  names = {n: v for n, v in classifier.official_name_map().items() if n.startswith("electra/")}
  checkpoint_io.save_name_based(names, str(model_dir), 0)
  return str(model_dir), names


class _Size:
  def __init__(self, model_size, vocab_size, overrides):
    self.model_size = model_size
    self.vocab_size = vocab_size
    self.model_hparam_overrides = overrides


def test_classifier_from_checkpoint_fits_predicts_saves_and_exports(tmp_path):
  model_dir, names = _pretrained_dir(tmp_path)
  classifier = electra_tf.ElectraClassifier.from_checkpoint(
    model_dir,
    vocab_file=os.path.join(model_dir, "vocab.txt"),
    num_classes=3,
    model_size="base",
    embedding_size=8,
    model_hparam_overrides=TINY,
    max_seq_length=16,
  )
  loaded = classifier.official_name_map()
  for name, variable in names.items():
    np.testing.assert_array_equal(loaded[name].numpy(), variable.numpy())
  assert "task_specific/classifier/dense/kernel" in loaded
  # The in-model preprocessor packs pairs exactly as the original featuriser.
  tokenizer = wordpiece.FullTokenizer(os.path.join(model_dir, "vocab.txt"))
  packed = classifier.preprocessor((tf.constant(PREMISES[:1]), tf.constant(HYPOTHESES[:1])))
  a, b = (
    tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in (PREMISES[0], HYPOTHESES[0])
  )
  expected = [5] + a + [6] + b + [6]
  assert packed["input_ids"].numpy()[0, : len(expected)].tolist() == expected
  assert packed["segment_ids"].numpy()[0].tolist() == [0] * (len(a) + 2) + [1] * (len(b) + 1) + [
    0
  ] * (16 - len(expected))

  dataset = tf.data.Dataset.from_tensor_slices(((PREMISES, HYPOTHESES), LABELS)).batch(2)
  classifier.compile(num_train_steps=40, learning_rate=3e-3, layerwise_lr_decay=0.0)
  history = classifier.fit(dataset.repeat(), epochs=2, steps_per_epoch=20, verbose=0)
  assert history.history["loss"][-1] < history.history["loss"][0]
  logits = classifier.predict((PREMISES, HYPOTHESES), batch_size=2, verbose=0)
  assert logits.shape == (4, 3) and logits.dtype == np.float32
  assert np.argmax(logits, -1).tolist() == LABELS

  path = str(tmp_path / "clf.keras")
  classifier.save(path)
  restored = keras.saving.load_model(path)
  assert isinstance(restored, electra_tf.ElectraClassifier)
  assert restored.get_config()["num_classes"] == 3
  np.testing.assert_allclose(
    restored.predict((PREMISES, HYPOTHESES), verbose=0), logits, rtol=1e-5, atol=1e-5
  )
  # run_finetuning's loader takes the .keras file as init_checkpoint.
  model = FinetuningModel(
    dict(classifier.bert_config), [ClassificationHead("classifier", 3)], embedding_size=8
  )
  model.build()
  assert "electra/encoder/layer_1/output/dense/kernel" in checkpoint_io.load_pretrained(model, path)

  version_dir = classifier.export(str(tmp_path / "serving"))
  script = (
    "import json, sys, tensorflow as tf, tensorflow_text  # registers the tokenizer ops\n"
    f"m = tf.saved_model.load({version_dir!r})\n"
    "out = m.signatures['serving_default'](text_a=tf.constant(json.loads(sys.argv[1])),"
    " text_b=tf.constant(json.loads(sys.argv[2])))\n"
    "print(json.dumps(out['logits'].numpy().tolist()))\n"
  )
  result = subprocess.run(
    [sys.executable, "-c", script, json.dumps(PREMISES), json.dumps(HYPOTHESES)],
    capture_output=True,
    text=True,
    env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    timeout=300,
  )
  assert result.returncode == 0, result.stderr[-2000:]
  served = np.array(json.loads(result.stdout.strip().splitlines()[-1]))
  np.testing.assert_allclose(served, logits, rtol=1e-4, atol=1e-4)


def test_compile_needs_the_schedule_horizon(tmp_path):
  model_dir, _ = _pretrained_dir(tmp_path)
  classifier = electra_tf.ElectraClassifier.from_checkpoint(
    model_dir, os.path.join(model_dir, "vocab.txt"), 2, "base", 8, TINY, 16
  )
  with pytest.raises(ValueError, match="num_train_steps"):
    classifier.compile()


def _readme_example():
  readme = (REPO_ROOT / "README.md").read_text()
  match = re.search(r"<!-- example:classifier -->\n```python\n(.*?)```", readme, re.S)
  assert match, "README lacks the ElectraClassifier example"
  return match.group(1)


@pytest.mark.slow
def test_readme_classifier_example_runs_as_written(tmp_path):
  # The README starts from data/models/electra_small (a released ELECTRA-Small).
  model_dir = tmp_path / "data" / "models" / "electra_small"
  model_dir.mkdir(parents=True)
  vocab_size = write_vocab(str(model_dir / "vocab.txt"))
  encoder = electra_tf.ElectraClassifier(
    electra_tf.get_bert_config(_Size("small", vocab_size, {})).to_dict(), 3, embedding_size=128
  )
  encoder.build()
  checkpoint_io.save_name_based(
    {n: v for n, v in encoder.official_name_map().items() if n.startswith("electra/")},
    str(model_dir),
    0,
  )
  result = subprocess.run(
    [sys.executable, "-c", _readme_example()],
    cwd=tmp_path,
    capture_output=True,
    text=True,
    env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(REPO_ROOT)},
    timeout=900,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert (tmp_path / "mnli.keras").exists()
  assert (tmp_path / "serving" / "mnli" / "1" / "saved_model.pb").exists()
