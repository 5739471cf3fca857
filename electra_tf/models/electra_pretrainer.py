"""`ElectraPretrainer`: the generator and discriminator of one pre-training run
with every generator option of the original (`run_pretraining.py:PretrainingModel`)."""

import keras
from keras import ops
import numpy as np
import tensorflow as tf

from electra_tf.configs import pretraining as pretraining_config_lib
from electra_tf.layers import layer_utils
from electra_tf.models import model_utils
from electra_tf.models import official_names
from electra_tf.models.electra_discriminator import ElectraDiscriminator
from electra_tf.models.electra_generator import ElectraGenerator
from electra_tf.optimization import factory as optimizer_factory
from electra_tf.pretraining import masking
from electra_tf.pretraining import metrics as pretraining_metrics
from electra_tf.pretraining import step as pretraining_step
from electra_tf.pretraining.objective import PretrainingObjective
from electra_tf.runtime import accumulation
from electra_tf.runtime import replicas
from electra_tf.text import vocab as vocab_lib


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraPretrainer(keras.Model):
  """Holds the shared embeddings, the generator and the discriminator.

  Which networks exist follows the original's branches:
  - generator mode `uniform`: `generator` is None (no weights);
  - ELECTRA/Electric with `untied_generator`: a small generator (or two
    towers) reading the shared `electra/embeddings` unless
    `untied_generator_embeddings`;
  - otherwise: a full-size generator; with a discriminator it IS the
    discriminator's transformer.
  `discriminator` is None in MLM-only mode.

  Args:
    bert_config: dict of the discriminator's (full-size) `BertConfig`.
    generator_config: dict of the small generator's `BertConfig`
      (`get_generator_config`); only used for an untied generator.
    vocab_size: V; must match `bert_config["vocab_size"]`.
    embedding_size: width E of the shared embedding tables; None means H.
    objective: the `PretrainingObjective` (or its `to_dict()`) the training
      step computes; None means the original's defaults.
    untied_generator, untied_generator_embeddings: generator weight sharing
      as in the original.
    fused_training_kernels: the transformers' training path runs XLA-fused
      elementwise kernels; False = plain TF ops (same math and masks).
    word_continuation: for `masking="whole_word"`: bool per vocab id, does
      the token continue the previous word (`masking.continuation_table`)?
      A list of the continuation ids is accepted too.
    **kwargs: standard `keras.Model` arguments.

  Example:
  >>> from electra_tf.configs.pretraining import PretrainingConfig
  >>> config = PretrainingConfig("m", "/tmp/none", vocab_size=100,
  ...     model_hparam_overrides={"hidden_size": 16, "num_hidden_layers": 1})
  >>> model = ElectraPretrainer.from_pretraining_config(config)
  >>> model.generator.encoder.hidden_size, model.objective.mask_prob
  (4, 0.15)
  """

  def __init__(
    self,
    bert_config,
    generator_config=None,
    vocab_size=None,
    embedding_size=None,
    objective=None,
    untied_generator=True,
    untied_generator_embeddings=False,
    fused_training_kernels=True,
    word_continuation=None,
    **kwargs,
  ):
    super().__init__(**kwargs)
    self.bert_config = model_utils.bert_config_dict(bert_config)
    if vocab_size is None:
      vocab_size = self.bert_config["vocab_size"]
    if int(vocab_size) != self.bert_config["vocab_size"]:
      raise ValueError(
        f"vocab_size={vocab_size} differs from bert_config vocab_size="
        f"{self.bert_config['vocab_size']}"
      )
    self.vocab_size = int(vocab_size)
    self.generator_config = (
      model_utils.bert_config_dict(generator_config) if generator_config is not None else None
    )
    self.embedding_size = int(embedding_size) if embedding_size is not None else None
    if objective is None:
      objective = PretrainingObjective()
    elif isinstance(objective, dict):
      objective = PretrainingObjective.from_dict(objective)
    elif not isinstance(objective, PretrainingObjective):
      raise ValueError(
        f"objective must be a PretrainingObjective or its dict, got {type(objective).__name__}"
      )
    self.objective = objective
    self.untied_generator = bool(untied_generator)
    self.untied_generator_embeddings = bool(untied_generator_embeddings)
    self.fused_training_kernels = bool(fused_training_kernels)
    self.word_continuation = _continuation_array(word_continuation, self.vocab_size)
    if objective.masking == "whole_word" and self.word_continuation is None:
      raise ValueError(
        "masking='whole_word' needs the vocab's word_continuation table (build the "
        "pretrainer with from_pretraining_config and an existing vocab_file)"
      )

    has_discriminator = objective.has_discriminator
    mode = objective.generator_mode
    small_generator = mode != "uniform" and has_discriminator and self.untied_generator
    if mode == "two_tower" and not small_generator:
      if objective.electric_objective:
        # The original crashes building this graph (see docs/differences.md).
        raise ValueError(
          "electric_objective=True needs untied_generator=True and uniform_generator=False"
        )
      raise ValueError(
        "two_tower_generator=True needs an untied, non-uniform generator with "
        "electra_objective or electric_objective"
      )
    if small_generator and self.generator_config is None:
      raise ValueError("an untied generator needs generator_config (get_generator_config)")

    c = self.bert_config
    width = self.embedding_size if self.embedding_size is not None else c["hidden_size"]
    # `electra/embeddings`, shared by every tower without untied embeddings.
    self.embeddings = model_utils.make_embeddings(c, width, self.dtype_policy, "embeddings")

    if has_discriminator:
      self.discriminator = ElectraDiscriminator(
        c,
        embedding_size=width,
        embeddings=self.embeddings,
        fused_training_kernels=self.fused_training_kernels,
        dtype=self.dtype_policy,
        name="discriminator",
      )
    else:
      self.discriminator = None

    if mode == "uniform":
      self.generator = None
    elif small_generator:
      untied = self.untied_generator_embeddings
      self.generator = ElectraGenerator(
        self.generator_config,
        embedding_size=None if untied else width,
        embeddings=None if untied else self.embeddings,
        two_tower=mode == "two_tower",
        fused_training_kernels=self.fused_training_kernels,
        dtype=self.dtype_policy,
        name="generator",
      )
    else:
      # Full-size generator: the discriminator's transformer when there is
      # one (untied_generator=False), else its own `electra` transformer.
      self.generator = ElectraGenerator(
        c,
        embedding_size=width,
        embeddings=self.embeddings,
        encoder=self.discriminator.encoder if self.discriminator is not None else None,
        fused_training_kernels=self.fused_training_kernels,
        dtype=self.dtype_policy,
        name="generator",
      )

  @classmethod
  def from_pretraining_config(cls, config, vocab=None, bert_config=None, **kwargs):
    """Builds the pretrainer from a `PretrainingConfig` (debug shrink
    included); special ids come from `config.vocab_file` when it exists.
    `vocab` (its `Vocab`) and `bert_config` (the discriminator's), if given, are not read again."""
    if not isinstance(config, pretraining_config_lib.PretrainingConfig):
      raise ValueError(
        f"ElectraPretrainer.from_pretraining_config takes a PretrainingConfig, got "
        f"{type(config).__name__} (a fine-tuning model is FinetuningModel or a task model)"
      )
    bert_config = bert_config or pretraining_config_lib.get_pretraining_bert_config(config)
    # Only an untied generator is small: its fractions are not checked otherwise.
    generator_config = None
    if config.untied_generator:
      generator_config = pretraining_config_lib.get_generator_config(config, bert_config).to_dict()
    if vocab is not None:
      vocab = vocab.tokens  # `Vocab.read` checked its special tokens
    elif config.vocab_file and tf.io.gfile.exists(config.vocab_file):
      vocab = vocab_lib.load_vocab(config.vocab_file)
      vocab_lib.check_special_tokens(vocab, config.vocab_file)
    word_continuation = None
    if config.masking == "whole_word":
      if vocab is None:
        raise ValueError(
          f"hparam masking='whole_word' needs the vocab file its words come from; "
          f"vocab_file={config.vocab_file!r} does not exist"
        )
      # SentencePiece marks word starts (`▁`), WordPiece continuations (`##`).
      sentencepiece = isinstance(vocab, vocab_lib.SentencePieceVocab)
      word_continuation = masking.continuation_table(
        vocab,
        masking.is_sentencepiece_continuation
        if sentencepiece
        else masking.is_wordpiece_continuation,
      )
      # A special piece (SentencePiece's unknown one has no `▁`) is a word of its own.
      for index in vocab_lib.special_ids_of(vocab, config.vocab_file).values():
        if index is not None and index < len(word_continuation):
          word_continuation[index] = False
    return cls(
      bert_config=bert_config.to_dict(),
      generator_config=generator_config,
      vocab_size=config.vocab_size,
      embedding_size=config.embedding_size,
      objective=PretrainingObjective.from_config(config, vocab),
      untied_generator=config.untied_generator,
      untied_generator_embeddings=config.untied_generator_embeddings,
      fused_training_kernels=config.fused_training_kernels,
      word_continuation=word_continuation,
      **kwargs,
    )

  def build(self, input_shape=None):
    # Every sublayer knows its shapes from its config: no forward pass needed.
    model_utils.build_once(self.embeddings)
    if self.discriminator is not None:
      model_utils.build_once(self.discriminator)
    if self.generator is not None:
      model_utils.build_once(self.generator)
    self.built = True

  def call(self, features, training=None):
    """A deterministic forward pass of every network: the generator at
    `masked_lm_positions` (default 0..N-1; all positions for two towers) and
    the discriminator. The training step is separate (see below)."""
    model_utils.check_inputs(features, "ElectraPretrainer")
    inputs = {k: features[k] for k in model_utils.INPUT_KEYS}
    outputs = {}
    if self.generator is not None:
      positions = features.get("masked_lm_positions")
      if positions is None and not self.generator.is_two_tower:
        shape = ops.shape(inputs["input_ids"])
        num = ops.minimum(self.objective.max_predictions_per_seq, shape[1])
        positions = ops.broadcast_to(ops.arange(num, dtype="int32")[None, :], (shape[0], num))
      outputs["generator"] = self.generator(
        inputs, masked_lm_positions=positions, training=training
      )
    if self.discriminator is not None:
      outputs["discriminator"] = self.discriminator(inputs, training=training)
    return outputs

  # Training: `compile` / `train_step` / `test_step` (`pretraining/step.py` does the work).

  def compile(
    self,
    optimizer=None,
    pretraining_config=None,
    seed=None,
    jit_compile=False,
    gradient_accumulation_steps=None,
    **kwargs,
  ):
    """Prepares `fit` / `evaluate` with the original's pre-training step.

    Args:
      optimizer: a Keras optimizer, or None, "adam" or "lamb": the original's
        `AdamWeightDecay` (None: the config's `optimizer` hparam) or `Lamb`
        with its schedule, from `pretraining_config` (or the original's
        defaults).
      pretraining_config: optional `PretrainingConfig` for the default
        optimizer and the seed.
      seed: seeds masking and sampling; None takes `pretraining_config.seed`,
        else a random one. The draws of a step depend only on (seed, step,
        example's row in the global batch).
      jit_compile: compile the step with XLA.
      gradient_accumulation_steps: k ≥ 1 micro-batches per replica batch,
        their gradients summed (the same update in 1/k of the activation
        memory). None takes `pretraining_config`'s, else 1.
      **kwargs: passed to `keras.Model.compile` (e.g. `steps_per_execution`).
    """
    if not self.built:
      self.build()
    if optimizer is None or isinstance(optimizer, str):
      names = official_names.official_name_map(self)
      if pretraining_config is not None:
        optimizer = optimizer_factory.pretraining_optimizer_from_config(
          pretraining_config, names, optimizer
        )
      else:
        optimizer = optimizer_factory.pretraining_optimizer(names, optimizer=optimizer or "adam")
    if gradient_accumulation_steps is None:
      gradient_accumulation_steps = getattr(pretraining_config, "gradient_accumulation_steps", 1)
    self.gradient_accumulation_steps = optimizer_factory.check_gradient_accumulation(
      optimizer, gradient_accumulation_steps
    )
    if seed is None and pretraining_config is not None:
      seed = pretraining_config.seed
    if seed is None:
      seed = int(np.random.randint(0, 2**31 - 1))
    self.step_seed = int(seed)
    # Outside Keras' attribute tracking (the model is built); `metrics` exposes them.
    train_metrics = {
      name: keras.metrics.Mean(name=name) for name in ("loss", "generator_loss", "disc_loss")
    }
    if self.discriminator is None:
      del train_metrics["disc_loss"]
    eval_metrics = pretraining_metrics.make_pretraining_metrics(
      self.discriminator is not None, self.objective.disc_weight
    )
    eval_metrics["loss"] = keras.metrics.Mean(name="loss")
    object.__setattr__(self, "_electra_train_metrics", train_metrics)
    object.__setattr__(self, "_electra_eval_metrics", eval_metrics)
    super().compile(optimizer=optimizer, jit_compile=jit_compile, **kwargs)

  @property
  def metrics(self):
    # Exactly the metrics the current step reports: Keras then logs their
    # cross-replica values (else the per-replica step results).
    if getattr(self, "_electra_evaluating", False):
      return list(getattr(self, "_electra_eval_metrics", {}).values())
    if hasattr(self, "_electra_train_metrics"):
      return list(self._electra_train_metrics.values())
    return super().metrics

  def evaluate(self, *args, **kwargs):
    previous = getattr(self, "_electra_evaluating", False)
    object.__setattr__(self, "_electra_evaluating", True)
    try:
      return super().evaluate(*args, **kwargs)
    finally:
      object.__setattr__(self, "_electra_evaluating", previous)

  @staticmethod
  def _step_features(data):
    if isinstance(data, (tuple, list)):
      data = data[0]
    if not isinstance(data, dict):
      raise ValueError(
        "ElectraPretrainer.fit/evaluate expects batches that are dicts with "
        f"input_ids, input_mask, segment_ids; got {type(data).__name__}"
      )
    return data

  def train_step(self, data):
    features = self._step_features(data)
    variables = self.trainable_variables
    if getattr(self, "gradient_accumulation_steps", 1) > 1:
      return self._accumulated_train_step(features, variables)
    with tf.GradientTape() as tape:
      outputs = pretraining_step.forward(
        self, features, training=True, seed=self.step_seed, step=self.optimizer.iterations
      )
      # The identity but for a LossScaleOptimizer (mixed_float16).
      scaled_loss = self.optimizer.scale_loss(outputs["loss"])
    grads = tape.gradient(scaled_loss, variables)
    # Dense gradients, as the original's (its token-type lookup is a one-hot
    # matmul): clipping's global norm is not that of a gather's duplicated slices.
    grads = [None if g is None else tf.convert_to_tensor(g) for g in grads]
    if isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
      grads = replicas.agree_on_finite_gradients(grads)
    self.optimizer.apply(grads, variables)
    return self._update_train_metrics(outputs)

  def _accumulated_train_step(self, features, variables):
    """`train_step` over `gradient_accumulation_steps` micro-batches with the
    global loss denominators, their gradients summed, one `apply`."""
    step = self.optimizer.iterations
    denominators = pretraining_step.loss_denominators(
      self, features, seed=self.step_seed, step=step
    )
    names = ["total_loss", "gen_loss"] + (["disc_loss"] if self.discriminator is not None else [])

    def micro_loss(micro_features):
      outputs = pretraining_step.forward(
        self,
        micro_features,
        training=True,
        seed=self.step_seed,
        step=step,
        denominators=denominators,
      )
      return outputs["loss"], outputs

    grads, shares = accumulation.accumulate_gradients(
      micro_loss,
      variables,
      features,
      self.gradient_accumulation_steps,
      self.optimizer,
      seed_states=layer_utils.seed_generator_states(self),
      value_names=names,
    )
    if isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
      grads = replicas.agree_on_finite_gradients(grads)
    self.optimizer.apply(grads, variables)
    totals = replicas.cross_replica_sum(tf.stack([shares[name] for name in names]))
    return self._update_train_metrics(dict(zip(names, tf.unstack(totals))))

  def _update_train_metrics(self, outputs):
    # This step's values (as the original's logs), not Keras' running means.
    m = self._electra_train_metrics
    for metric in m.values():
      metric.reset_state()
    m["loss"].update_state(outputs["total_loss"])
    m["generator_loss"].update_state(outputs["gen_loss"])
    if "disc_loss" in m:
      m["disc_loss"].update_state(outputs["disc_loss"])
    return {name: metric.result() for name, metric in m.items()}

  def test_step(self, data):
    features = self._step_features(data)
    metrics = self._electra_eval_metrics
    # Evaluation's masks: a stream apart from training's, keyed by the batch count.
    step = -1 - tf.cast(metrics["loss"].count, tf.int32)
    outputs = pretraining_step.forward(
      self, features, training=False, seed=self.step_seed, step=step
    )
    metrics["loss"].update_state(outputs["total_loss"])
    pretraining_metrics.update_pretraining_metrics(metrics, outputs)
    return {name: metric.result() for name, metric in metrics.items()}

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "bert_config": dict(self.bert_config),
        "generator_config": (
          dict(self.generator_config) if self.generator_config is not None else None
        ),
        "vocab_size": self.vocab_size,
        "embedding_size": self.embedding_size,
        "objective": self.objective.to_dict(),
        "untied_generator": self.untied_generator,
        "untied_generator_embeddings": self.untied_generator_embeddings,
        "fused_training_kernels": self.fused_training_kernels,
      }
    )
    if self.word_continuation is not None:
      config["word_continuation"] = np.flatnonzero(self.word_continuation).tolist()
    return config

  @classmethod
  def from_config(cls, config):
    return cls(**config)


def _continuation_array(word_continuation, vocab_size):
  """`word_continuation` as a bool array `[vocab_size]` (or None) from a
  table or a list of ids (what `get_config` stores)."""
  if word_continuation is None:
    return None
  values = np.asarray(word_continuation)
  if values.dtype != bool:
    table = np.zeros([vocab_size], bool)
    table[values.astype(np.int64)] = True
    return table
  if values.shape != (vocab_size,):
    raise ValueError(
      f"word_continuation has {values.shape} entries; expected one per vocab id ({vocab_size})"
    )
  return values


def built_pretrainer(config, vocab=None, bert_config=None):
  """`ElectraPretrainer.from_pretraining_config(config, vocab, bert_config)`,
  built: every variable exists."""
  pretrainer = ElectraPretrainer.from_pretraining_config(config, vocab, bert_config)
  pretrainer.build()
  return pretrainer
