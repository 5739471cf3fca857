"""The base of the keras-hub style task models (`ElectraClassifier`,
`ElectraQuestionAnswerer`, `ElectraTokenTagger`): an in-model preprocessor,
a one-head `FinetuningModel`, checkpoint loading, the original's optimizer as
the `compile` default, and the SavedModel export."""

import dataclasses
import inspect
import os
import sys
import types

import keras
import numpy as np
import tensorflow as tf

from electra_tf.checkpoints import model_dir as model_dir_lib
from electra_tf.configs import finetuning as finetuning_config
from electra_tf.configs.pretraining import check_number
from electra_tf.configs.pretraining import default_embedding_size
from electra_tf.configs.pretraining import get_bert_config
from electra_tf.finetune import task_builder
from electra_tf.finetune.model import FinetuningModel
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.finetune.text_preprocessor import as_strings
from electra_tf.finetune.text_preprocessor import question_budget
from electra_tf.interop import keras_hub
from electra_tf.layers import layer_utils
from electra_tf.optimization import factory as optimizer_factory
from electra_tf.runtime import accumulation
from electra_tf.runtime import replicas
from electra_tf.serving import export as export_lib
from electra_tf.serving import portable
from electra_tf.sources import any_format
from electra_tf.sources import formats
from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.text.tokenizer import ElectraTokenizer
from electra_tf.text.vocab import SENTENCEPIECE
from electra_tf.text.vocab import Vocab
from electra_tf.text.vocab import vocab_kind
from electra_tf.utils import file_io
from electra_tf.utils import keras_compat

# Keras' `export` formats that `serving.portable` writes.
EXPORT_FORMATS = ("litert", "onnx")


def check_prediction_input(x, model_name):
  """One clear ValueError for what `predict` cannot take: a lone string (a
  batch of its characters otherwise), an empty batch, texts in an array of
  more than one dimension (flattened into single texts otherwise), or pairs
  whose halves differ in length.

  Example:
  >>> check_prediction_input(["a text"], "ElectraClassifier")
  >>> check_prediction_input("a text", "ElectraClassifier")
  Traceback (most recent call last):
  ...
  ValueError: ElectraClassifier.predict takes a batch of texts; got one string: wrap it in a list, predict([text])
  """
  if x is None:
    raise ValueError(f"{model_name}.predict takes a batch of texts; got None")
  if isinstance(x, (str, bytes)):
    raise ValueError(
      f"{model_name}.predict takes a batch of texts; got one string: wrap it in a list, "
      "predict([text])"
    )
  if isinstance(x, dict) and "input_ids" not in x:
    raise ValueError(
      f"{model_name}.predict takes a list of texts or a (text_a, text_b) tuple of lists; a dict "
      f"is read as packed features (input_ids, input_mask, segment_ids), got keys {sorted(x)}"
    )
  parts = x if isinstance(x, tuple) and len(x) == 2 else (x,)
  if len(parts) == 2 and any(isinstance(part, (str, bytes)) for part in parts):
    raise ValueError(
      f"{model_name}.predict reads a tuple of two as (text_a, text_b) batches; got single "
      "strings: give texts as a list, and one pair as ([text_a], [text_b])"
    )
  for part in parts:
    shape = getattr(part, "shape", None)
    is_text = getattr(getattr(part, "dtype", None), "kind", None) in ("U", "S", "O") or (
      isinstance(part, tf.Tensor) and part.dtype == tf.string
    )
    if is_text and shape is not None and len(shape) != 1:
      raise ValueError(
        f"{model_name}.predict takes a 1-D batch of texts (or a (text_a, text_b) tuple of "
        f"two); got texts of shape {tuple(shape)}"
      )
    if isinstance(part, (list, tuple)) and len(part) == 0:
      raise ValueError(f"{model_name}.predict got an empty batch: expected at least one text")
    if isinstance(part, (list, tuple)) and not isinstance(x, dict):
      not_text = [item for item in part if not isinstance(item, (str, bytes))]
      if not_text:
        raise ValueError(
          f"{model_name}.predict takes texts (str); got a {type(not_text[0]).__name__} in the "
          f"batch ({not_text[0]!r}); packed ids go in a dict with input_ids, input_mask and "
          "segment_ids"
        )
  sizes = [len(part) for part in parts if isinstance(part, (list, tuple))]
  if len(parts) == 2 and len(sizes) == 2 and sizes[0] != sizes[1]:
    raise ValueError(
      f"{model_name}.predict got {sizes[0]} first texts (text_a) and {sizes[1]} second texts "
      "(text_b); expected one text_b per text_a"
    )


