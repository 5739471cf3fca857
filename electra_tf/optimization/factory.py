"""The optimizer factory of pre-training and fine-tuning (the original's
`model/optimization.py:create_optimizer`): `AdamWeightDecay` (β = 0.9/0.999,
ε = 1e-6, clipping at 1) on the original's schedule, exclusions decided on
the official names the caller passes, and layer-wise decay for fine-tuning.

Example:
  >>> import keras
  >>> kernel = keras.Variable([[1.0]], name="kernel")
  >>> optimizer = make_optimizer({"electra/encoder/layer_1/output/dense/kernel": kernel},
  ...     learning_rate=1e-4, num_train_steps=100, warmup_proportion=0.1,
  ...     num_hidden_layers=2, layerwise_lr_decay=0.8)
  >>> round(optimizer.learning_rate_multipliers["electra/encoder/layer_1/output/dense/kernel"], 4)
  0.64
"""

from electra_tf.optimization import layerwise
from electra_tf.optimization.adam_weight_decay import AdamWeightDecay
from electra_tf.optimization.lamb import Lamb
from electra_tf.optimization.schedule import ElectraLearningRateSchedule

# The `optimizer` hparam's values: the original's AdamWeightDecay, or LAMB
# for large global batches (same exclusions, clipping and schedule).
OPTIMIZERS = {"adam": AdamWeightDecay, "lamb": Lamb}


def check_optimizer_name(name):
  """Raises a one-line `ValueError` unless `name` is an `optimizer` hparam value."""
  if name not in OPTIMIZERS:
    raise ValueError(f"hparam optimizer={name!r}; expected one of {sorted(OPTIMIZERS)}")


def check_gradient_accumulation(optimizer, steps):
  """`steps` (compile's `gradient_accumulation_steps`) as an int ≥ 1; raises
  a one-line `ValueError` for anything else, and for an optimizer built with
  Keras' own `gradient_accumulation_steps` > 1."""
  if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
    raise ValueError(f"gradient_accumulation_steps={steps!r}; expected an integer >= 1")
  for opt in (optimizer, getattr(optimizer, "inner_optimizer", None)):
    keras_steps = getattr(opt, "gradient_accumulation_steps", None)
    if keras_steps and keras_steps > 1:
      raise ValueError(
        f"{type(opt).__name__}(gradient_accumulation_steps={keras_steps}): Keras' optimizer "
        "keyword is not supported; pass gradient_accumulation_steps to compile (or the hparam) "
        "instead, which sums the micro-batches' gradients into one step"
      )
  return steps


def keras_path_map(official_name_map):
  """`{variable.path: official name}` (what `AdamWeightDecay` matches on)."""
  return {variable.path: name for name, variable in official_name_map.items()}


