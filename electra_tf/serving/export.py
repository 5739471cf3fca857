"""Exporting an ELECTRA model as a SavedModel for TF Serving.

Loads the model (a `.keras` file, an electra_tf training checkpoint, an
original/official name-based pre-training checkpoint or a fine-tuned one),
wraps it in a serving module of `electra_tf.serving.modules` and writes
`<export_dir>/<version>/` atomically. `python -m electra_tf.export_saved_model`
is the command line over `load_model` and `export`.

Example:
  >>> next_version("/nonexistent/export_dir")
  1
  >>> # model, config = load_model(checkpoint="data/models/tiny")  # reads its config.json
  >>> # export(model, "discriminator", "vocab.txt", "/tmp/electra_serving")
"""

import dataclasses
import os
import re
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.finetune.qa.head import QAHead
from electra_tf.finetune.text_preprocessor import largest_question_budget
from electra_tf.finetune.text_preprocessor import question_budget
from electra_tf.hparams_input import load_hparams
from electra_tf.runtime import distribution
from electra_tf.serving import loading as serving_loading
from electra_tf.serving import modules as serving_modules
from electra_tf.sources import any_format
from electra_tf.sources import formats
from electra_tf.text import tokenizer_for
from electra_tf.text import vocab as vocab_lib
from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.utils import interrupts
from electra_tf.utils import keras_compat
from electra_tf.utils.arguments import check_bools
from electra_tf.utils.file_io import not_there
from electra_tf.utils.file_io import replaced_together
from electra_tf.utils.file_io import write_atomic

MODEL_KINDS = ("discriminator", "generator", "task")
MIXED_POLICY = "mixed_bfloat16"


def _replace_dtype_policies(config, policy):
  """Recursively sets every layer's `dtype` entry of a Keras config to
  `policy`, and drops nested `build_config`s so that sub-layers are rebuilt
  by their owner's `build` (not twice)."""
  if isinstance(config, dict):
    out = {}
    for key, value in config.items():
      if key == "build_config":
        continue
      if key == "dtype" and (
        isinstance(value, str)
        or (isinstance(value, dict) and "Policy" in str(value.get("class_name", "")))
      ):
        out[key] = policy
      else:
        out[key] = _replace_dtype_policies(value, policy)
    return out
  if isinstance(config, list):
    return [_replace_dtype_policies(v, policy) for v in config]
  return config


def with_dtype_policy(model, policy):
  """`model` itself if all its layers already use `policy`, else a rebuilt
  copy (from its config) with every layer on `policy` and the same weights,
  cast to float32 (the variable dtype of both float32 and mixed policies)."""
  policies = {
    layer.dtype_policy.name for layer in keras_compat.flatten_layers(model, include_self=True)
  }
  if policies == {policy}:
    return model
  config = _replace_dtype_policies(model.get_config(), policy)
  # Sub-layers created in a constructor without an explicit dtype follow the
  # global policy.
  with distribution.dtype_policy(policy):
    clone = model.__class__.from_config(config)
    if not clone.built:
      clone.build()
  source, target = model.weights, clone.weights
  if [tuple(w.shape) for w in source] != [tuple(w.shape) for w in target]:
    raise ValueError(
      f"rebuilding {type(model).__name__} with dtype policy {policy!r} changed its weight layout"
    )
  for src, dst in zip(source, target):
    dst.assign(np.asarray(src, dtype=np.float32).astype(dst.dtype))
  return clone


def _is_finetuning_model(model):
  return hasattr(model, "heads") and hasattr(model, "encoder")


build_finetuning_model = any_format.build_finetuning_model


def load_finetuning_checkpoint(path, hparams, model_name="electra", data_dir=None):
  """A `FinetuningModel` restored from a fine-tuned checkpoint of a run
  without `config.json`, built from its fine-tuning `hparams`; every model
  variable (encoder and heads) must be in it."""

  prefix = official_checkpoint.resolve_checkpoint_path(path)
  config = model_dir_lib.with_found_vocab_file(
    FinetuningConfig(model_name, data_dir or os.path.dirname(prefix), **load_hparams(hparams))
  )
  return any_format.read_finetuned_checkpoint(prefix, config), config


