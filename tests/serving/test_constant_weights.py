"""The constant-weights export (`constant_weights=True`, `export_saved_model
--constant-weights`): the weight matrices are graph constants, held once for
the three signatures; biases and LayerNorm weights are the module's own
variables, and nothing else is saved; the bias adds stay fused with their
matmuls when TensorFlow runs the loaded export; too many weights for a
graph are refused. Its outputs equal the plain export's in
`test_real_length.py`.
"""

import os

import keras
import pytest
import tensorflow as tf

from bench.graph_ops import op_types
from electra_tf.serving import export as export_lib
from electra_tf.serving import loading
from electra_tf.serving import modules as serving_modules
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers.serving import S
from tests.helpers.serving import tiny_pretrainer
from tests.helpers.serving import write_vocab

IDS = {
  "input_ids": tf.constant([[2, 7, 8, 3] + [0] * (S - 4)]),
  "input_mask": tf.constant([[1, 1, 1, 1] + [0] * (S - 4)]),
  "segment_ids": tf.zeros([1, S], tf.int32),
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
  keras.mixed_precision.set_global_policy("float32")
  root = str(tmp_path_factory.mktemp("constant_weights"))
  vocab_file = write_vocab(root)
  return {
    "root": root,
    "vocab_file": vocab_file,
    "tokenizer": ElectraTokenizer(vocab_file=vocab_file),
    "pretrainer": tiny_pretrainer(root),
  }


def _module(setup, **kwargs):
  return serving_modules.DiscriminatorServingModule(
    setup["pretrainer"].discriminator, setup["tokenizer"], S, constant_weights=True, **kwargs
  )


def _matrix_constants(function_def):
  """Names of the float constants of rank 2 in a library function."""
  names = []
  for node in function_def.node_def:
    value = node.attr["value"].tensor
    if node.op == "Const" and value.dtype == tf.float32 and len(value.tensor_shape.dim) == 2:
      names.append(node.name)
  return names


@pytest.mark.parametrize("jit_compile", [False, True])
def test_matrices_are_constants_once_and_vectors_the_modules_variables(setup, jit_compile):
  discriminator = setup["pretrainer"].discriminator
  module = _module(setup, jit_compile=jit_compile)
  signatures = module.get_signatures()
  matrices = [w for w in discriminator.weights if len(w.shape) == 2]
  vectors = [w for w in discriminator.weights if len(w.shape) == 1]
  layers = discriminator.bert_config["num_hidden_layers"]
  holders = set()
  for name, function in signatures.items():
    # Only the module's copies of the vectors are read, none of the network's variables.
    captured = {id(v) for v in function.variables}
    assert not captured & {id(w) for w in discriminator.weights}, name
    assert {len(v.shape) for v in function.variables} == {1}, name
    library = function.graph.as_graph_def().library.function
    holders |= {f.signature.name for f in library if _matrix_constants(f)}
  # One network function, shared by the three signatures, holds the matrices.
  assert len(holders) == 1, holders
  (holder,) = [
    f for f in signatures["serve_ids"].graph.as_graph_def().library.function
    if f.signature.name in holders
  ]  # fmt: skip
  # Without XLA each layer's query, key and value are one joined kernel.
  joined = 0 if jit_compile else layers
  expected_matrices = len(matrices) - 3 * joined + joined
  assert len(_matrix_constants(holder)) == expected_matrices
  # the vectors the module holds: its copies, and each joined query/key/value bias
  held = list(module.constant_weights_vectors) + list(getattr(module, "joined_qkv_weights", []))
  assert len(held) == len(vectors) - 3 * joined + joined
  # what is saved: the module's vectors, not the network's variables
  path = os.path.join(setup["root"], f"saved_{jit_compile}")
  tf.saved_model.save(module, path, signatures=signatures)
  saved = tf.train.list_variables(os.path.join(path, "variables", "variables"))
  saved = [shape for name, shape in saved if name != "_CHECKPOINTABLE_OBJECT_GRAPH"]
  assert [len(shape) for shape in saved] == [1] * len(held)


@pytest.mark.slow
def test_the_loaded_export_keeps_bias_adds_fused_and_reads_only_vectors(setup):
  """Grappler folds constants: had the biases been constants too, it would
  have moved the bias adds off the matmuls and TensorFlow would run plain
  matmuls with separate adds (what this export was first written as)."""
  counts = {}
  for variant, kwargs in (("plain", {}), ("const", {"constant_weights": True})):
    path = export_lib.export(
      setup["pretrainer"],
      "discriminator",
      setup["vocab_file"],
      os.path.join(setup["root"], f"ops_{variant}"),
      max_seq_length=S,
      **kwargs,
    )
    serve = loading.load(path).signatures["serve_ids"]
    counts[variant] = op_types(lambda: serve(**IDS))  # noqa: B023
  fused = {v: sum(n for op, n in c.items() if "FusedMatMul" in op) for v, c in counts.items()}
  assert fused["const"] == fused["plain"] > 0, counts
  # the plain export reads every weight; the constant one only the vectors
  assert 0 < counts["const"]["ReadVariableOp"] < counts["plain"]["ReadVariableOp"]
  assert counts["const"]["ReadVariableOp"] <= sum(
    1 for w in setup["pretrainer"].discriminator.weights if len(w.shape) == 1
  )


def test_too_many_weights_for_a_graph_are_refused(setup, monkeypatch):
  monkeypatch.setattr(serving_modules, "CONSTANT_WEIGHTS_MAX_BYTES", 1000)
  with pytest.raises(ValueError, match=r"--constant-weights.*GiB.*export without it"):
    _module(setup).get_signatures()