def _is_text_batch(part):
  if isinstance(part, np.ndarray):
    return part.dtype.kind in ("U", "S") or (part.dtype == object and part.size > 0)
  return isinstance(part, list) and bool(part) and isinstance(part[0], (str, bytes))


def _texts_given(x):
  """Whether `x` is a batch of texts, or a (text_a, text_b) pair of batches."""
  parts = x if isinstance(x, tuple) and len(x) == 2 else (x,)
  return all(_is_text_batch(part) for part in parts)


def _text_batches(x, y, batch_size, shuffle):
  """`(x, y)` texts and labels as a batched `tf.data.Dataset` (pairs as
  `((text_a, text_b), y)`)."""
  if batch_size is not None:
    check_count(batch_size, "batch_size")
  parts = x if isinstance(x, tuple) else (x,)
  texts = tuple(as_strings(part) for part in parts)
  inputs = texts if len(texts) == 2 else texts[0]
  # Otherwise TensorFlow's "Dimensions 2 and 1 are not compatible", naming neither.
  for labels in y.values() if isinstance(y, dict) else y if isinstance(y, tuple) else (y,):
    if labels is not None and len(labels) != len(texts[0]):
      raise ValueError(
        f"{len(texts[0])} texts but {len(labels)} labels (y); expected one label per text"
      )
    _check_numeric_labels(labels)
  data = tf.data.Dataset.from_tensor_slices((inputs, y) if y is not None else (inputs,))
  if shuffle:
    data = data.shuffle(len(texts[0]), reshuffle_each_iteration=True)
  return data.batch(batch_size or 32)


def _check_numeric_labels(labels):
  """String labels ("1", "pos") fail inside the training step with
  TensorFlow's "Cast string to int is not supported"; named here."""
  if tf.is_tensor(labels):
    first = "a string tensor" if labels.dtype == tf.string else None
  else:
    first = labels
    while isinstance(first, (list, tuple, np.ndarray)) and len(first):
      first = first[0]
    first = repr(first) if isinstance(first, (str, bytes)) else None
  if first:
    raise ValueError(
      f"labels (y) are strings ({first}); expected numbers: class ids 0 … num_classes - 1 "
      "(map each label name to its id), regression targets or tag ids"
    )


def _check_batched(data, where):
  """Refuses an unbatched dataset (Keras reads each element as a batch and
  fails in the loss, naming neither), from its `element_spec`."""
  if not isinstance(data, tf.data.Dataset):
    return
  spec = data.element_spec
  parts = tuple(spec) if isinstance(spec, (tuple, list)) else (spec,)
  inputs = tf.nest.flatten(parts[0])
  labels = tf.nest.flatten(parts[1]) if len(parts) > 1 and parts[1] is not None else []
  if any(label.shape.rank == 0 for label in labels):
    what = "the labels are scalars"
  elif any(part.dtype == tf.string and part.shape.rank == 0 for part in inputs):
    what = "the texts are single strings, not batches"
  else:
    return
  raise ValueError(f"{where}: {what} (an unbatched dataset?); batch it, e.g. dataset.batch(32)")


def check_count(value, what):
  """A one-line ValueError unless `value` is a positive integer (not a bool);
  `what` names it, e.g. "ElectraClassifier num_classes"."""
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
    raise ValueError(f"{what}={value!r}; expected a positive integer")
  return int(value)


