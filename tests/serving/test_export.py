"""SavedModel export for TF Serving (`electra_tf.serving.export`):
signatures, fresh-process serving, PredictRequests, `saved_model_cli`, dtype
policies, `.keras` fine-tuned models, bad options.

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

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import export_saved_model
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.qa.head import QAHead
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.serving import export as export_lib
from electra_tf.serving import modules as serving_modules
from electra_tf.text import wordpiece as tokenization
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers import model_formats
from tests.helpers.serving import BERT_CONFIG
from tests.helpers.serving import GEN_A
from tests.helpers.serving import GEN_B
from tests.helpers.serving import MAX_PREDICTIONS
from tests.helpers.serving import MAX_QUERY
from tests.helpers.serving import PRETRAIN_HPARAMS
from tests.helpers.serving import QA_A
from tests.helpers.serving import QA_B
from tests.helpers.serving import TEXT_A
from tests.helpers.serving import TEXT_B
from tests.helpers.serving import TOP_K
from tests.helpers.serving import VOCAB
from tests.helpers.serving import S
from tests.helpers.serving import assert_close
from tests.helpers.serving import featurize
from tests.helpers.serving import module_outputs
from tests.helpers.serving import requests_for
from tests.helpers.serving import serve_in_fresh_process
from tests.helpers.serving import tiny_finetuning_model
from tests.helpers.serving import tiny_pretrainer
from tests.helpers.serving import write_vocab

# The JSON body a REST client POSTs to /v1/models/<name>:predict.
REST_ROWS = [0, 1, 4, 5]  # rows of TEXT_A/TEXT_B that are valid UTF-8


def rest_body(rows):
  return json.dumps(
    {
      "signature_name": "serving_default",
      "instances": [{"text_a": TEXT_A[i].decode(), "text_b": TEXT_B[i].decode()} for i in rows],
    }
  )


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """Exports the discriminator (CLI, .keras file), the generator and two
  fine-tuned heads (Python API), then serves every request in one fresh
  process."""
  keras.mixed_precision.set_global_policy("float32")
  root = str(tmp_path_factory.mktemp("export"))
  vocab_file = write_vocab(root)
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
  pretrainer = tiny_pretrainer(root)

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

  finetuned = tiny_finetuning_model(
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
    requests.update(requests_for(name, *texts[name], features[name]))
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
    assert_close(out["rtd_logits"], logits, kind)
    assert_close(out["rtd_probs"], 1 / (1 + np.exp(-logits)), kind)
    assert_close(out["cls_output"], np.asarray(ref["pooled_output"]), kind)
    assert_close(out["sequence_output"], np.asarray(ref["sequence_output"]), kind)


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
    assert_close(out["top_k_probs"], probs.numpy(), kind)


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
    assert_close(out["logits"], logits, kind)
    assert_close(out["probabilities"], tf.nn.softmax(logits).numpy(), kind)
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
      assert_close(out[key], np.asarray(ref[key]), f"{kind} {key}")
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
    with open(os.path.join(path, "assets", "README.txt")) as f:
      task_line = [line for line in f if line.startswith("Task: ")]
    assert task_line == ([f"Task: {name}.\n"] if name in ("rte", "squad") else []), name
  # Another head of the same model as the next version of rte's export is refused.
  with pytest.raises(ValueError, match=r"holds version 1, task rte's export; task squad's there"):
    export_lib.export(
      exported["finetuned"],
      "task",
      exported["vocab_file"],
      os.path.dirname(exported["paths"]["rte"]),
      task="squad",
    )
  assert os.listdir(os.path.dirname(exported["paths"]["rte"])) == ["1"]


@pytest.mark.slow
def test_rest_body_for_serving_default(exported):
  rest = exported["results"]["disc_rest"]
  text = exported["results"]["disc_text"]
  for key in ("input_ids", "rtd_probs", "cls_output"):
    assert_close(rest[key], text[key][REST_ROWS], key)


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


def test_finetuned_keras_file_serves_its_heads(tmp_path):
  vocab_file = write_vocab(str(tmp_path))
  model = tiny_finetuning_model([ClassificationHead("mnli", 3, name="task_specific_mnli")])
  model.save(str(tmp_path / "ft.keras"))
  loaded = export_lib.load_model(keras_model=str(tmp_path / "ft.keras"), kind="task")[0]
  features = featurize(tokenization.FullTokenizer(vocab_file), TEXT_A, TEXT_B)
  tokenizer = ElectraTokenizer(vocab_file=vocab_file)
  expected = module_outputs(export_lib.build_serving_module(model, "task", tokenizer, S), features)
  served = export_lib.with_dtype_policy(loaded, "float32")
  out = module_outputs(export_lib.build_serving_module(served, "task", tokenizer, S), features)
  assert_close(out["probabilities"], expected["probabilities"], "mnli")
  mixed = export_lib.with_dtype_policy(loaded, "mixed_bfloat16")
  out = module_outputs(export_lib.build_serving_module(mixed, "task", tokenizer, S), features)
  assert out["probabilities"].dtype == np.float32
  np.testing.assert_allclose(out["probabilities"], expected["probabilities"], atol=0.05)


def test_float32_serving_rebuilds_a_mixed_precision_model(tmp_path):
  keras.mixed_precision.set_global_policy("mixed_bfloat16")
  mixed = tiny_pretrainer(str(tmp_path))
  keras.mixed_precision.set_global_policy("float32")
  served = export_lib.with_dtype_policy(mixed, "float32")
  assert served is not mixed
  assert {l.dtype_policy.name for l in served._flatten_layers()} == {"float32"}
  for a, b in zip(mixed.weights, served.weights):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  features = featurize(tokenization.FullTokenizer(write_vocab(str(tmp_path))), TEXT_A, TEXT_B)
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
  vocab_file = write_vocab(str(tmp_path))
  pretrainer = tiny_pretrainer(str(tmp_path))
  with pytest.raises(ValueError, match="max_position_embeddings 32"):
    export_lib.export(
      pretrainer, "discriminator", vocab_file, str(tmp_path / "e"), max_seq_length=64
    )
  with pytest.raises(ValueError, match="use --model task|needs a fine-tuned model"):
    export_lib.export(pretrainer, "task", vocab_file, str(tmp_path / "e"))
  # A fine-tuned checkpoint read as the default discriminator: the way out is named.
  head = {
    "task_specific/rte/dense/kernel": np.zeros([model_formats.DIMS["H"], 2], np.float32),
    "task_specific/rte/dense/bias": np.zeros([2], np.float32),
  }
  finetuned = model_formats.official_checkpoint(tmp_path / "finetuned", head)
  with pytest.raises(ValueError, match="; a fine-tuned checkpoint exports with --model task$"):
    export_lib.load_model(checkpoint=str(finetuned), kind="discriminator")
  short_vocab = tmp_path / "short.txt"
  short_vocab.write_text("\n".join(VOCAB[:-1]))
  with pytest.raises(ValueError, match="has 40 entries but the model's vocab_size is 41"):
    export_lib.export(
      pretrainer, "discriminator", str(short_vocab), str(tmp_path / "e"), max_seq_length=S
    )
  finetuned = tiny_finetuning_model([ClassificationHead("rte", 2), ClassificationHead("mrpc", 2)])
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


def test_an_interrupted_first_export_leaves_no_export_dir(tmp_path, monkeypatch):
  """Ctrl-C (or any failure) while the SavedModel is written: the export dir
  this export created is removed, not left empty; one that was there stays."""

  class Module:
    def get_signatures(self):
      return {}

  def interrupted_save(*args, **kwargs):
    raise KeyboardInterrupt

  monkeypatch.setattr(export_lib.tf.saved_model, "save", interrupted_save)
  with pytest.raises(KeyboardInterrupt):
    export_lib.save_module(Module(), str(tmp_path / "new"), version=1)
  assert not (tmp_path / "new").exists()
  (tmp_path / "kept").mkdir()
  with pytest.raises(KeyboardInterrupt):
    export_lib.save_module(Module(), str(tmp_path / "kept"), version=1)
  assert (tmp_path / "kept").is_dir() and not list((tmp_path / "kept").iterdir())


def test_another_vocab_of_the_same_size_is_refused(tmp_path, capsys):
  """--vocab-file of the right size whose ids mean other tokens: the run's
  config.json records the vocab's sha256, so the export refuses it in one
  line instead of serving wrong ids."""
  from tests.helpers.pretraining_data import pretrain_on_self_made_data
  from tests.helpers.pretraining_data import self_made_hparams
  from tests.helpers.pretraining_data import write_swapped_vocab

  assert pretrain_on_self_made_data(tmp_path, self_made_hparams(num_train_steps=1)) == 1
  capsys.readouterr()  # the pre-training's own lines (its warm-up warning) are not the export's
  other = write_swapped_vocab(tmp_path / "vocab.txt", tmp_path / "other_vocab.txt")
  model_dir = str(tmp_path / "models" / "m")
  argv = ["--checkpoint", model_dir, "--vocab-file", str(other)]
  argv += ["--export-dir", str(tmp_path / "export"), "--max-seq-length", "16"]
  assert export_saved_model.main(argv) == 2
  err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
  assert len(err) == 1 and f"the model at {model_dir!r} was trained with vocab" in err[0], err
  assert not (tmp_path / "export").exists()
