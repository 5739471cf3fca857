"""Newcomer sweep 14's bad cases (bench/reports/newcomer_sweep_14.md), one
test per class: hparams that are overruled or run past the end, inputs a
reader flattened or took as another format, labels of the wrong type, a
failed restore buried in warnings, and a model's part or head named wrongly."""

import os

import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.data import pretraining_dataset
from electra_tf.finetune import preprocessing
from electra_tf.finetune import task_builder
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.models.electra_discriminator import ElectraDiscriminator
from electra_tf.serving import export as export_lib
from electra_tf.serving import portable
from electra_tf.sources import any_format
from electra_tf.text.tokenizer import ElectraTokenizer
from electra_tf.training import finetuning_run
from electra_tf.training import pretraining_run
from tests.helpers import finetuning_testdata
from tests.helpers import pretraining_data
from tests.helpers.bad_inputs import TINY_ENCODER
from tests.helpers.finetuning_testdata import finetuning_config

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran"]


def _preprocessor(max_seq_length=8):
  return ElectraTextPreprocessor(ElectraTokenizer(vocabulary=VOCAB), max_seq_length=max_seq_length)


def _classifier():
  return electra_tf.ElectraClassifier(
    dict(TINY_ENCODER, vocab_size=len(VOCAB)), 2, preprocessor=_preprocessor()
  )


def test_debug_overruling_the_user_s_sizes_is_said(tmp_path, capsys):
  """debug=True trained the original's debug model (H=144, 3 layers) over the
  user's explicit model_hparam_overrides without a word."""
  pretraining_data.make_data_dir(tmp_path)
  hparams = pretraining_data.self_made_hparams(debug=True)
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  inputs = pretraining_run.validate_config(config)
  assert inputs.bert_config.hidden_size == 144  # the original's debug model, kept
  err = capsys.readouterr().err
  assert "warning: debug=True builds the original's debug model (3 layers, H=144" in err
  assert "(hidden_size, intermediate_size, num_attention_heads, num_hidden_layers not used)" in err


def test_get_dataset_names_a_batch_size_that_is_not_positive(tmp_path):
  pretraining_data.make_data_dir(tmp_path, num_files=1)
  pattern = str(tmp_path / "pretrain_tfrecords" / "*")
  for bad in (-4, 0, 2.5):
    with pytest.raises(ValueError, match=rf"^get_dataset: batch_size={bad}; expected a positive"):
      pretraining_dataset.get_dataset(pattern, 32, bad, is_training=True)


def test_string_labels_are_named_before_training():
  model = _classifier()
  model.compile(num_train_steps=1)
  for labels in (["1", "0"], np.array(["1", "0"]), tf.constant(["1", "0"])):
    with pytest.raises(ValueError, match=r"^labels \(y\) are strings \("):
      model.evaluate(["the cat sat", "the dog ran"], labels, verbose=0)


def test_a_preprocessor_refuses_texts_it_would_flatten_into_more_rows():
  """[1, 3] texts came back as 3 rows for a batch of 1."""
  preprocessor = _preprocessor()
  with pytest.raises(ValueError, match=r"takes a batch of texts \(shape \[B\] or \[B, 1\]\)"):
    preprocessor(tf.constant([["the cat", "sat", "the dog"]]))
  one_a_row = preprocessor(tf.constant([["the cat"], ["the dog ran"]]))
  assert one_a_row["input_ids"].shape == (2, 8)


def test_a_portable_path_of_the_other_format_is_refused(tmp_path):
  """ONNX bytes written as m.tflite were checked with the LiteRT interpreter
  ("not a valid Flatbuffer buffer")."""
  with pytest.raises(ValueError, match=r"ends in \.tflite, a litert file, but format='onnx'"):
    portable.export_portable(_classifier(), str(tmp_path / "m.tflite"), "onnx")
  with pytest.raises(ValueError, match=r"ends in \.onnx, an? onnx file, but format='litert'"):
    portable.export_portable(_classifier(), str(tmp_path / "m.onnx"), "litert")
  assert os.listdir(tmp_path) == []


def test_a_one_network_model_names_the_other_part_not_a_pretraining_setting():
  network = ElectraDiscriminator(dict(TINY_ENCODER, vocab_size=len(VOCAB)))
  with pytest.raises(ValueError) as e:
    export_lib.build_serving_module(network, "generator", ElectraTokenizer(vocabulary=VOCAB), 8)
  assert str(e.value).endswith(
    "has no generator network (it holds one network, not a pre-trainer); export --model "
    "discriminator"
  )
  assert "uniform_generator" not in str(any_format.missing_network_error(network, "generator"))


def test_a_tagging_task_whose_sentences_lose_every_word_says_so(tmp_path, capsys):
  """The original's cut emptied every 15-word sentence at max_seq_length 8:
  F1 0.00 with no line saying why."""
  data_dir, vocab_size = finetuning_testdata.make_data_dir(tmp_path)
  words = "the cat sat on the mat and the dog ran fast over the lazy fox".split()
  sentence = "".join(f"{w} NN {'B-NP' if i % 2 == 0 else 'I-NP'}\n" for i, w in enumerate(words))
  short = "the NN B-NP\ncat NN I-NP\n"
  finetuning_testdata.write_task_file(data_dir, "chunk", "train.txt", f"{sentence}\n{short}\n")
  hparams = finetuning_testdata.tiny_hparams(vocab_size, task_names=["chunk"], max_seq_length=8)
  config = finetuning_config("m", data_dir, **hparams)
  tasks = task_builder.get_tasks(config, finetuning_run.finetuning_tokenizer(config))
  preprocessing.Preprocessor(config, tasks).serialize(tasks, True, "train")
  err = capsys.readouterr().err
  assert "warning: task chunk: 1 of 2 examples keep no tagged word within max_seq_length=8" in err
