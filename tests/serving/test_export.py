"""SavedModel export for TF Serving: signatures, fresh-process serving,
PredictRequests, `saved_model_cli`, bad inputs, the CLI's sources.

The exports are made once per module (tiny models, a self-made vocab); one
fresh Python process (no electra_tf import) loads every export with
`tf.saved_model.load` and answers `PredictRequest` protos built here, as the
TF Serving server would. The references are the Keras models run on the
pure-Python tokenizer's featurisation (`model/tokenization.py`, `finetune/classification/classification_tasks.py`).
"""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import export_saved_model
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.classification.tasks import truncate_seq_pair
from electra_tf.finetune.model import FinetuningModel
from electra_tf.finetune.qa.head import QAHead
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.serving import export as export_lib
from electra_tf.serving import modules as serving_modules
from electra_tf.text import wordpiece as tokenization
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers.subprocesses import run_python

S = 16
MAX_QUERY = 4
TOP_K = 3
MAX_PREDICTIONS = 4
TOLERANCE = 1e-5

VOCAB = [
  "[PAD]",
  "[UNK]",
  "[CLS]",
  "[SEP]",
  "[MASK]",
  "the",
  "quick",
  "brown",
  "fox",
  "jump",
  "##ed",
  "##s",
  "over",
  "lazy",
  "dog",
  "hello",
  "world",
  "cafe",
  "a",
  "b",
  "c",
  ",",
  ".",
  "!",
  "?",
  "'",
  "[",
  "]",
  "mask",
  "is",
  "what",
  "who",
  "no",
  "here",
  "##ly",
  "big",
  "red",
  "cat",
  "sat",
  "on",
  "mat",
]

PRETRAIN_HPARAMS = {
  "vocab_size": len(VOCAB),
  "embedding_size": 8,
  "generator_hidden_size": 0.5,
  "model_hparam_overrides": {
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "max_position_embeddings": 32,
  },
}
BERT_CONFIG = dict(PRETRAIN_HPARAMS["model_hparam_overrides"], vocab_size=len(VOCAB))

# One batch with every awkward case: a plain single segment, an empty text,
# a single segment longer than S (truncated), non-UTF-8 bytes (dropped, as the
# original's convert_to_unicode), a pair whose b is too long, a plain pair,
# and both-empty. One- and two-segment rows are mixed.
TEXT_A = [
  b"The quick brown fox jumped over the lazy dog.",
  b"",
  b"hello world " * 12,
  b"Caf\xc3\xa9 \xff\xfe dog! Wh\x80o?",
  b"hello world",
  b"What is red?",
  b"",
]
TEXT_B = [b"", b"", b"", b"a lazy dog", b"the fox jumps " * 8, b"A big red cat sat", b""]
# Generator: the literal [MASK] marks masked positions.
GEN_A = [
  b"the [MASK] fox jumped over the [MASK] dog",
  b"[MASK]",
  b"",
  b"hello [MASK][MASK] world " * 4,
  b"no mask here",
  b"[MASK] cat",
]
GEN_B = [b"", b"", b"", b"", b"the [MASK] dog", b"sat on [MASK] mat"]
# QA: question (text_a, cut to MAX_QUERY tokens) and context (text_b).
QA_A = [b"What is red?", b"who sat on the big red mat ? what ? who ?", b"a"]
QA_B = [b"A big red cat sat on the mat.", b"the cat", b"the quick brown fox " * 6]


# --- reference featurisation (pure Python, the original's rules) -------------


def _python_tokenize(tokenizer, text, mask_placeholder=False):
  text = tokenization.convert_to_unicode(text)
  if not mask_placeholder:
    return tokenizer.tokenize(text)
  tokens = []
  for i, piece in enumerate(text.split("[MASK]")):
    if i:
      tokens.append("[MASK]")
    tokens += tokenizer.tokenize(piece)
  return tokens


def _pack(tokenizer, tokens_a, tokens_b, segment_one=False):
  tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
  segments = [0] * len(tokens)
  if tokens_b:
    tokens += tokens_b + ["[SEP]"]
    segments += [1] * (len(tokens_b) + 1)
  ids = tokenizer.convert_tokens_to_ids(tokens)
  if segment_one:
    segments = [1] * len(ids)
  pad = S - len(ids)
  return ids + [0] * pad, [1] * len(ids) + [0] * pad, segments + [0] * pad


