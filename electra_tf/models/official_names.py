"""THE map between the original's TF1 checkpoint variable names and this
package's Keras variables: every function returns an ordered
`dict[official_name, keras.Variable]`, each variable of exactly the official
shape (Keras kernels are `[in, out]` too). The converters,
`load_official_checkpoint` and fine-tuning read names from here.

Usage (needs a built `ElectraPretrainer`, so not run as a doctest):
  name_map = official_name_map(pretrainer)
  name_map["electra/embeddings/word_embeddings"].shape
(30522, 128)
"""

# Checkpoint entries that are not model weights: optimizer slots and the step counter.
OPTIMIZER_SLOT_SUFFIXES = ("/adam_m", "/adam_v")
GLOBAL_STEP_NAME = "global_step"
# electra_tf's resume state in fine-tuning checkpoints (input position, seed
# generators, loss scale): the original never reads it; loaders skip it.
TRAINING_STATE_SCOPE = "electra_tf_training_state"

DISCRIMINATOR_SCOPE = "electra"
GENERATOR_SCOPE = "generator"
GENERATOR_LTR_SCOPE = "generator_ltr"
GENERATOR_RTL_SCOPE = "generator_rtl"
GENERATOR_HEAD_SCOPE = "generator_predictions"
CLOZE_HEAD_SCOPE = "cloze_predictions"
DISCRIMINATOR_HEAD_SCOPE = "discriminator_predictions"
TASK_SCOPE = "task_specific"


def is_training_state_entry(name):
  """True for an entry of fine-tuning's resume state (`TRAINING_STATE_SCOPE`)."""
  return name.startswith(TRAINING_STATE_SCOPE + "/")


def is_non_model_entry(name):
  """True for optimizer slots, `global_step` and the resume state, which
  loaders skip."""
  return (
    name == GLOBAL_STEP_NAME
    or name.endswith(OPTIMIZER_SLOT_SUFFIXES)
    or is_training_state_entry(name)
  )


def _add_all(name_map, names):
  """Adds `names` to `name_map`; a name repeats only for a shared variable."""
  for name, variable in names.items():
    existing = name_map.get(name)
    if existing is not None and existing is not variable:
      raise ValueError(f"official name {name!r} would map to two different variables")
    name_map[name] = variable


def dense_names(dense, prefix):
  """`<prefix>/kernel` and `<prefix>/bias` of a `keras.layers.Dense`."""
  return {f"{prefix}/kernel": dense.kernel, f"{prefix}/bias": dense.bias}


def layer_norm_names(layer_norm, prefix):
  """`<prefix>/gamma` and `<prefix>/beta` (contrib's layer_norm names)."""
  return {f"{prefix}/gamma": layer_norm.gamma, f"{prefix}/beta": layer_norm.beta}


def embeddings_names(embeddings, scope):
  """`<scope>/embeddings/...` of an `ElectraEmbeddings` layer."""
  prefix = f"{scope}/embeddings"
  names = {
    f"{prefix}/word_embeddings": embeddings.word_embeddings,
    f"{prefix}/position_embeddings": embeddings.position_embeddings,
    f"{prefix}/token_type_embeddings": embeddings.token_type_embeddings,
  }
  names.update(layer_norm_names(embeddings.layer_norm, f"{prefix}/LayerNorm"))
  return names


def transformer_layer_names(layer, prefix):
  """The 16 tensors of one block under `prefix` (`.../layer_<i>`)."""
  names = {}
  names.update(dense_names(layer.query, f"{prefix}/attention/self/query"))
  names.update(dense_names(layer.key, f"{prefix}/attention/self/key"))
  names.update(dense_names(layer.value, f"{prefix}/attention/self/value"))
  names.update(dense_names(layer.attention_output_dense, f"{prefix}/attention/output/dense"))
  names.update(layer_norm_names(layer.attention_layer_norm, f"{prefix}/attention/output/LayerNorm"))
  names.update(dense_names(layer.intermediate_dense, f"{prefix}/intermediate/dense"))
  names.update(dense_names(layer.output_dense, f"{prefix}/output/dense"))
  names.update(layer_norm_names(layer.output_layer_norm, f"{prefix}/output/LayerNorm"))
  return names


def encoder_names(encoder, scope):
  """`<scope>/embeddings_project/*` (if any) and `<scope>/encoder/layer_<i>/*`
  of an `ElectraEncoder`."""
  names = {}
  if encoder.embeddings_project is not None:
    names.update(dense_names(encoder.embeddings_project, f"{scope}/embeddings_project"))
  for i, layer in enumerate(encoder.transformer_layers):
    names.update(transformer_layer_names(layer, f"{scope}/encoder/layer_{i}"))
  return names