def add_saved_model_flags(parser):
  """`export_saved_model`'s options of the SavedModel itself."""
  parser.add_argument(
    "--mixed-precision",
    action="store_true",
    help=f"serve with the {MIXED_POLICY} policy (default float32)",
  )
  parser.add_argument(
    "--length-multiple",
    type=int,
    default=1,
    help="round the encoder's length (the batch's longest row) up to a multiple of this",
  )
  parser.add_argument(
    "--jit-compile",
    action="store_true",
    help="compile the network with XLA (faster short requests on CPU; one compilation per "
    "batch size and length; TF Serving needs --xla_cpu_compilation_enabled=true on CPU)",
  )
  parser.add_argument(
    "--constant-weights",
    action="store_true",
    help="put the weight matrices into the graph as constants (faster short requests on CPU: "
    "oneDNN packs each matrix once, not on every call; at most 1.5 GiB of weights)",
  )


def saved_model_flags_given(args):
  """The flags of `add_saved_model_flags` that `args` sets (a portable
  `--format` refuses them rather than ignore them)."""
  given = (
    ("--mixed-precision", args.mixed_precision),
    ("--length-multiple", args.length_multiple != 1),
    ("--jit-compile", args.jit_compile),
    ("--constant-weights", args.constant_weights),
    # A portable file is <export-dir>/<name>.<suffix>: no version folders.
    ("--version", getattr(args, "version", None) is not None),
  )
  return [flag for flag, value in given if value]


def build_serving_module(
  model,
  kind,
  tokenizer,
  max_seq_length,
  vocab_asset=None,
  task=None,
  top_k=5,
  max_predictions=20,
  max_query_length=64,
  length_multiple=1,
  jit_compile=False,
  real_length=True,
  constant_weights=False,
):
  """The serving module for `kind` ("discriminator", "generator", "task").

  Args:
    model: an `ElectraPretrainer` (discriminator/generator), a
      `FinetuningModel` (task), or directly an `ElectraDiscriminator` /
      `ElectraGenerator`.
    kind: what to serve.
    tokenizer: the model's in-graph tokenizer (`electra_tf.text.tokenizer_for`:
      WordPiece or SentencePiece).
    max_seq_length: S of every signature.
    vocab_asset: path of the vocab file to ship in `assets/` (`vocab.txt`,
      or `sentencepiece.model`).
    task: the task head (needed when the model has several).
    top_k, max_predictions: generator options.
    max_query_length: QA question budget.
    length_multiple, jit_compile, real_length, constant_weights: see
      `serving_modules.ElectraServingModule`.
  """
  if kind not in MODEL_KINDS:
    raise ValueError(f"--model {kind!r}; expected one of {MODEL_KINDS}")
  options = dict(
    length_multiple=length_multiple,
    jit_compile=jit_compile,
    real_length=real_length,
    constant_weights=constant_weights,
  )
  if _is_finetuning_model(model):
    if kind != "task":
      raise ValueError(
        f"the model is a fine-tuned model (tasks {model.task_names}); use --model task"
      )
    if task is None:
      if len(model.task_names) != 1:
        raise ValueError(f"the model has several heads {model.task_names}; choose one with --task")
      task = model.task_names[0]
    bert_config = model.bert_config
    module = serving_modules.TaskHeadServingModule(
      model,
      task,
      tokenizer,
      max_seq_length,
      vocab_asset,
      max_query_length=max_query_length,
      **options,
    )
  else:
    if kind == "task":
      raise ValueError(
        "--model task needs a fine-tuned model (FinetuningModel or a "
        "fine-tuning checkpoint with fine-tuning --hparams)"
      )
    network = any_format.find_network(model, kind)
    if network is None:
      raise any_format.missing_network_error(model, kind)
    bert_config = network.bert_config
    if kind == "discriminator":
      module = serving_modules.DiscriminatorServingModule(
        network, tokenizer, max_seq_length, vocab_asset, **options
      )
    else:
      module = serving_modules.MaskedLMServingModule(
        network,
        tokenizer,
        max_seq_length,
        vocab_asset,
        top_k=top_k,
        max_predictions=max_predictions,
        **options,
      )
  # S must fit the served network's position table; the tokenizer must use its vocab.
  if max_seq_length > bert_config["max_position_embeddings"]:
    raise ValueError(
      f"--max-seq-length {max_seq_length} exceeds the model's "
      f"max_position_embeddings {bert_config['max_position_embeddings']}"
    )
  if tokenizer.vocab_size != bert_config["vocab_size"]:
    raise ValueError(
      f"--vocab-file {tokenizer.vocab_file!r} has {tokenizer.vocab_size} entries "
      f"but the model's vocab_size is {bert_config['vocab_size']}"
    )
  return module


