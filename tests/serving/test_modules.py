"""The serving modules (`electra_tf.serving.modules`) checked in process:
regression and tagging heads, and the Electric two-tower generator as a
masked LM, against the Keras models they wrap; and what a save traces."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bench import graph_ops
from electra_tf import serving
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.serving import export as export_lib
from electra_tf.serving import modules as serving_modules
from electra_tf.text import wordpiece as tokenization
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers.serving import GEN_A
from tests.helpers.serving import GEN_B
from tests.helpers.serving import MAX_PREDICTIONS
from tests.helpers.serving import PRETRAIN_HPARAMS
from tests.helpers.serving import TEXT_A
from tests.helpers.serving import TEXT_B
from tests.helpers.serving import TOP_K
from tests.helpers.serving import VOCAB
from tests.helpers.serving import S
from tests.helpers.serving import assert_close
from tests.helpers.serving import featurize
from tests.helpers.serving import module_outputs
from tests.helpers.serving import serialize_examples
from tests.helpers.serving import tiny_finetuning_model
from tests.helpers.serving import write_vocab


def test_regression_and_tagging_heads(tmp_path):
  vocab_file = write_vocab(str(tmp_path))
  model = tiny_finetuning_model(
    [
      ClassificationHead("sts", 1, regression=True, name="task_specific_sts"),
      TaggingHead("chunk", 4, name="task_specific_chunk"),
    ]
  )
  tokenizer = ElectraTokenizer(vocab_file=vocab_file)
  py_tokenizer = tokenization.FullTokenizer(vocab_file)
  features = featurize(py_tokenizer, TEXT_A, TEXT_B)
  sequence = model.encoder(features, training=False)["sequence_output"]
  n = len(TEXT_A)

  sts = export_lib.build_serving_module(model, "task", tokenizer, S, task="sts")
  out = module_outputs(sts, features)
  ref = model.heads[0](
    sequence, {"sts_targets": np.zeros(n, "float32"), "sts_eid": np.zeros(n, "int32")}
  )
  assert_close(out["predictions"], np.asarray(ref["predictions"]), "sts")
  assert out["predictions"].shape == (n,)
  with pytest.raises(tf.errors.InvalidArgumentError, match="same batch size"):
    sts.serve_text(tf.constant(["a b", "c"]), tf.constant([""]))

  chunk = export_lib.build_serving_module(model, "task", tokenizer, S, task="chunk")
  out = module_outputs(chunk, features)
  positions = np.tile(np.arange(S, dtype="int32"), (n, 1))
  ref = model.heads[1](
    sequence,
    {
      "chunk_labeled_positions": positions,
      "chunk_labels": np.zeros((n, S), "int32"),
      "chunk_labels_mask": np.ones((n, S), "float32"),
      "chunk_eid": np.zeros(n, "int32"),
    },
  )
  assert_close(out["logits"], np.asarray(ref["logits"]), "chunk")
  np.testing.assert_array_equal(out["predictions"], np.asarray(ref["logits"]).argmax(-1))
  # Tagging text: one segment, segment ids 1 as the tagging featuriser.
  packed = chunk.pack_text(tf.constant(TEXT_A), tf.constant(TEXT_B))
  expected = featurize(py_tokenizer, TEXT_A, TEXT_B, mode="tagging")
  for key in serving_modules.PACKED_KEYS:
    np.testing.assert_array_equal(packed[key].numpy(), expected[key], err_msg=key)


def test_electric_two_tower_generator_as_masked_lm(tmp_path):
  vocab_file = write_vocab(str(tmp_path))
  keras.utils.set_random_seed(4)
  electric = ElectraPretrainer.from_pretraining_config(
    PretrainingConfig(
      "electric",
      str(tmp_path),
      electric_objective=True,
      electra_objective=False,
      **PRETRAIN_HPARAMS,
    )
  )
  electric.build()
  module = export_lib.build_serving_module(
    electric,
    "generator",
    ElectraTokenizer(vocab_file=vocab_file),
    S,
    top_k=TOP_K,
    max_predictions=MAX_PREDICTIONS,
  )
  features = featurize(tokenization.FullTokenizer(vocab_file), GEN_A, GEN_B, mode="generator")
  out = module_outputs(module, features)
  logits = electric.generator(features, masked_lm_positions=out["masked_lm_positions"])
  probs, ids = tf.math.top_k(tf.nn.softmax(logits["mlm_logits"], -1), k=TOP_K)
  np.testing.assert_array_equal(out["top_k_ids"], ids.numpy())
  assert_close(out["top_k_probs"], probs.numpy(), "electric")
  # the two-tower logits cover every position: check one masked slot directly
  logits_all = electric.generator(features)["logits"]
  full = tf.nn.softmax(logits_all, -1).numpy()
  row, slot = 0, 1
  position = out["masked_lm_positions"][row, slot]
  assert out["masked_lm_weights"][row, slot] == 1.0
  assert out["top_k_ids"][row, slot, 0] == full[row, position].argmax()
  assert logits_all.shape[-1] == len(VOCAB)


def test_saving_traces_each_signature_once(tmp_path):
  """An export traces its three signatures once each: the save reuses them
  (it used to trace every tf.function of the module again), and the module
  and the loaded SavedModel still answer `serve_ids` and the signatures."""
  vocab_file = write_vocab(str(tmp_path))
  model = tiny_finetuning_model([ClassificationHead("rte", 2, name="task_specific_rte")])
  module = export_lib.build_serving_module(
    model, "task", ElectraTokenizer(vocab_file=vocab_file), S, task="rte"
  )
  path = export_lib.save_module_at(module, str(tmp_path / "export" / "1"))
  methods = serving_modules.SIGNATURE_METHODS
  assert methods == ("serve_text", "serve_ids", "serve_examples")
  traced = [
    getattr(type(module), name).__get__(module, type(module)).experimental_get_tracing_count()
    for name in methods
  ]
  assert traced == [1, 1, 1]
  features = featurize(tokenization.FullTokenizer(vocab_file), TEXT_A, TEXT_B)
  ids = {k: tf.constant(v) for k, v in features.items()}
  in_memory = module.serve_ids(**ids)["logits"].numpy()
  loaded = serving.load(path)
  assert_close(loaded.serve_ids(**ids)["logits"].numpy(), in_memory, "attribute")
  assert_close(loaded.signatures["serve_ids"](**ids)["logits"].numpy(), in_memory, "signature")
  # A second call returns the same traced functions.
  assert module.get_signatures()["serve_ids"] is module.serve_ids


def test_an_export_joins_the_attention_kernels_once_not_per_request(tmp_path):
  """Each layer's query, key and value kernels are joined once, into
  variables the export holds: the loaded `serve_ids` executes no join per
  layer (a copy of the kernels on every request) and answers as the model."""
  vocab_file = write_vocab(str(tmp_path))
  features = featurize(tokenization.FullTokenizer(vocab_file), TEXT_A, TEXT_B)
  ids = {k: tf.constant(v) for k, v in features.items()}
  concats = {}
  for num_layers in (1, 3):
    keras.utils.set_random_seed(0)
    hparams = dict(PRETRAIN_HPARAMS)
    hparams["model_hparam_overrides"] = dict(
      hparams["model_hparam_overrides"], num_hidden_layers=num_layers
    )
    pretrainer = ElectraPretrainer.from_pretraining_config(
      PretrainingConfig("joined", str(tmp_path), **hparams)
    )
    pretrainer.build()
    module = export_lib.build_serving_module(
      pretrainer, "discriminator", ElectraTokenizer(vocab_file=vocab_file), S
    )
    path = export_lib.save_module_at(module, str(tmp_path / f"layers{num_layers}" / "1"))
    loaded = serving.load(path)
    serve_ids = loaded.signatures["serve_ids"]
    concats[num_layers] = graph_ops.op_types(lambda: serve_ids(**ids))["ConcatV2"]
    assert len(loaded.joined_qkv_weights) == 2 * num_layers
    stored = {v.name: v.numpy() for v in loaded.joined_qkv_weights}
    for layer in pretrainer.discriminator.encoder.transformer_layers:
      kernel, bias = layer.joined_qkv_weights()
      np.testing.assert_array_equal(stored[f"{layer.name}/joined_qkv_kernel:0"], kernel)
      np.testing.assert_array_equal(stored[f"{layer.name}/joined_qkv_bias:0"], bias)
    expected = pretrainer.discriminator(ids, training=False)["pooled_output"]
    assert_close(serve_ids(**ids)["cls_output"].numpy(), np.asarray(expected), "cls_output")
  assert concats[3] == concats[1], concats
  # Signatures asked for again after the weights changed hold the new ones.
  layer = pretrainer.discriminator.encoder.transformer_layers[0]
  layer.key.kernel.assign(layer.key.kernel * 2.0)
  module.get_signatures()
  stored = {v.name: v.numpy() for v in module.joined_qkv_weights}
  np.testing.assert_array_equal(
    stored[f"{layer.name}/joined_qkv_kernel:0"], layer.joined_qkv_weights()[0]
  )


def test_serve_ids_with_more_positions_than_the_export_names_its_length(tmp_path):
  vocab_file = write_vocab(str(tmp_path))
  model = tiny_finetuning_model([ClassificationHead("rte", 2, name="task_specific_rte")])
  module = export_lib.build_serving_module(
    model, "task", ElectraTokenizer(vocab_file=vocab_file), S, task="rte"
  )
  tf.saved_model.save(module, str(tmp_path / "export"), signatures=module.get_signatures())
  serve_ids = tf.saved_model.load(str(tmp_path / "export")).signatures["serve_ids"]
  ones = tf.ones([2, S], tf.int32)
  out = serve_ids(input_ids=ones, input_mask=ones, segment_ids=tf.zeros_like(ones))
  assert out["probabilities"].shape == (2, 2)
  longer = tf.ones([2, S + 4], tf.int32)
  with pytest.raises(
    tf.errors.InvalidArgumentError, match=f"serve_ids: input_ids must have {S} positions per row"
  ):
    serve_ids(input_ids=longer, input_mask=longer, segment_ids=tf.zeros_like(longer))
  # An id outside the vocab is named, not a failed gather deep in the graph
  # (on a GPU that gather would read zeros without an error).
  vocab_size = len(open(vocab_file, encoding="utf-8").read().split())
  for outside in (vocab_size, -1):
    ids = ones.numpy()
    ids[1, 2] = outside
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
      serve_ids(input_ids=tf.constant(ids), input_mask=ones, segment_ids=tf.zeros_like(ones))
    message = str(e.value)
    assert f"serve_ids: every input_ids value must be in [0, {vocab_size})" in message
    assert f"[{outside}]" in message and "GatherV2" not in message
  # A row whose mask has no [CLS] would run on nothing and get a constant answer.
  mask = ones.numpy()
  mask[1] = 0
  with pytest.raises(tf.errors.InvalidArgumentError) as e:
    serve_ids(input_ids=ones, input_mask=tf.constant(mask), segment_ids=tf.zeros_like(ones))
  assert "serve_ids: input_mask must start with 1 in every row (its [CLS] token)" in str(e.value)
  assert "[1]" in str(e.value)
  # A segment id outside the token-type table (2 rows) is named, not a
  # failed gather (on a GPU it would read zeros).
  segments = np.zeros([2, S], np.int32)
  segments[1, 3] = 2
  with pytest.raises(tf.errors.InvalidArgumentError) as e:
    serve_ids(input_ids=ones, input_mask=ones, segment_ids=tf.constant(segments))
  message = str(e.value)
  assert "serve_ids: every segment_ids value must be in [0, 2)" in message
  assert "[2]" in message and "GatherV2" not in message
  # A mask value other than 0/1 would silently change the answer; a row of
  # 2s is named for its values, not for its missing leading 1.
  for value, where in ((5, 2), (-1, 2), (2, slice(None))):
    mask = ones.numpy()
    mask[1, where] = value
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
      serve_ids(input_ids=ones, input_mask=tf.constant(mask), segment_ids=tf.zeros_like(ones))
    message = str(e.value)
    assert "serve_ids: every input_mask value must be 0 or 1" in message, message
    assert f"[{value}]" in message and "must start with 1" not in message
  # serve_examples feeds the same network and checks the same values.
  serve_examples = tf.saved_model.load(str(tmp_path / "export")).signatures["serve_examples"]
  features = {k: np.ones([2, S], np.int64) for k in serving_modules.PACKED_KEYS}
  features["segment_ids"] = np.zeros([2, S], np.int64)
  out = serve_examples(examples=tf.constant(serialize_examples(features)))
  assert out["probabilities"].shape == (2, 2)
  for key, value, expected in (
    ("input_mask", 3, "serve_examples: every input_mask value must be 0 or 1"),
    ("segment_ids", 7, "serve_examples: every segment_ids value must be in [0, 2)"),
    (
      "input_ids",
      vocab_size,
      f"serve_examples: every input_ids value must be in [0, {vocab_size})",
    ),
  ):
    bad = {k: v.copy() for k, v in features.items()}
    bad[key][0, 4] = value
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
      serve_examples(examples=tf.constant(serialize_examples(bad)))
    assert expected in str(e.value) and f"[{value}]" in str(e.value)
  # The raw-text signature takes [batch] texts; a 2-D batch is named.
  serve_text = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
  texts = tf.constant([["a b", "c"], ["d", "e"]])
  with pytest.raises(tf.errors.InvalidArgumentError, match="serving_default: text_a must be a 1-D"):
    serve_text(text_a=texts, text_b=tf.constant(["", "", "", ""]))
  # A single string (no batch dimension) is named too, not "slice index 0 … out of bounds".
  with pytest.raises(tf.errors.InvalidArgumentError, match="one text goes in a batch of one"):
    serve_text(text_a=tf.constant("a b"), text_b=tf.constant(""))
