"""Inferring a `PretrainingConfig` from a name-based checkpoint's shapes.

The layout (which towers and heads exist) comes from the scopes present, the
sizes from the embedding and encoder shapes; user hparams win and the result
is checked against every shape.

Example:
  >>> detect_layout({"electra/embeddings/word_embeddings": (30522, 128)})
  'encoder'
"""

import json
import os
import tempfile

from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.checkpoints.reader import assign_tensors
from electra_tf.checkpoints.reader import open_reader
from electra_tf.checkpoints.reader import read_name_based_checkpoint
from electra_tf.configs import pretraining as pretraining_config_lib
from electra_tf.hparams_input import load_hparams
from electra_tf.models import official_names
from electra_tf.models.electra_backbone import ElectraBackbone
from electra_tf.models.electra_discriminator import ElectraDiscriminator
from electra_tf.models.electra_pretrainer import built_pretrainer

# Layouts a name-based checkpoint can have: which of the original's scopes
# (`electra/`, `generator/`, `generator_predictions/`, ...) it holds.
LAYOUT_DEFAULT = "default"  # small untied generator, shared embeddings
LAYOUT_UNTIED_EMBEDDINGS = "untied_generator_embeddings"
LAYOUT_TIED = "tied"  # untied_generator=False
LAYOUT_MLM = "mlm"  # electra_objective=False
LAYOUT_UNIFORM = "uniform"
LAYOUT_TWO_TOWER = "two_tower"  # Electric (or two_tower_generator)
LAYOUT_ENCODER = "encoder"  # encoder only, possibly with task_specific heads

_KNOWN_SCOPES = (
  official_names.DISCRIMINATOR_SCOPE,
  official_names.GENERATOR_SCOPE,
  official_names.GENERATOR_LTR_SCOPE,
  official_names.GENERATOR_RTL_SCOPE,
  official_names.GENERATOR_HEAD_SCOPE,
  official_names.CLOZE_HEAD_SCOPE,
  official_names.DISCRIMINATOR_HEAD_SCOPE,
  official_names.TASK_SCOPE,
)

# Conversions read no data: a data dir that does not exist (special token ids
# fall back to BERT-uncased's unless the hparams name a `vocab_file`).
NO_DATA_DIR = os.path.join(tempfile.gettempdir(), "electra_tf_convert_no_data_dir")

# The debug model's shrunk discriminator: its 4 heads are not the size rule's 2.
_DEBUG_SHAPE = {"hidden_size": 144, "num_hidden_layers": 3, "intermediate_size": 576}
_DEBUG_HEADS = 4


def _encoder_dims(shapes, scope):
  """`(hidden, layers, ffn)` of the encoder under `scope` (layers 0…L-1, no gaps)."""
  indices = set()
  prefix = f"{scope}/encoder/layer_"
  for name in shapes:
    if name.startswith(prefix):
      index = name[len(prefix) :].split("/", 1)[0]
      if not index.isdigit():
        raise ValueError(f"unexpected checkpoint entry {name!r} (layer index {index!r})")
      indices.add(int(index))
  if not indices:
    raise ValueError(f"the checkpoint has no {scope}/encoder/layer_0/* entries")
  num_layers = max(indices) + 1
  gaps = sorted(set(range(num_layers)) - indices)
  if gaps:
    raise ValueError(
      f"the checkpoint's {scope} encoder is incomplete: layers {gaps} are missing "
      f"(found layers up to layer_{num_layers - 1})"
    )
  layer0 = f"{scope}/encoder/layer_0"
  query = shapes.get(f"{layer0}/attention/self/query/kernel")
  ffn = shapes.get(f"{layer0}/intermediate/dense/kernel")
  if query is None or ffn is None:
    raise ValueError(
      f"the checkpoint lacks {layer0}/attention/self/query/kernel or "
      f"{layer0}/intermediate/dense/kernel"
    )
  return int(query[1]), num_layers, int(ffn[1])


def model_overrides(hidden, layers, ffn, positions, types):
  """`model_hparam_overrides` for a discriminator of these sizes: H, L, FFN
  always, P and T when not the defaults, and the debug model's heads."""
  overrides = {"hidden_size": hidden, "num_hidden_layers": layers, "intermediate_size": ffn}
  if positions != 512:
    overrides["max_position_embeddings"] = positions
  if types != 2:
    overrides["type_vocab_size"] = types
  if all(overrides.get(k) == v for k, v in _DEBUG_SHAPE.items()):
    overrides["num_attention_heads"] = _DEBUG_HEADS
  return overrides