@dataclasses.dataclass(frozen=True)
class ServingLengths:
  """The lengths an export serves and where each came from.

  Attributes:
    max_seq_length: S of every signature.
    max_query_length: the QA question budget (None: the served head is not QA).
    line: one line saying both and their sources.
  """

  max_seq_length: int
  max_query_length: int = None
  line: str = ""


def served_head(model, kind, task=None):
  """The head a `--model task` export serves (None for other kinds, or
  when it cannot tell: `build_serving_module` then says why)."""
  heads = getattr(model, "heads", None)
  if kind != "task" or not heads:
    return None
  if task is None:
    return heads[0] if len(heads) == 1 else None
  return next((h for h in heads if getattr(h, "task_name", None) == task), None)


def _served_bert_config(model, kind):
  if _is_finetuning_model(model):
    return model.bert_config
  network = any_format.find_network(model, kind)
  return None if network is None else network.bert_config


def serving_lengths(
  model,
  kind,
  path,
  max_seq_length=None,
  max_query_length=None,
  task=None,
  config=None,
  hparams=None,
  recorded=None,
):
  """The lengths an export of `model` serves: each given one, else the run's
  `hparams` (`--hparams`) where they name it, else what the model records
  (`any_format.recorded_inputs`), else the defaults (128 tokens, a 64-token
  question) with a line saying the model records none.

  Args:
    model, kind: what `load_model` returned and what is served.
    path: the model's path (named in the line).
    max_seq_length, max_query_length: the flags (None: not given).
    task: the served head (`--task`).
    config: the config `load_model` returned (None where there is none).
    hparams: the user's `--hparams` (dict, JSON string, path or None).
    recorded: `any_format.recorded_inputs(path)` (None reads it).

  Returns:
    A `ServingLengths`.

  Raises:
    ValueError: one line, for a length above the model's position table
      (`max_position_embeddings`) or below 3.
  """
  if recorded is None:
    recorded = any_format.recorded_inputs(path)
  user = load_hparams(hparams) if hparams else {}
  qa = isinstance(served_head(model, kind, task), QAHead)

  def choose(name, given, default):
    flag = "--" + name.replace("_", "-")
    if given is not None:
      return int(given), f"given: {flag}"
    if name in user and config is not None and getattr(config, name, None) is not None:
      return int(getattr(config, name)), "from --hparams"
    if getattr(recorded, name) is not None:
      return int(getattr(recorded, name)), f"recorded in {recorded.source}"
    return default, (
      f"the default: {os.fspath(path)!r} records no trained length; pass {flag} to change it"
    )

  bert_config = _served_bert_config(model, kind) or {}
  positions = bert_config.get("max_position_embeddings")
  default = any_format.DEFAULT_MAX_SEQ_LENGTH
  if positions is not None:
    default = min(default, int(positions))  # a small model's whole position table
  seq, seq_source = choose("max_seq_length", max_seq_length, default)
  if positions is not None and seq > int(positions):
    raise ValueError(
      f"max_seq_length {seq} ({seq_source}) exceeds the model's max_position_embeddings "
      f"{positions}; pass --max-seq-length {positions} or less"
    )
  if seq < 3:
    raise ValueError(f"max_seq_length {seq} ({seq_source}); expected at least 3")
  line = f"max_seq_length {seq} ({seq_source})"
  query = None
  if qa:
    query, query_source = choose(
      "max_query_length", max_query_length, any_format.DEFAULT_MAX_QUERY_LENGTH
    )
    largest = largest_question_budget(seq)
    if query > largest and max_query_length is not None:
      raise ValueError(
        f"max_query_length {query} ({query_source}) leaves no room for the context in "
        f"max_seq_length {seq} ({seq_source}); pass --max-query-length {max(1, largest)} or less"
      )
    if query > largest:
      query, query_source = question_budget(seq, query), f"{query_source}, cut to S - 4"
    if query_source == seq_source:
      line = f"max_seq_length {seq}, max_query_length {query} ({seq_source})"
    else:
      line += f", max_query_length {query} ({query_source})"
  elif max_query_length is not None:
    query = int(max_query_length)
  return ServingLengths(seq, query, "Serving " + line)