def featurize(tokenizer, texts_a, texts_b, mode="default"):
  """The original's featurisation of a batch → dict of int32 [B, S]."""
  rows = []
  for text_a, text_b in zip(texts_a, texts_b):
    placeholder = mode == "generator"
    a = _python_tokenize(tokenizer, text_a, placeholder)
    if mode == "qa":
      a = a[:MAX_QUERY]
      b = _python_tokenize(tokenizer, text_b)[: S - 3 - len(a)]
    elif mode == "tagging":
      a, b = a[: S - 2], None
    elif text_b:
      b = _python_tokenize(tokenizer, text_b, placeholder)
      truncate_seq_pair(a, b, S - 3)
    else:
      a, b = a[: S - 2], None
    rows.append(_pack(tokenizer, a, b, segment_one=mode == "tagging"))
  return {
    k: np.array([r[i] for r in rows], np.int32) for i, k in enumerate(serving_modules.PACKED_KEYS)
  }


def serialize_examples(features):
  out = []
  for i in range(len(features["input_ids"])):
    feature = {
      k: tf.train.Feature(int64_list=tf.train.Int64List(value=features[k][i]))
      for k in serving_modules.PACKED_KEYS
    }
    out.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
  return np.array(out, dtype=object)


# --- PredictRequests and the fresh serving process ---------------------------


def build_predict_request(model_name, signature_name, inputs):
  """A TF Serving `PredictRequest` carrying `inputs` ({name: array})."""
  from tensorflow_serving.apis import predict_pb2

  request = predict_pb2.PredictRequest()
  request.model_spec.name = model_name
  request.model_spec.signature_name = signature_name
  for name, value in inputs.items():
    request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
  return request


_SERVER_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the tokenizer ops
    from tensorflow_serving.apis import predict_pb2

    jobs = json.load(open(sys.argv[1]))
    models = {}
    for job in jobs:
      if "rest" in job:
        # TF Serving's REST "row" format: a list of instances, one dict each
        with open(job["rest"]) as f:
          body = json.load(f)
        model_name, signature = job["model"], body.get("signature_name", "serving_default")
        inputs = {k: np.array([row[k] for row in body["instances"]], object)
                  for k in body["instances"][0]}
      else:
        request = predict_pb2.PredictRequest()
        with open(job["request"], "rb") as f:
          request.ParseFromString(f.read())
        model_name, signature = request.model_spec.name, request.model_spec.signature_name
        inputs = {k: tf.make_ndarray(v) for k, v in request.inputs.items()}
      path = job["models"][model_name]
      if path not in models:
        models[path] = tf.saved_model.load(path)
      fn = models[path].signatures[signature]
      expected = sorted(fn.structured_input_signature[1])
      if sorted(inputs) != expected:
        raise SystemExit(f"request inputs {sorted(inputs)} != {expected}")
      outputs = fn(**{k: tf.constant(v) for k, v in inputs.items()})
      np.savez(job["out"], **{k: v.numpy() for k, v in outputs.items()})
    leaked = [m for m in sys.modules if m.split(".")[0] == "electra_tf"]
    if leaked:
      raise SystemExit(f"the serving process imported {leaked}")
    print("served", len(jobs))
