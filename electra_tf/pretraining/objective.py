"""`PretrainingObjective`: what one pre-training step computes, as one value,
from the `PretrainingConfig` through `ElectraPretrainer` into the step
(`electra_tf.pretraining.step.forward`)."""

import dataclasses
import os

from electra_tf.configs.hparams import unknown_hparam_message
from electra_tf.configs.pretraining import MASKING_KINDS
from electra_tf.text import vocab as vocab_lib

# How fake tokens are proposed: a masked-LM generator, a two-tower cloze
# generator on the unmasked input (Electric), or uniform sampling.
GENERATOR_MODES = ("masked_lm", "two_tower", "uniform")

# BERT-uncased layout, used when no vocab is available.
DEFAULT_SPECIAL_IDS = {"pad": 0, "unk": 100, "cls": 101, "sep": 102, "mask": 103}

# The objective's fields that `from_config` does not copy from the hparam of
# the same name: the mode comes from three flags, the ids from the vocab.
_NOT_HPARAMS = ("generator_mode", "pad_id", "cls_id", "sep_id", "mask_id")


def generator_mode_from_flags(uniform_generator, two_tower_generator, electric_objective):
  """The generator mode for the original's boolean hparams; Electric always
  uses two towers (the original's config forces `two_tower_generator`).

  Example:
  >>> generator_mode_from_flags(False, False, electric_objective=True)
  'two_tower'
  """
  two_tower = bool(two_tower_generator) or bool(electric_objective)
  if uniform_generator and two_tower:
    if electric_objective:
      # The original crashes while building the graph here.
      raise ValueError(
        "electric_objective=True needs untied_generator=True and uniform_generator=False"
      )
    raise ValueError(
      "two_tower_generator=True needs an untied, non-uniform generator with "
      "electra_objective or electric_objective (got uniform_generator=True)"
    )
  if uniform_generator:
    return "uniform"
  return "two_tower" if two_tower else "masked_lm"


@dataclasses.dataclass(frozen=True)
class PretrainingObjective:
  """The settings of the pre-training objective that the step reads.

  Args:
    electra_objective: replaced-token detection (ELECTRA).
    electric_objective: Electric (energy-based cloze); needs
      `generator_mode="two_tower"`.
    generator_mode: one of `GENERATOR_MODES`.
    mask_prob: fraction of tokens masked.
    masking: `token` (the original) or `whole_word` (which needs
      `ElectraPretrainer`'s `word_continuation`).
    max_predictions_per_seq: masked slots per example (N).
    gen_weight: weight of the generator (MLM or cloze) loss.
    disc_weight: weight of the discriminator loss.
    temperature: sampling temperature (logits are divided by it).
    disallow_correct: forbid sampling the original token.
    pad_id, cls_id, sep_id, mask_id: special token ids.

  Example:
  >>> objective = PretrainingObjective(mask_prob=0.25, max_predictions_per_seq=32)
  >>> objective.has_discriminator, objective.generator_mode
  (True, 'masked_lm')
  >>> PretrainingObjective.from_dict(objective.to_dict()) == objective
  True
  """

  electra_objective: bool = True
  electric_objective: bool = False
  generator_mode: str = "masked_lm"
  mask_prob: float = 0.15
  masking: str = "token"
  max_predictions_per_seq: int = 19
  gen_weight: float = 1.0
  disc_weight: float = 50.0
  temperature: float = 1.0
  disallow_correct: bool = False
  pad_id: int = 0
  cls_id: int = 101
  sep_id: int = 102
  mask_id: int = 103

  def __post_init__(self):
    # Plain Python types: the object is compared, hashed and serialised as-is.
    for f in dataclasses.fields(self):
      object.__setattr__(self, f.name, f.type(getattr(self, f.name)))
    if self.generator_mode not in GENERATOR_MODES:
      raise ValueError(f"generator_mode={self.generator_mode!r}; expected one of {GENERATOR_MODES}")
    if self.masking not in MASKING_KINDS:
      raise ValueError(f"masking={self.masking!r}; expected one of {list(MASKING_KINDS)}")
    if self.electric_objective and self.generator_mode != "two_tower":
      raise ValueError(
        "electric_objective=True needs untied_generator=True and uniform_generator=False "
        f"(a two-tower generator; got generator_mode={self.generator_mode!r})"
      )
    if self.generator_mode == "uniform" and not self.has_discriminator:
      raise ValueError(
        "uniform_generator=True with electra_objective=False and electric_objective=False "
        "leaves no network to train"
      )
    if self.generator_mode == "two_tower" and not self.has_discriminator:
      raise ValueError(
        "two_tower_generator=True needs an untied, non-uniform generator with "
        "electra_objective or electric_objective"
      )

  @property
  def has_discriminator(self):
    """False only for MLM-only training (both objectives off)."""
    return self.electra_objective or self.electric_objective

  @property
  def special_ids(self):
    """`(cls_id, sep_id, mask_id)`: the tokens never masked or predicted."""
    return (self.cls_id, self.sep_id, self.mask_id)

  @classmethod
  def from_config(cls, config, vocab=None):
    """The objective of a `PretrainingConfig`.

    Args:
      config: a `PretrainingConfig` (or any object with its attributes).
      vocab: token → id mapping (`electra_tf.text.vocab.load_vocab`) for the
        special ids, looked up by string as the original does; None uses the
        BERT-uncased ids (`DEFAULT_SPECIAL_IDS`).

    Returns:
      A `PretrainingObjective`.
    """
    if isinstance(vocab, (str, bytes, os.PathLike)):
      # A path would be searched as a string (and blamed for lacking [UNK]).
      raise ValueError(
        f"PretrainingObjective.from_config: vocab={os.fspath(vocab)!r} is a path; expected the "
        "vocab's tokens (Vocab.read(path).tokens, or a token → id dict)"
      )
    special = DEFAULT_SPECIAL_IDS if vocab is None else vocab_lib.special_ids_of(vocab)
    names = [f.name for f in dataclasses.fields(cls) if f.name not in _NOT_HPARAMS]
    return cls(
      **{name: getattr(config, name) for name in names},
      generator_mode=generator_mode_from_flags(
        config.uniform_generator, config.two_tower_generator, config.electric_objective
      ),
      pad_id=special["pad"],
      cls_id=special["cls"],
      sep_id=special["sep"],
      mask_id=special["mask"],
    )

  def to_dict(self):
    """Plain dict of every field (JSON-serialisable)."""
    return dataclasses.asdict(self)

  @classmethod
  def from_dict(cls, values):
    """Inverse of `to_dict`; an unknown key raises `ValueError` naming it."""
    names = [f.name for f in dataclasses.fields(cls)]
    for key in values:
      if key not in names:
        raise ValueError(f"PretrainingObjective: {unknown_hparam_message(key, names)}")
    return cls(**values)