def is_sentencepiece(vocab_file):
  """Whether `vocab_file` is a SentencePiece model (by content)."""
  return vocab_lib.vocab_kind(vocab_file) == vocab_lib.SENTENCEPIECE


def tokenizer_op(vocab_file):
  """The tensorflow-text op the raw-text signature tokenizes with."""
  if is_sentencepiece(vocab_file):
    return serving_loading.SENTENCEPIECE_OPS[1]
  return serving_loading.TOKENIZER_OP


def tokenizer_settings(
  source, config, recorded, vocab_file=None, no_lower_case=False, no_strip_accents=False
):
  """`(vocab_file, do_lower_case, strip_accents)` of an export of the model at
  `source`: the given `vocab_file`, else the run's (`config`), else the one
  the model records (`recorded`, an `any_format.Recorded`: a published
  directory's tokenizer files); the casing as `normalisation` decides.

  Raises:
    ValueError: one line, when no vocab is given or recorded, or when the
      given one is not the vocab the run recorded (same size, other ids).
  """
  if vocab_file is not None:
    run_vocab = (any_format.run_config(source) or {}).get("vocab") or {}
    if run_vocab.get("sha256"):
      vocab_lib.Vocab.read(vocab_file, "--vocab-file").check_made_with(
        run_vocab, f"the model at {os.fspath(source)!r} was trained"
      )
  if vocab_file is None and config is not None and os.path.isfile(config.vocab_file):
    vocab_file = config.vocab_file
  if vocab_file is None and recorded.vocab_file and os.path.isfile(recorded.vocab_file):
    vocab_file = recorded.vocab_file
  if not vocab_file:
    raise ValueError(
      "pass --vocab-file (the WordPiece vocab the model was trained with): "
      f"{os.fspath(source)!r} records none (a run's model dir records it in its config.json, "
      "and so does a .keras file kept in that dir; a published Hugging Face directory or "
      "keras-hub preset holds it)"
    )
  do_lower_case, strip_accents = normalisation(
    config, vocab_file, no_lower_case, no_strip_accents, recorded
  )
  return vocab_file, do_lower_case, strip_accents