def make_optimizer(
  official_name_map=None,
  *,
  learning_rate,
  num_train_steps,
  num_warmup_steps=0,
  warmup_proportion=0.0,
  lr_decay_power=1.0,
  weight_decay_rate=0.01,
  num_hidden_layers=None,
  layerwise_lr_decay=0.0,
  layerwise_lr_decay_variant="faithful",
  optimizer="adam",
):
  """`AdamWeightDecay` (or `Lamb`) with the original's schedule.

  Args:
    official_name_map: `{official name: variable}` of the trained model; its
      names decide weight-decay exclusions and layer-wise multipliers. None
      decides exclusions on the Keras paths.
    learning_rate: peak learning rate.
    num_train_steps: decay horizon.
    num_warmup_steps, warmup_proportion: warm-up length, the larger of
      the two (pre-training gives steps, fine-tuning a proportion).
    lr_decay_power: polynomial decay power.
    weight_decay_rate: decoupled weight decay (not LayerNorm/bias).
    num_hidden_layers: encoder depth for layer-wise decay (fine-tuning);
      None gives no multipliers (pre-training).
    layerwise_lr_decay: per-layer factor; <= 0 makes every multiplier 1.
    layerwise_lr_decay_variant: `"faithful"` (the original's exponents) or
      `"fixed"`.
    optimizer: `"adam"` (the original's `AdamWeightDecay`) or `"lamb"`.
  """
  check_optimizer_name(optimizer)
  multipliers = None
  if num_hidden_layers is not None:  # fine-tuning: every variable gets a multiplier
    multipliers = layerwise.layerwise_lr_multipliers(
      list(official_name_map),
      num_hidden_layers,
      layerwise_lr_decay,
      fixed=layerwise_lr_decay_variant == "fixed",
    )
  schedule = ElectraLearningRateSchedule(
    learning_rate,
    num_train_steps,
    warmup_steps=num_warmup_steps,
    warmup_proportion=warmup_proportion,
    lr_decay_power=lr_decay_power,
  )
  return OPTIMIZERS[optimizer](
    learning_rate=schedule,
    weight_decay_rate=weight_decay_rate,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    clip_norm=1.0,
    variable_names=None if official_name_map is None else keras_path_map(official_name_map),
    learning_rate_multipliers=multipliers,
  )


# The original's pre-training and fine-tuning hparams, the defaults of the two
# settings below; their `*_from_config` take the same keys from a config.
PRETRAINING_DEFAULTS = {
  "learning_rate": 5e-4,
  "num_train_steps": 1000000,
  "num_warmup_steps": 10000,
  "lr_decay_power": 1.0,
  "weight_decay_rate": 0.01,
  "optimizer": "adam",
}
FINETUNING_DEFAULTS = {
  "learning_rate": 1e-4,
  "warmup_proportion": 0.1,
  "weight_decay_rate": 0.01,
  "layerwise_lr_decay": 0.8,
  "layerwise_lr_decay_variant": "faithful",
  "optimizer": "adam",
}


def pretraining_optimizer(official_name_map=None, **hparams):
  """The original's pre-training optimizer; `hparams` (keys of
  `PRETRAINING_DEFAULTS`) override its defaults."""
  return make_optimizer(official_name_map, **{**PRETRAINING_DEFAULTS, **hparams})


def pretraining_optimizer_from_config(config, official_name_map=None, optimizer=None):
  """`pretraining_optimizer` with a `PretrainingConfig`'s hparams (`optimizer`,
  if given, instead of the config's)."""
  hparams = {key: getattr(config, key) for key in PRETRAINING_DEFAULTS}
  if optimizer is not None:
    hparams["optimizer"] = optimizer
  return pretraining_optimizer(official_name_map, **hparams)


def finetuning_optimizer(official_name_map, num_hidden_layers, num_train_steps, **hparams):
  """The original's fine-tuning optimizer (layer-wise decay over the
  encoder's `num_hidden_layers`); `hparams` (keys of `FINETUNING_DEFAULTS`)
  override its defaults.

  Example:
    >>> import keras
    >>> bias = keras.Variable([0.0], name="bias")
    >>> optimizer = finetuning_optimizer({"electra/encoder/layer_1/output/dense/bias": bias}, 2, 100)
    >>> round(optimizer.learning_rate_multipliers["electra/encoder/layer_1/output/dense/bias"], 4)
    0.64
  """
  return make_optimizer(
    official_name_map,
    num_train_steps=num_train_steps,
    num_hidden_layers=num_hidden_layers,
    **{**FINETUNING_DEFAULTS, **hparams},
  )


def finetuning_optimizer_from_config(config, model, num_train_steps):
  """`finetuning_optimizer` with a `FinetuningConfig`'s hparams for a
  `FinetuningModel` (its official names and depth)."""
  return finetuning_optimizer(
    model.official_name_map(),
    model.bert_config["num_hidden_layers"],
    num_train_steps,
    **{key: getattr(config, key) for key in FINETUNING_DEFAULTS},
  )
