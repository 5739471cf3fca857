"""The ELECTRA generator: an MLM transformer (or Electric's two-tower cloze
model) whose output layer is tied to its input word embeddings."""

import keras

from electra_tf.layers.electra_cloze_head import ElectraClozeHead
from electra_tf.layers.electra_masked_lm_head import ElectraMaskedLMHead
from electra_tf.models import model_utils
from electra_tf.pretraining.positions import gather_positions


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraGenerator(keras.layers.Layer):
  """The generator of `run_pretraining.py:PretrainingModel` with the head of
  `_get_masked_lm_output`, or Electric's two-tower cloze generator.

  Args:
    bert_config: dict (or `BertConfig`) of the generator's transformer (the
      small `get_generator_config`, or the full config for a tied/MLM
      generator).
    embedding_size: width of the embedding tables; None means the
      generator's hidden size (untied generator embeddings). Ignored when
      `embeddings` is given (its width is used).
    embeddings: the `ElectraEmbeddings` layer to read (the shared
      `electra/embeddings` block by default); None creates the generator's own
      (one per tower for the two-tower model).
    encoder: an `ElectraEncoder` to use instead of creating one: the
      discriminator's, for `untied_generator=False`.
    two_tower: build Electric's left-to-right and right-to-left towers and the
      cloze head instead of one tower and the MLM head.
    fused_training_kernels: the encoders' training path runs XLA-fused
      elementwise kernels; False = plain TF ops (same math). A given
      `encoder` keeps its own setting.
    **kwargs: standard `keras.layers.Layer` arguments.

  Call args:
    inputs: dict of int `[B, S]` `input_ids`, `input_mask`, `segment_ids`
      (the masked inputs for MLM; the unmasked ones for the two-tower model).
    masked_lm_positions: int `[B, N]`; the MLM head runs only at these
      positions. Optional for the two-tower model (its logits cover every
      position; given positions add their gathered `"mlm_logits"`).
    training: enables dropout.

  Returns:
    dict with `"sequence_output"` (`[B, S, Hg]`, or `[B, S, 2·Hg]` = the
    joined towers), `"embedding_output"` and `"hidden_states"` (of the LTR
    tower for two towers), float32 `"mlm_logits"` `[B, N, V]` when positions
    are given, and for two towers float32 `"logits"` `[B, S, V]`.

  Example:
  >>> import numpy as np
  >>> gen = ElectraGenerator({"vocab_size": 100, "hidden_size": 16,
  ...     "num_hidden_layers": 1, "num_attention_heads": 1,
  ...     "intermediate_size": 64}, embedding_size=8)
  >>> ids = np.ones((2, 5), "int32")
  >>> out = gen({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids},
  ...           masked_lm_positions=np.array([[1, 2], [3, 0]], "int32"))
  >>> out["mlm_logits"].shape
  TensorShape([2, 2, 100])
  """

  def __init__(
    self,
    bert_config,
    embedding_size=None,
    embeddings=None,
    encoder=None,
    two_tower=False,
    fused_training_kernels=True,
    **kwargs,
  ):
    super().__init__(**kwargs)
    self.bert_config = model_utils.bert_config_dict(bert_config)
    self.embedding_size = int(embedding_size) if embedding_size is not None else None
    self.two_tower = bool(two_tower)
    self.fused_training_kernels = bool(fused_training_kernels)
    c = self.bert_config
    embeddings = model_utils.deserialize_layer(embeddings)
    encoder = model_utils.deserialize_layer(encoder)
    self._embeddings_given = embeddings is not None
    self._encoder_given = encoder is not None
    if self.two_tower and encoder is not None:
      raise ValueError("a two-tower generator builds its own towers; do not pass `encoder`")
    if embeddings is not None:
      width = embeddings.embedding_size
    else:
      width = self.embedding_size if self.embedding_size is not None else c["hidden_size"]

    def make_embeddings(name):
      return model_utils.make_embeddings(c, width, self.dtype_policy, name)

    def make_encoder(name, direction):
      return model_utils.make_encoder(
        c, width, self.fused_training_kernels, self.dtype_policy, name, direction
      )

    head_arguments = dict(
      vocab_size=c["vocab_size"],
      embedding_size=width,
      hidden_act=c["hidden_act"],
      initializer_range=c["initializer_range"],
      dtype=self.dtype_policy,
    )
    if self.two_tower:
      self.embeddings = embeddings if embeddings is not None else make_embeddings("ltr_embeddings")
      self.rtl_embeddings = (
        embeddings if embeddings is not None else make_embeddings("rtl_embeddings")
      )
      self.encoder = make_encoder("ltr_encoder", "ltr")
      self.rtl_encoder = make_encoder("rtl_encoder", "rtl")
      self.head = ElectraClozeHead(name="cloze_predictions", **head_arguments)
    else:
      self.embeddings = embeddings if embeddings is not None else make_embeddings("embeddings")
      self.rtl_embeddings = None
      if encoder is not None:
        if encoder.input_width != width:
          raise ValueError(
            f"the given encoder expects embeddings of width {encoder.input_width}, "
            f"but the generator's embeddings have width {width}"
          )
        self.encoder = encoder
      else:
        self.encoder = make_encoder("encoder", "bidirectional")
      self.rtl_encoder = None
      self.head = ElectraMaskedLMHead(name="generator_predictions", **head_arguments)

  @property
  def is_two_tower(self):
    return self.two_tower

  @property
  def word_embeddings(self):
    """The tied output table (the LTR tower's for two towers)."""
    return self.embeddings.word_embeddings

  def build(self, inputs_shape=None, masked_lm_positions_shape=None):
    model_utils.build_once(self.embeddings)
    model_utils.build_once(self.encoder)
    hidden = self.encoder.hidden_size
    if self.two_tower:
      model_utils.build_once(self.rtl_embeddings)
      model_utils.build_once(self.rtl_encoder)
      model_utils.build_once(self.head, (None, None, hidden), (None, None, hidden))
    else:
      model_utils.build_once(self.head, (None, None, hidden))
    self.built = True

  def call(self, inputs, masked_lm_positions=None, training=None):
    model_utils.check_inputs(inputs, "ElectraGenerator")
    input_ids, segment_ids = inputs["input_ids"], inputs["segment_ids"]
    embedded = self.embeddings(input_ids, segment_ids, training=training)
    outputs = dict(self.encoder(embedded, inputs["input_mask"], training=training))
    if self.two_tower:
      rtl_embedded = self.rtl_embeddings(input_ids, segment_ids, training=training)
      rtl = self.rtl_encoder(rtl_embedded, inputs["input_mask"], training=training)
      cloze = self.head(outputs["sequence_output"], rtl["sequence_output"], self.word_embeddings)
      outputs["ltr_sequence_output"] = outputs["sequence_output"]
      outputs["rtl_sequence_output"] = rtl["sequence_output"]
      outputs["sequence_output"] = cloze["sequence_output"]
      outputs["logits"] = cloze["logits"]
      if masked_lm_positions is not None:
        outputs["mlm_logits"] = gather_positions(cloze["logits"], masked_lm_positions)
    elif masked_lm_positions is not None:
      # Gather first so that no [B, S, V] logits are materialised.
      reprs = gather_positions(outputs["sequence_output"], masked_lm_positions)
      outputs["mlm_logits"] = self.head(reprs, self.word_embeddings)
    return outputs

  def get_config(self):
    config = super().get_config()
    config.update(
      {
        "bert_config": dict(self.bert_config),
        "embedding_size": self.embedding_size,
        "embeddings": (
          model_utils.serialize_layer(self.embeddings) if self._embeddings_given else None
        ),
        "encoder": model_utils.serialize_layer(self.encoder) if self._encoder_given else None,
        "two_tower": self.two_tower,
        "fused_training_kernels": self.fused_training_kernels,
      }
    )
    return config