def settings_from_flags(model, config, source, args):
  """`(vocab_file, do_lower_case, strip_accents, ServingLengths)` of an
  `export_saved_model` run: its flags `args` over what the model at `source`
  records (`any_format.recorded_inputs`). Sets `args.max_seq_length` and
  `args.max_query_length` to the lengths served."""
  heads = getattr(model, "heads", None)
  if args.model == "task" and heads and args.task and not served_head(model, "task", args.task):
    # Before the vocab and lengths: another task is the first thing to fix.
    raise ValueError(
      f"--task {args.task!r} is not a head of the model; it has "
      f"{sorted(h.task_name for h in heads)}"
    )
  source = any_format.open_source(source)  # detected once for every setting below
  recorded = source.recorded_inputs(vocab_given=bool(args.vocab_file))
  vocab_file, do_lower_case, strip_accents = tokenizer_settings(
    source, config, recorded, args.vocab_file, args.no_lower_case, args.no_strip_accents
  )
  lengths = serving_lengths(
    model,
    args.model,
    source,
    args.max_seq_length,
    args.max_query_length,
    args.task,
    config,
    args.hparams,
    recorded,
  )
  if args.checkpoint:  # after the checks above: a refused export needs no warning
    model_dir_lib.warn_if_unfinished(args.checkpoint, "exporting")
  args.max_seq_length = lengths.max_seq_length
  args.max_query_length = lengths.max_query_length or any_format.DEFAULT_MAX_QUERY_LENGTH
  return vocab_file, do_lower_case, strip_accents, lengths


def normalisation(config, vocab_file, no_lower_case=False, no_strip_accents=False, recorded=None):
  """`(do_lower_case, strip_accents)` of an export: the flags `--no-lower-case`
  / `--no-strip-accents` turn them off; otherwise the run's `config` says, else
  what the model records (`recorded`), else on. A vocab with a settings file
  follows that file (a contradicting flag is refused); a SentencePiece model
  under a pre-training run gives None (`tokenizer_for` reads its settings), as
  the run records WordPiece's defaults."""
  if config is None and recorded is not None and recorded.do_lower_case is not None:
    strip = True if recorded.strip_accents is None else recorded.strip_accents
    return (not no_lower_case and bool(recorded.do_lower_case)), (
      not no_strip_accents and bool(strip)
    )
  if vocab_lib.has_recorded_settings(vocab_file):
    # The vocab's settings file decides; a flag may only agree with it.
    return vocab_lib.resolve_normalisation(
      vocab_file,
      False if no_lower_case else None,
      False if no_strip_accents else None,
      names={"do_lower_case": ("", "--no-lower-case"), "strip_accents": ("", "--no-strip-accents")},
    )
  if is_sentencepiece(vocab_file) and not isinstance(config, FinetuningConfig):
    return (False if no_lower_case else None), (False if no_strip_accents else None)
  do_lower_case = not no_lower_case and (config is None or getattr(config, "do_lower_case", True))
  strip_accents = not no_strip_accents and (
    config is None or getattr(config, "strip_accents", True)
  )
  return do_lower_case, strip_accents


def next_version(export_dir):
  """1 + the largest numeric version under `export_dir` (1 if none)."""
  if not tf.io.gfile.isdir(export_dir):
    return 1
  versions = [
    int(n.rstrip("/")) for n in tf.io.gfile.listdir(export_dir) if re.fullmatch(r"\d+/?", n)
  ]
  return max(versions, default=0) + 1


def check_export_dir_kind(export_dir, kind, task=None):
  """Refuses an `export_dir` whose newest version (its `assets/README.txt`) is
  an export of another kind or task: TF Serving serves the newest version, so
  the new export would answer in its place."""
  newest = next_version(export_dir) - 1
  readme = os.path.join(export_dir, str(newest), "assets", "README.txt")
  if newest < 0 or not tf.io.gfile.exists(readme):
    return
  with tf.io.gfile.GFile(readme) as f:
    text = f.read()
  found = re.match(r"electra_tf SavedModel: (\w+), max_seq_length", text)
  found_task = re.search(r"^Task: (\S+)\.$", text, re.MULTILINE)
  if found and found.group(1) != kind:
    what, asked = f"a {found.group(1)} export", f"a {kind} export"
  elif found_task and task and found_task.group(1) != task:
    what, asked = f"task {found_task.group(1)}'s export", f"task {task}'s"
  else:
    return
  raise ValueError(
    f"--export-dir {export_dir!r} holds version {newest}, {what}; {asked} there would become "
    "the version TF Serving serves under that model's name: give another --export-dir"
  )


