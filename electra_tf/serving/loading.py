"""Loading an exported SavedModel in Python.

The raw-text signature (`serving_default`) tokenizes in the graph with
tensorflow-text's `FastWordpieceTokenizeWithOffsets` op. TensorFlow only
knows that op once `tensorflow_text` is imported, so a bare
`tf.saved_model.load` in a fresh process fails with "Op type not registered
'FastWordpieceTokenizeWithOffsets'". `load` imports it first; `load_error_hint`
turns that error into one that says so.

Example:
  >>> LOADING_HINT.split(";")[0]
  'import tensorflow_text before tf.saved_model.load (or use electra_tf.serving.load(path))'
"""

import os

import tensorflow as tf

from electra_tf.checkpoints import reader as checkpoint_reader

TOKENIZER_OP = "FastWordpieceTokenizeWithOffsets"
# A SentencePiece export's ops (`electra_tf.text.SentencePieceTokenizer`).
SENTENCEPIECE_OPS = ("SentencepieceOp", "SentencepieceTokenizeOp")
LOADING_HINT = (
  "import tensorflow_text before tf.saved_model.load (or use electra_tf.serving.load(path)); "
  f"the raw-text signature tokenizes with its {TOKENIZER_OP} op"
)


def import_tensorflow_text():
  """Imports `tensorflow_text`, which registers the tokenizer ops; a clear
  error when it is not installed."""
  try:
    import tensorflow_text  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
  except ImportError as e:
    raise ImportError(
      "loading an electra_tf export needs tensorflow-text (its raw-text signature "
      f"tokenizes with the {TOKENIZER_OP} op): pip install tensorflow-text"
    ) from e


def load_error_hint(error, path):
  """A `ValueError` naming `path` and the fix when `error` is TensorFlow's
  "Op type not registered" for the tokenizer op; None for other errors."""
  ops = (TOKENIZER_OP,) + SENTENCEPIECE_OPS
  if "Op type not registered" in str(error) and any(op in str(error) for op in ops):
    return ValueError(f"cannot load the SavedModel {path!r}: {LOADING_HINT}")
  return None


def _check_not_export_dir(path):
  """Names the version to load when `path` is an `--export-dir` itself (not
  TensorFlow's "SavedModel file does not exist")."""
  if not tf.io.gfile.isdir(path) or any(
    tf.io.gfile.exists(os.path.join(path, name)) for name in ("saved_model.pb", "saved_model.pbtxt")
  ):
    return
  versions = sorted(
    int(n.rstrip("/")) for n in tf.io.gfile.listdir(path) if n.rstrip("/").isdigit()
  )
  if versions:
    newest = os.path.join(path, str(versions[-1]))
    raise ValueError(
      f"load: {os.fspath(path)!r} is an export directory holding version(s) {versions}; "
      f"load one version, e.g. {newest!r} (the newest, which TF Serving serves)"
    )


def _check_variables(path):
  """Names a partly copied export's variables checkpoint (not the reader's
  "Read less bytes than requested" from deep in `tf.saved_model.load`)."""
  prefix = os.path.join(os.fspath(path), "variables", "variables")
  # No variables files at all is left to TensorFlow (a graph may have none).
  if not tf.io.gfile.glob(prefix + ".*"):
    return
  problem = checkpoint_reader.checkpoint_problem(prefix)
  if problem is not None:
    raise ValueError(
      f"load: the SavedModel {os.fspath(path)!r} is damaged or only partly copied: its "
      f"variables checkpoint {prefix!r} cannot be read ({problem}); copy the export again"
    )


def load(path):
  """Loads an export of `electra_tf.export_saved_model` with its signatures.

  Imports `tensorflow_text` (the tokenizer ops of `serving_default`), then
  calls `tf.saved_model.load`. Plain TensorFlow works the same once
  `import tensorflow_text` has run.

  Args:
    path: the version directory, e.g. `/tmp/electra_serving/1`.

  Returns:
    The loaded object; `.signatures["serving_default"]`,
    `["serve_ids"]` and `["serve_examples"]` are the signatures.

  Example:
    >>> # model = load("/tmp/electra_serving/1")
    >>> # model.signatures["serving_default"](text_a=tf.constant(["Hi."]), text_b=tf.constant([""]))
  """
  if not os.fspath(path).strip():
    raise ValueError("load: the path is empty; expected an export's version directory")
  _check_not_export_dir(path)
  _check_variables(path)
  import_tensorflow_text()
  try:
    return tf.saved_model.load(path)
  except tf.errors.NotFoundError as e:
    hint = load_error_hint(e, path)
    if hint is None:
      raise
    raise hint from e


CONSTANT_WEIGHTS_NOTE = (
  "The weight matrices are constants in saved_model.pb (exported with constant_weights); "
  "variables/ holds only the biases and LayerNorm weights.\n"
)
XLA_SERVING_NOTE = (
  "The network is XLA-compiled (exported with jit_compile): TF Serving runs it on CPU only "
  "with --xla_cpu_compilation_enabled=true, and compiles once per batch size and length bucket.\n"
)


def export_readme(kind, max_seq_length, jit_compile=False, constant_weights=False, task=None):
  """The `assets/README.txt` every export carries: its kind (and a task
  export's task), its signatures and how to load it."""
  return (
    (
      f"electra_tf SavedModel: {kind}, max_seq_length {max_seq_length}.\n"
      + (f"Task: {task}.\n" if task else "")
      + "Signatures: serving_default (raw text: text_a, text_b; tokenized in the graph), "
      "serve_ids (input_ids, input_mask, segment_ids), serve_examples (serialized "
      "tf.Example).\n"
      f"Loading in Python: {LOADING_HINT}.\n"
      "  import tensorflow as tf\n"
      "  import tensorflow_text  # registers the tokenizer ops\n"
      '  model = tf.saved_model.load("<export_dir>/<version>")\n'
      "TF Serving: the server binary must include TF Text's ops.\n"
    )
    + (XLA_SERVING_NOTE if jit_compile else "")
    + (CONSTANT_WEIGHTS_NOTE if constant_weights else "")
  )