def generator_size_hparams(hidden, layers, gen_hidden, gen_layers, gen_ffn, source):
  """`generator_hidden_size` and `generator_layers` (fractions of the
  discriminator's H and L) of a generator tower with these sizes."""
  if gen_ffn != 4 * gen_hidden:
    raise ValueError(
      f"the generator of {source} has FFN size {gen_ffn} but hidden size {gen_hidden}; "
      f"get_generator_config always uses 4 * hidden = {4 * gen_hidden}"
    )
  return {"generator_hidden_size": gen_hidden / hidden, "generator_layers": gen_layers / layers}


def detect_layout(shapes):
  """The layout (one of the `LAYOUT_*` constants) of a name-based checkpoint
  from its model entries' names."""
  scopes = {name.split("/", 1)[0] for name in shapes}
  unknown = sorted(scopes - set(_KNOWN_SCOPES))
  if "electra/embeddings/word_embeddings" not in shapes or unknown:
    sample = ", ".join(sorted(shapes)[:5]) or "(no entries)"
    why = (
      f"unknown top-level scopes {unknown}" if unknown else "no electra/embeddings/word_embeddings"
    )
    raise ValueError(
      f"not an ELECTRA checkpoint ({why}); expected the original's names "
      f"(electra/…, generator/…, generator_predictions/…, discriminator_predictions/…). "
      f"First entries: {sample}"
    )
  has = lambda scope: scope in scopes
  if has(official_names.GENERATOR_LTR_SCOPE) or has(official_names.GENERATOR_RTL_SCOPE):
    return LAYOUT_TWO_TOWER
  if has(official_names.GENERATOR_SCOPE):
    if "generator/embeddings/word_embeddings" in shapes:
      return LAYOUT_UNTIED_EMBEDDINGS
    return LAYOUT_DEFAULT
  if has(official_names.GENERATOR_HEAD_SCOPE):
    return LAYOUT_TIED if has(official_names.DISCRIMINATOR_HEAD_SCOPE) else LAYOUT_MLM
  if has(official_names.DISCRIMINATOR_HEAD_SCOPE):
    return LAYOUT_UNIFORM
  return LAYOUT_ENCODER


def checkpoint_encoder_sizes(path):
  """`{vocab_size, embedding_size, hidden_size, num_hidden_layers,
  intermediate_size}` of the discriminator encoder in name-based checkpoint
  `path` (read from its index, no weights), or None where it holds none."""
  prefix = official_checkpoint.resolve_checkpoint_path(path)
  shapes = open_reader(prefix).get_variable_to_shape_map()
  table = shapes.get("electra/embeddings/word_embeddings")
  if table is None:
    return None
  hidden, layers, ffn = _encoder_dims(shapes, official_names.DISCRIMINATOR_SCOPE)
  return {
    "vocab_size": int(table[0]),
    "embedding_size": int(table[1]),
    "hidden_size": hidden,
    "num_hidden_layers": layers,
    "intermediate_size": ffn,
  }