class ElectraTaskModel(keras.Model):
  """Shared machinery; subclasses set their attributes, call this
  constructor, and implement `make_head`, `task_outputs` and `default_loss`
  (and may override the other `default_*` and `prepare_labels`).

  Args:
    bert_config: dict of the encoder's `BertConfig` fields.
    preprocessor: an `ElectraTextPreprocessor` (or its config), or None to
      take packed `input_ids/input_mask/segment_ids` dicts.
    embedding_size: embedding width E (None: the hidden size).
    task_name: the head's name (`task_specific/<task_name>/...`).
    **kwargs: standard `keras.Model` arguments.
  """

  # The preprocessor `from_checkpoint` builds, and the arguments that go to it.
  packing = "pair"
  default_max_seq_length = 128
  preprocessor_args = ()

  def __init__(
    self, bert_config, preprocessor=None, embedding_size=None, task_name="task", **kwargs
  ):
    super().__init__(**kwargs)
    if isinstance(preprocessor, dict):
      preprocessor = keras.saving.deserialize_keras_object(preprocessor)
    self.preprocessor = preprocessor
    self.task_name = task_name
    self.embedding_size = embedding_size
    self.finetuning_model = FinetuningModel(
      dict(bert_config), [self.make_head()], embedding_size=embedding_size, name="finetuning_model"
    )
    self.bert_config = self.finetuning_model.bert_config

  def make_head(self):
    """The task head (named `task_specific_<task_name>`)."""
    raise NotImplementedError

  @property
  def head(self):
    return self.finetuning_model.heads[0]

  @classmethod
  def from_checkpoint(
    cls,
    path,
    vocab_file=None,
    model_size=None,
    embedding_size=None,
    model_hparam_overrides=None,
    max_seq_length=None,
    do_lower_case=None,
    strip_accents=None,
    **kwargs,
  ):
    """A model initialised from `path`: an original/released checkpoint,
    an electra_tf pre-training or fine-tuning model dir, a `.keras` model or
    a directory electra_tf published (Hugging Face, keras-hub).

    A recorded run (`config.json`) gives the encoder's size, the vocab,
    `do_lower_case` and `strip_accents`; size arguments given as well must
    build the same encoder (`ModelDirMismatch` otherwise). Elsewhere the size
    is given as in the hparams (`model_size`, default `small`,
    `embedding_size`, `model_hparam_overrides`), `vocab_file` is required and
    the casing flags default to true (a SentencePiece model's: what its
    settings file records). `max_seq_length` defaults to the length a
    fine-tuned model was trained at, else `default_max_seq_length`. From a
    fine-tuning trial without `task_name`, its one head of this model's kind
    is loaded (else a warning says the head is new). `kwargs` named in
    `preprocessor_args` go to the preprocessor, the rest to the constructor."""
    for name, value in (("do_lower_case", do_lower_case), ("strip_accents", strip_accents)):
      if value is not None and not isinstance(value, bool):
        # "no" would be true: lower-casing stays on.
        raise ValueError(
          f"{cls.__name__}.from_checkpoint: {name}={value!r}; expected True, False or None "
          "(None: what the model was trained with)"
        )
    if not (tf.io.gfile.exists(path) or tf.io.gfile.exists(f"{path}.index")):
      raise ValueError(
        f"{cls.__name__}.from_checkpoint: {path!r} {file_io.not_there(path)} (expected a model dir, a "
        "checkpoint prefix, a .keras file or a published directory)"
      )
    source = any_format.open_source(path)
    # A generator cannot start a task model: said before its vocab is looked for.
    source.check_starts_finetuning()
    run_config = source.recorded_run()
    model_dir_lib.warn_if_unfinished(path, "loading", run_config)
    if run_config is not None and run_config.get("kind") == model_dir_lib.KIND_FINETUNING:
      cls._adopt_trial_head(path, run_config, kwargs)
    run_vocab = (run_config or {}).get("vocab") or {}
    vocab_file = vocab_file or run_vocab.get("file")
    kind = (run_config or {}).get("kind")
    if kind != model_dir_lib.KIND_PRETRAINING and (run_config or source.format == formats.KERAS):
      recorded = source.recorded_inputs(vocab_given=bool(vocab_file))
      if not vocab_file and recorded.vocab_file:  # a task .keras's own preprocessor's
        vocab_file = recorded.vocab_file
        run_vocab = dataclasses.asdict(recorded)  # its do_lower_case and strip_accents
      max_seq_length = max_seq_length or recorded.max_seq_length
      if "max_query_length" in cls.preprocessor_args and recorded.max_query_length:
        kwargs.setdefault(
          "max_query_length",
          question_budget(max_seq_length or cls.default_max_seq_length, recorded.max_query_length),
        )
    if not vocab_file:
      raise ValueError(
        f"{path!r} has no electra_tf config.json recording its vocab: pass vocab_file"
        " (for a keras-hub preset, use from_preset)"
      )
    if run_vocab.get("sha256"):
      # As run_finetuning: a vocab of the same size whose ids mean other tokens.
      Vocab.read(vocab_file, "vocab_file").check_made_with(
        run_vocab, f"from_checkpoint: the model in {os.fspath(path)!r} was trained"
      )
    # None lets `from_vocab_file` read a SentencePiece model's own settings.
    if vocab_kind(vocab_file) != SENTENCEPIECE:
      if do_lower_case is None:
        do_lower_case = run_vocab.get("do_lower_case")
        do_lower_case = True if do_lower_case is None else do_lower_case
      if strip_accents is None:
        strip_accents = run_vocab.get("strip_accents")
        strip_accents = True if strip_accents is None else strip_accents
    preprocessor = ElectraTextPreprocessor.from_vocab_file(
      vocab_file,
      max_seq_length=max_seq_length or cls.default_max_seq_length,
      do_lower_case=do_lower_case,
      strip_accents=strip_accents,
      packing=cls.packing,
      **{k: kwargs.pop(k) for k in cls.preprocessor_args if k in kwargs},
    )
    sizes_given = (model_size, embedding_size, model_hparam_overrides) != (None, None, None)
    size = types.SimpleNamespace(
      model_size=model_size or "small",
      vocab_size=preprocessor.tokenizer.vocab_size,
      model_hparam_overrides=dict(model_hparam_overrides or {}),
    )
    if embedding_size is None:
      embedding_size = default_embedding_size(size.model_size)
    bert_config = get_bert_config(size).to_dict()
    if run_config is not None:
      bert_config, embedding_size = model_dir_lib.encoder_config(
        run_config, (bert_config, embedding_size) if sizes_given else None
      )
    elif source.format == formats.KERAS and not sizes_given:  # a task .keras's own sizes
      saved = formats.keras_archive_config(path).get("config") or {}
      if saved.get("bert_config"):
        bert_config, embedding_size = saved["bert_config"], saved.get("embedding_size")
    model = cls(bert_config, preprocessor=preprocessor, embedding_size=embedding_size, **kwargs)
    model.build()
    any_format.initialize_finetuning_model(model.finetuning_model, path)
    return model

  # Kinds of `run_finetuning` task (their classes) whose head this model is.
  head_task_classes = ()

  @classmethod
  def _adopt_trial_head(cls, path, run_config, kwargs):
    """From a fine-tuning trial without `task_name`: its one head of this
    model's kind becomes the model's; otherwise a warning says the head is new."""
    tasks = (run_config.get("hparams") or {}).get("task_names") or []
    if "task_name" in kwargs:
      if kwargs["task_name"] not in tasks:
        print(
          f"warning: {os.fspath(path)!r} is a trial fine-tuned for {tasks}; task_name="
          f"{kwargs['task_name']!r} is not one of them, so it gets a new head over the "
          "fine-tuned encoder",
          file=sys.stderr,
          flush=True,
        )
      return
    ours = [
      t for t in tasks
      if issubclass(task_builder.TASK_CLASSES.get(t, type(None)), cls.head_task_classes or ())
    ]  # fmt: skip
    if len(ours) == 1:
      kwargs["task_name"] = ours[0]
      return
    default = inspect.signature(cls.__init__).parameters["task_name"].default
    print(
      f"warning: {os.fspath(path)!r} is a trial fine-tuned for {tasks}; "
      f"{'none' if not ours else 'more than one'} of them has a head for {cls.__name__}, so it gets "
      f"a new {default!r} head over the fine-tuned encoder (pass task_name= to load one)",
      file=sys.stderr,
      flush=True,
    )

  @classmethod
  def from_preset(cls, preset, max_seq_length=None, **kwargs):
    """A model from a preset directory in keras-hub's layout.

    A preset `save_to_preset` wrote (`task.json`) comes back whole, as saved
    (no arguments apply). A keras-hub `ElectraBackbone` preset starts
    fine-tuning: its encoder and tokenizer under a new head built from
    `kwargs` (e.g. `num_classes`; those in `preprocessor_args` go to the
    preprocessor), with `max_seq_length` (default `default_max_seq_length`).
    A preset of another family, or a corrupt one, stops with one line."""
    preset = str(formats.require(preset, (formats.KERAS_HUB_PRESET,)).location)
    task_model = any_format.load_task_preset(preset)
    if task_model is not None:
      if not isinstance(task_model, cls):
        raise ValueError(
          f"preset {preset!r} holds an {type(task_model).__name__}; load it with "
          f"{type(task_model).__name__}.from_preset"
        )
      if kwargs or max_seq_length is not None:
        raise ValueError(
          f"preset {preset!r} holds a whole {cls.__name__}: its arguments are the saved "
          f"ones (got {sorted(kwargs) + (['max_seq_length'] if max_seq_length else [])})"
        )
      return task_model
    _, bert_config, embedding_size = keras_hub.preset_backbone_config(preset)
    vocab_file, do_lower_case, strip_accents = keras_hub.preset_vocab(preset)
    if vocab_kind(vocab_file) == SENTENCEPIECE:
      with open(vocab_file, "rb") as f:
        tokenizer = SentencePieceTokenizer(
          proto=f.read(), do_lower_case=do_lower_case, strip_accents=strip_accents
        )
    else:
      with open(vocab_file, encoding="utf-8") as f:
        vocabulary = [line.rstrip("\n") for line in f]
      while vocabulary and not vocabulary[-1]:
        vocabulary.pop()
      tokenizer = ElectraTokenizer(
        vocabulary=vocabulary, do_lower_case=do_lower_case, strip_accents=strip_accents
      )
    preprocessor = ElectraTextPreprocessor(
      tokenizer,
      max_seq_length=max_seq_length or cls.default_max_seq_length,
      packing=cls.packing,
      **{k: kwargs.pop(k) for k in cls.preprocessor_args if k in kwargs},
    )
    model = cls(bert_config, preprocessor=preprocessor, embedding_size=embedding_size, **kwargs)
    model.build()
    any_format.initialize_finetuning_model(model.finetuning_model, preset)
    return model

  def save_to_preset(self, preset_dir):
    """Writes a preset directory in keras-hub's layout: the encoder as a
    keras-hub `ElectraBackbone`, the tokenizer, and this model's config
    (`task.json`) and weights (`task.weights.h5`), which `from_preset` reads
    back. `preset_dir` must be new or empty; it appears complete or not at
    all. Returns `preset_dir`."""
    if not os.fspath(preset_dir).strip():
      raise ValueError("save_to_preset: preset_dir is empty; expected a directory path")
    if self.preprocessor is None:
      raise ValueError("save_to_preset needs the model's preprocessor (its tokenizer)")
    if not self.built:
      self.build()
    return keras_hub.write_task_preset(
      self, self.finetuning_model.encoder, self.preprocessor.tokenizer, preset_dir
    )

  def build(self, input_shape=None):
    self.finetuning_model.build()
    self.built = True

  def official_name_map(self):
    return self.finetuning_model.official_name_map()

  def pack(self, inputs):
    """The packed `input_ids/input_mask/segment_ids` the network runs on."""
    return self.preprocessor(inputs) if self.preprocessor is not None else dict(inputs)

  def call(self, inputs, training=None):
    features = self.pack(inputs)
    features.update(self.head.prediction_features(features))
    features["task_id"] = keras.ops.zeros_like(features[self.task_name + "_eid"])
    outputs = self.finetuning_model(features, training=training)[self.task_name]
    return self.task_outputs(outputs)

  def task_outputs(self, head_outputs):
    """What `call` returns, from the head's output dict."""
    raise NotImplementedError

  def fit(self, x=None, y=None, batch_size=None, shuffle=None, **kwargs):
    """Keras' `fit`; texts given as a list or array (or a `(text_a, text_b)`
    pair of them) are batched here (`batch_size`, default 32; shuffled each
    epoch): Keras' arrays cannot hold strings. `shuffle` defaults to True but
    for a `tf.data.Dataset`."""
    if shuffle is None:
      shuffle = not isinstance(x, tf.data.Dataset)
    _check_batched(x, f"{type(self).__name__}.fit")
    _check_batched(kwargs.get("validation_data"), f"{type(self).__name__}.fit validation_data")
    if _texts_given(x):
      x, y, batch_size = _text_batches(x, y, batch_size, shuffle), None, None
      shuffle = False  # the dataset reshuffles itself each epoch
    self._warn_past_schedule(x, kwargs)
    return super().fit(x, y, batch_size=batch_size, shuffle=shuffle, **kwargs)

  def _warn_past_schedule(self, x, fit_kwargs):
    """Warns when `fit` would run past the compiled schedule's
    `num_train_steps` (where the learning rate is 0), for a dataset of known size."""
    horizon = getattr(self, "_schedule_steps", None)
    if horizon is None or not isinstance(x, tf.data.Dataset):
      return
    per_epoch = fit_kwargs.get("steps_per_epoch") or int(x.cardinality())
    if per_epoch < 0:
      return  # unknown or infinite
    epochs = fit_kwargs.get("epochs", 1) - fit_kwargs.get("initial_epoch", 0)
    planned = epochs * per_epoch // max(1, self.gradient_accumulation_steps or 1)
    done = int(self.optimizer.iterations.numpy())
    if done + planned > horizon:
      print(
        f"warning: {type(self).__name__}.fit runs {planned} optimizer steps ({epochs} epoch(s) of "
        f"{per_epoch} batches){f' after {done}' if done else ''}, but compile(num_train_steps="
        f"{horizon}): the learning "
        f"rate is 0 after step {horizon}, so the rest trains nothing; compile with "
        f"num_train_steps={done + planned}",
        file=sys.stderr,
        flush=True,
      )

  def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
    """Keras' `evaluate`; texts as for `fit` (not shuffled)."""
    _check_batched(x, f"{type(self).__name__}.evaluate")
    if _texts_given(x):
      x, y, batch_size = _text_batches(x, y, batch_size, False), None, None
    return super().evaluate(x, y, batch_size=batch_size, **kwargs)

  def predict(self, x, batch_size=None, **kwargs):
    """Outputs for `x`: strings, a `(text_a, text_b)` pair of lists/tensors,
    packed features, or a `tf.data.Dataset` (whose elements Keras reads as
    `(x, y)`: pairs must come as `((text_a, text_b),)`)."""
    if batch_size is not None:
      check_count(batch_size, f"{type(self).__name__}.predict batch_size")
    if not isinstance(x, tf.data.Dataset):
      check_prediction_input(x, type(self).__name__)
      if self.preprocessor is None and not isinstance(x, dict):
        # Texts reach the network raw otherwise ("Iterating over a symbolic tf.Tensor").
        raise ValueError(
          f"{type(self).__name__}.predict: this model has no preprocessor, so it takes packed "
          "features (a dict of input_ids, input_mask, segment_ids), not texts"
        )
      if isinstance(x, (list, tuple)) and len(x) == 2 and not isinstance(x[0], (str, bytes)):
        x = (tuple(x),)  # one input made of two segments, not (x, y)
      x = tf.data.Dataset.from_tensor_slices(x).batch(batch_size or 32)
      batch_size = None
    return super().predict(x, batch_size=batch_size, **kwargs)

  # --- training ----------------------------------------------------------------

  def default_loss(self):
    raise NotImplementedError

  def default_metrics(self):
    return None

  def default_loss_weights(self):
    return None

  def prepare_labels(self, y):
    """`y` as the Keras loss of `default_loss` takes it; raises a clear
    error on labels of the wrong structure or shape."""
    return y

  def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
    if y is None:
      raise ValueError(
        f"{type(self).__name__}: no labels were given; fit and evaluate take (texts, labels) "
        "pairs (predict takes texts alone)"
      )
    return super().compute_loss(x, self.prepare_labels(y), y_pred, sample_weight, training)

  def compute_metrics(self, x, y, y_pred, sample_weight=None):
    return super().compute_metrics(x, self.prepare_labels(y), y_pred, sample_weight)

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
    gradient_accumulation_steps=1,
    **kwargs,
  ):
    """Defaults: the original's optimizer (`AdamWeightDecay`, warm-up ×
    linear decay over `num_train_steps`, layer-wise decay), its loss (summed
    over the batch) and accuracy.

    Args:
      optimizer: "auto" or "adam" (the original's `AdamWeightDecay`), "lamb"
        (`Lamb`, same exclusions and schedule), or a Keras optimizer.
      loss: "auto" or a Keras loss (structure) on (labels, outputs).
      metrics: "auto" (accuracy) or Keras metrics.
      num_train_steps: the schedule's horizon; needed with "auto".
      learning_rate, warmup_proportion, weight_decay_rate,
        layerwise_lr_decay: the "auto" optimizer's hparams.
      gradient_accumulation_steps: k ≥ 1 micro-batches per replica batch,
        their gradients and losses summed: the whole batch's update for a
        loss summed over examples (the default; a mean would be k× larger).
      **kwargs: passed to `keras.Model.compile`.
    """
    if not self.built:
      self.build()
    settings = types.SimpleNamespace(
      learning_rate=learning_rate,
      warmup_proportion=warmup_proportion,
      weight_decay_rate=weight_decay_rate,
      layerwise_lr_decay=layerwise_lr_decay,
    )
    original_schedule = isinstance(optimizer, str) and optimizer in (
      "auto",
      *optimizer_factory.OPTIMIZERS,
    )
    if original_schedule:
      try:  # the ranges run_finetuning checks its hparams against
        for name, low, high, closed in finetuning_config.OPTIMIZER_RANGES:
          check_number(settings, name, low, high, closed)
      except ValueError as e:
        raise ValueError(
          f"{type(self).__name__}.compile: {str(e).removeprefix('hparam ')}"
        ) from None
      if num_train_steps is None:
        raise ValueError(
          f"{type(self).__name__}.compile: the original's schedule decays over "
          "num_train_steps; pass num_train_steps=<batches per epoch × epochs> "
          "(or your own optimizer)"
        )
      check_count(num_train_steps, f"{type(self).__name__}.compile num_train_steps")
      optimizer = optimizer_factory.finetuning_optimizer(
        self.official_name_map(),
        self.bert_config["num_hidden_layers"],
        num_train_steps,
        learning_rate=learning_rate,
        warmup_proportion=warmup_proportion,
        weight_decay_rate=weight_decay_rate,
        layerwise_lr_decay=layerwise_lr_decay,
        optimizer="adam" if optimizer == "auto" else optimizer,
      )
    else:
      # Keras builds a named or given optimizer with its own settings: these would be dropped.
      given = {
        "num_train_steps": (num_train_steps, None),
        "learning_rate": (learning_rate, 1e-4),
        "warmup_proportion": (warmup_proportion, 0.1),
        "weight_decay_rate": (weight_decay_rate, 0.01),
        "layerwise_lr_decay": (layerwise_lr_decay, 0.8),
      }
      ignored = [name for name, (value, default) in given.items() if value != default]
      if ignored:
        raise ValueError(
          f"{type(self).__name__}.compile: {', '.join(ignored)} set the original's optimizer "
          f"(optimizer='auto', 'adam' or 'lamb'); optimizer={optimizer!r} would ignore them: "
          "set them on your optimizer (e.g. keras.optimizers.SGD(learning_rate=...))"
        )
    if loss == "auto":
      loss = self.default_loss()
      kwargs.setdefault("loss_weights", self.default_loss_weights())
    if metrics == "auto":
      metrics = self.default_metrics()
    self.gradient_accumulation_steps = optimizer_factory.check_gradient_accumulation(
      optimizer, gradient_accumulation_steps
    )
    # The original's schedule's horizon (None: an optimizer of the user's own).
    self._schedule_steps = num_train_steps if original_schedule else None
    super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

  def train_step(self, data):
    """Keras' step, with dense gradients (clipped by the gradient's global
    norm, as in the original) and gradient accumulation
    (`electra_tf.runtime.accumulation`)."""
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    batch = {"x": x, "y": y}
    if sample_weight is not None:
      batch["sample_weight"] = sample_weight

    def batch_loss(part):
      y_pred = self(part["x"], training=True)
      weight = part.get("sample_weight")
      loss = self.compute_loss(part["x"], part["y"], y_pred, weight, training=True)
      self.compute_metrics(part["x"], part["y"], y_pred, weight)
      return loss, {"loss": loss}

    variables = self.trainable_variables
    steps = getattr(self, "gradient_accumulation_steps", 1)
    if steps == 1:
      with tf.GradientTape() as tape:
        loss, _ = batch_loss(batch)
        scaled_loss = self.optimizer.scale_loss(loss)
      grads = tape.gradient(scaled_loss, variables)
    else:
      grads, values = accumulation.accumulate_gradients(
        batch_loss,
        variables,
        batch,
        steps,
        self.optimizer,
        seed_states=layer_utils.seed_generator_states(self),
        value_names=["loss"],
      )
      loss = values["loss"]
    keras_compat.loss_tracker(self).update_state(
      keras_compat.unscale_loss_for_distribution(loss),
      sample_weight=tf.shape(tf.nest.flatten(x)[0])[0],
    )
    self.optimizer.apply(replicas.agree_on_finite_gradients(grads), variables)
    return self.get_metrics_result()

  def save(self, filepath, *args, **kwargs):
    """Keras' `Model.save`, to a `.keras` file (the legacy HDF5 format keeps
    no custom class: it is refused)."""
    if os.fspath(filepath).lower().endswith((".h5", ".hdf5")):
      raise ValueError(
        f"{type(self).__name__}.save({os.fspath(filepath)!r}): the legacy HDF5 format cannot "
        "hold a task model (it would not load back); save to a path ending in .keras, or "
        "use save_weights('….weights.h5') for the weights alone"
      )
    overwrite = args[0] if args else kwargs.get("overwrite", True)
    path = os.fspath(filepath)
    if not path.endswith(".keras") or (not overwrite and os.path.exists(path)):
      return super().save(filepath, *args, **kwargs)  # Keras' own errors and prompt
    # Written beside it and renamed when whole: a stop leaves no partial file.
    with file_io.atomic_path(path, suffix=".keras", weights=self.weights) as tmp:
      return super().save(tmp, *args, **kwargs)

  # --- export --------------------------------------------------------------------

  def export(self, filepath, format="tf_saved_model", verbose=None, **kwargs):  # pylint: disable=redefined-builtin
    """Keras' `Model.export` contract, for this model's runtimes.

    Args:
      filepath: where the export goes (written at `filepath`, as Keras does;
        TF Serving loads `<model dir>/<version>`, so pass e.g. `serving/1`).
      format: "tf_saved_model": the TF Serving SavedModel that
        `export_saved_model --model task` writes (`serving_default` on raw
        text, `serve_ids`, `serve_examples`; real-length serving).
        "litert" / "onnx": the ids-in network (ids, mask, segment ids ->
        the task's outputs) with its tokenizer files beside it.
      verbose: unused (nothing is printed); kept for Keras' signature.
      **kwargs: for "tf_saved_model": `jit_compile` (the XLA option),
        `constant_weights` (the weight matrices as graph constants),
        `length_multiple`, `overwrite` (default False: an existing
        `filepath` is refused); for "litert" / "onnx": `quantize`.

    Returns:
      `filepath`.
    """
    del verbose
    if not os.fspath(filepath).strip():
      raise ValueError(f"{type(self).__name__}.export: filepath is empty; expected a path to write")
    if format == "tf_saved_model":
      expected = ("jit_compile", "constant_weights", "length_multiple", "overwrite")
      unknown = sorted(set(kwargs) - set(expected))
      if unknown:
        raise ValueError(
          f"export(format='tf_saved_model'): unexpected arguments {unknown}; "
          f"expected {', '.join(expected)}"
        )
      return export_lib.export_task_model(self, filepath, **kwargs)
    if format in EXPORT_FORMATS:
      unknown = sorted(set(kwargs) - {"quantize"})
      if unknown:
        raise ValueError(
          f"export(format={format!r}): unexpected arguments {unknown}; expected quantize"
        )
      return portable.export_portable(self, filepath, format, quantize=kwargs.get("quantize"))
    raise ValueError(
      f"export format {format!r}; expected one of {('tf_saved_model',) + EXPORT_FORMATS}"
    )

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "bert_config": dict(self.bert_config),
        "preprocessor": (
          None
          if self.preprocessor is None
          else keras.saving.serialize_keras_object(self.preprocessor)
        ),
        "embedding_size": self.embedding_size,
        "task_name": self.task_name,
      }
    )
    return config
