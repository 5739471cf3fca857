"""Serving on the batch's real length: every signature of every module equals
the full-padding module (`real_length=False`) within 1e-5, in process and
from SavedModels loaded in a fresh process; per-position outputs past the
longest row hold the documented fill and every output keeps its shape. So do
the opt-in XLA and constant-weights modules.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.qa.head import QAHead
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.serving import export as export_lib
from electra_tf.serving import modules as serving_modules
from electra_tf.text import wordpiece as tokenization
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers.serving import S
from tests.helpers.serving import featurize
from tests.helpers.serving import requests_for
from tests.helpers.serving import serialize_examples
from tests.helpers.serving import serve_in_fresh_process
from tests.helpers.serving import tiny_finetuning_model
from tests.helpers.serving import tiny_pretrainer
from tests.helpers.serving import write_vocab

TOLERANCE = 1e-5
# Short rows (longest 7 of S=16 tokens), one- and two-segment rows mixed.
SHORT_A = [b"the quick fox", b"hello", b"", b"a big red cat"]
SHORT_B = [b"", b"world", b"", b""]
GEN_A = [b"the [MASK] fox", b"[MASK] cat", b"no mask here", b"[MASK]"]
GEN_B = [b"", b"sat", b"", b""]
QA_A = [b"what?", b"who", b"red"]
QA_B = [b"red cat", b"the cat sat", b"a big dog"]
# Per-position outputs and what they hold past the encoder's length.
SEQUENCE_FILLS = {
  "rtd_logits": 0.0,
  "rtd_probs": 0.0,
  "sequence_output": 0.0,
  "logits": 0.0,  # tagging only; classification logits are [B, C]
  "predictions": 0,
  "start_logits": serving_modules.QA_MASKED_LOGIT,
  "end_logits": serving_modules.QA_MASKED_LOGIT,
}


def encoder_length(input_mask, multiple, minimum=1):
  longest = max(int(np.flatnonzero(row).max()) + 1 if row.any() else 0 for row in input_mask)
  return min(S, -(-max(longest, minimum) // multiple) * multiple)


def assert_equals_full_padding(real, full, length, what):
  assert sorted(real) == sorted(full), what
  for key, expected in full.items():
    actual = real[key]
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, f"{what} {key}"
    per_position = key in SEQUENCE_FILLS and expected.ndim >= 2 and expected.shape[1] == S
    if per_position:
      np.testing.assert_array_equal(actual[:, length:], SEQUENCE_FILLS[key], f"{what} {key} fill")
      actual, expected = actual[:, :length], expected[:, :length]
    if np.issubdtype(expected.dtype, np.floating):
      np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE, err_msg=f"{what} {key}")
    else:
      np.testing.assert_array_equal(actual, expected, err_msg=f"{what} {key}")


def run_signatures(module, texts_a, texts_b, features):
  """`{signature kind: {output: array}}` of the module's three signatures."""
  as_numpy = lambda out: {k: v.numpy() for k, v in out.items()}  # noqa: E731
  return {
    "text": as_numpy(module.serve_text(tf.constant(texts_a), tf.constant(texts_b))),
    "ids": as_numpy(module.serve_ids(**{k: tf.constant(v) for k, v in features.items()})),
    "examples": as_numpy(module.serve_examples(tf.constant(serialize_examples(features)))),
  }


@pytest.fixture(scope="module")
def networks(tmp_path_factory):
  keras.mixed_precision.set_global_policy("float32")
  root = str(tmp_path_factory.mktemp("real_length"))
  vocab_file = write_vocab(root)
  finetuned = tiny_finetuning_model(
    [
      ClassificationHead("rte", 3, name="task_specific_rte"),
      QAHead("squad", beam_size=2, name="task_specific_squad"),
      TaggingHead("chunk", 4, name="task_specific_chunk"),
    ]
  )
  return {
    "root": root,
    "tokenizer": ElectraTokenizer(vocab_file=vocab_file),
    "py_tokenizer": tokenization.FullTokenizer(vocab_file, do_lower_case=True),
    "pretrainer": tiny_pretrainer(root),
    "finetuned": finetuned,
  }


