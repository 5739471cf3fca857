"""The fine-tuning model: one shared ELECTRA encoder and one head per task
(`run_finetuning.py:FinetuningModel`)."""

import keras
from keras import ops
import tensorflow as tf

from electra_tf.configs import pretraining as pretraining_config
from electra_tf.layers import layer_utils
from electra_tf.models import official_names
from electra_tf.models.electra_backbone import ElectraBackbone
from electra_tf.optimization import factory as optimizer_factory
from electra_tf.runtime import accumulation
from electra_tf.runtime import replicas


@keras.saving.register_keras_serializable(package="electra_tf")
class FinetuningModel(keras.Model):
  """A shared `ElectraBackbone` (scope `electra`; the attribute `encoder`
  keeps its name, which training checkpoints record) plus task heads.

  The loss is the original's: each example's loss from the head of its own
  task (`task_id`), **summed** over the batch; padding records
  (`task_id == len(heads)`) contribute nothing.

  Args:
    bert_config: dict (or `BertConfig`) of the encoder.
    heads: list of head layers (`ClassificationHead`, `TaggingHead`,
      `QAHead`), in `task_names` order; each has `task_name`.
    embedding_size: embedding width E (None means H).
    **kwargs: standard `keras.Model` arguments.

  Call args:
    features: dict of the batch's features (`input_ids`, `input_mask`,
      `segment_ids`, `task_id` and the tasks' features).
    training: enables dropout (and QA teacher forcing).

  Returns:
    dict with `"loss"` (scalar, summed over the batch) and one dict of
    outputs per task name (each with a per-example `"loss"`).

  Example:
  >>> from electra_tf.finetune.classification.head import ClassificationHead
  >>> head = ClassificationHead("rte", 2, name="task_specific_rte")
  >>> model = FinetuningModel({"vocab_size": 100, "hidden_size": 16,
  ...     "num_hidden_layers": 2, "num_attention_heads": 2,
  ...     "intermediate_size": 64}, [head], embedding_size=8)
  >>> sorted(model.official_name_map())[-2:]
  ['task_specific/rte/dense/bias', 'task_specific/rte/dense/kernel']
  """

  def __init__(self, bert_config, heads, embedding_size=None, **kwargs):
    super().__init__(**kwargs)
    heads = [keras.saving.deserialize_keras_object(h) if isinstance(h, dict) else h for h in heads]
    self.encoder = ElectraBackbone(bert_config, embedding_size=embedding_size, name="electra")
    self.bert_config = self.encoder.bert_config
    self.embedding_size = embedding_size
    self.heads = heads
    self.task_names = [head.task_name for head in heads]

  @classmethod
  def from_finetuning_config(cls, config, heads, bert_config=None, **kwargs):
    """A built model with `heads` and the encoder that `config` (a
    `FinetuningConfig` or a `PretrainingConfig`) gives, as `run_finetuning`
    builds it; `bert_config`, that encoder's `BertConfig` if already derived."""
    bert_config = bert_config or pretraining_config.get_pretraining_bert_config(config)
    kwargs.setdefault("name", "finetuning_model")
    model = cls(bert_config.to_dict(), heads, embedding_size=config.embedding_size, **kwargs)
    model.build()
    return model

  def _trackable_children(self, save_type="checkpoint", **kwargs):
    children = super()._trackable_children(save_type, **kwargs)
    return layer_utils.add_list_children(children, save_type, heads=self.heads)

  def build(self, input_shape=None):
    self.encoder.build()
    hidden = self.bert_config["hidden_size"]
    for head in self.heads:
      # Heads deserialised from a `.keras` config arrive built; building again adds variables.
      if not head.built:
        head.build((None, None, hidden))
    self.built = True

  def call(self, features, training=None):
    inputs = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}
    sequence_output = self.encoder(inputs, training=training)["sequence_output"]
    outputs = {}
    per_task_losses = []
    for head in self.heads:
      task_outputs = head(sequence_output, features, training=training)
      outputs[head.task_name] = task_outputs
      per_task_losses.append(ops.cast(task_outputs["loss"], "float32"))
    task_one_hot = ops.one_hot(
      ops.cast(features["task_id"], "int32"), len(self.heads), dtype="float32"
    )
    outputs["loss"] = ops.sum(ops.stack(per_task_losses, axis=-1) * task_one_hot)
    return outputs

  def compile(self, optimizer="adam", jit_compile=False, gradient_accumulation_steps=1, **kwargs):
    """Prepares `fit` with the custom step below (the original's summed multi-task loss).

    Args:
      optimizer: a Keras optimizer.
      jit_compile: compile the step with XLA.
      gradient_accumulation_steps: k ≥ 1: each step cuts every replica's
        batch into k micro-batches and applies the sum of their gradients
        once (the loss is a sum over examples: the same update).
      **kwargs: passed to `keras.Model.compile` (e.g. `steps_per_execution`).
    """
    self.gradient_accumulation_steps = optimizer_factory.check_gradient_accumulation(
      optimizer, gradient_accumulation_steps
    )
    # Kept out of Keras' attribute tracking; `metrics` exposes it for the logs.
    object.__setattr__(self, "_step_loss", keras.metrics.Mean(name="loss"))
    super().compile(optimizer=optimizer, jit_compile=jit_compile, **kwargs)

  @property
  def metrics(self):
    step_loss = getattr(self, "_step_loss", None)
    return [step_loss] if step_loss is not None else super().metrics

  def train_step(self, data):
    """One step: the loss is summed over this replica's examples, so the
    gradients the optimizer sums over replicas equal one device's for the
    same global batch. Logs `loss`: this step's global summed loss."""
    features = data[0] if isinstance(data, (tuple, list)) else data
    variables = self.trainable_variables
    steps = getattr(self, "gradient_accumulation_steps", 1)
    if steps > 1:
      # The micro-batches' summed losses and gradients are the batch's (runtime.accumulation).
      def micro_loss(micro_features):
        micro_loss = self(micro_features, training=True)["loss"]
        return micro_loss, {"loss": micro_loss}

      grads, values = accumulation.accumulate_gradients(
        micro_loss,
        variables,
        features,
        steps,
        self.optimizer,
        seed_states=layer_utils.seed_generator_states(self),
        value_names=["loss"],
      )
      loss = values["loss"]
    else:
      with tf.GradientTape() as tape:
        loss = self(features, training=True)["loss"]
        # LossScaleOptimizer (mixed_float16) scales here and unscales in `apply`.
        scaled_loss = self.optimizer.scale_loss(loss)
      grads = tape.gradient(scaled_loss, variables)
    # Dense gradients (as the original's Adam); a step non-finite anywhere is skipped everywhere.
    grads = replicas.agree_on_finite_gradients(grads)
    self.optimizer.apply(grads, variables)
    self._step_loss.reset_state()
    self._step_loss.update_state(replicas.cross_replica_sum(loss))
    return {"loss": self._step_loss.result()}

  def official_name_map(self):
    """`{official TF1 name: variable}`: the encoder's `electra/...` and the heads'
    `task_specific/<task>/<dense name>/{kernel,bias}`, as the original's checkpoints."""
    if not self.built:
      self.build()
    name_map = official_names.discriminator_name_map(self.encoder, include_head=False)
    for head in self.heads:
      name_map.update(official_names.task_head_names(head.task_name, head.dense_layers()))
    return name_map

  def get_config(self):
    config = super().get_config()
    config.update(
      bert_config=dict(self.bert_config),
      heads=[keras.saving.serialize_keras_object(h) for h in self.heads],
      embedding_size=self.embedding_size,
    )
    return config
