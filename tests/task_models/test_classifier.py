"""`ElectraClassifier`: raw text in, the original's head and names, `.keras`
round trip, SavedModel export, and the docs/finetune.md example run as written."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.model import FinetuningModel
from electra_tf.sources import any_format
from electra_tf.text import wordpiece
from tests.helpers.task_models import TINY
from tests.helpers.task_models import TINY_SIZE
from tests.helpers.task_models import assert_encoder_loaded
from tests.helpers.task_models import pretrained_dir
from tests.helpers.task_models import serve_text
from tests.helpers.task_models import write_vocab

PREMISES = ["the cat sat on the mat", "a dog ran fast", "it was a great film", "the movie is awful"]
HYPOTHESES = ["a cat is on a mat", "a dog is slow", "the film was good", "the movie is great"]
LABELS = [0, 2, 0, 2]


@pytest.mark.slow
def test_classifier_from_checkpoint_fits_predicts_saves_and_exports(tmp_path):
  keras.utils.set_random_seed(0)  # head and dropout draws independent of earlier tests
  model_dir = str(tmp_path / "pretrained")
  names = pretrained_dir(model_dir)
  classifier = electra_tf.ElectraClassifier.from_checkpoint(
    model_dir,
    vocab_file=os.path.join(model_dir, "vocab.txt"),
    num_classes=3,
    max_seq_length=16,
    **TINY_SIZE,
  )
  assert_encoder_loaded(classifier, names)
  assert "task_specific/classifier/dense/kernel" in classifier.official_name_map()
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
  # Two texts as bytes are a batch of two, as two str are (not a text_a/text_b pair).
  as_bytes = classifier.predict([t.encode() for t in PREMISES[:2]], verbose=0)
  np.testing.assert_allclose(as_bytes, classifier.predict(PREMISES[:2], verbose=0), atol=1e-6)

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
  assert "electra/encoder/layer_1/output/dense/kernel" in any_format.initialize_finetuning_model(
    model, path
  )

  version_dir = classifier.export(str(tmp_path / "serving" / "1"))
  served = serve_text(version_dir, PREMISES, HYPOTHESES, ["logits"])
  np.testing.assert_allclose(served["logits"], logits, rtol=1e-4, atol=1e-4)
  # the opt-in constant weights: the same answers
  version_dir = classifier.export(str(tmp_path / "serving" / "2"), constant_weights=True)
  served = serve_text(version_dir, PREMISES, HYPOTHESES, ["logits"])
  np.testing.assert_allclose(served["logits"], logits, rtol=1e-4, atol=1e-4)


def test_compile_needs_the_schedule_horizon(tmp_path):
  model_dir = str(tmp_path / "pretrained")
  pretrained_dir(model_dir)
  classifier = electra_tf.ElectraClassifier.from_checkpoint(
    model_dir, os.path.join(model_dir, "vocab.txt"), 2, "base", 8, TINY, 16
  )
  with pytest.raises(ValueError, match="num_train_steps"):
    classifier.compile()
  # electra_tf's own optimizer names: the original's AdamWeightDecay, or LAMB.
  classifier.compile(optimizer="lamb", num_train_steps=10)
  assert type(classifier.optimizer).__name__ == "Lamb"
  classifier.compile(optimizer="adam", num_train_steps=10)
  assert type(classifier.optimizer).__name__ == "AdamWeightDecay"
  # Labels missing, or not class ids: named, not trained on or a "None values" error.
  texts = ["the cat sat", "a dog ran"]
  with pytest.raises(ValueError, match="no labels were given; fit and evaluate take"):
    classifier.evaluate(tf.data.Dataset.from_tensor_slices(texts).batch(2), verbose=0)
  for labels in ([1.5, 0.0], [2, 0], [-1, 0]):
    data = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(2)
    with pytest.raises(
      tf.errors.InvalidArgumentError, match=r"labels must be whole class ids in \[0, 2\)"
    ):
      classifier.fit(data, verbose=0)
  history = classifier.fit(tf.data.Dataset.from_tensor_slices((texts, [1, 0])).batch(2), verbose=0)
  assert np.isfinite(history.history["loss"][0])


@pytest.mark.slow
def test_accumulated_fit_on_text_makes_the_one_batch_steps(tmp_path):
  """compile(gradient_accumulation_steps=2): raw text pairs cut into
  micro-batches give the one-batch steps (weights, logged loss and accuracy);
  Keras' own optimizer keyword is refused."""
  model_dir = str(tmp_path / "pretrained")
  pretrained_dir(model_dir)
  data = tf.data.Dataset.from_tensor_slices(((PREMISES, HYPOTHESES), LABELS)).batch(4).repeat()
  results = []
  for k in (1, 2):
    keras.utils.set_random_seed(3)
    classifier = electra_tf.ElectraClassifier.from_checkpoint(
      model_dir, os.path.join(model_dir, "vocab.txt"), 3, "base", 8, TINY, 16
    )
    classifier.compile(num_train_steps=10, learning_rate=1e-2, gradient_accumulation_steps=k)
    history = classifier.fit(data, steps_per_epoch=3, verbose=0)
    results.append((classifier.get_weights(), history.history))
  (weights_1, history_1), (weights_2, history_2) = results
  assert history_2["loss"] == pytest.approx(history_1["loss"], rel=1e-5)
  assert history_2["accuracy"] == pytest.approx(history_1["accuracy"])
  for a, b in zip(weights_2, weights_1):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
  with pytest.raises(ValueError, match="Keras' optimizer keyword is not supported"):
    classifier.compile(optimizer=keras.optimizers.Adam(gradient_accumulation_steps=2))
  # The original optimizer's settings are not dropped silently with another optimizer.
  with pytest.raises(
    ValueError, match=r"num_train_steps, learning_rate set the original's optimizer"
  ):
    classifier.compile(optimizer="sgd", num_train_steps=2, learning_rate=5e-3)
  classifier.compile(optimizer="sgd")  # Keras's own SGD, nothing dropped
  # The original optimizer's settings are checked as run_finetuning checks its hparams.
  with pytest.raises(
    ValueError, match=r"^ElectraClassifier.compile: warmup_proportion=5.0; expected"
  ):
    classifier.compile(num_train_steps=2, warmup_proportion=5.0)
  with pytest.raises(
    ValueError, match=r"^ElectraClassifier.compile: learning_rate=-0.001; expected"
  ):
    classifier.compile(num_train_steps=2, learning_rate=-1e-3)