def infer_hparams_from_shapes(shapes):
  """Pre-training hparams implied by a name-based checkpoint's model entries
  (sizes from the shapes, layout flags from the scopes; attention heads by
  the size rule unless the shapes are the debug model's).

  Args:
    shapes: `{name: shape}`; optimizer slots and `global_step` are ignored.

  Returns:
    `(hparams, layout, notes)`: a dict for `PretrainingConfig`, the
    `LAYOUT_*` value and human-readable notes on what was assumed.
  """
  shapes = {
    n: tuple(int(d) for d in s)
    for n, s in shapes.items()
    if not official_names.is_non_model_entry(n)
  }
  layout = detect_layout(shapes)
  notes = []
  vocab_size, embedding_size = shapes["electra/embeddings/word_embeddings"]
  hidden, layers, ffn = _encoder_dims(shapes, official_names.DISCRIMINATOR_SCOPE)
  positions = shapes.get("electra/embeddings/position_embeddings", (512,))[0]
  types = shapes.get("electra/embeddings/token_type_embeddings", (2,))[0]
  overrides = model_overrides(hidden, layers, ffn, positions, types)
  if "num_attention_heads" in overrides:
    notes.append(f"shapes are the debug model's (H=144, L=3): {_DEBUG_HEADS} attention heads")
  hparams = {
    "vocab_size": vocab_size,
    "embedding_size": embedding_size,
    "model_hparam_overrides": overrides,
  }
  for size, (h, l) in pretraining_config_lib.MODEL_SIZES.items():
    if (h, l) == (hidden, layers):
      hparams["model_size"] = size

  if layout in (LAYOUT_DEFAULT, LAYOUT_UNTIED_EMBEDDINGS, LAYOUT_TWO_TOWER):
    if layout == LAYOUT_TWO_TOWER:
      scope = official_names.GENERATOR_LTR_SCOPE
      hparams.update(electra_objective=False, electric_objective=True)
      notes.append(
        "two-tower generator: assuming the Electric objective "
        "(electra_objective=False, electric_objective=True); weights are the same "
        "for two_tower_generator with the ELECTRA objective"
      )
    else:
      scope = official_names.GENERATOR_SCOPE
    hparams["untied_generator_embeddings"] = f"{scope}/embeddings/word_embeddings" in shapes
    gen_hidden, gen_layers, gen_ffn = _encoder_dims(shapes, scope)
    hparams.update(
      generator_size_hparams(hidden, layers, gen_hidden, gen_layers, gen_ffn, "the checkpoint")
    )
  elif layout == LAYOUT_TIED:
    hparams["untied_generator"] = False
  elif layout == LAYOUT_MLM:
    hparams["electra_objective"] = False
  elif layout == LAYOUT_UNIFORM:
    hparams["uniform_generator"] = True
  else:
    tasks = sorted(
      {n.split("/")[1] for n in shapes if n.startswith(official_names.TASK_SCOPE + "/")}
    )
    notes.append("encoder-only checkpoint" + (f" with fine-tuning heads {tasks}" if tasks else ""))
  return hparams, layout, notes


def fit_length_to_positions(hparams):
  """`hparams` with `max_seq_length` the position table's length when they
  name none and the table is shorter than the default (a checkpoint records
  no training length; the config refuses one beyond the table)."""
  positions = (hparams.get("model_hparam_overrides") or {}).get("max_position_embeddings")
  default = pretraining_config_lib.PretrainingConfig.max_seq_length
  if "max_seq_length" not in hparams and positions and int(positions) < default:
    return dict(hparams, max_seq_length=int(positions))
  return hparams


def merge_hparams(inferred, user):
  """The user's hparams over the inferred ones; a user `model_size` (or
  `debug`) drops the inferred H, L, FFN and heads, user `model_hparam_overrides`
  win key by key."""
  user = dict(user or {})
  merged = {k: v for k, v in inferred.items() if k != "model_hparam_overrides"}
  overrides = dict(inferred.get("model_hparam_overrides", {}))
  if "model_size" in user or user.get("debug"):
    for key in ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads"):
      overrides.pop(key, None)
  overrides.update(user.pop("model_hparam_overrides", None) or {})
  merged.update(user)
  merged["model_hparam_overrides"] = overrides
  return merged


def needs_pretrainer(layout):
  return layout != LAYOUT_ENCODER


def infer_config_from_checkpoint(path, hparams=None):
  """A `PretrainingConfig` that fits a name-based checkpoint.

  Args:
    path: checkpoint prefix or directory (or a `{name: shape}` dict).
    hparams: optional user hparams (dict, JSON string or `.json` path);
      they win over inferred values and are then checked against the shapes.

  Returns:
    `(config, layout, notes)`.

  Raises:
    ValueError: not an ELECTRA checkpoint, or the config (given or
      inferred) does not give the checkpoint's names and shapes — the message
      lists each tensor with the config's and the checkpoint's shape.
  """
  config, _, layout, notes, _ = infer_config_and_model(path, hparams)
  return config, layout, notes