def save_module(module, export_dir, version=None, overwrite=False):
  """Saves `module` with its signatures to `<export_dir>/<version>`, atomically
  (a hidden temp directory, then a rename TF Serving never sees half-done).

  Returns:
    the version directory.
  """
  check_bools(overwrite=overwrite)
  if version is None:
    version = next_version(export_dir)
  if not os.fspath(export_dir).strip():
    raise ValueError("export_dir is empty; expected the export directory (--export-dir)")
  if int(version) < 0:
    raise ValueError(f"--version {version}; TF Serving needs a non-negative integer")
  final = os.path.join(export_dir, str(int(version)))
  if os.path.exists(final) and not overwrite:
    raise ValueError(f"{final!r} already exists; pass --overwrite or another --version")
  made = not os.path.exists(export_dir)
  os.makedirs(export_dir, exist_ok=True)
  try:
    return save_module_at(module, final, overwrite)
  except BaseException:
    if made:  # an interrupted or failed first export leaves no empty export dir behind
      shutil.rmtree(export_dir, ignore_errors=True)
    raise


def save_module_at(module, path, overwrite=False):
  """Saves `module` with its signatures as the SavedModel directory `path`
  itself, atomically (what `overwrite` replaces stays until the new one is
  complete); returns `path`."""
  check_bools(overwrite=overwrite)
  path = os.fspath(path)
  here = os.path.abspath(os.getcwd())
  if not path.strip() or os.path.commonpath([here, os.path.abspath(path)]) == os.path.abspath(path):
    # "" (or ".") would name the working directory, which an overwrite replaces whole.
    raise ValueError(
      f"{path!r} is the working directory or one above it; expected a path to write the "
      "SavedModel to"
    )
  if os.path.lexists(path) and not overwrite:
    raise ValueError(f"{path!r} already exists; pass overwrite=True or another path")
  parent, name = os.path.split(os.path.abspath(path))
  # A hidden name: TF Serving only loads integer names.
  with replaced_together(parent, name) as staging:
    tf.saved_model.save(module, os.path.join(staging, name), signatures=module.get_signatures())
  return path


def _attach_readme(module, asset_dir, *readme_args):
  """Writes `serving_loading.export_readme(*readme_args)` as the module's README.txt asset."""
  readme = os.path.join(asset_dir, "README.txt")
  write_atomic(readme, serving_loading.export_readme(*readme_args))
  module.readme = tf.saved_model.Asset(readme)


