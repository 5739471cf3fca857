"""Pre-training hyperparameters: the original's `PretrainingConfig` (`configure_pretraining.py:PretrainingConfig`).

Construction order matters for overrides and is the original's: defaults →
user values → derived `max_predictions_per_seq` → debug settings → size
defaults → Electric → user values again.
"""

import dataclasses
import math
import os

from electra_tf.configs.bert_config import BertConfig
from electra_tf.configs.hparams import check_optimizer_name
from electra_tf.configs.hparams import check_path_hparam
from electra_tf.configs.hparams import check_run_flags
from electra_tf.configs.hparams import hparam
from electra_tf.configs.runtime import RuntimeHparams

# The `masking` hparam's values (`electra_tf.pretraining.masking` implements them).
MASKING_KINDS = ("token", "whole_word")

MODEL_SIZES = {
  # size: (hidden_size, num_hidden_layers); heads and FFN derive from H.
  "small": (256, 12),
  "base": (768, 12),
  "large": (1024, 24),
}


def default_embedding_size(model_size):
  """The original's embedding size for a model size: 128 for `small` (the
  embeddings are projected to H=256), else None (E = H)."""
  return 128 if model_size == "small" else None


@dataclasses.dataclass(init=False, repr=False, eq=False)
class PretrainingConfig(RuntimeHparams):
  """Every pre-training hparam of the original, plus a few for TF2 training.

  Args:
    model_name: model directory name; the model lives in
      `<data_dir>/models/<model_name>`.
    data_dir: root of data and models.
    **kwargs: hparam overrides; an unknown key raises `ValueError` naming it
      and the closest valid name.

  Example:
  >>> config = PretrainingConfig("tiny", "/tmp/data", model_size="small",
  ...                            num_train_steps=100)
  >>> config.max_predictions_per_seq
  19
  >>> PretrainingConfig.field_help()["disc_weight"]
  'Weight of the discriminator loss.'
  """

  model_name: str = hparam(None, "Model directory name (the `--model-name` flag).")
  debug: bool = hparam(
    False,
    "Tiny model (3 layers, H=144) and few steps, as the original's debug mode; also deletes "
    "the model dir first (configs/debug.json: same sizes, no deletion).",
  )
  do_train: bool = hparam(True, "Train.")
  do_eval: bool = hparam(False, "Evaluate.")

  # objectives
  electra_objective: bool = hparam(True, "Replaced-token detection (ELECTRA).")
  electric_objective: bool = hparam(
    False,
    "Electric (energy-based cloze); forces `two_tower_generator`; with `electra_objective` "
    "also true, Electric's loss is the one trained (as in the original).",
  )
  gen_weight: float = hparam(1.0, "Weight of the generator (MLM or cloze) loss.")
  disc_weight: float = hparam(50.0, "Weight of the discriminator loss.")
  mask_prob: float = hparam(0.15, "Fraction of tokens masked (85% become [MASK], 15% stay).")
  masking: str = hparam(
    "token",
    "How masked positions are chosen: `token` (the original: one token at a time) or "
    "`whole_word` (every piece of a chosen word together, within the same token budget; "
    "words come from the vocab_file).",
  )

  # optimization
  learning_rate: float = hparam(
    5e-4, "Peak learning rate before decay (the warm-up multiplies the decayed rate)."
  )
  lr_decay_power: float = hparam(1.0, "Polynomial decay power (1 = linear).")
  weight_decay_rate: float = hparam(
    0.01, "Decoupled weight decay, scaled by the learning rate; not for LayerNorm/bias."
  )
  num_warmup_steps: int = hparam(10000, "Warm-up steps.")
  optimizer: str = hparam(
    "adam",
    "`adam`: the original's AdamWeightDecay; `lamb`: LAMB (trust ratio per variable, LayerNorm/bias "
    "excluded) for large global batches. Both clip the global norm at 1.",
  )

  # training loop
  iterations_per_loop: int = hparam(
    200, "TPU loop size in the original; see `steps_per_execution`."
  )
  save_checkpoints_steps: int = hparam(1000, "Checkpoint period in steps.")
  num_train_steps: int = hparam(1000000, "Absolute step to train to (also the decay horizon).")
  num_eval_steps: int = hparam(
    100, "Batches evaluated by `do_eval`, at most the held-out set once (a shorter set says so)."
  )

  # model size
  model_size: str = hparam("small", "`small`, `base` or `large` (size table of the original).")
  model_hparam_overrides: dict = hparam(
    {}, "Dict of `BertConfig` fields overriding the size table."
  )
  embedding_size: int | None = hparam(
    None, "Embedding width E; null means the hidden size; `small` forces 128."
  )
  vocab_size: int = hparam(
    30522,
    "Model vocabulary size (rows of the word-embedding table); checked against the vocab "
    "file's line count.",
  )
  do_lower_case: bool = hparam(True, "Lower-case text when tokenizing.")
  strip_accents: bool = hparam(
    True,
    "Strip accents when tokenizing (only with do_lower_case). Pre-training reads ready-made records: "
    "set it false for records built with --no-strip-accents, so that fine-tuning, export and "
    "publishing (which read it from the model dir's config.json) tokenize the same way.",
  )

  # generator
  uniform_generator: bool = hparam(
    False, "Sample fakes uniformly over the vocab (no generator network)."
  )
  two_tower_generator: bool = hparam(
    False, "Two-tower (left-to-right + right-to-left) cloze generator."
  )
  untied_generator_embeddings: bool = hparam(False, "Give the generator its own embedding tables.")
  untied_generator: bool = hparam(
    True, "Separate generator transformer; false shares the discriminator's (full size)."
  )
  generator_layers: float = hparam(1.0, "Generator layers as a fraction of the discriminator's.")
  generator_hidden_size: float = hparam(
    0.25, "Generator hidden size as a fraction of the discriminator's."
  )
  disallow_correct: bool = hparam(False, "Forbid the generator from sampling the original token.")
  temperature: float = hparam(1.0, "Sampling temperature (logits are divided by it).")

  # batch and sequence sizes
  max_seq_length: int = hparam(128, "Tokens per example, including [CLS]/[SEP].")
  train_batch_size: int = hparam(128, "Global training batch size.")
  eval_batch_size: int = hparam(128, "Global evaluation batch size.")

  # paths (defaults computed from data_dir and model_name)
  pretrain_tfrecords: str = hparam(None, "Comma-separated globs of the pre-training TFRecords.")
  held_out_tfrecords: str | None = hparam(
    None,
    "Comma-separated globs of held-out TFRecords (not trained on): while `run_pretraining` "
    "trains, the real-token metrics are measured on `held_out_batches` batches of them every "
    "`save_checkpoints_steps` (the discriminator's AUC also at temperature 1), kept in "
    "`<model_dir>/held_out_history.json`, and a warning says when that AUC stops rising.",
  )
  held_out_batches: int = hparam(10, "Batches of `held_out_tfrecords` measured each time.")
  vocab_file: str | None = hparam(
    None, "WordPiece vocab (special-token ids are looked up in it); must exist."
  )
  model_dir: str = hparam(None, "Where checkpoints and logs go.")
  results_txt: str = hparam(None, "Results text file.")
  results_pkl: str = hparam(None, "Evaluation results pickle (also written, with a JSON twin).")

  # --- Beyond the original (TF2 training); documented in docs/pretrain.md, docs/hparams.md. ---
  fused_training_kernels: bool = hparam(
    True,
    "XLA-fused elementwise kernels in the transformers' training path (false: plain TF ops, "
    "same math and dropout masks).",
  )
  init_checkpoint: str | None = hparam(None, "Checkpoint to start from.")
  log_every_steps: int = hparam(1, "Period of the progress (ETA) line.")

  max_predictions_per_seq: int = hparam(
    None,
    "Derived: int((mask_prob + 0.005) · max_seq_length); not settable.",
    derived=True,
  )

  def __init__(self, model_name, data_dir, **kwargs):
    check_run_flags(model_name, data_dir)
    self.set_defaults()
    self.model_name = model_name
    # The original takes the overrides at once (before the first update).
    self.model_hparam_overrides = kwargs.get("model_hparam_overrides", {})
    self.pretrain_tfrecords = os.path.join(data_dir, "pretrain_tfrecords/pretrain_data.tfrecord*")
    self.vocab_file = os.path.join(data_dir, "vocab.txt")
    self.model_dir = os.path.join(data_dir, "models", model_name)
    self._data_dir = data_dir
    self.update(kwargs)

    # derived; not an accepted hparam (the original creates it after update)
    self.max_predictions_per_seq = int((self.mask_prob + 0.005) * self.max_seq_length)

    if self.debug:
      self.train_batch_size = 8
      self.num_train_steps = 20
      self.eval_batch_size = 4
      self.iterations_per_loop = 1
      self.num_eval_steps = 2

    self.embedding_size = default_embedding_size(self.model_size) or self.embedding_size

    if self.electric_objective:
      self.two_tower_generator = True

    self.update(kwargs)

    # Results paths follow the model dir (an overridden one too, unlike the original) unless given.
    results_dir = os.path.join(self.model_dir, "results")
    if "results_txt" not in kwargs:
      self.results_txt = os.path.join(results_dir, "unsup_results.txt")
    if "results_pkl" not in kwargs:
      self.results_pkl = os.path.join(results_dir, "unsup_results.pkl")
    self._validate()

  @property
  def data_dir(self):
    return self._data_dir

  def _check_ranges(self):
    """Every hparam with a range, before any work: one `ValueError` naming
    the hparam, its value and what was expected."""
    for name, low, high, closed in _PROBABILITIES:
      check_number(self, name, low, high, closed)
    for name in _NON_NEGATIVE:
      check_number(self, name, 0, None, (True, True))
    if self.do_train and self.gen_weight == 0 and self.disc_weight == 0:
      raise ValueError(
        "hparams gen_weight=0 and disc_weight=0: the loss is 0 and nothing would be trained; "
        "expected at least one weight > 0"
      )
    for name in _POSITIVE_FLOATS:
      check_number(self, name, 0, None, (False, True))
    for name in _POSITIVE_INTEGERS:
      _check_integer(self, name, 1)
    for name in _NON_NEGATIVE_INTEGERS:
      _check_integer(self, name, 0)
    if self.embedding_size is not None:
      _check_integer(self, "embedding_size", 1)
    if self.do_eval:
      _check_integer(self, "num_eval_steps", 1)
    if self.held_out_tfrecords:
      _check_integer(self, "held_out_batches", 1)

  def _check_shapes(self):
    """The towers' shapes (after the model size is known to be valid)."""
    bert_config = get_pretraining_bert_config(self)
    bert_config.check("hparam model_hparam_overrides (the discriminator's BertConfig):")
    if self.untied_generator and not self.uniform_generator:
      generator = get_generator_config(self, bert_config)
      what = (
        f"the generator's BertConfig (hparams generator_hidden_size={self.generator_hidden_size}"
        f", generator_layers={self.generator_layers} of the discriminator's "
        f"{bert_config.hidden_size} and {bert_config.num_hidden_layers}):"
      )
      if generator.num_hidden_layers < 1 or generator.hidden_size < 1:
        raise ValueError(
          f"{what} hidden_size={generator.hidden_size}, num_hidden_layers="
          f"{generator.num_hidden_layers}; expected at least 1 of each (raise the fractions)"
        )
      generator.check(what)

  def _validate(self):
    self._check_ranges()
    check_optimizer_name(self.optimizer)
    for name in ("init_checkpoint", "vocab_file", "model_dir", "results_txt", "results_pkl"):
      check_path_hparam(self, name)
    if self.num_warmup_steps < 1:
      # The original divides by zero in its schedule.
      raise ValueError(
        f"hparam num_warmup_steps={self.num_warmup_steps}; expected at least 1 (the warm-up "
        "length; the original divides by zero with 0)"
      )
    if self.model_size not in MODEL_SIZES:
      raise ValueError(
        f"Unknown model size {self.model_size!r} (hparam model_size); expected one of {sorted(MODEL_SIZES)}"
      )
    if self.masking not in MASKING_KINDS:
      raise ValueError(f"hparam masking={self.masking!r}; expected one of {list(MASKING_KINDS)}")
    self._check_shapes()
    self.validate_runtime()
    if self.electric_objective and (self.uniform_generator or not self.untied_generator):
      # The original crashes during graph construction here (a quirk of the original (docs/differences.md)).
      raise ValueError(
        "electric_objective=True needs untied_generator=True and uniform_generator=False"
      )
    if self.electric_objective and not self.two_tower_generator:
      # Electric sets it, but a user's false overrides that (the original then crashes).
      raise ValueError(
        "hparam electric_objective=True needs two_tower_generator=True (its cloze "
        "generator); leave two_tower_generator out or set it true"
      )
    trains_discriminator = self.electra_objective or self.electric_objective
    if self.two_tower_generator and (
      self.uniform_generator or not self.untied_generator or not trains_discriminator
    ):
      # Said here, before any work, not when the model is built.
      raise ValueError(
        "hparam two_tower_generator=True needs untied_generator=True, uniform_generator=False "
        f"and electra_objective or electric_objective (got uniform_generator="
        f"{self.uniform_generator}, untied_generator={self.untied_generator}, "
        f"electra_objective={self.electra_objective})"
      )