def build_module(networks, name, **kwargs):
  tokenizer = networks["tokenizer"]
  if name == "disc":
    disc = networks["pretrainer"].discriminator
    return serving_modules.DiscriminatorServingModule(disc, tokenizer, S, **kwargs)
  if name == "gen":
    gen = networks["pretrainer"].generator
    return serving_modules.MaskedLMServingModule(
      gen, tokenizer, S, top_k=3, max_predictions=4, **kwargs
    )
  return serving_modules.TaskHeadServingModule(
    networks["finetuned"], name, tokenizer, S, max_query_length=4, **kwargs
  )


def inputs_for(networks, name):
  py_tokenizer = networks["py_tokenizer"]
  if name == "gen":
    return GEN_A, GEN_B, featurize(py_tokenizer, GEN_A, GEN_B, mode="generator")
  if name == "squad":
    return QA_A, QA_B, featurize(py_tokenizer, QA_A, QA_B, mode="qa")
  if name == "chunk":
    return SHORT_A, SHORT_B, featurize(py_tokenizer, SHORT_A, SHORT_B, mode="tagging")
  return SHORT_A, SHORT_B, featurize(py_tokenizer, SHORT_A, SHORT_B)


@pytest.fixture(scope="module")
def full_padding_outputs():
  """{network name: the full-padding module's outputs on its inputs},
  filled by the first test of each network (they do not depend on the
  length multiple or XLA)."""
  return {}


@pytest.mark.parametrize(
  "name, multiple, jit_compile, constant_weights",
  [("disc", 8, False, False), ("disc", 8, True, False), ("rte", 8, False, True)]
  + [
    pytest.param(name, multiple, jit_compile, constant_weights, marks=pytest.mark.slow)
    for name, multiple, jit_compile, constant_weights in [
      ("disc", 1, False, False),
      ("gen", 8, False, False),
      ("rte", 8, False, False),
      ("squad", 1, False, False),
      ("chunk", 8, False, False),
      ("gen", 8, True, False),
      ("rte", 8, True, False),
      ("squad", 1, True, False),
      ("chunk", 8, True, False),
      ("disc", 1, False, True),
      ("gen", 8, False, True),
      ("squad", 1, False, True),
      ("chunk", 8, False, True),
      ("rte", 8, True, True),
      ("squad", 1, True, True),
    ]
  ],
)
@pytest.mark.slow
def test_every_signature_equals_full_padding(
  networks, full_padding_outputs, name, multiple, jit_compile, constant_weights
):
  texts_a, texts_b, features = inputs_for(networks, name)
  minimum = 2 if name == "squad" else 1  # the QA beam's K
  length = encoder_length(features["input_mask"], multiple, minimum)
  assert length < S  # the test must exercise a shorter encoder run
  if name not in full_padding_outputs:
    full_padding_outputs[name] = run_signatures(
      build_module(networks, name, real_length=False), texts_a, texts_b, features
    )
  full = full_padding_outputs[name]
  real = run_signatures(
    build_module(
      networks,
      name,
      length_multiple=multiple,
      jit_compile=jit_compile,
      constant_weights=constant_weights,
    ),
    texts_a,
    texts_b,
    features,
  )
  for kind in full:
    assert_equals_full_padding(real[kind], full[kind], length, f"{name} {kind}")


def test_a_full_row_runs_on_every_position(networks):
  module = build_module(networks, "disc", length_multiple=8)
  mask = np.zeros((2, S), np.int32)
  mask[1, : S - 1] = 1
  assert int(module.encoder_length(tf.constant(mask))) == S
  # an all-padding batch (and an empty one) still runs on one bucket
  assert int(module.encoder_length(tf.zeros((2, S), tf.int32))) == 8
  assert int(module.encoder_length(tf.zeros((0, S), tf.int32))) == 8
  assert build_module(networks, "disc", real_length=False).encoder_length(mask) == S
  with pytest.raises(ValueError, match="length_multiple=0"):
    build_module(networks, "disc", length_multiple=0)


