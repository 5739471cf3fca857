"""LiteRT (`.tflite`) and ONNX exports of the ids-in network, for runtimes
without TensorFlow (phones, browsers, ONNX Runtime services).

The network takes int32 `input_ids`, `input_mask`, `segment_ids` `[B, S]` of
any batch size and length and returns the outputs of the SavedModel's
`serve_ids` signature (`electra_tf.serving.modules`) without the echoed ids;
it is built for these runtimes (no in-graph tokenizer, variables frozen,
LiteRT builtin ops only). The tokenizer files a non-TF runtime tokenises with
go beside it. The converters are optional extras (`electra_tf[litert]`,
`electra_tf[onnx]`), imported only when their format is asked for; each export
is run once in its runtime before it is kept (docs/serve.md).

Example:
  >>> FORMATS, QUANTIZATIONS
  (('litert', 'onnx'), ('dynamic-int8',))
  >>> # export_portable(classifier, "out/sst2.tflite", "litert")
"""

import contextlib
import importlib
import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from electra_tf.interop import huggingface
from electra_tf.serving import export as export_lib
from electra_tf.serving import modules as serving_modules
from electra_tf.sources import any_format
from electra_tf.text.auto_tokenizer import tokenizer_for
from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.utils import extras
from electra_tf.utils import interrupts
from electra_tf.utils import keras_compat
from electra_tf.utils.file_io import dirs_made
from electra_tf.utils.file_io import not_there
from electra_tf.utils.file_io import replaced_together
from electra_tf.utils.file_io import write_atomic

FORMATS = ("litert", "onnx")
# Every `--format` of `export_saved_model`; tf_saved_model is `serving.export`'s.
ALL_FORMATS = ("tf_saved_model",) + FORMATS
QUANTIZATIONS = ("dynamic-int8",)
SUFFIXES = {"litert": ".tflite", "onnx": ".onnx"}
INPUT_NAMES = serving_modules.PACKED_KEYS
# ONNX opset: 17 has every op the network needs and every ONNX Runtime since
# 1.13 runs it.
ONNX_OPSET = 17
# How far the runtime's float outputs may be from TensorFlow's on the
# export-time check (float rounding of a different kernel order).
CHECK_TOLERANCE = 1e-3
# The Python modules each format needs, and the extra that installs them.
_NEEDS = {
  "litert": ("ai_edge_litert.interpreter",),
  "onnx": ("tf2onnx", "onnx", "onnxruntime", "onnxruntime.quantization"),
}


_NETWORK_OPTIONS = ("do_lower_case", "strip_accents", "max_seq_length", "top_k", "max_predictions")


# A format's optional packages are not installed (one line naming the extra).
MissingExtra = extras.MissingExtra


def require(format):
  """Imports the modules `format` needs; a missing one raises `MissingExtra`
  with one line naming the extra to install."""
  check_format(format)
  return [extras.require(name, format, f"--format {format}") for name in _NEEDS[format]]


def check_format(format, quantize=None):
  if format not in FORMATS:
    raise ValueError(f"--format {format!r}; expected one of {FORMATS} (or tf_saved_model)")
  if quantize is not None and quantize not in QUANTIZATIONS:
    raise ValueError(f"--quantize {quantize!r}; expected one of {QUANTIZATIONS}")


def check_request(format, quantize=None, saved_model_flags=()):
  """Refuses an unknown `format` / `quantize` pair, flags of the SavedModel
  export (`saved_model_flags`, as given) with another format, or a format
  whose extra is not installed, in one line (before any model is loaded)."""
  if format == "tf_saved_model":
    if quantize is not None:
      raise ValueError("--quantize needs --format litert or onnx")
    return
  if saved_model_flags:
    raise ValueError(
      f"{', '.join(saved_model_flags)}: for --format tf_saved_model only; a --format {format} "
      "export is one file in --export-dir (no version folders), its weights constants, in "
      "float32 unless --quantize"
    )
  check_format(format, quantize)
  require(format)


def default_filename(name, format, quantize=None):
  """`<name>.tflite`, `<name>.onnx`, `<name>-int8.tflite`, ..."""
  return name + ("-int8" if quantize else "") + SUFFIXES[format]


