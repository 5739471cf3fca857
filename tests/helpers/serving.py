"""Test helpers for SavedModel serving: a self-made vocab, tiny models,
text batches with every awkward case, the original's featurisation in pure
Python (the reference), TF Serving `PredictRequest`s, and a fresh Python
process (no electra_tf import) that answers them as the TF Serving server
would."""

import json
import os
import textwrap

import keras
import numpy as np
import tensorflow as tf

from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.finetune.classification.tasks import truncate_seq_pair
from electra_tf.finetune.model import FinetuningModel
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.serving import modules as serving_modules
from electra_tf.text import wordpiece as tokenization
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
  "max_seq_length": 32,  # the whole position table (the config refuses more)
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


def write_vocab(directory):
  path = os.path.join(directory, "my_vocab.txt")  # deliberately not vocab.txt
  with open(path, "w") as f:
    f.write("\n".join(VOCAB) + "\n")
  return path


def tiny_pretrainer(data_dir):
  keras.utils.set_random_seed(1)
  model = ElectraPretrainer.from_pretraining_config(
    PretrainingConfig("tiny", data_dir, **PRETRAIN_HPARAMS)
  )
  model.build()
  return model


def tiny_finetuning_model(heads):
  keras.utils.set_random_seed(2)
  model = FinetuningModel(BERT_CONFIG, heads, embedding_size=8)
  model.build()
  # Non-zero biases so that a missing bias would show.
  for weight in model.weights:
    if weight.path.endswith("bias"):
      weight.assign(np.random.default_rng(3).normal(size=weight.shape).astype("float32"))
  return model


def requests_for(model_name, texts_a, texts_b, features):
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


def assert_close(actual, expected, what):
  np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE, err_msg=what)


def module_outputs(module, features):
  return {
    k: v.numpy()
    for k, v in module.serve_ids(**{k: tf.constant(v) for k, v in features.items()}).items()
  }