def test_signature_shapes_stay_static(networks):
  module = build_module(networks, "disc")
  outputs = module.get_signatures()["serve_ids"].structured_outputs
  assert outputs["rtd_logits"].shape.as_list() == [None, S]
  assert outputs["sequence_output"].shape.as_list()[:2] == [None, S]


def _xla_compiled_functions(concrete_function):
  library = concrete_function.graph.as_graph_def().library.function
  return [f for f in library if f.attr["_XlaMustCompile"].b]


@pytest.mark.parametrize("name", ["disc", "gen", "squad"])
def test_jit_compile_compiles_the_network_and_nothing_else(networks, name):
  plain = build_module(networks, name).get_signatures()
  compiled = build_module(networks, name, jit_compile=True).get_signatures()
  for signature, function in compiled.items():
    assert not _xla_compiled_functions(plain[signature]), signature
    # One compiled function per signature: the network on the trimmed inputs;
    # tokenizing, parsing and the length stay outside (XLA has no string ops).
    assert len(_xla_compiled_functions(function)) == 1, signature
    # the compiled network projects q, k and v by three matmuls, no kernel join
    (network,) = _xla_compiled_functions(function)
    joins = [n.name for n in network.node_def if n.op == "ConcatV2" and "encoder" in n.name]
    assert not joins, (signature, joins)
    assert function.structured_outputs.keys() == plain[signature].structured_outputs.keys()


@pytest.mark.slow
def test_saved_models_in_a_fresh_process_equal_full_padding(networks):
  root = networks["root"]
  vocab_file = networks["tokenizer"].vocab_file
  paths, requests, lengths = {}, {}, {}
  for name in ("disc", "gen"):
    texts_a, texts_b, features = inputs_for(networks, name)
    lengths[name, "real"] = encoder_length(features["input_mask"], 1)  # the default multiple
    lengths[name, "xla"] = encoder_length(features["input_mask"], 8)
    for variant, kwargs in (("real", {}), ("full", {"real_length": False})):
      module = build_module(networks, name, **kwargs)
      path = os.path.join(root, f"{name}_{variant}", "1")
      tf.saved_model.save(module, path, signatures=module.get_signatures())
      paths[f"{name}_{variant}"] = path
    # the opt-in XLA and constant-weights exports, as `export_saved_model
    # --jit-compile` and `--constant-weights` write them
    for variant, kwargs in (
      ("xla", {"length_multiple": 8, "jit_compile": True}),
      ("const", {"constant_weights": True}),
    ):
      paths[f"{name}_{variant}"] = export_lib.export(
        networks["pretrainer"],
        "discriminator" if name == "disc" else "generator",
        vocab_file,
        os.path.join(root, f"{name}_{variant}"),
        max_seq_length=S,
        top_k=3,
        max_predictions=4,
        **kwargs,
      )
    lengths[name, "const"] = lengths[name, "real"]
    for variant in ("real", "full", "xla", "const"):
      requests.update(requests_for(f"{name}_{variant}", texts_a, texts_b, features))
  results = serve_in_fresh_process(str(tmp_dir(root)), paths, requests)
  for name in ("disc", "gen"):
    for variant in ("real", "xla", "const"):
      for kind in ("text", "ids", "examples"):
        assert_equals_full_padding(
          results[f"{name}_{variant}_{kind}"],
          results[f"{name}_full_{kind}"],
          lengths[name, variant],
          f"{name} {variant} {kind} (SavedModel)",
        )
  with open(os.path.join(paths["disc_xla"], "assets", "README.txt")) as f:
    assert "--xla_cpu_compilation_enabled=true" in f.read()
  with open(os.path.join(paths["disc_const"], "assets", "README.txt")) as f:
    assert "constants in saved_model.pb" in f.read()


def tmp_dir(root):
  path = os.path.join(root, "serving")
  os.makedirs(path, exist_ok=True)
  return path
