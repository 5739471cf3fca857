"""`ElectraClassifier`: a keras-hub style text classifier on raw strings."""

import os
import shutil
import tempfile
import types

import keras
import tensorflow as tf

from electra_tf.checkpoints import finetuned as checkpoint_io
from electra_tf.configs.pretraining import get_bert_config
from electra_tf.finetune import optimizer as finetuning_optimizer
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.model import FinetuningModel
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraClassifier(keras.Model):
  """ELECTRA encoder + the original's classification head, with an in-model
  preprocessor: `fit`, `predict` and `evaluate` take raw strings (one
  segment) or `(text_a, text_b)` pairs.

  The network is a one-head `FinetuningModel` (`finetuning_model`), so its
  variables carry the original's names (`electra/...`,
  `task_specific/<task_name>/dense/...`), it loads every checkpoint
  `run_finetuning` loads, and `export` writes the same SavedModel as
  `python -m electra_tf.export_saved_model --model task`.

  Args:
    bert_config: dict of the encoder's `BertConfig` fields.
    num_classes: number of labels.
    preprocessor: an `ElectraTextPreprocessor` (or its config), or None to
      take packed `input_ids/input_mask/segment_ids` dicts.
    embedding_size: embedding width E (None: the hidden size).
    task_name: the head's name (`task_specific/<task_name>/...`).
    dropout_rate: dropout before the head (the original's 0.1).
    **kwargs: standard `keras.Model` arguments.

  Returns (call):
    logits `[B, num_classes]` (float32).

  Usage (needs a checkpoint and a vocab, so not run as a doctest; the README's
  complete example is run by a test):
    classifier = ElectraClassifier.from_checkpoint(
        "models/electra_small", vocab_file="models/electra_small/vocab.txt",
        num_classes=3, model_size="small")
    classifier.compile(num_train_steps=1000)
    classifier.fit(tf.data.Dataset.from_tensor_slices(((premises, hypotheses), labels)).batch(32))
    classifier.predict((["The chef cooked."], ["Someone cooked."]))
  """

  def __init__(
    self,
    bert_config,
    num_classes,
    preprocessor=None,
    embedding_size=None,
    task_name="classifier",
    dropout_rate=0.1,
    **kwargs,
  ):
    super().__init__(**kwargs)
    if isinstance(preprocessor, dict):
      preprocessor = keras.saving.deserialize_keras_object(preprocessor)
    self.preprocessor = preprocessor
    self.num_classes = int(num_classes)
    self.task_name = task_name
    self.dropout_rate = float(dropout_rate)
    self.embedding_size = embedding_size
    head = ClassificationHead(
      task_name, self.num_classes, dropout_rate=dropout_rate, name=f"task_specific_{task_name}"
    )
    self.finetuning_model = FinetuningModel(
      dict(bert_config), [head], embedding_size=embedding_size, name="finetuning_model"
    )
    self.bert_config = self.finetuning_model.bert_config

  @classmethod
  def from_checkpoint(
    cls,
    path,
    vocab_file,
    num_classes,
    model_size="small",
    embedding_size=None,
    model_hparam_overrides=None,
    max_seq_length=128,
    do_lower_case=True,
    **kwargs,
  ):
    """A classifier initialised from `path`: an original/released
    checkpoint, an electra_tf pre-training or fine-tuning model dir, or a
    `.keras` model. The encoder's size is given as in the hparams
    (`model_size`, `embedding_size` — `small` defaults to 128 —,
    `model_hparam_overrides`); the vocab size comes from `vocab_file`."""
    preprocessor = ElectraTextPreprocessor.from_vocab_file(
      vocab_file, max_seq_length=max_seq_length, do_lower_case=do_lower_case
    )
    size = types.SimpleNamespace(
      model_size=model_size,
      vocab_size=preprocessor.tokenizer.vocab_size,
      model_hparam_overrides=dict(model_hparam_overrides or {}),
    )
    if embedding_size is None and model_size == "small":
      embedding_size = 128
    classifier = cls(
      get_bert_config(size).to_dict(),
      num_classes,
      preprocessor=preprocessor,
      embedding_size=embedding_size,
      **kwargs,
    )
    classifier.build()
    checkpoint_io.load_pretrained(classifier.finetuning_model, path)
    return classifier

  def build(self, input_shape=None):
    self.finetuning_model.build()
    self.built = True

  def official_name_map(self):
    return self.finetuning_model.official_name_map()

  def call(self, inputs, training=None):
    features = self.preprocessor(inputs) if self.preprocessor is not None else dict(inputs)
    batch = tf.shape(features["input_ids"])[0]
    zeros = tf.zeros([batch], tf.int32)
    features.update(
      {"task_id": zeros, f"{self.task_name}_eid": zeros, f"{self.task_name}_label_ids": zeros}
    )
    outputs = self.finetuning_model(features, training=training)[self.task_name]
    return tf.cast(outputs["logits"], tf.float32)

  def predict(self, x, batch_size=None, **kwargs):
    """Logits for `x`: strings, a `(text_a, text_b)` pair of lists/tensors,
    packed features, or a `tf.data.Dataset` (whose elements Keras reads as
    `(x, y)`: pairs must come as `((text_a, text_b),)`)."""
    if not isinstance(x, tf.data.Dataset):
      if isinstance(x, (list, tuple)) and len(x) == 2 and not isinstance(x[0], str):
        x = (tuple(x),)  # one input made of two segments, not (x, y)
      x = tf.data.Dataset.from_tensor_slices(x).batch(batch_size or 32)
      batch_size = None
    return super().predict(x, batch_size=batch_size, **kwargs)

  def compile(
    self,
    optimizer="auto",
    loss="auto",
    metrics="auto",
    num_train_steps=None,
    learning_rate=1e-4,
    warmup_proportion=0.1,
    weight_decay_rate=0.01,
    layerwise_lr_decay=0.8,
    **kwargs,
  ):
    """Defaults: the original's optimizer (`AdamWeightDecay`, warm-up ×
    linear decay over `num_train_steps`, layer-wise decay), its loss (the
    cross-entropy **summed** over the batch) and accuracy.

    Args:
      optimizer: "auto" or a Keras optimizer.
      loss: "auto" or a Keras loss on (labels, logits).
      metrics: "auto" (sparse categorical accuracy) or a list.
      num_train_steps: the schedule's horizon; needed with "auto".
      learning_rate, warmup_proportion, weight_decay_rate,
        layerwise_lr_decay: the "auto" optimizer's hparams.
      **kwargs: passed to `keras.Model.compile`.
    """
    if not self.built:
      self.build()
    if optimizer == "auto":
      if not num_train_steps:
        raise ValueError(
          "ElectraClassifier.compile: the original's schedule decays over num_train_steps; "
          "pass num_train_steps=<batches per epoch × epochs> (or your own optimizer)"
        )
      optimizer = finetuning_optimizer.make_optimizer(
        self.official_name_map(),
        self.bert_config["num_hidden_layers"],
        num_train_steps,
        learning_rate=learning_rate,
        warmup_proportion=warmup_proportion,
        weight_decay_rate=weight_decay_rate,
        layerwise_lr_decay=layerwise_lr_decay,
      )
    if loss == "auto":
      loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")
    if metrics == "auto":
      metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

  def export(self, export_dir, version=None, overwrite=False):
    """Writes the TF Serving SavedModel (`serving_default` on text, `serve_ids`,
    `serve_examples` signatures) that `export_saved_model --model task`
    writes; returns the version directory."""
    from electra_tf.serving import export as export_lib  # pylint: disable=g-import-not-at-top
    from electra_tf.serving import modules as serving_modules  # pylint: disable=g-import-not-at-top

    if self.preprocessor is None:
      raise ValueError("export needs the classifier's preprocessor (its tokenizer and length)")
    tokenizer = self.preprocessor.tokenizer
    asset_dir = tempfile.mkdtemp(prefix="electra_vocab_")
    try:
      asset = os.path.join(asset_dir, "vocab.txt")
      if tokenizer.vocab_file:
        shutil.copyfile(tokenizer.vocab_file, asset)
      else:
        with open(asset, "w", encoding="utf-8") as f:
          f.write("".join(t + "\n" for t in tokenizer.vocabulary))
      module = serving_modules.TaskHeadServingModule(
        self.finetuning_model, self.task_name, tokenizer, self.preprocessor.max_seq_length, asset
      )
      return export_lib.save_module(module, export_dir, version, overwrite)
    finally:
      shutil.rmtree(asset_dir, ignore_errors=True)

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "bert_config": dict(self.bert_config),
        "num_classes": self.num_classes,
        "preprocessor": (
          None
          if self.preprocessor is None
          else keras.saving.serialize_keras_object(self.preprocessor)
        ),
        "embedding_size": self.embedding_size,
        "task_name": self.task_name,
        "dropout_rate": self.dropout_rate,
      }
    )
    return config