def _is_task_model(model):
  """A Keras task model (`ElectraClassifier`, ...): one head, its preprocessor."""
  return hasattr(model, "finetuning_model") and hasattr(model, "task_name")


def _default_kind(model):
  if _is_task_model(model) or hasattr(model, "heads"):
    return "task"
  if any_format.find_network(model, "discriminator") is None:
    return "generator"
  return "discriminator"


def _bert_config(model, kind):
  if _is_task_model(model) or hasattr(model, "heads"):
    return model.bert_config
  network = any_format.find_network(model, kind)
  return None if network is None else network.bert_config


def _tokenizer(model, vocab_file, do_lower_case, strip_accents, max_seq_length):
  """`(tokenizer, packing length)`: a task model's preprocessor's, else on `vocab_file`."""
  preprocessor = getattr(model, "preprocessor", None)
  if vocab_file is None and preprocessor is not None:
    return preprocessor.tokenizer, preprocessor.max_seq_length
  if vocab_file is None:
    raise ValueError(
      f"{type(model).__name__} carries no tokenizer: pass vocab_file (--vocab-file), the "
      "vocab (WordPiece vocab.txt or SentencePiece model) the model was trained with"
    )
  if not os.path.isfile(vocab_file):
    raise ValueError(f"--vocab-file {vocab_file!r} {not_there(vocab_file)}")
  # None applies what the vocab was built with (its settings file, else the kind's defaults).
  return tokenizer_for(vocab_file, do_lower_case, strip_accents), max_seq_length


def build_network(model, kind=None, task=None, vocab_file=None, **options):
  """The ids-in network of `model` as a TF function.

  Args:
    model: a Keras task model (`ElectraClassifier`, `ElectraQuestionAnswerer`,
      `ElectraTokenTagger`), a `FinetuningModel`, an `ElectraPretrainer` or
      an `ElectraDiscriminator` / `ElectraGenerator` (what
      `serving.export.load_model` returns).
    kind: "discriminator", "generator" or "task" (default: what `model` is;
      a pretrainer gives its discriminator).
    task: the head of a several-head `FinetuningModel`.
    vocab_file: the vocab (needed unless the model has a preprocessor).
    **options: `do_lower_case`, `strip_accents`, `max_seq_length` (the
      length text is packed to, for `tokenizer_config.json`; a task model's
      preprocessor knows its own), `top_k`, `max_predictions`.

  Returns:
    `(function, tokenizer, packing length, max length)`: `function`
    is a `tf.function` over the three `[None, None]` int32 inputs returning
    `{output name: tensor}`, its variables frozen into constants.
  """
  unknown = set(options) - set(_NETWORK_OPTIONS)
  if unknown:
    raise TypeError(f"unexpected options {sorted(unknown)}; expected {_NETWORK_OPTIONS}")
  kind = kind or _default_kind(model)
  tokenizer, packing_length = _tokenizer(
    model,
    vocab_file,
    options.get("do_lower_case"),
    options.get("strip_accents"),
    options.get("max_seq_length"),
  )
  model = export_lib.with_dtype_policy(model, "float32")
  bert_config = _bert_config(model, kind) or {}
  max_length = int(bert_config.get("max_position_embeddings", 512))
  packing_length = packing_length or min(512, max_length)
  if _is_task_model(model):
    if kind != "task":
      raise ValueError(f"{type(model).__name__} is a task model; it exports its task head only")
    module = serving_modules.TaskHeadServingModule(
      model.finetuning_model, model.task_name, tokenizer, max_length, real_length=False
    )
    if tokenizer.vocab_size != model.bert_config["vocab_size"]:
      raise ValueError(
        f"the preprocessor's vocab has {tokenizer.vocab_size} entries but the model's "
        f"vocab_size is {model.bert_config['vocab_size']}"
      )
  else:
    module = export_lib.build_serving_module(
      model,
      kind,
      tokenizer,
      max_length,
      task=task,
      top_k=options.get("top_k", 5),
      max_predictions=options.get("max_predictions", 20),
      real_length=False,
    )
  specs = [tf.TensorSpec([None, None], tf.int32, name=k) for k in INPUT_NAMES]

  @tf.function(input_signature=specs, autograph=False)
  def network(input_ids, input_mask, segment_ids):
    features = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
    return dict(module.serve(features))

  concrete = network.get_concrete_function()
  names = sorted(concrete.structured_outputs)  # the order `freeze` flattens them in
  frozen = keras_compat.freeze(concrete)

  @tf.function(input_signature=specs, autograph=False)
  def portable(input_ids, input_mask, segment_ids):
    return dict(zip(names, frozen(input_ids, input_mask, segment_ids)))

  return portable, tokenizer, packing_length, max_length


