"""LiteRT and ONNX exports of the ids-in network (`electra_tf.serving.portable`
and `export_saved_model --format`): the files run in a fresh process that
imports only the runtimes (ai-edge-litert, ONNX Runtime, `tokenizers`),
within 1e-4 of TensorFlow at two sequence lengths, their `tokenizer.json`
gives the preprocessor's ids, int8 twins are smaller and close, and a
missing extra is named in one line."""

import importlib.util
import json
import os
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf import export_saved_model
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.serving import portable
from electra_tf.text import vocab as vocab_lib
from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers import translations
from tests.helpers.serving import VOCAB
from tests.helpers.subprocesses import run_python

TOLERANCE = 1e-4
EXTRAS_INSTALLED = all(
  importlib.util.find_spec(m) for m in ("ai_edge_litert", "onnxruntime", "tf2onnx", "onnx")
)
needs_extras = pytest.mark.skipif(
  not EXTRAS_INSTALLED,
  reason="the litert and onnx extras are not installed: pip install -e '.[litert,onnx]'",
)
S = 16
TEXT_A = ["The quick brown fox jumped.", "What is red?", "hello world " * 9]
TEXT_B = ["a lazy dog", "A big red cat sat.", "the fox"]

# Runs each job's file in its runtime, and each tokenizer check, with no
# TensorFlow and no electra_tf in the process.
_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    jobs = json.load(open(sys.argv[1]))
    for job in jobs.get("run", []):
      with np.load(job["inputs"]) as data:
        feed = {k: data[k] for k in ("input_ids", "input_mask", "segment_ids")}
      if job["file"].endswith(".onnx"):
        import onnxruntime
        session = onnxruntime.InferenceSession(job["file"], providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        out = dict(zip(names, session.run(names, feed)))
      else:
        from ai_edge_litert.interpreter import Interpreter
        out = Interpreter(model_path=job["file"]).get_signature_runner()(**feed)
      np.savez(job["out"], **out)
    ids = {}
    for check in jobs.get("tokenize", []):
      import tokenizers
      tokenizer = tokenizers.Tokenizer.from_file(check["tokenizer"])
      ids[check["key"]] = [e.ids for e in tokenizer.encode_batch(list(zip(check["a"], check["b"])))]
    json.dump(ids, open(jobs["ids_out"], "w"))
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "electra_tf"))
    if leaked:
      raise SystemExit(f"the runtime process imported {leaked[:5]}")