def export(
  model,
  kind,
  vocab_file,
  export_dir,
  max_seq_length=128,
  version=None,
  task=None,
  do_lower_case=None,
  strip_accents=None,
  top_k=5,
  max_predictions=20,
  max_query_length=64,
  mixed_precision=False,
  overwrite=False,
  length_multiple=1,
  jit_compile=False,
  constant_weights=False,
):
  """Builds the serving module for `model` and writes the SavedModel.

  `length_multiple`, `jit_compile` and `constant_weights` are the serving module's (see
  `serving_modules.ElectraServingModule`); the other options are those of
  `build_serving_module`. `vocab_file` is a WordPiece vocab.txt or a
  SentencePiece model; `do_lower_case` and `strip_accents` None apply what
  the vocab was built with (`electra_tf.text.vocab.vocab_settings`).

  Returns:
    the version directory written.
  """
  if not os.path.isfile(vocab_file):
    raise ValueError(f"--vocab-file {vocab_file!r} {not_there(vocab_file)}")
  # The head served (one fine-tuned head is served without --task).
  task_served = getattr(served_head(model, kind, task), "task_name", None) or task
  check_export_dir_kind(export_dir, kind, task_served)
  model = with_dtype_policy(model, MIXED_POLICY if mixed_precision else "float32")
  tokenizer = tokenizer_for(vocab_file, do_lower_case=do_lower_case, strip_accents=strip_accents)
  asset_dir = tempfile.mkdtemp(prefix="electra_vocab_")
  try:
    # The asset's name says its kind; a SentencePiece model is also inside
    # the graph (the tokenizer op holds its bytes), the asset is for readers.
    name = "sentencepiece.model" if isinstance(tokenizer, SentencePieceTokenizer) else "vocab.txt"
    asset = os.path.join(asset_dir, name)
    shutil.copyfile(vocab_file, asset)
    module = build_serving_module(
      model,
      kind,
      tokenizer,
      max_seq_length,
      asset,
      task=task,
      top_k=top_k,
      max_predictions=max_predictions,
      max_query_length=max_query_length,
      length_multiple=length_multiple,
      jit_compile=jit_compile,
      constant_weights=constant_weights,
    )
    _attach_readme(
      module, asset_dir, kind, max_seq_length, jit_compile, constant_weights, task_served
    )
    interrupts.check()  # Ctrl-C swallowed while the module was built: write nothing
    return save_module(module, export_dir, version, overwrite)
  finally:
    shutil.rmtree(asset_dir, ignore_errors=True)


# The run's model name where `--model-name` is not given.
DEFAULT_MODEL_NAME = "electra"


def _is_finetuned(path):
  try:
    return formats.detect(path).format == formats.FINETUNED
  except ValueError:
    return False


def _check_run_arguments(source, kind, hparams, model_name, data_dir):
  """Refuses `--data-dir`/`--model-name` where the model is not built from
  them (only a checkpoint without `config.json` read with hparams is), and a
  `--data-dir` that does not exist where it is."""
  flags = (("--data-dir", data_dir), ("--model-name", model_name))
  given = [flag for flag, value in flags if value is not None]
  if not given:
    return
  if kind == "task":
    used = source.format == formats.FINETUNED and bool(hparams) and source.run_config is None
    applies = "a fine-tuned checkpoint without config.json read with --hparams"
  else:
    used = source.format == formats.TRAINING and source.run_config is None
    applies = "an electra_tf training checkpoint without config.json"
  if used:
    if data_dir is not None and not tf.io.gfile.isdir(data_dir):
      raise ValueError(f"--data-dir {data_dir!r} {not_there(data_dir)} (the run's data dir)")
    return
  path = os.fspath(source.path)
  if source.run_config is not None:
    why = f"{path!r} records its own"
  elif source.format == formats.FINETUNED:
    why = f"{path!r} is read without --hparams (its heads from its shapes)"
  else:
    why = f"{path!r} is {source.description}"
  verb = "apply" if len(given) > 1 else "applies"
  raise ValueError(f"{' and '.join(given)} {verb} to {applies}; {why}")