def _to_litert(function, quantize):
  converter = tf.lite.TFLiteConverter.from_concrete_functions(
    [function.get_concrete_function()], tf.Module()
  )
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  if quantize:
    converter.optimizations = [tf.lite.Optimize.DEFAULT]  # dynamic range: int8 weights
  return converter.convert()


def _erfc_handler(ctx, node, name, args):
  """tf2onnx has no `Erfc` (the exact GELU's): erfc(x) = 1 - erf(x)."""
  from tf2onnx import utils as tf2onnx_utils  # optional extra, only with --format onnx

  erf = ctx.make_node("Erf", [node.input[0]], op_name_scope=node.name)
  one = ctx.make_const(tf2onnx_utils.make_name(node.name + "_one"), np.array(1, np.float32))
  node.type = "Sub"
  ctx.replace_inputs(node, [one.output[0], erf.output[0]])


@contextlib.contextmanager
def _without_tf2onnx_optimizer(name):
  """tf2onnx 1.17's reshape optimizer folds a one-head attention's
  reshape-and-transpose into a `Reshape` whose 0 ("keep this dimension")
  lands on the flattened batch x length axis, so ONNX Runtime fails on any
  batch but 1 (ELECTRA-Small's generator has one head). `from_function`
  takes no optimizer list; its registry is edited for the call."""
  registry = importlib.import_module("tf2onnx.optimizer")._optimizers  # pylint: disable=protected-access
  saved = dict(registry)
  registry.pop(name, None)
  try:
    yield
  finally:
    registry.clear()
    registry.update(saved)


def _to_onnx(function, quantize, metadata):
  tf2onnx, onnx, _, quantization = require("onnx")
  with _without_tf2onnx_optimizer("reshape_optimizer"):
    proto, _ = tf2onnx.convert.from_function(
      function,
      input_signature=function.input_signature,
      opset=ONNX_OPSET,
      custom_op_handlers={"Erfc": (_erfc_handler, [])},
    )
  for key, value in metadata.items():
    proto.metadata_props.add(key=key, value=value)
  if not quantize:
    return proto.SerializeToString()
  work = tempfile.mkdtemp(prefix="electra_onnx_")
  try:
    float_path, int8_path = os.path.join(work, "float.onnx"), os.path.join(work, "int8.onnx")
    onnx.save(proto, float_path)
    quantization.quantize_dynamic(float_path, int8_path, weight_type=quantization.QuantType.QInt8)
    with open(int8_path, "rb") as f:
      return f.read()
  finally:
    shutil.rmtree(work, ignore_errors=True)


def run_exported(path, features, format=None):  # pylint: disable=redefined-builtin
  """Runs the `.tflite` / `.onnx` file at `path` on `features` ({input name:
  int32 [B, S]}) in its runtime (`format`, or the file's suffix when None);
  returns `{output name: numpy array}`."""
  features = {k: np.asarray(features[k], np.int32) for k in INPUT_NAMES}
  if (format or ("onnx" if path.endswith(SUFFIXES["onnx"]) else "litert")) == "onnx":
    _, _, ort, _ = require("onnx")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, features)))
  (interpreter,) = require("litert")
  runner = interpreter.Interpreter(model_path=path).get_signature_runner()
  return runner(**features)