""")


def run_fresh(workdir, runs, tokenize=()):
  """`runs`: {key: (exported file, {input: int32 array})}; `tokenize`: [(key,
  tokenizer.json, texts_a, texts_b)]. Returns ({key: {output: array}}, {key:
  [ids per text pair]}) computed in a new process."""
  jobs = {"run": [], "tokenize": [], "ids_out": str(workdir / "ids.json")}
  for key, (path, features) in runs.items():
    np.savez(workdir / f"{key}_in.npz", **features)
    jobs["run"].append(
      {"file": path, "inputs": str(workdir / f"{key}_in.npz"), "out": str(workdir / f"{key}.npz")}
    )
  for key, tokenizer, a, b in tokenize:
    jobs["tokenize"].append({"key": key, "tokenizer": tokenizer, "a": a, "b": b})
  (workdir / "jobs.json").write_text(json.dumps(jobs))
  (workdir / "runner.py").write_text(_RUNNER)
  env = dict(os.environ, PYTHONPATH="", TF_CPP_MIN_LOG_LEVEL="3")
  proc = run_python([str(workdir / "runner.py"), str(workdir / "jobs.json")], cwd=workdir, env=env)
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
  outputs = {}
  for key in runs:
    with np.load(workdir / f"{key}.npz") as data:
      outputs[key] = {k: data[k] for k in data.files}
  return outputs, json.loads((workdir / "ids.json").read_text())


def _task_models():
  """Tiny classifier, span QA and tagger with preprocessors, non-zero biases."""
  bert = {
    "vocab_size": len(VOCAB),
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "max_position_embeddings": 32,
  }
  tokenizer = ElectraTokenizer(vocabulary=VOCAB)

  def preprocessor(packing):
    return ElectraTextPreprocessor(tokenizer, max_seq_length=S, packing=packing, max_query_length=5)

  keras.utils.set_random_seed(4)
  models = {
    "classifier": electra_tf.ElectraClassifier(
      bert, 3, preprocessor=preprocessor("pair"), embedding_size=8
    ),
    "qa": electra_tf.ElectraQuestionAnswerer(
      bert, preprocessor=preprocessor("question_context"), embedding_size=8
    ),
    "tagger": electra_tf.ElectraTokenTagger(
      bert, 5, preprocessor=preprocessor("tagging"), embedding_size=8
    ),
  }
  rng = np.random.default_rng(5)
  for model in models.values():
    model.build()
    for weight in model.weights:
      if weight.path.endswith("bias"):
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
  return models


def _as_dict(outputs):
  return (
    {k: np.asarray(v) for k, v in outputs.items()}
    if isinstance(outputs, dict)
    else {"logits": np.asarray(outputs)}
  )


@pytest.mark.slow
@needs_extras
def test_task_models_run_in_fresh_runtimes_as_in_tensorflow(tmp_path):
  """Classification, QA and tagging exported with `model.export(path,
  format=...)`, LiteRT and ONNX, at the packed length
  and a shorter one (both formats take any length); the tokenizer.json
  beside the files tokenises as the model's preprocessor."""
  models = _task_models()
  runs, expected = {}, {}
  for name, model in models.items():
    texts = tf.constant(TEXT_A) if name == "tagger" else (tf.constant(TEXT_A), tf.constant(TEXT_B))
    packed = {k: np.asarray(v) for k, v in model.pack(texts).items()}
    lengths = {"full": packed, "short": {k: v[:, :7].copy() for k, v in packed.items()}}
    for fmt in portable.FORMATS:
      path = str(tmp_path / name / portable.default_filename(name, fmt))
      assert model.export(path, format=fmt) == path  # Keras' contract, through export_portable
      for length, features in lengths.items():
        runs[f"{name}_{fmt}_{length}"] = (path, features)
        expected[f"{name}_{fmt}_{length}"] = _as_dict(model(features))
    assert {"vocab.txt", "tokenizer.json", "tokenizer_config.json"} <= set(
      os.listdir(tmp_path / name)
    )
  # The first two pairs fit S untruncated: the ids must be the packed ones.
  tokenize = [
    ("classifier", str(tmp_path / "classifier" / "tokenizer.json"), TEXT_A[:2], TEXT_B[:2])
  ]
  outputs, ids = run_fresh(tmp_path, runs, tokenize)
  for key, want in expected.items():
    got = outputs[key]
    for output, value in want.items():
      assert got[output].shape == value.shape, key
      np.testing.assert_allclose(got[output], value, rtol=0, atol=TOLERANCE, err_msg=key)
  packed = models["classifier"].pack((tf.constant(TEXT_A[:2]), tf.constant(TEXT_B[:2])))
  assert len(ids["classifier"]) == 2
  for row, row_ids in enumerate(ids["classifier"]):
    n = int(np.sum(packed["input_mask"][row]))
    assert n < S and row_ids == packed["input_ids"][row][:n].numpy().tolist()