# (name, low, high, (low included, high included)): shares and probabilities.
_PROBABILITIES = (
  ("mask_prob", 0, 1, (False, True)),
  ("generator_hidden_size", 0, 1, (False, True)),
  ("generator_layers", 0, 1, (False, True)),
)
_NON_NEGATIVE = (
  "gen_weight",
  "disc_weight",
  "learning_rate",
  "lr_decay_power",
  "weight_decay_rate",
)
_POSITIVE_FLOATS = ("temperature",)
_POSITIVE_INTEGERS = (
  "num_train_steps",
  "train_batch_size",
  "eval_batch_size",
  "max_seq_length",
  "vocab_size",
  "iterations_per_loop",
  "steps_per_execution",
  "num_tpu_cores",
  "log_every_steps",
)
_NON_NEGATIVE_INTEGERS = ("save_checkpoints_steps",)


def _range_text(low, high, closed):
  if high is None:
    return f">= {low}" if closed[0] else f"> {low}"
  return f"a value in {'[' if closed[0] else '('}{low}, {high}{']' if closed[1] else ')'}"


def check_number(config, name, low, high, closed):
  """Raises a one-line ValueError unless hparam `name` of `config` is a number
  in the range `low`..`high` (None: unbounded), ends included as `closed` says."""
  value = getattr(config, name)
  expected = _range_text(low, high, closed)
  if (
    isinstance(value, bool)
    or not isinstance(value, (int, float))
    or (isinstance(value, float) and not math.isfinite(value))
  ):
    # JSON's 1e999 reads as infinity: not a number a run can use.
    raise ValueError(f"hparam {name}={value!r}; expected a finite number, {expected}")
  too_low = value < low if closed[0] else value <= low
  too_high = high is not None and (value > high if closed[1] else value >= high)
  if too_low or too_high:
    raise ValueError(f"hparam {name}={value!r}; expected {expected}")


