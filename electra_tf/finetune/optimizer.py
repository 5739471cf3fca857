"""The original's fine-tuning optimizer (`model/optimization.py`, as
`run_finetuning.py` configures it): `AdamWeightDecay` (β = 0.9/0.999,
ε = 1e-6, global-norm clipping at 1) on the warm-up × linear-decay schedule,
with layer-wise learning-rate decay over the encoder's layers."""

from electra_tf.checkpoints import names as checkpoint_names
from electra_tf.optimization import layerwise
from electra_tf.optimization.adam_weight_decay import AdamWeightDecay
from electra_tf.optimization.schedule import ElectraLearningRateSchedule


def make_optimizer(
  official_name_map,
  num_hidden_layers,
  num_train_steps,
  *,
  learning_rate=1e-4,
  warmup_proportion=0.1,
  weight_decay_rate=0.01,
  layerwise_lr_decay=0.8,
  layerwise_lr_decay_variant="faithful",
):
  """Builds the optimizer for a model's variables.

  Args:
    official_name_map: `{official name: variable}` of the trained model (its
      names decide weight-decay exclusions and layer-wise multipliers).
    num_hidden_layers: encoder layers (the layer-wise decay depth).
    num_train_steps: decay horizon; warm-up is `warmup_proportion` of it.
    learning_rate: peak learning rate.
    warmup_proportion: warm-up fraction.
    weight_decay_rate: decoupled weight decay (not LayerNorm/bias).
    layerwise_lr_decay: per-layer factor; <= 0 disables it.
    layerwise_lr_decay_variant: `"faithful"` (the original's exponents) or
      `"fixed"`.

  Returns:
    an `AdamWeightDecay`.

  Example:
  >>> from electra_tf.finetune.classification.head import ClassificationHead
  >>> from electra_tf.finetune.model import FinetuningModel
  >>> model = FinetuningModel({"vocab_size": 50, "hidden_size": 8,
  ...     "num_hidden_layers": 2, "num_attention_heads": 2,
  ...     "intermediate_size": 16}, [ClassificationHead("rte", 2)])
  >>> model.build()
  >>> optimizer = make_optimizer(model.official_name_map(), 2, 100)
  >>> round(optimizer.learning_rate_multipliers["electra/encoder/layer_1/output/dense/kernel"], 4)
  0.64
  """
  names = list(official_name_map)
  multipliers = layerwise.layerwise_lr_multipliers(
    names,
    num_hidden_layers,
    layerwise_lr_decay,
    fixed=layerwise_lr_decay_variant == "fixed",
  )
  schedule = ElectraLearningRateSchedule(
    learning_rate, num_train_steps, warmup_proportion=warmup_proportion
  )
  return AdamWeightDecay(
    learning_rate=schedule,
    weight_decay_rate=weight_decay_rate,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    clip_norm=1.0,
    variable_names=checkpoint_names.keras_path_map(official_name_map),
    learning_rate_multipliers=multipliers,
  )


def make_optimizer_from_config(config, model, num_train_steps):
  """`make_optimizer` with a `FinetuningConfig`'s hparams for a `FinetuningModel`."""
  return make_optimizer(
    model.official_name_map(),
    model.bert_config["num_hidden_layers"],
    num_train_steps,
    learning_rate=config.learning_rate,
    warmup_proportion=config.warmup_proportion,
    weight_decay_rate=config.weight_decay_rate,
    layerwise_lr_decay=config.layerwise_lr_decay,
    layerwise_lr_decay_variant=config.layerwise_lr_decay_variant,
  )