@pytest.mark.slow
@needs_extras
def test_official_checkpoint_exports_match_the_original(original_fixtures, tmp_path):
  """The original's tiny checkpoint through `export_saved_model --format`:
  the float discriminator (LiteRT, ONNX) gives the original's golden logits;
  the generator (one attention head) gives its masked-LM predictions; the
  int8 twins are smaller and close."""
  golden = np.load(original_fixtures / "golden" / "tiny.npz")
  source = [
    "--checkpoint",
    str(original_fixtures / "models" / "tiny"),
    "--hparams",
    str(original_fixtures / "models" / "tiny_hparams.json"),
    "--vocab-file",
    str(original_fixtures / "vocab.txt"),
    "--export-dir",
    str(tmp_path / "out"),
  ]
  exports = [
    ("discriminator", "litert", None),
    ("discriminator", "litert", "dynamic-int8"),
    ("discriminator", "onnx", None),
    ("discriminator", "onnx", "dynamic-int8"),
    ("generator", "onnx", None),
  ]
  for kind, fmt, quantize in exports:
    args = source + ["--model", kind, "--format", fmt]
    assert export_saved_model.main(args + (["--quantize", quantize] if quantize else [])) == 0
  # A second export to the same name is refused without --overwrite.
  assert export_saved_model.main(source + ["--format", "onnx"]) == 2
  disc = {k: golden[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")}
  gen = dict(disc, input_ids=golden["masked_input_ids"].astype(np.int32))
  runs = {
    f"{kind}_{fmt}_{q or 'float'}": (
      str(tmp_path / "out" / portable.default_filename(kind, fmt, q)),
      disc if kind == "discriminator" else gen,
    )
    for kind, fmt, q in exports
  }
  outputs, _ = run_fresh(tmp_path, runs)
  for fmt in portable.FORMATS:
    out = outputs[f"discriminator_{fmt}_float"]
    np.testing.assert_allclose(out["rtd_logits"], golden["disc_logits"], rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(
      out["cls_output"], golden["disc_pooled_output"], rtol=0, atol=TOLERANCE
    )
    int8 = outputs[f"discriminator_{fmt}_dynamic-int8"]
    # Loose: int8 weights move the probabilities by a few hundredths at most.
    assert np.max(np.abs(int8["rtd_probs"] - golden["disc_probs"])) < 0.1, fmt
    float_size = os.path.getsize(runs[f"discriminator_{fmt}_float"][0])
    int8_size = os.path.getsize(runs[f"discriminator_{fmt}_dynamic-int8"][0])
    assert int8_size < 0.5 * float_size, (fmt, int8_size, float_size)
  # The generator's top token at each [MASK] is the original's argmax there.
  out = outputs["generator_onnx_float"]
  mask_id = 103
  for row in range(len(gen["input_ids"])):
    slots = {p: j for j, p in enumerate(golden["masked_lm_positions"][row].tolist())}
    masked = np.flatnonzero((gen["input_ids"][row] == mask_id) & (gen["input_mask"][row] == 1))
    assert (
      masked.size and out["masked_lm_positions"][row][: masked.size].tolist() == masked.tolist()
    )
    for slot, position in enumerate(masked):
      logits = golden["gen_mlm_logits"][row, slots[position]]
      probs = np.exp(logits - logits.max())
      probs /= probs.sum()
      assert out["top_k_ids"][row, slot, 0] == np.argmax(logits)
      assert abs(out["top_k_probs"][row, slot, 0] - probs.max()) < TOLERANCE


def test_missing_extra_and_bad_flags_are_one_line(tmp_path, monkeypatch, capsys):
  source = ["--checkpoint", str(tmp_path / "none"), "--export-dir", str(tmp_path / "out")]
  assert export_saved_model.main(source + ["--quantize", "dynamic-int8"]) == 2
  err = capsys.readouterr().err.strip()
  assert err.splitlines() == [err] and "--quantize needs --format litert or onnx" in err
  for fmt, module in (("litert", "ai_edge_litert.interpreter"), ("onnx", "tf2onnx")):
    monkeypatch.setitem(sys.modules, module, None)  # an import of it now fails
    with pytest.raises(portable.MissingExtra, match=rf"pip install 'electra_tf\[{fmt}\]'"):
      portable.export_portable(None, str(tmp_path / "x"), fmt)
    assert export_saved_model.main(source + ["--format", fmt]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and f"the optional '{fmt}' extra" in err
  assert not (tmp_path / "out").exists()
  # the SavedModel's own options are refused with a portable format, not ignored
  assert (
    export_saved_model.main(source + ["--format", "onnx", "--constant-weights", "--jit-compile"])
    == 2
  )
  err = capsys.readouterr().err.strip()
  assert err.splitlines() == [err]
  assert "--jit-compile, --constant-weights: for --format tf_saved_model only" in err


@pytest.mark.slow
@needs_extras
def test_sentencepiece_classifier_exports_with_its_model_and_tokenizer_json(tmp_path):
  """A classifier on a German SentencePiece model: both formats carry the
  model and a `tokenizer.json` that tokenises as the preprocessor, and run
  as TensorFlow does."""
  lines = [line for doc in translations.catalogue_messages("de") for line in doc if line]
  tokenizer = SentencePieceTokenizer(proto=vocab_lib.train_sentencepiece(lines, 300, "unigram"))
  preprocessor = ElectraTextPreprocessor(tokenizer, max_seq_length=32, packing="pair")
  bert = {
    "vocab_size": tokenizer.vocab_size,
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "max_position_embeddings": 32,
  }
  keras.utils.set_random_seed(6)
  model = electra_tf.ElectraClassifier(bert, 2, preprocessor=preprocessor, embedding_size=8)
  # Short pairs that fit untruncated, umlauts and ß included.
  a = [line for line in lines if 3 <= len(line) <= 12][:3] + ["Grüße aus Köln"]
  b = ["Straße", "Übergröße", "ja", "nein"]
  packed = {k: np.asarray(v) for k, v in model.pack((tf.constant(a), tf.constant(b))).items()}
  assert packed["input_mask"][:, -1].sum() == 0
  runs, expected = {}, _as_dict(model(packed))
  for fmt in portable.FORMATS:
    path = str(tmp_path / fmt / portable.default_filename("sst", fmt))
    assert model.export(path, format=fmt) == path
    files = set(os.listdir(tmp_path / fmt))
    assert {"sentencepiece.model", "sentencepiece.model.json", "tokenizer.json"} <= files
    assert "vocab.txt" not in files
    assert (tmp_path / fmt / "sentencepiece.model").read_bytes() == tokenizer.proto
    runs[fmt] = (path, packed)
  tokenize = [("sp", str(tmp_path / "onnx" / "tokenizer.json"), a, b)]
  outputs, ids = run_fresh(tmp_path, runs, tokenize)
  for fmt in runs:
    np.testing.assert_allclose(
      outputs[fmt]["logits"], expected["logits"], rtol=0, atol=TOLERANCE, err_msg=fmt
    )
  for row, row_ids in enumerate(ids["sp"]):
    n = int(packed["input_mask"][row].sum())
    assert row_ids == packed["input_ids"][row][:n].tolist()


def test_an_interrupted_export_leaves_none_of_its_files(tmp_path, monkeypatch):
  """Ctrl-C (or an error) after the network file but before its tokenizer
  files: the files this export made go, the export dir too if it made it;
  what was there before stays."""

  def interrupt(*args):
    raise KeyboardInterrupt

  # The network is written (and checked); Ctrl-C before its tokenizer files.
  monkeypatch.setattr(portable, "require", lambda format: None)
  monkeypatch.setattr(
    portable,
    "build_network",
    lambda model, **options: (None, ElectraTokenizer(vocabulary=VOCAB), 8, 8),
  )
  monkeypatch.setattr(portable, "_to_onnx", lambda *args: b"network")
  monkeypatch.setattr(portable, "_check_export", lambda *args: None)
  monkeypatch.setattr(portable, "write_tokenizer_files", interrupt)
  with pytest.raises(KeyboardInterrupt):
    portable.export_to_dir(None, str(tmp_path / "new"), "onnx", "discriminator")
  assert not (tmp_path / "new").exists()
  (tmp_path / "kept").mkdir()
  (tmp_path / "kept" / "vocab.txt").write_text("[PAD]\n")
  with pytest.raises(KeyboardInterrupt):
    portable.export_to_dir(None, str(tmp_path / "kept"), "onnx", "discriminator")
  assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["vocab.txt"]