def load_model(
  keras_model=None,
  checkpoint=None,
  hparams=None,
  kind="discriminator",
  model_name=None,
  data_dir=None,
  doing="loading",
):
  """The model to export from exactly one source, and its config (None where
  the source has none), read through `electra_tf.sources.any_format`.

  Args:
    keras_model, checkpoint: the source, any format the door reads (the two
      flags are kept for the command line's users; both take any format).
    hparams: the run's hparams (dict, JSON string or `.json` path):
      pre-training hparams for a discriminator or generator; for `kind`
      "task", the fine-tuning hparams that size the heads as
      `run_finetuning` did (without them the heads come from the
      checkpoint's shapes).
    kind: what will be served (one of `MODEL_KINDS`).
    model_name, data_dir: the run's config arguments (training checkpoints
      without `config.json`; model_name defaults to "electra"). Given for
      any other source, they are refused (`_check_run_arguments`).
    doing: the verb of the warning for a run stopped short of its planned
      steps (`any_format.load`); None where the caller warns itself.

  Returns:
    `(model, config_or_None)`.
  """
  if (keras_model is None) == (checkpoint is None):
    raise ValueError("give exactly one of --keras-model and --checkpoint")
  path = keras_model if keras_model is not None else checkpoint
  if kind not in MODEL_KINDS:
    raise ValueError(f"--model {kind!r}; expected one of {MODEL_KINDS}")
  if kind == "task":
    source = any_format.open_source(
      formats.require(path, any_format.READABLE[any_format.FINETUNED])
    )
    _check_run_arguments(source, kind, hparams, model_name, data_dir)
    if source.format == formats.FINETUNED and hparams and source.run_config is None:
      return load_finetuning_checkpoint(
        source.location, hparams, model_name or DEFAULT_MODEL_NAME, data_dir
      )
    # A trial dir's config.json gives the model, vocab and do_lower_case.
    loaded = any_format.load(source, any_format.FINETUNED, hparams, doing=doing)
  else:
    source = path
    if model_name is not None or data_dir is not None:
      source = any_format.open_source(path)  # the format once, for the check and the load
      _check_run_arguments(source, kind, hparams, model_name, data_dir)
    try:
      loaded = any_format.load(
        source,
        kind,
        hparams,
        model_name=model_name or DEFAULT_MODEL_NAME,
        data_dir=data_dir,
        doing=doing,
      )
    except ValueError as e:
      if _is_finetuned(path):
        raise ValueError(f"{e}; a fine-tuned checkpoint exports with --model task") from None
      raise
  if loaded.config is None and loaded.detected.format == formats.KERAS:
    # A .keras file in a run's model dir: its config.json knows the vocab.
    return loaded.model, any_format.run_config_beside(path)
  return loaded.model, loaded.config


def export_task_model(
  task_model,
  filepath,
  overwrite=False,
  jit_compile=False,
  length_multiple=1,
  constant_weights=False,
):
  """Writes a Keras task model (`ElectraClassifier`, `ElectraQuestionAnswerer`,
  `ElectraTokenTagger`) as the TF Serving SavedModel that
  `export_saved_model --model task` writes (text, ids and tf.Example
  signatures, real-length serving; `jit_compile`, `length_multiple` and
  `constant_weights` are `serving_modules.ElectraServingModule`'s), tokenizing with its
  preprocessor's vocab and length, at `filepath` itself (TF Serving wants it
  under a version folder: pass `<dir>/1`); returns `filepath`."""
  check_bools(overwrite=overwrite)
  preprocessor = task_model.preprocessor
  if preprocessor is None:
    raise ValueError("export needs the model's preprocessor (its tokenizer and length)")
  tokenizer = preprocessor.tokenizer
  asset_dir = tempfile.mkdtemp(prefix="electra_vocab_")
  try:
    sentencepiece = isinstance(tokenizer, SentencePieceTokenizer)
    asset = os.path.join(asset_dir, "sentencepiece.model" if sentencepiece else "vocab.txt")
    if tokenizer.vocab_file:
      shutil.copyfile(tokenizer.vocab_file, asset)
    elif sentencepiece:  # a preprocessor's config holds the model's bytes, not its path
      with open(asset, "wb") as f:
        f.write(tokenizer.model_bytes)
    else:
      with open(asset, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tokenizer.vocabulary))
    module = serving_modules.TaskHeadServingModule(
      task_model.finetuning_model,
      task_model.task_name,
      tokenizer,
      preprocessor.max_seq_length,
      asset,
      max_query_length=preprocessor.max_query_length,
      length_multiple=length_multiple,
      jit_compile=jit_compile,
      constant_weights=constant_weights,
    )
    _attach_readme(
      module,
      asset_dir,
      "task",
      preprocessor.max_seq_length,
      jit_compile,
      constant_weights,
      task_model.task_name,
    )
    return save_module_at(module, filepath, overwrite)
  finally:
    shutil.rmtree(asset_dir, ignore_errors=True)
