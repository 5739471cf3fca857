"""Starting fine-tuning from pre-trained checkpoints (`run_finetuning.py` checkpoint loading), layer-wise
learning rates (`model/optimization.py:create_optimizer`) and a learning check on real text."""

import os
import re

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import run_finetuning
from electra_tf.finetune import task_builder
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.model import FinetuningModel
from electra_tf.finetune.qa.head import QAHead
from electra_tf.optimization import layerwise as layerwise_learning_rate
from electra_tf.sources import any_format
from electra_tf.text import wordpiece as tokenization
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import tsv
from tests.helpers.finetuning_testdata import write_task_file

TINY = {
  "model_size": "small",
  "embedding_size": 32,
  "vocab_size": 7814,
  "model_hparam_overrides": {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 256,
  },
}


def _twelve_layer_names():
  model = FinetuningModel(
    {
      "vocab_size": 50,
      "hidden_size": 8,
      "num_hidden_layers": 12,
      "num_attention_heads": 1,
      "intermediate_size": 8,
    },
    [
      ClassificationHead("rte", 2, name="task_specific_rte"),
      QAHead("squad", beam_size=2, name="task_specific_squad"),
    ],
    embedding_size=4,
  )
  return list(model.official_name_map())


def test_layerwise_exponents_for_12_layers():
  names = _twelve_layer_names()
  faithful = layerwise_learning_rate.layerwise_exponents(names, 12)
  fixed = layerwise_learning_rate.layerwise_exponents(names, 12, fixed=True)
  for name in names:
    layer = re.search(r"encoder/layer_(\d+)/", name)
    if "/embeddings/" in "/" + name or "embeddings_project" in name:
      assert (faithful[name], fixed[name]) == (14, 13), name
    elif layer:
      k = int(layer.group(1))
      assert (faithful[name], fixed[name]) == (13 - k, 12 - k), name
    else:
      assert name.startswith("task_specific/") and faithful[name] == fixed[name] == 0
  assert faithful["electra/encoder/layer_0/output/dense/kernel"] == 13
  assert faithful["electra/encoder/layer_11/output/dense/kernel"] == 2
  assert fixed["electra/encoder/layer_11/output/dense/kernel"] == 1


def _setup_tiny(tmp_path, fixtures, task_rows, **hparams):
  data_dir = str(tmp_path / "data")
  os.makedirs(os.path.join(data_dir, "models", "tiny"))
  os.symlink(fixtures / "vocab.txt", os.path.join(data_dir, "vocab.txt"))
  for split, rows in task_rows.items():
    write_task_file(data_dir, "sst", f"{split}.tsv", tsv([["sentence", "label"]] + rows))
  # outputs go to the tmp model dir; the checkpoint is read from the fixtures
  kwargs = dict(TINY, task_names=["sst"], init_checkpoint=str(fixtures / "models" / "tiny"))
  kwargs.update(hparams)
  config = finetuning_config("tiny", data_dir, **kwargs)
  tokenizer = tokenization.FullTokenizer(config.vocab_file)
  return config, task_builder.get_tasks(config, tokenizer)


def test_loads_only_the_encoder_from_the_original_checkpoint(tmp_path, original_fixtures):
  rows = [["the fire spread", "1"], ["people left", "0"]] * 2
  config, tasks = _setup_tiny(
    tmp_path, original_fixtures, {"train": rows}, train_batch_size=2, max_seq_length=16
  )
  config.model_dir += "_1"
  runner = run_finetuning.ModelRunner(config, tasks)
  names = runner.model.official_name_map()
  reader = tf.train.load_checkpoint(str(original_fixtures / "models" / "tiny" / "model.ckpt-50"))
  # every encoder variable equals the checkpoint; nothing else of the checkpoint is used
  checkpoint_names = set(reader.get_variable_to_shape_map())
  encoder_names = {
    n for n in checkpoint_names if n.startswith("electra/") and not n.endswith(("adam_m", "adam_v"))
  }
  assert encoder_names == {n for n in names if n.startswith("electra/")}
  for name in encoder_names:
    np.testing.assert_array_equal(np.asarray(names[name]), reader.get_tensor(name))
  assert not any(n.startswith("task_specific") for n in checkpoint_names)
  # the fresh head: Glorot-uniform kernel, zero bias
  assert np.all(np.asarray(names["task_specific/sst/dense/bias"]) == 0)
  assert np.abs(np.asarray(names["task_specific/sst/dense/kernel"])).max() > 0
  loaded = any_format.initialize_finetuning_model(runner.model, config.init_checkpoint)
  assert set(loaded) == encoder_names