def test_inputs_the_classifier_cannot_take_are_named(tmp_path):
  """A lone string, an empty batch, num_classes 0 and a path that does not
  exist: one clear ValueError each, before any work."""
  import electra_tf

  config = {
    "vocab_size": 30, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    "intermediate_size": 32,
  }  # fmt: skip
  with pytest.raises(ValueError, match="num_classes=0; expected a positive integer"):
    electra_tf.ElectraClassifier(config, num_classes=0)
  model = electra_tf.ElectraClassifier(config, num_classes=2)
  with pytest.raises(ValueError, match=r"got one string: wrap it in a list, predict\(\[text\]\)"):
    model.predict("one string")
  with pytest.raises(ValueError, match="got an empty batch"):
    model.predict([])
  with pytest.raises(ValueError, match=r"got 2 first texts \(text_a\) and 1 second texts"):
    model.predict((["a b", "c"], ["d"]))
  # One pair given as two strings: said, not an error about tensor ranks.
  with pytest.raises(
    ValueError, match=r"got single strings: .* one pair as \(\[text_a\], \[text_b\]\)"
  ):
    model.predict(("the cat sat", "the dog ran"))
  with pytest.raises(
    ValueError, match=r"a dict is read as packed features .* got keys \['text_a', 'text_b'\]"
  ):
    model.predict({"text_a": ["the cat"], "text_b": ["a dog"]})
  with pytest.raises(ValueError, match=r"^max_seq_length='32'; expected an integer$"):
    vocab_file = str(tmp_path / "vocab.txt")
    write_vocab(vocab_file)
    electra_tf.ElectraTextPreprocessor.from_vocab_file(vocab_file, max_seq_length="32")
  # A 2-D array of texts would be flattened into 4 single texts, 4 rows out.
  with pytest.raises(
    ValueError, match=r"takes a 1-D batch of texts .* got texts of shape \(2, 2\)"
  ):
    model.predict(np.array([["a b", "c"], ["d", "e"]]))
  # A Hugging Face generator directory: named as one, not as a missing vocab.
  generator = tmp_path / "hf_generator"
  generator.mkdir()
  hf_config = {"architectures": ["ElectraForMaskedLM"], "model_type": "electra", **config}
  hf_config.update(embedding_size=8, hidden_act="gelu", max_position_embeddings=64)
  hf_config.update(type_vocab_size=2)
  (generator / "config.json").write_text(json.dumps(hf_config))
  with pytest.raises(
    ValueError, match="is a Hugging Face ELECTRA generator directory; fine-tuning"
  ):
    electra_tf.ElectraClassifier.from_checkpoint(str(generator), num_classes=2)
  missing = str(tmp_path / "no_such_model")
  with pytest.raises(ValueError, match=f"from_checkpoint: '{missing}' does not exist"):
    electra_tf.ElectraClassifier.from_checkpoint(missing, num_classes=2)


def test_from_checkpoint_refuses_another_vocab_of_the_same_size(tmp_path):
  """A run dir records its vocab's sha256; a vocab_file of the same size whose
  ids mean other tokens is refused as run_finetuning refuses it."""
  import electra_tf
  from tests.helpers.pretraining_data import pretrain_on_self_made_data
  from tests.helpers.pretraining_data import self_made_hparams
  from tests.helpers.pretraining_data import write_swapped_vocab

  assert pretrain_on_self_made_data(tmp_path, self_made_hparams(num_train_steps=1)) == 1
  model_dir = str(tmp_path / "models" / "m")
  other = write_swapped_vocab(tmp_path / "vocab.txt", tmp_path / "other_vocab.txt")
  with pytest.raises(ValueError, match="its ids mean other tokens") as e:
    electra_tf.ElectraClassifier.from_checkpoint(model_dir, str(other), num_classes=2)
  assert str(e.value).startswith(f"from_checkpoint: the model in {model_dir!r} was trained")
  classifier = electra_tf.ElectraClassifier.from_checkpoint(model_dir, num_classes=2)
  assert classifier.preprocessor.tokenizer.vocab_size == len(other.read_text().splitlines())
