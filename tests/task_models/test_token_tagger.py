"""`ElectraTokenTagger`: sentences in, tag logits per wordpiece, the
original's tagging packing and first-wordpiece labels, `.keras` round trip
and SavedModel export."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf.task_models.token_tagger import IGNORED
from electra_tf.text import wordpiece
from tests.helpers.task_models import TINY_SIZE
from tests.helpers.task_models import assert_config_round_trips
from tests.helpers.task_models import assert_encoder_loaded
from tests.helpers.task_models import pretrained_dir
from tests.helpers.task_models import serve_text

# Tags: 0 determiner, 1 noun, 2 verb, 3 other.
SENTENCES = [
  "the cats sat on the mat .",
  "a dog runs fast",
  "the fox jumps over the lazy dog",
  "she walks by the river",
]
WORD_TAGS = [
  [0, 1, 2, 3, 0, 1, 3],
  [0, 1, 2, 3],
  [0, 1, 2, 3, 0, 3, 1],
  [1, 2, 3, 0, 1],
]
S = 12


def _tagger(tmp_path):
  model_dir = str(tmp_path / "pretrained")
  names = pretrained_dir(model_dir)
  tagger = electra_tf.ElectraTokenTagger.from_checkpoint(
    model_dir, os.path.join(model_dir, "vocab.txt"), num_tags=4, max_seq_length=S, **TINY_SIZE
  )
  return tagger, names, model_dir


def test_labels_and_packing_follow_the_original_featuriser(tmp_path):
  tagger, names, model_dir = _tagger(tmp_path)
  assert_encoder_loaded(tagger, names)
  assert "task_specific/tagger/dense/kernel" in tagger.official_name_map()
  tokenizer = wordpiece.FullTokenizer(os.path.join(model_dir, "vocab.txt"))
  packed = tagger.preprocessor(tf.constant(SENTENCES))
  labels = tagger.wordpiece_labels(SENTENCES, WORD_TAGS)
  assert labels.shape == (4, S) and labels.dtype == np.int32
  for i, sentence in enumerate(SENTENCES):
    ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(sentence))[: S - 2]
    expected = [5] + ids + [6]
    assert packed["input_ids"].numpy()[i].tolist() == expected + [0] * (S - len(expected))
    # Segment ids 1 on every real position, as the tagging featuriser.
    assert packed["segment_ids"].numpy()[i].tolist() == packed["input_mask"].numpy()[i].tolist()
  # "cats" is "cat ##s": its tag sits on "cat", "##s" is not scored.
  assert tokenizer.tokenize("cats") == ["cat", "##s"]
  assert labels[0].tolist() == [IGNORED, 0, 1, IGNORED, 2, 3, 0, 1, 3, IGNORED, IGNORED, IGNORED]
  # Words the truncation cuts off get no label.
  long_sentence = " ".join(["the dog"] * 10)
  cut = tagger.wordpiece_labels([long_sentence], [[0, 1] * 10])
  assert cut[0].tolist() == [IGNORED] + [0, 1] * 5 + [IGNORED]
  # Words are what the tokenizer splits on (its whitespace; control characters
  # are dropped, not split on): their pieces, concatenated, are the sentence's.
  tricky = ["a\x1cdog\u3000runs", "the\tcat\xa0sat ,on", ""]
  pieces = [sum(p, []) for _, p in tagger.preprocessor.word_pieces(tricky)]
  assert pieces == tagger.preprocessor.token_ids(tricky)
  with pytest.raises(ValueError, match="3 whitespace-separated words but 2 tags"):
    tagger.wordpiece_labels(["the cat sat"], [[0, 1]])


@pytest.mark.slow
def test_fit_learns_the_toy_task_and_predicts_its_tags(tmp_path):
  keras.utils.set_random_seed(0)  # head and dropout draws independent of earlier tests
  tagger, _, _ = _tagger(tmp_path)
  labels = tagger.wordpiece_labels(SENTENCES, WORD_TAGS)
  dataset = tf.data.Dataset.from_tensor_slices((SENTENCES, labels)).batch(2)
  tagger.compile(num_train_steps=40, learning_rate=3e-3, layerwise_lr_decay=0.0)
  history = tagger.fit(dataset.repeat(), epochs=2, steps_per_epoch=20, verbose=0)
  losses = history.history["loss"]
  assert losses[-1] < losses[0] / 2, losses
  # The trained weights (no dropout), not the epoch's mean over its steps,
  # whose early batches may still miss a tag.
  assert tagger.evaluate(dataset, verbose=0, return_dict=True)["accuracy"] == 1.0
  assert tagger.predict_tags(SENTENCES) == WORD_TAGS


def test_config_round_trip_loss_and_bad_labels(tmp_path):
  tagger, _, _ = _tagger(tmp_path)
  config, clone = assert_config_round_trips(tagger)
  assert config["num_tags"] == 4 and config["task_name"] == "tagger"
  assert clone.preprocessor.packing == "tagging"

  # The default loss sums over the scored positions only (−1 labels count nothing).
  tagger.compile(num_train_steps=10)
  labels = tagger.wordpiece_labels(SENTENCES, WORD_TAGS)
  uniform = tf.zeros([4, S, 4])
  loss = tagger.compute_loss(y=labels, y_pred=uniform)
  n_words = sum(len(t) for t in WORD_TAGS)
  np.testing.assert_allclose(float(loss), n_words * np.log(4), rtol=1e-5)
  for bad in (labels[:, :5], labels[:, 0]):
    with pytest.raises(ValueError, match="one tag id per wordpiece position"):
      tagger.compute_loss(y=bad, y_pred=uniform)
  # Lists of words would be tagged as their repr, or flattened into one-word sentences.
  for words in ([s.split() for s in SENTENCES[:2]], [["the", "cat"], ["a", "dog"]]):
    with pytest.raises(ValueError, match="expected a 1-D batch of texts, one string each"):
      tagger.predict_tags(words)


@pytest.mark.slow
def test_predicts_saves_loads_and_evaluates(tmp_path):
  tagger, _, _ = _tagger(tmp_path)
  logits = tagger.predict(SENTENCES, batch_size=2, verbose=0)
  assert logits.shape == (4, S, 4) and logits.dtype == np.float32
  tags = tagger.predict_tags(SENTENCES)
  assert [len(t) for t in tags] == [len(t) for t in WORD_TAGS]

  path = str(tmp_path / "tagger.keras")
  tagger.save(path)
  restored = keras.saving.load_model(path)
  assert isinstance(restored, electra_tf.ElectraTokenTagger)
  np.testing.assert_allclose(restored.predict(SENTENCES, verbose=0), logits, rtol=1e-5, atol=1e-5)

  labels = tagger.wordpiece_labels(SENTENCES, WORD_TAGS)
  tagger.compile(num_train_steps=10)
  result = tagger.evaluate(
    tf.data.Dataset.from_tensor_slices((SENTENCES, labels)).batch(2), verbose=0, return_dict=True
  )
  scored = np.argwhere(labels != IGNORED)
  log_probs = tf.nn.log_softmax(logits).numpy()
  expected = -sum(log_probs[i, p, labels[i, p]] for i, p in scored) / 2  # mean of 2 batches
  np.testing.assert_allclose(result["loss"], expected, rtol=1e-4)
  # A retraced step sees [batch, None] labels: checked when it runs.
  with pytest.raises(tf.errors.InvalidArgumentError, match="one tag id per wordpiece position"):
    tagger.evaluate(
      tf.data.Dataset.from_tensor_slices((SENTENCES, labels[:, :5])).batch(2), verbose=0
    )


@pytest.mark.slow
def test_export_serves_the_same_logits(tmp_path):
  tagger, _, _ = _tagger(tmp_path)
  logits = tagger.predict(SENTENCES, verbose=0)
  version_dir = tagger.export(str(tmp_path / "serving" / "1"))
  served = serve_text(version_dir, SENTENCES, [""] * 4, ["logits", "input_mask", "segment_ids"])
  packed = tagger.preprocessor(tf.constant(SENTENCES))
  np.testing.assert_array_equal(served["segment_ids"], packed["segment_ids"].numpy())
  mask = served["input_mask"] == 1
  np.testing.assert_allclose(served["logits"][mask], logits[mask], rtol=1e-4, atol=1e-4)
