"""The discriminator or generator of a pretrainer as a standalone functional
`keras.Model` (what `--part discriminator|generator` writes as `.keras`), with
the official names of its variables.

Example:
  >>> GENERATOR_MODEL_PREFIX
  'electra_generator__'
"""

import keras

from electra_tf.layers.electra_embeddings import ElectraEmbeddings
from electra_tf.models import official_names
from electra_tf.models.electra_generator import ElectraGenerator

# Name prefix of a standalone generator model; the official scope(s) of its
# tower(s) follow, joined by `__`.
GENERATOR_MODEL_PREFIX = "electra_generator__"


def standalone_generator(pretrainer):
  """A fresh `ElectraGenerator` with the pretrainer's generator layout and
  its own copy of any shared embeddings; returns `(generator, name_map)`."""

  source = pretrainer.generator
  if source is None:
    raise ValueError(
      "this checkpoint has no generator (uniform_generator: tokens are sampled "
      "uniformly, there are no generator weights); use --part discriminator"
    )
  scopes = official_names.generator_scopes(pretrainer)
  shared = source.embeddings is pretrainer.embeddings
  c = source.bert_config
  embeddings = None
  if shared:
    e = pretrainer.embeddings
    embeddings = ElectraEmbeddings(
      vocab_size=e.vocab_size,
      embedding_size=e.embedding_size,
      max_position_embeddings=e.max_position_embeddings,
      type_vocab_size=e.type_vocab_size,
      initializer_range=c["initializer_range"],
      dropout_rate=c["hidden_dropout_prob"],
      name="embeddings",
    )
  generator = ElectraGenerator(
    c,
    embedding_size=None if shared else source.embedding_size,
    embeddings=embeddings,
    two_tower=source.is_two_tower,
    name="generator",
  )
  generator.build()
  return generator, official_names.generator_name_map(generator, scopes, shared)


_FEATURES = ("input_ids", "input_mask", "segment_ids")


def _input_specs(with_positions):
  names = _FEATURES + (("masked_lm_positions",) if with_positions else ())
  return {k: keras.Input(shape=(None,), dtype="int32", name=k) for k in names}


def discriminator_model(discriminator):
  """Functional `keras.Model` around a standalone discriminator (for `.keras`)."""
  inputs = _input_specs(False)
  outputs = discriminator(inputs)
  keys = ["embedding_output", "sequence_output", "pooled_output"]
  if getattr(discriminator, "head", None) is not None:  # an ElectraBackbone has none
    keys.append("logits")
  return keras.Model(inputs, {k: outputs[k] for k in keys}, name="electra_discriminator")


def generator_model(generator, scopes):
  """Functional `keras.Model` around a standalone generator. Its name records
  the official scope(s) so `to-official` can name the tower(s) again."""
  inputs = _input_specs(True)
  features = {k: inputs[k] for k in _FEATURES}
  outputs = generator(features, masked_lm_positions=inputs["masked_lm_positions"])
  keys = ["sequence_output", "mlm_logits"]
  return keras.Model(
    inputs, {k: outputs[k] for k in keys}, name=GENERATOR_MODEL_PREFIX + "__".join(scopes)
  )