def infer_config_and_model(path, hparams, source=None):
  """`infer_config_from_checkpoint` that also returns the merged hparams and
  the model built to check the shapes: `(config, merged_hparams, layout,
  notes, model)`. `source` names a `{name: shape}` dict `path` in messages.
  """
  if isinstance(path, dict):
    shapes, source = path, repr(source) if source else "(given shapes)"
  else:
    prefix = official_checkpoint.resolve_checkpoint_path(path)
    shapes, source = open_reader(prefix).get_variable_to_shape_map(), repr(prefix)
  user = load_hparams(hparams) if hparams is not None else {}
  inferred, layout, notes = infer_hparams_from_shapes(shapes)
  merged = fit_length_to_positions(merge_hparams(inferred, user))
  try:
    config = pretraining_config_lib.PretrainingConfig("converted", NO_DATA_DIR, **merged)
  except ValueError as e:
    raise ValueError(f"hparams for {source} are invalid: {e}") from e
  if "num_attention_heads" not in merged["model_hparam_overrides"] and not config.debug:
    heads = pretraining_config_lib.get_bert_config(config).num_attention_heads
    notes.append(
      f"attention heads are not stored in checkpoints: using {heads} from the size "
      "rule max(1, H // 64); pass model_hparam_overrides.num_attention_heads in "
      "--hparams if the model had others"
    )
  if needs_pretrainer(layout):
    model = built_pretrainer(config)
    name_map = official_names.official_name_map(model)
  else:  # the encoder alone, without the discriminator head
    model = build_encoder(config)
    name_map = official_names.discriminator_name_map(model, include_head=False)
  check_shapes(official_names.official_shapes(name_map), shapes, source, user, layout)
  return config, merged, layout, notes, model


def build_encoder(config, include_head=False):
  """The discriminator `config` describes (`include_head`), or its backbone."""
  bert_config = pretraining_config_lib.get_pretraining_bert_config(config)
  network = ElectraDiscriminator if include_head else ElectraBackbone
  encoder = network(
    bert_config.to_dict(), embedding_size=config.embedding_size, name="discriminator"
  )
  encoder.build()
  return encoder


def check_shapes(expected, shapes, source, user, layout, task_heads=False):
  """Raises unless the checkpoint's model entries are exactly `expected`
  (`{name: shape}`); `task_heads` False leaves `task_specific/*` out."""
  found = {
    n: tuple(int(d) for d in s)
    for n, s in shapes.items()
    if not official_names.is_non_model_entry(n)
  }
  if layout == LAYOUT_ENCODER and not task_heads:
    found = {n: s for n, s in found.items() if not n.startswith(official_names.TASK_SCOPE + "/")}
  describe = official_checkpoint.describe_shape
  mismatched = [
    f"  {n}: config gives {describe(expected[n])}, checkpoint has {describe(found[n])}"
    for n in sorted(expected)
    if n in found and expected[n] != found[n]
  ]
  missing = [f"  {n} {describe(expected[n])}" for n in sorted(expected) if n not in found]
  extra = [f"  {n} {describe(found[n])}" for n in sorted(found) if n not in expected]
  if not (mismatched or missing or extra):
    return
  problems = []
  if mismatched:
    problems.append("shape mismatches:\n" + "\n".join(mismatched))
  if missing:
    problems.append("in the config's model but not in the checkpoint:\n" + "\n".join(missing))
  if extra:
    problems.append("in the checkpoint but not in the config's model:\n" + "\n".join(extra))
  given = json.dumps(user, sort_keys=True) if user else "none (all inferred from shapes)"
  raise ValueError(
    f"checkpoint {source} does not match the configuration (layout {layout}; "
    f"--hparams: {given}):\n"
    + "\n".join(problems)
    + "\nFix --hparams, or check that the checkpoint is complete."
  )


def load_official_pretrainer(path, hparams=None):
  """Reads a name-based checkpoint into an `ElectraPretrainer` (strictly).

  Returns:
    `(pretrainer, config, tensors, info)`: `tensors` holds every checkpoint
    entry (slots and `global_step` too); `info` has `prefix`, `layout`,
    `notes`.
  """
  prefix, tensors = read_name_based_checkpoint(path)
  shapes = {n: t.shape for n, t in tensors.items()}
  config, _, layout, notes, pretrainer = infer_config_and_model(shapes, hparams, source=prefix)
  if not needs_pretrainer(layout):
    raise ValueError(
      f"checkpoint {prefix!r} holds an encoder only (no generator or discriminator head, "
      f"e.g. a fine-tuned model): convert it with --part finetuned (with its task "
      "heads, see load_official_finetuning_model) or --part discriminator"
    )
  assign_tensors(official_names.official_name_map(pretrainer), tensors)
  return pretrainer, config, tensors, {"prefix": prefix, "layout": layout, "notes": notes}