def test_shape_mismatch_is_an_error(tmp_path, original_fixtures):
  config, tasks = _setup_tiny(
    tmp_path, original_fixtures, {"train": [["a", "1"]]}, embedding_size=16
  )
  with pytest.raises(ValueError, match="shape"):
    run_finetuning.ModelRunner(config, tasks)


def _lee_sentences(fixtures):
  with open(fixtures / "corpus" / "lee.txt", encoding="utf-8") as f:
    return [line.strip() for line in f if len(line.split()) >= 4]


@pytest.mark.slow
def test_learning_check_on_real_text(tmp_path, original_fixtures):
  """A sentence-level task built from the Lee news corpus: does the sentence
  contain a digit? Fine-tuning the original's tiny checkpoint must beat the
  majority baseline clearly."""
  sentences = [s.replace("\t", " ") for s in _lee_sentences(original_fixtures)]
  rng = np.random.RandomState(0)
  rng.shuffle(sentences)
  positives = [[s, "1"] for s in sentences if re.search(r"\d", s)]
  negatives = [[s, "0"] for s in sentences if not re.search(r"\d", s)][: len(positives)]
  labelled = positives + negatives  # balanced: the majority baseline is 50%
  rng.shuffle(labelled)
  n_dev = len(labelled) // 4
  train, dev = labelled[n_dev:], labelled[:n_dev]
  config, tasks = _setup_tiny(
    tmp_path,
    original_fixtures,
    {"train": train, "dev": dev},
    max_seq_length=64,
    learning_rate=1e-3,
    num_train_epochs=4.0,
    seed=0,
  )
  results = run_finetuning.run_finetuning(config)
  # The trial dir describes itself, as pre-training model dirs do.
  from electra_tf.checkpoints import model_dir as model_dir_lib  # pylint: disable=g-import-not-at-top

  run_config = model_dir_lib.read_run_config(config.model_dir)
  assert run_config["kind"] == model_dir_lib.KIND_FINETUNING
  assert run_config["hparams"]["task_names"] == ["sst"]
  accuracy = results[0]["sst"]["accuracy"]
  majority = 100.0 * max(np.mean([l == "1" for _, l in dev]), np.mean([l == "0" for _, l in dev]))
  print(f"learning check: dev accuracy {accuracy:.1f} vs majority baseline {majority:.1f}")
  assert accuracy > majority + 15.0