def _check_integer(config, name, low):
  value = getattr(config, name)
  if isinstance(value, bool) or not isinstance(value, int) or value < low:
    kind = "a positive integer" if low == 1 else f"an integer >= {low}"
    raise ValueError(f"hparam {name}={value!r}; expected {kind}")


def get_bert_config(config):
  """The discriminator's `BertConfig` from the size table, for pre-training and fine-tuning."""
  if not hasattr(config, "model_size"):
    raise TypeError(
      f"get_bert_config takes a PretrainingConfig or FinetuningConfig, got "
      f"{type(config).__name__} {config!r} (a size name goes in model_size=...)"
    )
  if config.model_size not in MODEL_SIZES:
    raise ValueError(f"Unknown model size {config.model_size!r}")
  hidden_size, num_layers = MODEL_SIZES[config.model_size]
  args = {"hidden_size": hidden_size, "num_hidden_layers": num_layers}
  args["vocab_size"] = config.vocab_size
  args.update(**config.model_hparam_overrides)
  BertConfig.from_dict(args)  # a field of the wrong type is named before it is used below
  # heads and FFN follow the (possibly overridden) hidden size ...
  args["num_attention_heads"] = max(1, args["hidden_size"] // 64)
  args["intermediate_size"] = 4 * args["hidden_size"]
  # ... unless overridden explicitly
  args.update(**config.model_hparam_overrides)
  return BertConfig.from_dict(args)


def get_pretraining_bert_config(config):
  """`get_bert_config`, shrunk in debug mode as the original's model does."""
  bert_config = get_bert_config(config)
  if config.debug:
    bert_config = bert_config.replace(
      num_hidden_layers=3, hidden_size=144, intermediate_size=576, num_attention_heads=4
    )
  return bert_config


def get_generator_config(config, bert_config):
  """The generator's `BertConfig` (`run_pretraining.py:get_generator_config`, with
  Python's half-to-even `round`); heads and FFN follow its hidden size."""
  hidden_size = int(round(bert_config.hidden_size * config.generator_hidden_size))
  return bert_config.replace(
    hidden_size=hidden_size,
    num_hidden_layers=int(round(bert_config.num_hidden_layers * config.generator_layers)),
    intermediate_size=4 * hidden_size,
    num_attention_heads=max(1, hidden_size // 64),
  )