def _probe_features(length, vocab_size):
  rng = np.random.default_rng(0)
  ids = rng.integers(5, max(6, min(vocab_size, 100)), (2, length)).astype(np.int32)
  mask = np.ones((2, length), np.int32)
  mask[1, length // 2 :] = 0
  segment = np.zeros((2, length), np.int32)
  segment[:, length // 2 :] = 1
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segment}


def _check_export(path, format, function, quantize, min_length, vocab_size):  # pylint: disable=redefined-builtin
  """Runs the export once; a float export must agree with TensorFlow."""
  features = _probe_features(max(min_length, 8), vocab_size)
  got = run_exported(path, features, format)
  want = {k: v.numpy() for k, v in function(**features).items()}
  if sorted(got) != sorted(want):
    raise RuntimeError(f"{path}: outputs {sorted(got)}, expected {sorted(want)}")
  if quantize:
    return
  for name, value in want.items():
    error = np.max(np.abs(np.asarray(got[name], np.float64) - value), initial=0.0)
    if value.dtype.kind == "f" and error > CHECK_TOLERANCE:
      raise RuntimeError(f"{path}: {name} differs from TensorFlow's by {error:.3g}")


def vocab_file_name(tokenizer):
  """The vocab's name among the tokenizer files: `sentencepiece.model` or `vocab.txt`."""
  if isinstance(tokenizer, SentencePieceTokenizer):
    return huggingface.SENTENCEPIECE_FILE
  return huggingface.VOCAB_FILE


def write_tokenizer_files(directory, tokenizer, packing_length):
  """The vocab (`vocab.txt`, or `sentencepiece.model` and its settings),
  `tokenizer.json` and `tokenizer_config.json` in `directory`."""
  work = tempfile.mkdtemp(prefix="electra_tokenizer_")
  try:
    if isinstance(tokenizer, SentencePieceTokenizer):
      huggingface.write_hf_sentencepiece_files(
        work,
        tokenizer.model_bytes,
        tokenizer.do_lower_case,
        tokenizer.strip_accents,
        packing_length,
        source=tokenizer.model_file or "the preprocessor's SentencePiece model",
      )
    else:
      if tokenizer.vocabulary is not None:
        tokens = [str(t).strip() for t in tokenizer.vocabulary]
      else:
        tokens = huggingface.read_vocab(tokenizer.vocab_file, tokenizer.vocab_size)
      huggingface.write_hf_tokenizer_files(
        work, tokens, tokenizer.do_lower_case, tokenizer.strip_accents, packing_length
      )
    for name in sorted(os.listdir(work)):
      with open(os.path.join(work, name), "rb") as f:
        write_atomic(os.path.join(directory, name), f.read())
  finally:
    shutil.rmtree(work, ignore_errors=True)


def _check_shared_files(staging, directory, keep):
  """Refuses to replace a different tokenizer file in `directory` (another
  network reads its text through it)."""
  for entry in sorted(os.listdir(staging)):
    old = os.path.join(directory, entry)
    if entry in keep or not os.path.isfile(old):
      continue
    with open(old, "rb") as f, open(os.path.join(staging, entry), "rb") as g:
      if f.read() != g.read():
        raise ValueError(
          f"{old!r} is another tokenizer's file; exporting here would replace it under the "
          "network already beside it: export into another folder"
        )


def export_portable(model, filepath, format, quantize=None, overwrite=False, **options):
  """Writes the ids-in network of `model` to `filepath` in `format`
  ("litert" or "onnx") and its tokenizer files in the same directory.

  Args:
    model: a Keras task model, a `FinetuningModel`, a pretrainer, or a
      discriminator/generator (see `build_network`).
    filepath: the `.tflite` / `.onnx` file to write (replaced atomically).
    format: "litert" or "onnx".
    quantize: None (float32) or "dynamic-int8".
    overwrite: replace tokenizer files beside `filepath` that differ from
      this model's (without it they are refused: another network or model
      reads its text through them).
    **options: `kind`, `task`, `vocab_file`, `do_lower_case`,
      `strip_accents`, `max_seq_length`, `top_k`, `max_predictions` of
      `build_network`.

  Returns:
    `filepath`.
  """
  check_format(format, quantize)
  path_text = os.fspath(filepath)
  if not path_text.strip():
    what = "is empty"
  elif os.path.isdir(path_text):
    what = "is a directory"  # it would be replaced by the file, with whatever it holds
  elif path_text.endswith(("/", os.sep)):
    what = "ends in a path separator"
  else:
    what = None
  if what:
    example = os.path.join(path_text.strip() or ".", "model" + SUFFIXES[format])
    raise ValueError(
      f"export path {path_text!r} {what}; expected the {format} file to write (such as {example!r})"
    )
  other = next(
    (f for f, suffix in SUFFIXES.items() if f != format and path_text.endswith(suffix)), None
  )
  if other:  # a runtime would read it as the other format's file
    raise ValueError(
      f"export path {filepath!r} ends in {SUFFIXES[other]}, a {other} file, but format="
      f"{format!r}: name it *{SUFFIXES[format]} or pass format={other!r}"
    )
  require(format)
  function, tokenizer, packing_length, max_length = build_network(model, **options)
  if packing_length > max_length:
    raise ValueError(
      f"max_seq_length {packing_length} exceeds the model's max_position_embeddings {max_length}"
    )
  metadata = {
    "inputs": ",".join(INPUT_NAMES),
    "max_sequence_length": str(max_length),
    # The length the model was trained to pack text to (tokenizer_config.json's too).
    "max_seq_length": str(packing_length),
    "tokenizer": f"{huggingface.TOKENIZER_FILE}, {vocab_file_name(tokenizer)} (beside this file)",
  }
  if format == "litert":
    data = _to_litert(function, quantize)
  else:
    data = _to_onnx(function, quantize, metadata)
  interrupts.check()  # Ctrl-C swallowed during the conversion: write nothing
  directory, name = os.path.split(os.path.abspath(filepath))
  # The whole set (network, its .json, tokenizer files) is written aside and
  # moved in together: an old set stays whole until the new one is complete.
  with replaced_together(directory, name) as staging:
    network = os.path.join(staging, name)
    with open(network, "wb") as f:
      f.write(data)
    beam = getattr(_qa_head(model), "beam_size", 1)
    _check_export(network, format, function, quantize, beam, tokenizer.vocab_size)
    write_tokenizer_files(staging, tokenizer, packing_length)
    if not overwrite:
      _check_shared_files(staging, directory, keep=(name, name + ".json"))
    write_atomic(
      os.path.join(staging, name + ".json"),
      json.dumps(dict(metadata, format=format, quantize=quantize or "none"), indent=2) + "\n",
    )
  return filepath


def export_to_dir(model, export_dir, format, kind, quantize=None, overwrite=False, **options):
  """`export_portable` into `export_dir` as `default_filename(name, ...)`,
  where the name is the task's (`--model task`) or `kind`; an existing file
  is kept unless `overwrite`. Returns the file's path."""
  check_format(format, quantize)
  name = kind
  if kind == "task":
    names = getattr(model, "task_names", None) or [getattr(model, "task_name", "task")]
    name = options.get("task") or (names[0] if len(names) == 1 else "task")
  path = os.path.join(export_dir, default_filename(name, format, quantize))
  if os.path.exists(path) and not overwrite:
    raise ValueError(f"{path!r} already exists; pass --overwrite")
  # export_portable moves its files in together, or none of them; an
  # interrupted or failed first export leaves no empty dir.
  with dirs_made(export_dir):
    return export_portable(model, path, format, quantize, overwrite, kind=kind, **options)


def add_flags(parser):
  """`export_saved_model`'s `--format` and `--quantize`."""
  parser.add_argument(
    "--format",
    default="tf_saved_model",
    choices=ALL_FORMATS,
    help="tf_saved_model: <export-dir>/<version>/; litert, onnx: the ids-in network as "
    "<export-dir>/<discriminator|generator|task name>[-int8].tflite|.onnx, tokenizer files beside",
  )
  parser.add_argument("--quantize", choices=QUANTIZATIONS, help="litert, onnx: int8 weights")


def export_from_flags(model, args, vocab_file, do_lower_case, strip_accents):
  """`export_to_dir` as `export_saved_model`'s flags `args` ask."""
  options = {k: getattr(args, k) for k in ("task", "max_seq_length", "top_k", "max_predictions")}
  return export_to_dir(
    model,
    args.export_dir,
    args.format,
    args.model,
    args.quantize,
    args.overwrite,
    vocab_file=vocab_file,
    do_lower_case=do_lower_case,
    strip_accents=strip_accents,
    **options,
  )


def _qa_head(model):
  """The joint QA head (its beam needs at least `beam_size` positions), if any."""
  heads = getattr(getattr(model, "finetuning_model", model), "heads", None) or []
  return next((h for h in heads if getattr(h, "joint_prediction", False)), None)
