"""`ElectraPretrainer`: the generator and discriminator of one pre-training run
with every generator option of the original (spec §7.1, §7.8)."""

import os

import keras
from keras import ops

from electra_tf import pretraining_config as pretraining_config_lib
from electra_tf import vocab as vocab_lib
from electra_tf.layers.electra_embeddings import ElectraEmbeddings
from electra_tf.models import model_utils
from electra_tf.models.electra_discriminator import ElectraDiscriminator
from electra_tf.models.electra_generator import ElectraGenerator

# BERT-uncased layout, used when the vocab file is not available.
DEFAULT_SPECIAL_IDS = {"pad": 0, "unk": 100, "cls": 101, "sep": 102, "mask": 103}


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraPretrainer(keras.Model):
  """Holds the shared embeddings, the generator and the discriminator.

  Which networks exist follows the original's branches (spec §7.1):
  - `uniform_generator`: `generator` is None (uniform sampling, no weights);
  - ELECTRA/Electric with `untied_generator`: a small generator (scope
    `generator`, or Electric's two towers `generator_ltr`/`generator_rtl`)
    reading the shared `electra/embeddings` block unless
    `untied_generator_embeddings`;
  - otherwise (MLM-only, or `untied_generator=False`): a full-size generator;
    with a discriminator it IS the discriminator's transformer.
  `discriminator` is None in MLM-only mode (`electra_objective` and
  `electric_objective` both false).

  Args:
    bert_config: dict of the discriminator's (full-size) `BertConfig`.
    generator_config: dict of the small generator's `BertConfig`
      (`get_generator_config`); only used for an untied generator.
    vocab_size: V; must match `bert_config["vocab_size"]`.
    embedding_size: width E of the shared embedding tables; None means H.
    electra_objective, electric_objective: the objectives.
    uniform_generator, untied_generator, untied_generator_embeddings,
      two_tower_generator: generator options as in the original.
    gen_weight, disc_weight, mask_prob, max_predictions_per_seq, temperature,
      disallow_correct: hparams read by the training step.
    pad_id, cls_id, sep_id, mask_id: special token ids.
    **kwargs: standard `keras.Model` arguments.

  Example:
  >>> config = PretrainingConfig("m", "/tmp/none", vocab_size=100,
  ...     model_hparam_overrides={"hidden_size": 16, "num_hidden_layers": 1})
  >>> model = ElectraPretrainer.from_pretraining_config(config)
  >>> model.generator.encoder.hidden_size
  4
  """

  def __init__(self, bert_config, generator_config=None, vocab_size=None, embedding_size=None,
               electra_objective=True, electric_objective=False, uniform_generator=False,
               untied_generator=True, untied_generator_embeddings=False,
               two_tower_generator=False, gen_weight=1.0, disc_weight=50.0, mask_prob=0.15,
               max_predictions_per_seq=19, temperature=1.0, disallow_correct=False,
               pad_id=0, cls_id=101, sep_id=102, mask_id=103, **kwargs):
    super().__init__(**kwargs)
    self.bert_config = model_utils.bert_config_dict(bert_config)
    if vocab_size is None:
      vocab_size = self.bert_config["vocab_size"]
    if int(vocab_size) != self.bert_config["vocab_size"]:
      raise ValueError(
          f"vocab_size={vocab_size} differs from bert_config vocab_size="
          f"{self.bert_config['vocab_size']}")
    self.vocab_size = int(vocab_size)
    self.generator_config = (
        model_utils.bert_config_dict(generator_config) if generator_config is not None else None)
    self.embedding_size = int(embedding_size) if embedding_size is not None else None
    self.electra_objective = bool(electra_objective)
    self.electric_objective = bool(electric_objective)
    self.uniform_generator = bool(uniform_generator)
    self.untied_generator = bool(untied_generator)
    self.untied_generator_embeddings = bool(untied_generator_embeddings)
    # The original's config forces the two towers for Electric.
    self.two_tower_generator = bool(two_tower_generator) or self.electric_objective
    self.gen_weight = float(gen_weight)
    self.disc_weight = float(disc_weight)
    self.mask_prob = float(mask_prob)
    self.max_predictions_per_seq = int(max_predictions_per_seq)
    self.temperature = float(temperature)
    self.disallow_correct = bool(disallow_correct)
    self.pad_id, self.cls_id = int(pad_id), int(cls_id)
    self.sep_id, self.mask_id = int(sep_id), int(mask_id)

    has_discriminator = self.electra_objective or self.electric_objective
    if self.electric_objective and (self.uniform_generator or not self.untied_generator):
      # The original crashes while building the graph here (spec §14.14).
      raise ValueError(
          "electric_objective=True needs untied_generator=True and uniform_generator=False")
    if self.uniform_generator and not has_discriminator:
      raise ValueError(
          "uniform_generator=True with electra_objective=False and electric_objective=False "
          "leaves no network to train")
    small_generator = (not self.uniform_generator and has_discriminator
                       and self.untied_generator)
    if small_generator and self.generator_config is None:
      raise ValueError("an untied generator needs generator_config (get_generator_config)")
    if self.two_tower_generator and not small_generator:
      raise ValueError(
          "two_tower_generator=True needs an untied, non-uniform generator with "
          "electra_objective or electric_objective")

    c = self.bert_config
    width = self.embedding_size if self.embedding_size is not None else c["hidden_size"]
    # The `electra/embeddings` block: word/position/token-type tables and
    # LayerNorm, shared by every tower that does not have untied embeddings.
    self.embeddings = ElectraEmbeddings(
        vocab_size=c["vocab_size"], embedding_size=width,
        max_position_embeddings=c["max_position_embeddings"],
        type_vocab_size=c["type_vocab_size"], initializer_range=c["initializer_range"],
        dropout_rate=c["hidden_dropout_prob"], dtype=self.dtype_policy, name="embeddings")

    if has_discriminator:
      self.discriminator = ElectraDiscriminator(
          c, embedding_size=width, embeddings=self.embeddings, dtype=self.dtype_policy,
          name="discriminator")
    else:
      self.discriminator = None

    if self.uniform_generator:
      self.generator = None
    elif small_generator:
      untied = self.untied_generator_embeddings
      self.generator = ElectraGenerator(
          self.generator_config,
          embedding_size=None if untied else width,
          embeddings=None if untied else self.embeddings,
          two_tower=self.two_tower_generator, dtype=self.dtype_policy, name="generator")
    else:
      # Full-size generator: the discriminator's transformer when there is
      # one (untied_generator=False), else its own `electra` transformer.
      self.generator = ElectraGenerator(
          c, embedding_size=width, embeddings=self.embeddings,
          encoder=self.discriminator.encoder if self.discriminator is not None else None,
          dtype=self.dtype_policy, name="generator")

  @classmethod
  def from_pretraining_config(cls, config, **kwargs):
    """Builds the pretrainer from a `PretrainingConfig` (debug shrink
    included); special ids come from `config.vocab_file` when it exists."""
    bert_config = pretraining_config_lib.get_pretraining_bert_config(config)
    generator_config = pretraining_config_lib.get_generator_config(config, bert_config)
    if config.vocab_file and os.path.exists(config.vocab_file):
      special = vocab_lib.special_token_ids(config.vocab_file)
    else:
      special = DEFAULT_SPECIAL_IDS
    return cls(
        bert_config=bert_config.to_dict(),
        generator_config=generator_config.to_dict(),
        vocab_size=config.vocab_size,
        embedding_size=config.embedding_size,
        electra_objective=config.electra_objective,
        electric_objective=config.electric_objective,
        uniform_generator=config.uniform_generator,
        untied_generator=config.untied_generator,
        untied_generator_embeddings=config.untied_generator_embeddings,
        two_tower_generator=config.two_tower_generator,
        gen_weight=config.gen_weight,
        disc_weight=config.disc_weight,
        mask_prob=config.mask_prob,
        max_predictions_per_seq=config.max_predictions_per_seq,
        temperature=config.temperature,
        disallow_correct=config.disallow_correct,
        pad_id=special["pad"], cls_id=special["cls"], sep_id=special["sep"],
        mask_id=special["mask"], **kwargs)

  def build(self, input_shape=None):
    # Every sublayer knows its shapes from its config, so building needs no
    # forward pass (this also serves `.keras` loading).
    model_utils.build_once(self.embeddings)
    if self.discriminator is not None:
      model_utils.build_once(self.discriminator)
    if self.generator is not None:
      model_utils.build_once(self.generator)
    self.built = True

  def call(self, features, training=None):
    """A deterministic forward pass of every network: the generator on
    `features` at `masked_lm_positions` (default 0..N-1; all positions for
    two towers) and the discriminator on `features`. The training step is
    separate (see below)."""
    model_utils.check_inputs(features, "ElectraPretrainer")
    inputs = {k: features[k] for k in model_utils.INPUT_KEYS}
    outputs = {}
    if self.generator is not None:
      positions = features.get("masked_lm_positions")
      if positions is None and not self.generator.is_two_tower:
        input_ids = inputs["input_ids"]
        num = min(self.max_predictions_per_seq, int(input_ids.shape[1]))
        positions = ops.broadcast_to(
            ops.arange(num, dtype="int32")[None, :], (ops.shape(input_ids)[0], num))
      outputs["generator"] = self.generator(
          inputs, masked_lm_positions=positions, training=training)
    if self.discriminator is not None:
      outputs["discriminator"] = self.discriminator(inputs, training=training)
    return outputs

  # ---------------------------------------------------------------------------
  # Training: `train_step` / `test_step` (and any `compile` override) are added
  # by `electra_tf/pretraining_step.py`; they are deliberately not defined here.
  # ---------------------------------------------------------------------------

  def get_config(self):
    config = super().get_config()
    config.update({
        "bert_config": dict(self.bert_config),
        "generator_config": (
            dict(self.generator_config) if self.generator_config is not None else None),
        "vocab_size": self.vocab_size,
        "embedding_size": self.embedding_size,
        "electra_objective": self.electra_objective,
        "electric_objective": self.electric_objective,
        "uniform_generator": self.uniform_generator,
        "untied_generator": self.untied_generator,
        "untied_generator_embeddings": self.untied_generator_embeddings,
        "two_tower_generator": self.two_tower_generator,
        "gen_weight": self.gen_weight,
        "disc_weight": self.disc_weight,
        "mask_prob": self.mask_prob,
        "max_predictions_per_seq": self.max_predictions_per_seq,
        "temperature": self.temperature,
        "disallow_correct": self.disallow_correct,
        "pad_id": self.pad_id,
        "cls_id": self.cls_id,
        "sep_id": self.sep_id,
        "mask_id": self.mask_id,
    })
    return config

  @classmethod
  def from_config(cls, config):
    return cls(**config)