""")


def serve_in_fresh_process(workdir, models, requests, rest_bodies=None):
  """Answers `requests` ({key: PredictRequest}) and `rest_bodies` ({key:
  (model name, JSON body)}) in a new Python process that imports only
  TensorFlow, tensorflow-text and tensorflow-serving-api.

  Returns:
    {key: {output name: array}}.
  """
  jobs = []
  for key, request in requests.items():
    req_path = os.path.join(workdir, f"{key}.pb")
    with open(req_path, "wb") as f:
      f.write(request.SerializeToString())
    jobs.append({"request": req_path, "models": models, "out": os.path.join(workdir, f"{key}.npz")})
  for key, (model_name, body) in (rest_bodies or {}).items():
    body_path = os.path.join(workdir, f"{key}.json")
    with open(body_path, "w") as f:
      f.write(body)
    jobs.append(
      {
        "rest": body_path,
        "model": model_name,
        "models": models,
        "out": os.path.join(workdir, f"{key}.npz"),
      }
    )
  jobs_path = os.path.join(workdir, "jobs.json")
  with open(jobs_path, "w") as f:
    json.dump(jobs, f)
  script = os.path.join(workdir, "serve.py")
  with open(script, "w") as f:
    f.write(_SERVER_SCRIPT)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH="")
  proc = run_python([script, jobs_path], cwd=workdir, env=env, timeout=900)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  results = {}
  for key in list(requests) + list(rest_bodies or {}):
    with np.load(os.path.join(workdir, f"{key}.npz")) as data:
      results[key] = {k: data[k] for k in data.files}
  return results


# The JSON body a REST client POSTs to /v1/models/<name>:predict.
REST_ROWS = [0, 1, 4, 5]  # rows of TEXT_A/TEXT_B that are valid UTF-8


def rest_body(rows):
  return json.dumps(
    {
      "signature_name": "serving_default",
      "instances": [{"text_a": TEXT_A[i].decode(), "text_b": TEXT_B[i].decode()} for i in rows],
    }
  )


# --- the exports --------------------------------------------------------------


def _write_vocab(directory):
  path = os.path.join(directory, "my_vocab.txt")  # deliberately not vocab.txt
  with open(path, "w") as f:
    f.write("\n".join(VOCAB) + "\n")
  return path


def _tiny_pretrainer(data_dir):
  keras.utils.set_random_seed(1)
  model = ElectraPretrainer.from_pretraining_config(
    PretrainingConfig("tiny", data_dir, **PRETRAIN_HPARAMS)
  )
  model.build()
  return model


def _tiny_finetuning_model(heads):
  keras.utils.set_random_seed(2)
  model = FinetuningModel(BERT_CONFIG, heads, embedding_size=8)
  model.build()
  # Non-zero biases so that a missing bias would show.
  for weight in model.weights:
    if weight.path.endswith("bias"):
      weight.assign(np.random.default_rng(3).normal(size=weight.shape).astype("float32"))
  return model


def _requests_for(model_name, texts_a, texts_b, features):
  return {
    f"{model_name}_text": build_predict_request(
      model_name,
      "serving_default",
      {"text_a": np.array(texts_a, object), "text_b": np.array(texts_b, object)},
    ),
    f"{model_name}_ids": build_predict_request(model_name, "serve_ids", features),
    f"{model_name}_examples": build_predict_request(
      model_name, "serve_examples", {"examples": serialize_examples(features)}
    ),
  }


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """Exports the discriminator (CLI, .keras file), the generator and two
  fine-tuned heads (Python API), then serves every request in one fresh
  process."""
  keras.mixed_precision.set_global_policy("float32")
  root = str(tmp_path_factory.mktemp("export"))
  vocab_file = _write_vocab(root)
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
  pretrainer = _tiny_pretrainer(root)

  keras_file = os.path.join(root, "pretrainer.keras")
  pretrainer.save(keras_file)
  disc_dir = os.path.join(root, "disc")
  assert (
    export_saved_model.main(
      [
        "--keras-model",
        keras_file,
        "--vocab-file",
        vocab_file,
        "--export-dir",
        disc_dir,
        "--max-seq-length",
        str(S),
        "--model",
        "discriminator",
      ]
    )
    == 0
  )

  gen_dir = os.path.join(root, "gen")
  export_lib.export(
    pretrainer,
    "generator",
    vocab_file,
    gen_dir,
    max_seq_length=S,
    version=3,
    top_k=TOP_K,
    max_predictions=MAX_PREDICTIONS,
  )

  finetuned = _tiny_finetuning_model(
    [
      ClassificationHead("rte", 3, name="task_specific_rte"),
      QAHead("squad", beam_size=2, name="task_specific_squad"),
    ]
  )
  rte_path = export_lib.export(
    finetuned, "task", vocab_file, os.path.join(root, "rte"), max_seq_length=S, task="rte"
  )
  squad_path = export_lib.export(
    finetuned,
    "task",
    vocab_file,
    os.path.join(root, "squad"),
    max_seq_length=S,
    task="squad",
    max_query_length=MAX_QUERY,
  )

  paths = {
    "disc": os.path.join(disc_dir, "1"),
    "gen": os.path.join(gen_dir, "3"),
    "rte": rte_path,
    "squad": squad_path,
  }
  features = {
    "disc": featurize(tokenizer, TEXT_A, TEXT_B),
    "gen": featurize(tokenizer, GEN_A, GEN_B, mode="generator"),
    "rte": featurize(tokenizer, TEXT_A, TEXT_B),
    "squad": featurize(tokenizer, QA_A, QA_B, mode="qa"),
  }
  texts = {
    "disc": (TEXT_A, TEXT_B),
    "gen": (GEN_A, GEN_B),
    "rte": (TEXT_A, TEXT_B),
    "squad": (QA_A, QA_B),
  }
  requests = {}
  for name in paths:
    requests.update(_requests_for(name, *texts[name], features[name]))
  workdir = str(tmp_path_factory.mktemp("serving"))
  results = serve_in_fresh_process(
    workdir, paths, requests, {"disc_rest": ("disc", rest_body(REST_ROWS))}
  )
  return {
    "paths": paths,
    "features": features,
    "results": results,
    "requests": requests,
    "pretrainer": pretrainer,
    "finetuned": finetuned,
    "tokenizer": tokenizer,
    "vocab_file": vocab_file,
  }


def _assert_close(actual, expected, what):
  np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE, err_msg=what)


SIGNATURE_KINDS = ("text", "ids", "examples")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["disc", "gen", "rte", "squad"])
def test_every_signature_packs_like_the_original(exported, name):
  expected = exported["features"][name]
  for kind in SIGNATURE_KINDS:
    out = exported["results"][f"{name}_{kind}"]
    for key in serving_modules.PACKED_KEYS:
      np.testing.assert_array_equal(out[key], expected[key], err_msg=f"{name} {kind} {key}")
      assert out[key].dtype == np.int32


@pytest.mark.slow
def test_text_packing_covers_bad_inputs(exported):
  ids = exported["features"]["disc"]["input_ids"]
  mask = exported["features"]["disc"]["input_mask"]
  out = exported["results"]["disc_text"]
  np.testing.assert_array_equal(out["input_ids"], ids)
  vocab = {t: i for i, t in enumerate(VOCAB)}
  cls, sep = vocab["[CLS]"], vocab["[SEP]"]
  # empty text → [CLS] [SEP]; the long single text fills S; the pair is cut
  np.testing.assert_array_equal(out["input_ids"][1, :3], [cls, sep, 0])
  assert mask[2].sum() == S and out["input_ids"][2, -1] == sep
  assert mask[4].sum() == S and (out["segment_ids"][4] == 1).any()
  # the invalid bytes vanish: "Café \xff\xfe dog! Wh\x80o?" → cafe dog ! who ?
  assert [VOCAB[i] for i in out["input_ids"][3, 1:7]] == ["cafe", "dog", "!", "who", "?", "[SEP]"]


@pytest.mark.slow
def test_discriminator_signatures_match_keras(exported):
  disc = exported["pretrainer"].discriminator
  features = exported["features"]["disc"]
  ref = disc(features, training=False)
  logits = np.asarray(ref["logits"])
  for kind in SIGNATURE_KINDS:
    out = exported["results"][f"disc_{kind}"]
    _assert_close(out["rtd_logits"], logits, kind)
    _assert_close(out["rtd_probs"], 1 / (1 + np.exp(-logits)), kind)
    _assert_close(out["cls_output"], np.asarray(ref["pooled_output"]), kind)
    _assert_close(out["sequence_output"], np.asarray(ref["sequence_output"]), kind)


@pytest.mark.slow
def test_generator_signatures_match_keras(exported):
  gen = exported["pretrainer"].generator
  features = exported["features"]["gen"]
  mask_id = VOCAB.index("[MASK]")
  positions = np.zeros((len(GEN_A), MAX_PREDICTIONS), np.int32)
  weights = np.zeros((len(GEN_A), MAX_PREDICTIONS), np.float32)
  for row, ids in enumerate(features["input_ids"]):
    found = np.flatnonzero(ids == mask_id)[:MAX_PREDICTIONS]
    positions[row, : len(found)] = found
    weights[row, : len(found)] = 1.0
  assert weights.sum(axis=1).tolist() == [2, 1, 0, 4, 1, 2]
  logits = gen(features, masked_lm_positions=positions, training=False)["mlm_logits"]
  probs, ids = tf.math.top_k(tf.nn.softmax(logits, -1), k=TOP_K)
  for kind in SIGNATURE_KINDS:
    out = exported["results"][f"gen_{kind}"]
    np.testing.assert_array_equal(out["masked_lm_positions"], positions)
    np.testing.assert_array_equal(out["masked_lm_weights"], weights)
    np.testing.assert_array_equal(out["top_k_ids"], ids.numpy())
    _assert_close(out["top_k_probs"], probs.numpy(), kind)


@pytest.mark.slow
def test_classification_head_signatures_match_keras(exported):
  model = exported["finetuned"]
  features = exported["features"]["rte"]
  sequence = model.encoder(features, training=False)["sequence_output"]
  head = model.heads[0]
  zeros = np.zeros(len(TEXT_A), np.int32)
  logits = np.asarray(head(sequence, {"rte_label_ids": zeros, "rte_eid": zeros})["logits"])
  for kind in SIGNATURE_KINDS:
    out = exported["results"][f"rte_{kind}"]
    _assert_close(out["logits"], logits, kind)
    _assert_close(out["probabilities"], tf.nn.softmax(logits).numpy(), kind)
    np.testing.assert_array_equal(out["predictions"], logits.argmax(-1))


@pytest.mark.slow
def test_qa_head_signatures_match_keras(exported):
  model = exported["finetuned"]
  features = exported["features"]["squad"]
  sequence = model.encoder(features, training=False)["sequence_output"]
  zeros = np.zeros(len(QA_A), np.int32)
  head_features = dict(
    features,
    squad_start_positions=zeros,
    squad_end_positions=zeros,
    squad_is_impossible=zeros,
    squad_eid=zeros,
  )
  ref = model.heads[1](sequence, head_features, training=False)
  for kind in SIGNATURE_KINDS:
    out = exported["results"][f"squad_{kind}"]
    assert "end_logits" not in out  # joint prediction: the beam outputs instead
    for key in ("start_logits", "start_top_log_probs", "end_top_log_probs", "answerable_logit"):
      _assert_close(out[key], np.asarray(ref[key]), f"{kind} {key}")
    for key in ("start_top_index", "end_top_index"):
      np.testing.assert_array_equal(out[key], np.asarray(ref[key]))
    assert out["end_top_index"].shape == (len(QA_A), 2, 2)


@pytest.mark.slow
def test_export_layout_and_vocab_asset(exported):
  for name, path in exported["paths"].items():
    assert os.path.basename(path).isdigit(), name
    assert os.path.isfile(os.path.join(path, "saved_model.pb"))
    assert os.path.isdir(os.path.join(path, "variables"))
    with open(os.path.join(path, "assets", "vocab.txt")) as f:
      assert f.read().split("\n")[: len(VOCAB)] == VOCAB
    # no temporary directories left behind
    assert sorted(os.listdir(os.path.dirname(path))) == [os.path.basename(path)]


@pytest.mark.slow
def test_rest_body_for_serving_default(exported):
  rest = exported["results"]["disc_rest"]
  text = exported["results"]["disc_text"]
  for key in ("input_ids", "rtd_probs", "cls_output"):
    _assert_close(rest[key], text[key][REST_ROWS], key)


def _signature_defs(path):
  from tensorflow.core.protobuf import saved_model_pb2

  saved_model = saved_model_pb2.SavedModel()
  with open(os.path.join(path, "saved_model.pb"), "rb") as f:
    saved_model.ParseFromString(f.read())
  return saved_model.meta_graphs[0].signature_def


@pytest.mark.slow
def test_predict_requests_carry_exactly_the_signature_inputs(exported):
  for key, request in exported["requests"].items():
    name = request.model_spec.name
    signature = _signature_defs(exported["paths"][name])[request.model_spec.signature_name]
    assert sorted(request.inputs) == sorted(signature.inputs), key
    for input_name, info in signature.inputs.items():
      tensor = request.inputs[input_name]
      assert tensor.dtype == info.dtype, (key, input_name)
      expected_dims = [d.size for d in info.tensor_shape.dim]
      dims = [d.size for d in tensor.tensor_shape.dim]
      assert len(dims) == len(expected_dims)
      assert all(e in (-1, d) for e, d in zip(expected_dims, dims)), (key, input_name)


@pytest.mark.slow
def test_saved_model_cli_lists_the_signatures(exported):
  cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
  proc = subprocess.run(
    [cli, "show", "--dir", exported["paths"]["disc"], "--all"],
    capture_output=True,
    text=True,
    timeout=600,
    env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
  )
  assert proc.returncode == 0, proc.stderr[-2000:]
  text = proc.stdout

  def section(name):
    start = text.index(f"signature_def['{name}']")
    end = text.find("signature_def[", start + 1)
    return text[start : end if end > 0 else len(text)]

  def entry(block, kind, name, dtype, shape):
    marker = f"{kind}['{name}'] tensor_info:"
    assert marker in block, (marker, block)
    info = block[block.index(marker) :].split("\n")[1:3]
    assert info[0].strip() == f"dtype: {dtype}", info
    assert info[1].strip() == f"shape: {shape}", info

  h = BERT_CONFIG["hidden_size"]
  text_sig = section("serving_default")
  entry(text_sig, "inputs", "text_a", "DT_STRING", "(-1)")
  entry(text_sig, "inputs", "text_b", "DT_STRING", "(-1)")
  ids_sig = section("serve_ids")
  for name in serving_modules.PACKED_KEYS:
    entry(ids_sig, "inputs", name, "DT_INT32", f"(-1, {S})")
  examples_sig = section("serve_examples")
  entry(examples_sig, "inputs", "examples", "DT_STRING", "(-1)")
  for block in (text_sig, ids_sig, examples_sig):
    entry(block, "outputs", "rtd_probs", "DT_FLOAT", f"(-1, {S})")
    entry(block, "outputs", "rtd_logits", "DT_FLOAT", f"(-1, {S})")
    entry(block, "outputs", "cls_output", "DT_FLOAT", f"(-1, {h})")
    entry(block, "outputs", "sequence_output", "DT_FLOAT", f"(-1, {S}, {h})")
    entry(block, "outputs", "input_ids", "DT_INT32", f"(-1, {S})")
    assert "Method name is: tensorflow/serving/predict" in block


# --- heads checked in process (no save) ---------------------------------------


def _module_outputs(module, features):
  return {
    k: v.numpy()
    for k, v in module.serve_ids(**{k: tf.constant(v) for k, v in features.items()}).items()
  }


def test_regression_and_tagging_heads(tmp_path):
  vocab_file = _write_vocab(str(tmp_path))
  model = _tiny_finetuning_model(
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
  out = _module_outputs(sts, features)
  ref = model.heads[0](
    sequence, {"sts_targets": np.zeros(n, "float32"), "sts_eid": np.zeros(n, "int32")}
  )
  _assert_close(out["predictions"], np.asarray(ref["predictions"]), "sts")
  assert out["predictions"].shape == (n,)
  with pytest.raises(tf.errors.InvalidArgumentError, match="same batch size"):
    sts.serve_text(tf.constant(["a b", "c"]), tf.constant([""]))

  chunk = export_lib.build_serving_module(model, "task", tokenizer, S, task="chunk")
  out = _module_outputs(chunk, features)
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
  _assert_close(out["logits"], np.asarray(ref["logits"]), "chunk")
  np.testing.assert_array_equal(out["predictions"], np.asarray(ref["logits"]).argmax(-1))
  # Tagging text: one segment, segment ids 1 as the tagging featuriser.
  packed = chunk.pack_text(tf.constant(TEXT_A), tf.constant(TEXT_B))
  expected = featurize(py_tokenizer, TEXT_A, TEXT_B, mode="tagging")
  for key in serving_modules.PACKED_KEYS:
    np.testing.assert_array_equal(packed[key].numpy(), expected[key], err_msg=key)


def test_finetuned_keras_file_serves_its_heads(tmp_path):
  vocab_file = _write_vocab(str(tmp_path))
  model = _tiny_finetuning_model([ClassificationHead("mnli", 3, name="task_specific_mnli")])
  model.save(str(tmp_path / "ft.keras"))
  loaded = export_lib.load_model(keras_model=str(tmp_path / "ft.keras"), kind="task")[0]
  features = featurize(tokenization.FullTokenizer(vocab_file), TEXT_A, TEXT_B)
  tokenizer = ElectraTokenizer(vocab_file=vocab_file)
  expected = _module_outputs(export_lib.build_serving_module(model, "task", tokenizer, S), features)
  served = export_lib.with_dtype_policy(loaded, "float32")
  out = _module_outputs(export_lib.build_serving_module(served, "task", tokenizer, S), features)
  _assert_close(out["probabilities"], expected["probabilities"], "mnli")
  mixed = export_lib.with_dtype_policy(loaded, "mixed_bfloat16")
  out = _module_outputs(export_lib.build_serving_module(mixed, "task", tokenizer, S), features)
  assert out["probabilities"].dtype == np.float32
  np.testing.assert_allclose(out["probabilities"], expected["probabilities"], atol=0.05)


def test_electric_two_tower_generator_as_masked_lm(tmp_path):
  vocab_file = _write_vocab(str(tmp_path))
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
  out = _module_outputs(module, features)
  logits = electric.generator(features, masked_lm_positions=out["masked_lm_positions"])
  probs, ids = tf.math.top_k(tf.nn.softmax(logits["mlm_logits"], -1), k=TOP_K)
  np.testing.assert_array_equal(out["top_k_ids"], ids.numpy())
  _assert_close(out["top_k_probs"], probs.numpy(), "electric")
  # the two-tower logits cover every position: check one masked slot directly
  logits_all = electric.generator(features)["logits"]
  full = tf.nn.softmax(logits_all, -1).numpy()
  row, slot = 0, 1
  position = out["masked_lm_positions"][row, slot]
  assert out["masked_lm_weights"][row, slot] == 1.0
  assert out["top_k_ids"][row, slot, 0] == full[row, position].argmax()
  assert logits_all.shape[-1] == len(VOCAB)


@pytest.mark.slow
def test_finetuned_checkpoint_export(tmp_path):
  from electra_tf.checkpoints import name_based
  from electra_tf.configs.finetuning import FinetuningConfig

  vocab_file = _write_vocab(str(tmp_path))
  hparams = dict(PRETRAIN_HPARAMS, task_names=["rte", "sts"])
  hparams.pop("generator_hidden_size")
  config = FinetuningConfig("tiny", str(tmp_path), **hparams)
  keras.utils.set_random_seed(5)
  model = export_lib.build_finetuning_model(config)
  for weight in model.weights:  # trained-looking heads
    if "task_specific" in weight.path or "bias" in weight.path:
      weight.assign(np.random.default_rng(6).normal(size=weight.shape).astype("float32"))
  # the fine-tuning runs' layout: original names under task_specific/<task>/
  name_based.save_name_based(model.official_name_map(), str(tmp_path / "ft"), 9)
  assert (
    export_saved_model.main(
      [
        "--checkpoint",
        str(tmp_path / "ft"),
        "--hparams",
        json.dumps(hparams),
        "--model",
        "task",
        "--task",
        "sts",
        "--vocab-file",
        vocab_file,
        "--export-dir",
        str(tmp_path / "out"),
        "--max-seq-length",
        str(S),
        "--version",
        "12",
      ]
    )
    == 0
  )
  loaded = tf.saved_model.load(str(tmp_path / "out" / "12"))
  out = loaded.signatures["serving_default"](text_a=tf.constant(TEXT_A), text_b=tf.constant(TEXT_B))
  features = featurize(tokenization.FullTokenizer(vocab_file), TEXT_A, TEXT_B)
  sequence = model.encoder(features)["sequence_output"]
  n = len(TEXT_A)
  ref = model.heads[1](
    sequence, {"sts_targets": np.zeros(n, "float32"), "sts_eid": np.zeros(n, "int32")}
  )
  _assert_close(out["predictions"].numpy(), np.asarray(ref["predictions"]), "sts")
  assert sorted(out) == ["input_ids", "input_mask", "predictions", "segment_ids"]


# --- options and errors (no export) --------------------------------------------


def test_float32_serving_rebuilds_a_mixed_precision_model(tmp_path):
  keras.mixed_precision.set_global_policy("mixed_bfloat16")
  mixed = _tiny_pretrainer(str(tmp_path))
  keras.mixed_precision.set_global_policy("float32")
  served = export_lib.with_dtype_policy(mixed, "float32")
  assert served is not mixed
  assert {l.dtype_policy.name for l in served._flatten_layers()} == {"float32"}
  for a, b in zip(mixed.weights, served.weights):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  features = featurize(tokenization.FullTokenizer(_write_vocab(str(tmp_path))), TEXT_A, TEXT_B)
  out = served.discriminator(features)["logits"]
  assert out.dtype == "float32"
  # bfloat16 compute is close to, but not exactly, the float32 result
  np.testing.assert_allclose(
    np.asarray(mixed.discriminator(features)["logits"], "float32"), np.asarray(out), atol=0.1
  )
  assert export_lib.with_dtype_policy(served, "float32") is served
  back = export_lib.with_dtype_policy(served, "mixed_bfloat16")
  assert back.discriminator.encoder.dtype_policy.name == "mixed_bfloat16"


def test_bad_options_raise_clear_errors(tmp_path):
  vocab_file = _write_vocab(str(tmp_path))
  pretrainer = _tiny_pretrainer(str(tmp_path))
  with pytest.raises(ValueError, match="max_position_embeddings 32"):
    export_lib.export(
      pretrainer, "discriminator", vocab_file, str(tmp_path / "e"), max_seq_length=64
    )
  with pytest.raises(ValueError, match="use --model task|needs a fine-tuned model"):
    export_lib.export(pretrainer, "task", vocab_file, str(tmp_path / "e"))
  short_vocab = tmp_path / "short.txt"
  short_vocab.write_text("\n".join(VOCAB[:-1]))
  with pytest.raises(ValueError, match="has 40 entries but the model's vocab_size is 41"):
    export_lib.export(
      pretrainer, "discriminator", str(short_vocab), str(tmp_path / "e"), max_seq_length=S
    )
  finetuned = _tiny_finetuning_model([ClassificationHead("rte", 2), ClassificationHead("mrpc", 2)])
  tokenizer = ElectraTokenizer(vocab_file=vocab_file)
  with pytest.raises(ValueError, match="several heads"):
    export_lib.build_serving_module(finetuned, "task", tokenizer, S)
  with pytest.raises(ValueError, match="'cola' is not a head"):
    export_lib.build_serving_module(finetuned, "task", tokenizer, S, task="cola")
  mlm_only = ElectraPretrainer.from_pretraining_config(
    PretrainingConfig("mlm", str(tmp_path), electra_objective=False, **PRETRAIN_HPARAMS)
  )
  with pytest.raises(ValueError, match="has no discriminator network"):
    export_lib.build_serving_module(mlm_only, "discriminator", tokenizer, S)
  (tmp_path / "e" / "1").mkdir(parents=True)
  with pytest.raises(ValueError, match="already exists"):
    export_lib.save_module(None, str(tmp_path / "e"), version=1)
  assert export_lib.next_version(str(tmp_path / "e")) == 2
  # The library's loader takes exactly one source (the CLI's flags are exclusive).
  for sources in ({}, {"keras_model": "m.keras", "checkpoint": str(tmp_path)}):
    with pytest.raises(ValueError, match="exactly one of --keras-model and --checkpoint"):
      export_lib.load_model(**sources)


def test_cli_reports_bad_input(tmp_path, capsys):
  assert (
    export_saved_model.main(["--checkpoint", str(tmp_path), "--export-dir", str(tmp_path / "out")])
    == 2
  )
  assert "has no usable `checkpoint` file" in capsys.readouterr().err
  assert (
    export_saved_model.main(
      ["--checkpoint", str(tmp_path), "--model", "task", "--export-dir", str(tmp_path / "out")]
    )
    == 2
  )
  assert "holds no model electra_tf reads" in capsys.readouterr().err
  assert (
    export_saved_model.main(
      ["--keras-model", str(tmp_path / "missing.keras"), "--export-dir", str(tmp_path / "out")]
    )
    == 2
  )
  assert "does not exist" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    export_saved_model.main(
      ["--checkpoint", str(tmp_path), "--export-dir", str(tmp_path), "--length-multiple", "0"]
    )
  assert "--length-multiple 0; expected at least 1" in capsys.readouterr().err


# --- checkpoints ---------------------------------------------------------------


def _export_pretraining_checkpoint(checkpoint, vocab_file, export_dir):
  """The exit status of the export CLI on a pre-training checkpoint of `PRETRAIN_HPARAMS`."""
  return export_saved_model.main(
    [
      "--checkpoint",
      str(checkpoint),
      "--hparams",
      json.dumps(PRETRAIN_HPARAMS),
      "--vocab-file",
      vocab_file,
      "--export-dir",
      str(export_dir),
      "--max-seq-length",
      str(S),
    ]
  )


@pytest.mark.slow
def test_electra_tf_training_checkpoint_export(tmp_path):
  vocab_file = _write_vocab(str(tmp_path))
  pretrainer = _tiny_pretrainer(str(tmp_path))
  optimizer = keras.optimizers.Adam()
  optimizer.build(pretrainer.trainable_variables)
  # The layout `checkpointing.TrainingCheckpointManager` writes.
  prefix = tf.train.Checkpoint(model=pretrainer, optimizer=optimizer).write(
    str(tmp_path / "ckpt" / "model.ckpt-7")
  )
  assert (
    _export_pretraining_checkpoint(
      str(tmp_path / "ckpt" / "model.ckpt-7"), vocab_file, tmp_path / "out"
    )
    == 0
  )
  assert prefix.endswith("model.ckpt-7")
  loaded = tf.saved_model.load(str(tmp_path / "out" / "1"))
  features = featurize(tokenization.FullTokenizer(vocab_file), TEXT_A, TEXT_B)
  out = loaded.signatures["serve_ids"](**{k: tf.constant(v) for k, v in features.items()})
  _assert_close(
    out["rtd_logits"].numpy(),
    np.asarray(pretrainer.discriminator(features)["logits"]),
    "rtd_logits",
  )


def test_checkpoint_of_another_model_is_refused(tmp_path, capsys):
  vocab_file = _write_vocab(str(tmp_path))
  other = dict(
    PRETRAIN_HPARAMS,
    model_hparam_overrides=dict(PRETRAIN_HPARAMS["model_hparam_overrides"], num_hidden_layers=2),
  )
  keras.utils.set_random_seed(1)
  deeper = ElectraPretrainer.from_pretraining_config(
    PretrainingConfig("deeper", str(tmp_path), **other)
  )
  deeper.build()
  prefix = tf.train.Checkpoint(model=deeper).write(str(tmp_path / "ckpt" / "model.ckpt-7"))
  assert _export_pretraining_checkpoint(prefix, vocab_file, tmp_path / "out") == 2
  assert "cannot restore the whole model" in capsys.readouterr().err
  assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("source", ["checkpoint", "converted_keras"])
def test_official_checkpoint_export_matches_the_original(original_fixtures, tmp_path, source):
  """The original's tiny checkpoint, exported directly (read by the
  converter's loader) or from the converter's `.keras` discriminator, serves
  the original's golden RTD outputs."""
  golden = np.load(original_fixtures / "golden" / "tiny.npz")
  hparams = str(original_fixtures / "models" / "tiny_hparams.json")
  if source == "checkpoint":
    args = ["--checkpoint", str(original_fixtures / "models" / "tiny"), "--hparams", hparams]
  else:
    from electra_tf import convert_checkpoint

    keras_file = str(tmp_path / "tiny_disc.keras")
    assert (
      convert_checkpoint.main(
        [
          "--input",
          str(original_fixtures / "models" / "tiny"),
          "--output",
          keras_file,
          "--part",
          "discriminator",
          "--hparams",
          hparams,
        ]
      )
      == 0
    )
    args = ["--keras-model", keras_file]
  export_dir = str(tmp_path / "tiny")
  assert (
    export_saved_model.main(
      args
      + [
        "--vocab-file",
        str(original_fixtures / "vocab.txt"),
        "--export-dir",
        export_dir,
        "--max-seq-length",
        "128",
        "--model",
        "discriminator",
      ]
    )
    == 0
  )
  loaded = tf.saved_model.load(os.path.join(export_dir, "1"))
  out = loaded.signatures["serve_ids"](
    **{k: tf.constant(golden[k], tf.int32) for k in serving_modules.PACKED_KEYS}
  )
  _assert_close(out["rtd_probs"].numpy(), golden["disc_probs"], "disc_probs")
  _assert_close(out["rtd_logits"].numpy(), golden["disc_logits"], "disc_logits")
  _assert_close(out["cls_output"].numpy(), golden["disc_pooled_output"], "pooled")