def test_encoder_from_an_electra_tf_pretraining_checkpoint(tmp_path):
  """An electra_tf training checkpoint, directly and after `convert_checkpoint
  --direction to-official`: fine-tuning loads the discriminator's encoder."""
  from electra_tf.checkpoints import checkpointing
  from electra_tf.configs.pretraining import PretrainingConfig
  from electra_tf.models.electra_pretrainer import ElectraPretrainer

  overrides = {
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 32,
  }
  hparams = {
    "model_size": "base",
    "embedding_size": 8,
    "vocab_size": 60,
    "model_hparam_overrides": overrides,
  }
  pretraining_config, pretrainer, keras_dir, official_dir = _saved_pretrainer(tmp_path, hparams)
  for source in (keras_dir, official_dir):
    model = _model(pretraining_config)
    loaded = any_format.initialize_finetuning_model(model, source)
    assert loaded and all(n.startswith("electra/") for n in loaded)
    names = model.official_name_map()
    query = "electra/encoder/layer_1/attention/self/query/kernel"
    np.testing.assert_array_equal(
      np.asarray(names[query]),
      np.asarray(pretrainer.discriminator.encoder.transformer_layers[1].query.kernel),
    )
    np.testing.assert_array_equal(
      np.asarray(names["electra/embeddings/word_embeddings"]),
      np.asarray(pretrainer.embeddings.word_embeddings),
    )
  # A checkpoint of another model size is refused with one clear error.
  small = PretrainingConfig("m", str(tmp_path), **dict(hparams, embedding_size=4))
  other = ElectraPretrainer.from_pretraining_config(small)
  other.build()
  other.compile(pretraining_config=small)
  other_dir = str(tmp_path / "other_ckpt")
  checkpointing.TrainingCheckpointManager(other, other_dir).save(0)
  with pytest.raises(ValueError, match="electra_tf pre-training checkpoint"):
    any_format.initialize_finetuning_model(_model(pretraining_config), other_dir)


def test_encoder_from_an_mlm_only_pretraining_checkpoint(tmp_path):
  """An MLM-only run (`electra_objective: false`) has no discriminator: its
  full-size generator is the encoder fine-tuning reads, directly and after
  conversion to the official format."""

  hparams = {
    "model_size": "base",
    "embedding_size": 8,
    "vocab_size": 60,
    "electra_objective": False,
    "model_hparam_overrides": {
      "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
      "intermediate_size": 32,
    },
  }  # fmt: skip
  pretraining_config, pretrainer, keras_dir, official_dir = _saved_pretrainer(tmp_path, hparams)
  assert pretrainer.discriminator is None
  for source in (keras_dir, official_dir):
    model = _model(pretraining_config)
    loaded = any_format.initialize_finetuning_model(model, source)
    assert "electra/encoder/layer_1/attention/self/query/kernel" in loaded
    names = model.official_name_map()
    np.testing.assert_array_equal(
      np.asarray(names["electra/encoder/layer_1/attention/self/query/kernel"]),
      np.asarray(pretrainer.generator.encoder.transformer_layers[1].query.kernel),
    )
    np.testing.assert_array_equal(
      np.asarray(names["electra/embeddings/word_embeddings"]),
      np.asarray(pretrainer.embeddings.word_embeddings),
    )


def _saved_pretrainer(tmp_path, hparams):
  """A pretrainer of `hparams` compiled as run_pretraining does, saved as an
  electra_tf training checkpoint and converted to the official format:
  `(config, pretrainer, training checkpoint dir, official dir)`."""
  from electra_tf import convert
  from electra_tf.checkpoints import checkpointing
  from electra_tf.configs.pretraining import PretrainingConfig
  from electra_tf.models.electra_pretrainer import ElectraPretrainer

  pretraining_config = PretrainingConfig("m", str(tmp_path), **hparams)
  pretrainer = ElectraPretrainer.from_pretraining_config(pretraining_config)
  pretrainer.build()
  pretrainer.compile(pretraining_config=pretraining_config)  # as run_pretraining
  keras_dir = str(tmp_path / "keras_ckpt")
  checkpointing.TrainingCheckpointManager(pretrainer, keras_dir).save(0)
  official_dir = str(tmp_path / "official")
  convert.convert(keras_dir, official_dir, direction="to-official", hparams=hparams)
  return pretraining_config, pretrainer, keras_dir, official_dir


def _model(pretraining_config):
  from electra_tf.configs.pretraining import get_pretraining_bert_config

  model = FinetuningModel(
    get_pretraining_bert_config(pretraining_config).to_dict(),
    [ClassificationHead("rte", 2, name="task_specific_rte")],
    embedding_size=pretraining_config.embedding_size,
  )
  model.build()
  return model
