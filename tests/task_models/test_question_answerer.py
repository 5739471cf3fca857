"""`ElectraQuestionAnswerer`: (question, context) strings in, the original's
simple span head and QA packing, labels from character offsets, answer text
back, `.keras` round trip and SavedModel export."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf.checkpoints import name_based
from electra_tf.finetune import task_builder
from electra_tf.finetune.model import FinetuningModel
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.text import wordpiece
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import write_vocab
from tests.helpers.task_models import TINY_SIZE
from tests.helpers.task_models import assert_config_round_trips
from tests.helpers.task_models import assert_encoder_loaded
from tests.helpers.task_models import pretrained_dir
from tests.helpers.task_models import serve_text

QUESTIONS = ["where is the cat ?", "what is the capital of france ?", "who runs ?", "what is red ?"]
CONTEXTS = [
  "the cat sat on the mat .",
  "paris is the capital of france .",
  "the dog runs fast and the fox walks .",
  "the big rocks are red and blue .",
]
ANSWERS = ["the mat", "paris", "the dog", "the big rocks"]
STARTS = [c.index(a) for c, a in zip(CONTEXTS, ANSWERS)]
S = 24


def _answerer(tmp_path, **kwargs):
  model_dir = str(tmp_path / "pretrained")
  names = pretrained_dir(model_dir)
  qa = electra_tf.ElectraQuestionAnswerer.from_checkpoint(
    model_dir, os.path.join(model_dir, "vocab.txt"), max_seq_length=S, **TINY_SIZE, **kwargs
  )
  return qa, names, model_dir


def test_labels_and_packing_follow_the_original_featuriser(tmp_path):
  qa, names, model_dir = _answerer(tmp_path, max_query_length=4)
  assert_encoder_loaded(qa, names)
  assert {"task_specific/qa/dense/kernel", "task_specific/qa/dense_1/kernel"} <= set(
    qa.official_name_map()
  )
  tokenizer = wordpiece.FullTokenizer(os.path.join(model_dir, "vocab.txt"))
  packed = qa.preprocessor((tf.constant(QUESTIONS), tf.constant(CONTEXTS)))
  starts, ends = qa.answer_positions(QUESTIONS, CONTEXTS, STARTS, ANSWERS)
  for i, (question, context) in enumerate(zip(QUESTIONS, CONTEXTS)):
    q = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(question))[:4]
    c = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(context))
    expected = [5] + q + [6] + c + [6]
    assert packed["input_ids"].numpy()[i, : len(expected)].tolist() == expected
    assert packed["segment_ids"].numpy()[i, : len(expected)].tolist() == [0] * (len(q) + 2) + [
      1
    ] * (len(c) + 1)
    answer = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(ANSWERS[i]))
    assert expected[starts[i] : ends[i] + 1] == answer
  # "rocks" is "rock ##s": the answer ends on the word's last piece.
  assert tokenizer.tokenize("rocks") == ["rock", "##s"]

  # An answer inside a word narrows to its own pieces; one past the window is (0, 0).
  def positions(*args):
    return [a.tolist() for a in qa.answer_positions(*args)]

  assert positions(["who ?"], ["the rocks ."], [4], ["rock"]) == [[5], [5]]
  long_context = "the cat " * 20 + "sat on the mat"
  assert positions(["who ?"], [long_context], [len(long_context) - 3], ["mat"]) == [[0], [0]]
  with pytest.raises(ValueError, match="does not hold the answer"):
    qa.answer_positions(QUESTIONS[:1], CONTEXTS[:1], [0], ["mat"])


def _dataset(labels):
  return tf.data.Dataset.from_tensor_slices(((QUESTIONS, CONTEXTS), labels)).batch(2)


@pytest.mark.slow
def test_fit_learns_the_toy_task_and_predicts_its_answers(tmp_path):
  keras.utils.set_random_seed(0)  # head and dropout draws independent of earlier tests
  qa, _, _ = _answerer(tmp_path)
  starts, ends = qa.answer_positions(QUESTIONS, CONTEXTS, STARTS, ANSWERS)
  qa.compile(num_train_steps=40, learning_rate=3e-3, layerwise_lr_decay=0.0)
  history = qa.fit(_dataset((starts, ends)).repeat(), epochs=2, steps_per_epoch=20, verbose=0)
  losses = history.history["loss"]
  assert losses[-1] < losses[0] / 2, losses
  outputs = qa.predict((QUESTIONS, CONTEXTS), batch_size=2, verbose=0)
  np.testing.assert_array_equal(outputs["start_logits"].argmax(-1), starts)
  np.testing.assert_array_equal(outputs["end_logits"].argmax(-1), ends)
  assert qa.predict_answers(QUESTIONS, CONTEXTS) == ANSWERS


def test_config_round_trip_loss_and_bad_labels(tmp_path):
  qa, _, _ = _answerer(tmp_path)
  config, clone = assert_config_round_trips(qa)
  assert config["max_answer_length"] == 30 and config["task_name"] == "qa"
  assert isinstance(clone.preprocessor, ElectraTextPreprocessor)
  assert clone.preprocessor.packing == "question_context"
  assert clone.preprocessor.max_query_length == S - 4  # the original's 64 leaves no context

  # The default loss: (start CE + end CE) / 2, summed over the batch.
  qa.compile(num_train_steps=10)
  starts, ends = qa.answer_positions(QUESTIONS, CONTEXTS, STARTS, ANSWERS)
  uniform = {"start_logits": tf.zeros([4, S]), "end_logits": tf.zeros([4, S])}
  for labels in ((starts, ends), {"start_positions": starts, "end_positions": ends}):
    loss = qa.compute_loss(y=labels, y_pred=uniform)
    np.testing.assert_allclose(float(loss), 4 * np.log(S), rtol=1e-5)
  with pytest.raises(ValueError, match="start_positions, end_positions"):
    qa.compute_loss(y=np.stack([starts, ends], 1), y_pred=uniform)
  with pytest.raises(ValueError, match="one token position per example"):
    qa.compute_loss(y=(np.stack([starts, ends], 1), ends), y_pred=uniform)


@pytest.mark.slow
def test_predicts_saves_loads_and_evaluates(tmp_path):
  qa, _, _ = _answerer(tmp_path)
  outputs = qa.predict((QUESTIONS, CONTEXTS), batch_size=2, verbose=0)
  assert sorted(outputs) == ["end_logits", "start_logits"]
  assert outputs["start_logits"].shape == (4, S) and outputs["start_logits"].dtype == np.float32
  answers = qa.predict_answers(QUESTIONS, CONTEXTS)
  assert all(a and a in c for a, c in zip(answers, CONTEXTS)), answers

  path = str(tmp_path / "qa.keras")
  qa.save(path)
  restored = keras.saving.load_model(path)
  assert isinstance(restored, electra_tf.ElectraQuestionAnswerer)
  again = restored.predict((QUESTIONS, CONTEXTS), verbose=0)
  for key in outputs:
    np.testing.assert_allclose(again[key], outputs[key], rtol=1e-5, atol=1e-5)

  starts, ends = qa.answer_positions(QUESTIONS, CONTEXTS, STARTS, ANSWERS)
  qa.compile(num_train_steps=10)
  result = qa.evaluate(
    _dataset({"start_positions": starts, "end_positions": ends}), verbose=0, return_dict=True
  )
  assert {"loss", "start_logits_accuracy", "end_logits_accuracy"} <= set(result), result
  with pytest.raises(ValueError, match="start_positions, end_positions"):
    qa.evaluate(_dataset(np.stack([starts, ends], 1)), verbose=0)


@pytest.mark.slow
def test_export_serves_the_same_logits(tmp_path):
  qa, _, _ = _answerer(tmp_path)
  outputs = qa.predict((QUESTIONS, CONTEXTS), verbose=0)
  version_dir = qa.export(str(tmp_path / "serving" / "1"))
  served = serve_text(
    version_dir, QUESTIONS, CONTEXTS, ["start_logits", "end_logits", "input_mask"]
  )
  mask = served["input_mask"] == 1
  for key in ("start_logits", "end_logits"):
    np.testing.assert_allclose(served[key][mask], outputs[key][mask], rtol=1e-4, atol=1e-4)


def test_starts_from_the_joint_head_squad_checkpoint_run_finetuning_writes(tmp_path):
  """`run_finetuning`'s SQuAD head is the original's joint one (`qa_hidden`,
  `dense_1` [512, 1], ...). Under the default task name the answerer takes
  that checkpoint's fine-tuned encoder and a fresh span head; named `squad`,
  it stops at the head's first shape mismatch instead of loading half a head."""
  model_dir = str(tmp_path / "squad_model")
  os.makedirs(model_dir)
  vocab_file = os.path.join(model_dir, "vocab.txt")
  config = finetuning_config(
    "squad_model",
    str(tmp_path),
    task_names=["squad"],
    vocab_size=write_vocab(vocab_file),
    **TINY_SIZE,
  )
  head = task_builder.get_task(config, "squad", tokenizer=None).create_head()
  finetuned = FinetuningModel.from_finetuning_config(config, [head])
  # what run_finetuning's checkpoints hold under the model's names
  # (NameBasedCheckpointManager adds Adam slots and global_step beside them)
  names = finetuned.official_name_map()
  assert names["task_specific/squad/dense_1/kernel"].shape == (512, 1)
  name_based.save_name_based(names, model_dir, 7)

  qa = electra_tf.ElectraQuestionAnswerer.from_checkpoint(
    model_dir, vocab_file, max_seq_length=S, **TINY_SIZE
  )
  assert_encoder_loaded(qa, {n: v for n, v in names.items() if n.startswith("electra/")})
  outputs = qa.predict((QUESTIONS, CONTEXTS), verbose=0)
  assert outputs["start_logits"].shape == (len(QUESTIONS), S)
  assert qa.predict_answers(QUESTIONS[:1], CONTEXTS[:1])[0] in CONTEXTS[0]

  with pytest.raises(
    ValueError,
    match=r"task_specific/squad/dense_1/kernel: model expects \[16, 1\], checkpoint has \[512, 1\]",
  ):
    electra_tf.ElectraQuestionAnswerer.from_checkpoint(
      model_dir, vocab_file, max_seq_length=S, task_name="squad", **TINY_SIZE
    )


def test_a_question_budget_that_leaves_no_context_is_refused(tmp_path):
  # [CLS] question [SEP] context [SEP]: at most S - 4 question tokens leave one for the context.
  with pytest.raises(
    ValueError,
    match=rf"^max_query_length={S - 3} leaves no room for the context in max_seq_length={S}; "
    rf"expected at most {S - 4}$",
  ):
    _answerer(tmp_path, max_query_length=S - 3)