def masked_lm_head_names(head, scope=GENERATOR_HEAD_SCOPE):
  """`<scope>/{dense, LayerNorm, output_bias}` of an `ElectraMaskedLMHead`
  (or `ElectraClozeHead`, scope `cloze_predictions`)."""
  names = dense_names(head.dense, f"{scope}/dense")
  names.update(layer_norm_names(head.layer_norm, f"{scope}/LayerNorm"))
  names[f"{scope}/output_bias"] = head.output_bias
  return names


def discriminator_head_names(head, scope=DISCRIMINATOR_HEAD_SCOPE):
  """`<scope>/dense/*` and `<scope>/dense_1/*` of an `ElectraDiscriminatorHead`."""
  names = dense_names(head.dense, f"{scope}/dense")
  names.update(dense_names(head.dense_1, f"{scope}/dense_1"))
  return names


def task_head_names(task_name, dense_layers):
  """Fine-tuning heads: `task_specific/<task>/<name>/{kernel,bias}` for each
  `(name, keras.layers.Dense)` in `dense_layers` (a dict or pairs), e.g.
  `{"dense": classifier}` or the QA names `dense`, `qa_hidden`, `dense_1`, …"""
  items = dense_layers.items() if isinstance(dense_layers, dict) else dense_layers
  names = {}
  for layer_name, dense in items:
    names.update(dense_names(dense, f"{TASK_SCOPE}/{task_name}/{layer_name}"))
  return names


def _ensure_built(layer):
  if not layer.built:
    layer.build()


def discriminator_name_map(discriminator, scope=DISCRIMINATOR_SCOPE, include_head=True):
  """Names of a standalone `ElectraBackbone` (the fine-tuning encoder) or
  `ElectraDiscriminator`: `electra/embeddings/*`, `electra/embeddings_project/*`,
  `electra/encoder/*` and, if it has one and `include_head`,
  `discriminator_predictions/*`. Add task heads with `task_head_names`."""
  _ensure_built(discriminator)
  name_map = {}
  _add_all(name_map, embeddings_names(discriminator.embeddings, scope))
  _add_all(name_map, encoder_names(discriminator.encoder, scope))
  head = getattr(discriminator, "head", None)  # a backbone has none
  if include_head and head is not None:
    _add_all(name_map, discriminator_head_names(head))
  return name_map


def generator_scopes(pretrainer):
  """The model scope(s) of the pretrainer's generator towers as the original
  names them: `["generator"]`, `["generator_ltr", "generator_rtl"]`,
  `["electra"]` (full-size tied/MLM generator) or `[]` (uniform)."""
  if pretrainer.generator is None:
    return []
  if not (pretrainer.objective.has_discriminator and pretrainer.untied_generator):
    return [DISCRIMINATOR_SCOPE]
  if pretrainer.generator.is_two_tower:
    return [GENERATOR_LTR_SCOPE, GENERATOR_RTL_SCOPE]
  return [GENERATOR_SCOPE]


def generator_name_map(generator, scopes, shared_embeddings):
  """Names of an `ElectraGenerator`, in a pretrainer or standalone: each
  tower's embeddings and encoder, and its head (`generator_predictions/*`,
  or `cloze_predictions/*` for two towers).

  Args:
    generator: the `ElectraGenerator`.
    scopes: its towers' scopes (`generator_scopes`).
    shared_embeddings: True when its towers read the shared block, which is
      always `electra/embeddings`; else each tower's own embeddings live in
      the tower's scope.
  """
  name_map = {}
  towers = [(generator.embeddings, generator.encoder)]
  if generator.is_two_tower:
    towers.append((generator.rtl_embeddings, generator.rtl_encoder))
  for scope, (embeddings, encoder) in zip(scopes, towers):
    _add_all(
      name_map, embeddings_names(embeddings, DISCRIMINATOR_SCOPE if shared_embeddings else scope)
    )
    _add_all(name_map, encoder_names(encoder, scope))
  head_scope = CLOZE_HEAD_SCOPE if generator.is_two_tower else GENERATOR_HEAD_SCOPE
  _add_all(name_map, masked_lm_head_names(generator.head, head_scope))
  return name_map


def official_name_map(pretrainer):
  """Every variable of an `ElectraPretrainer` under its official name; shared
  variables appear once."""
  _ensure_built(pretrainer)
  name_map = {}
  if pretrainer.discriminator is not None:
    _add_all(name_map, discriminator_name_map(pretrainer.discriminator))
  generator = pretrainer.generator
  if generator is not None:
    _add_all(
      name_map,
      generator_name_map(
        generator,
        generator_scopes(pretrainer),
        shared_embeddings=generator.embeddings is pretrainer.embeddings,
      ),
    )
  return name_map


def official_shapes(name_map):
  """`{name: tuple(shape)}` of a name map, e.g. to compare with
  `tf.train.list_variables`."""
  return {name: tuple(int(d) for d in variable.shape) for name, variable in name_map.items()}
