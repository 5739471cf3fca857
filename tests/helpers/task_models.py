"""Shared set-up of the keras-hub style task model tests (`ElectraClassifier`,
`ElectraQuestionAnswerer`, `ElectraTokenTagger`): a tiny released-style
encoder checkpoint, and the exported SavedModel run in a fresh interpreter
(docs/finetune.md's examples run on the demo's output in tests/test_demo.py)."""

import json
import os
import subprocess
import sys
import types

import numpy as np

import electra_tf
from electra_tf.checkpoints import name_based
from tests.helpers.finetuning_testdata import write_vocab

TINY = {
  "hidden_size": 16,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 32,
}
# `from_checkpoint` arguments for the tiny encoder of `pretrained_dir`.
TINY_SIZE = {"model_size": "base", "embedding_size": 8, "model_hparam_overrides": TINY}


def model_size(model_size, vocab_size, overrides):
  """What `get_bert_config` reads from hparams."""
  return types.SimpleNamespace(
    model_size=model_size, vocab_size=vocab_size, model_hparam_overrides=overrides
  )


def pretrained_dir(model_dir, model_size_name="base", overrides=TINY, embedding_size=8):
  """Writes `vocab.txt` and a name-based checkpoint of an encoder (what the
  original releases) to `model_dir`; returns `{official name: variable}` of
  the encoder written."""
  os.makedirs(model_dir, exist_ok=True)
  vocab_size = write_vocab(os.path.join(model_dir, "vocab.txt"))
  bert_config = electra_tf.get_bert_config(model_size(model_size_name, vocab_size, overrides))
  classifier = electra_tf.ElectraClassifier(bert_config.to_dict(), 3, embedding_size=embedding_size)
  classifier.build()
  names = {n: v for n, v in classifier.official_name_map().items() if n.startswith("electra/")}
  name_based.save_name_based(names, str(model_dir), 0)
  return names


def assert_encoder_loaded(model, names):
  loaded = model.official_name_map()
  for name, variable in names.items():
    np.testing.assert_array_equal(loaded[name].numpy(), variable.numpy())


def assert_config_round_trips(model):
  """`from_config(get_config())` rebuilds `model` with the same config;
  returns `(config, clone)`."""
  config = model.get_config()
  clone = type(model).from_config(config)
  assert type(clone) is type(model)
  assert clone.get_config() == config
  return config, clone


def serve_text(version_dir, text_a, text_b, outputs):
  """Runs the export's `serving_default` in a fresh interpreter (plain
  `tf.saved_model.load` after `import tensorflow_text`); returns
  `{output name: numpy array}` for `outputs`."""
  script = (
    "import json, sys, tensorflow as tf, tensorflow_text  # registers the tokenizer ops\n"
    f"m = tf.saved_model.load({version_dir!r})\n"
    "out = m.signatures['serving_default'](text_a=tf.constant(json.loads(sys.argv[1])),"
    " text_b=tf.constant(json.loads(sys.argv[2])))\n"
    f"print(json.dumps({{k: out[k].numpy().tolist() for k in {list(outputs)!r}}}))\n"
  )
  result = subprocess.run(
    [sys.executable, "-c", script, json.dumps(text_a), json.dumps(text_b)],
    capture_output=True,
    text=True,
    env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    timeout=300,
  )
  assert result.returncode == 0, result.stderr[-2000:]
  served = json.loads(result.stdout.strip().splitlines()[-1])
  return {k: np.array(v) for k, v in served.items()}
