"""Fine-tuning featurisation with a SentencePiece vocab: the Python
tokenizer gives the in-graph tokenizer's ids on real German text, a
classification task featurises with them, the task models' preprocessor
reads the model. QA and tagging: test_sentencepiece_spans.py; publishing:
tests/checkpoints/test_hf_sentencepiece.py."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetune import task_builder
from electra_tf.finetune.classification.tasks import InputExample
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.text import tokenizer_for
from electra_tf.text.full_tokenizer import full_tokenizer_for
from electra_tf.text.vocab import train_sentencepiece
from electra_tf.text.vocab import write_vocab_settings
from electra_tf.text.wordpiece import FullTokenizer
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import tiny_hparams
from tests.helpers.translations import catalogue_messages


@pytest.fixture(scope="module")
def german(tmp_path_factory):
  lines = [line for document in catalogue_messages("de") for line in document]
  path = tmp_path_factory.mktemp("spm") / "de.model"
  path.write_bytes(train_sentencepiece(lines, 300, character_coverage=0.99))
  return str(path), lines


@pytest.mark.parametrize("normalise", [False, True])
def test_python_ids_equal_in_graph_ids_on_every_line(german, normalise):
  model, lines = german
  python = full_tokenizer_for(model, do_lower_case=normalise, strip_accents=normalise)
  graph = tokenizer_for(model, do_lower_case=normalise, strip_accents=normalise)
  # A character the model does not cover must map to its unknown id too.
  lines = lines + ["Grüße aus 東京 ☃"]
  expected = graph(tf.constant(lines)).to_list()
  got = [python.convert_tokens_to_ids(python.tokenize(line)) for line in lines]
  assert got == expected
  assert python.vocab["[UNK]"] in got[-1]
  # Case and umlauts are kept unless asked otherwise.
  assert ("ü" in "".join(python.tokenize("Grüße"))) != normalise


def test_settings_file_applies_when_not_overridden(german, tmp_path):
  model, _ = german
  copy = tmp_path / "lower.model"
  copy.write_bytes(open(model, "rb").read())
  write_vocab_settings(str(copy), {"do_lower_case": True, "strip_accents": False})
  tok = full_tokenizer_for(str(copy))
  assert (tok.do_lower_case, tok.strip_accents) == (True, False)
  assert tok.tokenize("GRÜSSE") == tok.tokenize("grüsse")
  # A text vocab still gets the original's FullTokenizer.
  data_dir, _ = make_data_dir(tmp_path)
  assert type(full_tokenizer_for(f"{data_dir}/vocab.txt")) is FullTokenizer


def test_classification_featurises_with_the_model(german, tmp_path):
  model, lines = german
  data_dir, _ = make_data_dir(tmp_path)
  config = finetuning_config(
    "m", data_dir, **tiny_hparams(300, task_names=["sst"], vocab_file=model, max_seq_length=16)
  )
  tokenizer = full_tokenizer_for(model)
  task = task_builder.get_task(config, "sst", tokenizer)
  text = max(lines, key=len)
  (features,) = task.featurize(InputExample(0, "sst", text, None, "1"), True)
  graph = tokenizer_for(model)
  packed = graph.pack(graph(tf.constant([text])), max_seq_length=16)
  np.testing.assert_array_equal(features["input_ids"], packed["input_ids"][0])
  np.testing.assert_array_equal(features["input_mask"], packed["input_mask"][0])


def test_task_models_preprocessor_reads_a_model(german):
  model, lines = german
  preprocessor = ElectraTextPreprocessor.from_vocab_file(model, max_seq_length=24)
  graph = tokenizer_for(model)
  expected = graph.pack(graph(tf.constant(lines[:50])), max_seq_length=24)["input_ids"]
  np.testing.assert_array_equal(preprocessor(tf.constant(lines[:50]))["input_ids"], expected)
  # Its config holds the model's bytes: it needs the file no more.
  rebuilt = ElectraTextPreprocessor.from_config(preprocessor.get_config())
  np.testing.assert_array_equal(rebuilt(tf.constant(lines[:50]))["input_ids"], expected)
