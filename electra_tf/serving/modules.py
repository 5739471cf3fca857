"""Export modules with named serving signatures (TF Model Garden style).

Each module wraps one network and exposes three signatures over the same
computation: `serving_default` (raw text `text_a`, `text_b`, string `[B]`,
tokenized and packed in the graph as the original's featuriser does),
`serve_ids` (int32 `input_ids`, `input_mask`, `segment_ids`, `[B, S]`) and
`serve_examples` (serialized `tf.Example`s with those int64 features). Every
signature also returns the packed ids it ran on; float outputs are float32.

The encoder runs on the batch's longest real row (rounded up to
`length_multiple`), and per-position outputs past it are filled with 0 (-1000
for QA logits); `jit_compile` and `constant_weights` are opt-in speed-ups
(docs/serve.md describes all three). Loading needs `import tensorflow_text`
first (`electra_tf.serving.load` does it).

Example:

```python
module = DiscriminatorServingModule(pretrainer.discriminator, tokenizer,
                                    max_seq_length=128)
tf.saved_model.save(module, "/tmp/export/1",
                    signatures=module.get_signatures())
```
"""

import numbers

import keras
import numpy as np
import tensorflow as tf

from electra_tf.finetune import text_preprocessor
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.qa.head import QAHead
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.layers import layer_utils
from electra_tf.layers.electra_embeddings import ElectraEmbeddings
from electra_tf.layers.electra_transformer_layer import ElectraTransformerLayer
from electra_tf.utils import keras_compat
from electra_tf.utils.arguments import check_bools

SIGNATURE_TEXT = "serving_default"
SIGNATURE_IDS = "serve_ids"
SIGNATURE_EXAMPLES = "serve_examples"
# The literal that marks a masked position in the generator's text input (the
# tokenizer alone would split "[MASK]" into "[", "mask", "]", `model/tokenization.py:BasicTokenizer`).
MASK_PLACEHOLDER = "[MASK]"
SIGNATURES = (SIGNATURE_TEXT, SIGNATURE_IDS, SIGNATURE_EXAMPLES)
# The module's tf.function behind each of SIGNATURES.
SIGNATURE_METHODS = ("serve_text", "serve_ids", "serve_examples")
PACKED_KEYS = ("input_ids", "input_mask", "segment_ids")
# What the QA head adds to the logits of positions that cannot hold an answer
# (`finetune/qa/qa_tasks.py:QATask.get_prediction_module`); the fill of QA
# logits past the encoder's length.
QA_MASKED_LOGIT = -1000.0
# What `constant_weights` puts into saved_model.pb at most: TensorFlow caps a
# protocol buffer at 2 GiB, and the graph needs room beside the weights.
CONSTANT_WEIGHTS_MAX_BYTES = 3 * 2**29


def _float32(x):
  return tf.cast(x, tf.float32)


def _assert_all(ok, values, message):
  """Asserts that every element of `ok` is true, with `message` and the
  first of `values` where it is not. That value is looked up only on a
  failure: a passing request pays one reduction."""

  def failed():
    first = tf.boolean_mask(values, tf.logical_not(ok))[:1]
    with tf.control_dependencies([tf.debugging.Assert(False, [message, first])]):
      return tf.constant(False)

  return tf.cond(tf.reduce_all(ok), lambda: tf.constant(True), failed)


class _JoinedQKVWeights:
  """`(attention layer, kernel, bias)` entries, kept out of tf.Module's tracking
  (it would track the layers twice; the module's `joined_qkv_weights` tracks the
  variables)."""

  def __init__(self):
    self.entries = []

  def by_layer(self):
    """`{id(layer): (kernel, bias)}` for `layer_utils.joined_qkv_weights`."""
    return {id(layer): (kernel, bias) for layer, kernel, bias in self.entries}


class _ConstantWeights:
  """What a `constant_weights` module traces its network with, outside tf.Module's
  tracking: `matrices` `[(variable, ndarray)]`, `vectors` `[(variable, module-owned
  copy)]` and the network `functions` the signatures share, by the network's code."""

  def __init__(self):
    self.matrices, self.vectors = [], []
    self.functions = {}


class ElectraServingModule(tf.Module):
  """Base class: tokenisation, packing, parsing and the three signatures.

  Subclasses implement `serve(features)` (int32 `[B, S]` features → dict of
  output tensors; the network runs on `trim(features, encoder_length(...))`
  and per-position outputs go through `pad_back`) and may override `pack_text`.

  Args:
    tokenizer: an `ElectraTokenizer`.
    max_seq_length: S, the packed length of every signature.
    vocab_asset: optional path of the vocab, saved as `assets/vocab.txt`
      (the file must already be named `vocab.txt`).
    name: module name.
    real_length: run the encoder on the batch's longest real row instead of
      all S positions.
    length_multiple: round that length up to a multiple of this (8 keeps a
      float16 GPU export's matmuls aligned for tensor cores; with
      `jit_compile`, a larger multiple bounds the compilations).
    jit_compile: run the network (encoder and head) as one XLA-compiled
      function, compiled per input shape.
    constant_weights: trace the network with its weight matrices as graph
      constants; biases and LayerNorm weights stay variables, of the module.
  """

  def __init__(
    self,
    tokenizer,
    max_seq_length,
    vocab_asset=None,
    name=None,
    real_length=True,
    length_multiple=1,
    jit_compile=False,
    constant_weights=False,
  ):
    super().__init__(name=name)
    if max_seq_length < 3:
      raise ValueError(
        f"max_seq_length={max_seq_length}; expected at least 3 "
        "([CLS] a [SEP] needs room for one token)"
      )
    check_bools(real_length=real_length, jit_compile=jit_compile, constant_weights=constant_weights)
    if isinstance(length_multiple, bool) or not isinstance(length_multiple, numbers.Integral):
      raise ValueError(f"length_multiple={length_multiple!r}; expected an integer")
    if length_multiple < 1:
      raise ValueError(f"length_multiple={length_multiple}; expected at least 1")
    self.tokenizer = tokenizer
    self.max_seq_length = int(max_seq_length)
    self.real_length = bool(real_length)
    self.length_multiple = int(length_multiple)
    self.jit_compile = bool(jit_compile)
    self.constant_weights = bool(constant_weights)
    self._constants = _ConstantWeights()
    if vocab_asset is not None:
      self.vocab_file = tf.saved_model.Asset(vocab_asset)
    self._joined_qkv = _JoinedQKVWeights()

  def serve(self, features):
    raise NotImplementedError

  def encoder_length(self, input_mask, minimum=1):
    """The length the encoder runs on: one past the batch's last real
    position (at least `minimum`), rounded up to `length_multiple`, at most S.

    A Python int (S) for the full-padding module, else an int32 scalar.
    """
    s = self.max_seq_length
    if not self.real_length:
      return s
    positions = tf.range(1, s + 1)[None, :]
    longest = tf.reduce_max(tf.where(tf.not_equal(input_mask, 0), positions, 0))
    longest = tf.maximum(longest, minimum)
    m = self.length_multiple
    return tf.minimum((longest + m - 1) // m * m, s)

  def run_network(self, network, *args):
    """`network(*args)`, as one XLA-compiled function when `jit_compile`,
    traced on constant weight matrices when `constant_weights`.

    Only the network is compiled: its inputs already have the trimmed
    length, so each compilation sees static shapes, while the length itself
    is computed outside.
    """
    if self.constant_weights:
      return self._constant_weights_network(network)(*args)
    if not self.jit_compile:
      with layer_utils.joined_qkv_weights(self._joined_qkv.by_layer()):
        return network(*args)
    # Traced here, so inside the context: see `separate_qkv_projections`.
    with layer_utils.separate_qkv_projections():
      return tf.function(network, jit_compile=True, autograph=False)(*args)

  def _constant_weights_network(self, network):
    """`network` as a `tf.function` traced with every matrix it reads as a
    constant and every vector from the module's own copy. The three
    signatures pass the same network (the same code) and share one such
    function, so the SavedModel holds each constant once."""
    held = self._constants
    code = getattr(network, "__func__", network).__code__
    if code not in held.functions:

      def network_on_constants(*args):
        mapping = [(v, tf.constant(value)) for v, value in held.matrices]
        mapping += [(v, tf.convert_to_tensor(copy)) for v, copy in held.vectors]
        joined = {
          layer_id: (tf.constant(kernel), bias)
          for layer_id, (kernel, bias) in self._joined_qkv.by_layer().items()
        }
        with keras.StatelessScope(state_mapping=mapping):
          if self.jit_compile:
            with layer_utils.separate_qkv_projections():
              return network(*args)
          with layer_utils.joined_qkv_weights(joined):
            return network(*args)

      held.functions[code] = tf.function(
        network_on_constants, jit_compile=self.jit_compile or None, autograph=False
      )
    return held.functions[code]

  def trim(self, features, length):
    """Features cut to their first `length` positions."""
    return {k: v[:, :length] for k, v in features.items()}

  def pad_back(self, x, length, fill=0):
    """Pads axis 1 of `x` (`[B, length, ...]`) back to S with `fill`."""
    s = self.max_seq_length
    if isinstance(length, int):
      return x
    paddings = [[0, 0], [0, s - length]] + [[0, 0]] * (x.shape.rank - 2)
    padded = tf.pad(x, paddings, constant_values=tf.cast(fill, x.dtype))
    # The static shape keeps the signature's [B, S, ...] outputs.
    return tf.ensure_shape(padded, [None, s] + x.shape[2:].as_list())

  def tokenize(self, text):
    """Strings `[B]` → ragged int32 ids `[B, None]`."""
    return self.tokenizer(text)

  def _tokenize_both(self, text_a, text_b):
    check = tf.debugging.assert_equal(
      tf.size(text_a),
      tf.size(text_b),
      message="text_a and text_b must have the same batch size (send \"\" as text_b "
      "for a one-segment row)",
    )
    with tf.control_dependencies([check]):
      text_a = tf.identity(text_a)
    # One tokenizer call for both segments keeps the graph (and tracing) small.
    ids = self.tokenize(tf.concat([text_a, text_b], axis=0))
    n = tf.shape(text_a, out_type=tf.int64)[0]
    return ids[:n], ids[n:]

  def pack_text(self, text_a, text_b):
    """Tokenises and packs; rows whose `text_b` is "" get one segment.

    As the original (`if example.text_b:`), a non-empty `text_b` selects the
    pair layout and its `S - 3` budget even if it has no tokens.
    """
    ids_a, ids_b = self._tokenize_both(text_a, text_b)
    single = self.tokenizer.pack(ids_a, max_seq_length=self.max_seq_length)
    pair = self.tokenizer.pack(ids_a, ids_b, max_seq_length=self.max_seq_length)
    has_b = tf.not_equal(text_b, "")[:, None]
    return {k: tf.where(has_b, pair[k], single[k]) for k in PACKED_KEYS}

  def parse_examples(self, serialized):
    spec = {k: tf.io.FixedLenFeature([self.max_seq_length], tf.int64) for k in PACKED_KEYS}
    parsed = tf.io.parse_example(serialized, spec)
    return {k: tf.cast(parsed[k], tf.int32) for k in PACKED_KEYS}

  def _type_vocab_size(self):
    """The smallest token-type table of the served networks' embeddings, or None."""
    sizes = [
      layer.type_vocab_size
      for network in self._networks()
      for layer in keras_compat.flatten_layers(network)
      if isinstance(layer, ElectraEmbeddings)
    ]
    return min(sizes) if sizes else None

  def _check_values(self, signature, features):
    """`features` behind named checks: an `input_mask` of 0s and 1s starting
    with 1 in every row, and `input_ids` and `segment_ids` inside their tables.
    Unchecked, an id outside its table fails deep in the lookup on a CPU (reads
    zeros on a GPU) and another mask value silently changes the attention bias."""
    input_ids, input_mask, segment_ids = (features[k] for k in PACKED_KEYS)
    binary = _assert_all(
      tf.logical_or(tf.equal(input_mask, 0), tf.equal(input_mask, 1)),
      input_mask,
      f"{signature}: every input_mask value must be 0 or 1 (1 for a real token, 0 for "
      "padding); first value outside it:",
    )
    # Checked once the mask is known to be 0s and 1s: a mask of 2s is named
    # for its values, not for its first position.
    with tf.control_dependencies([binary]):
      starts = _assert_all(
        tf.equal(input_mask[:, 0], 1),
        tf.range(tf.shape(input_mask)[0]),
        f"{signature}: input_mask must start with 1 in every row (its [CLS] token); first "
        "row without it:",
      )
    vocab_size = self.tokenizer.vocab_size
    checks = [
      binary,
      starts,
      _assert_all(
        tf.logical_and(input_ids >= 0, input_ids < vocab_size),
        input_ids,
        f"{signature}: every input_ids value must be in [0, {vocab_size}) (this export's "
        "vocab size); first id outside it:",
      ),
    ]
    type_vocab_size = self._type_vocab_size()
    if type_vocab_size is not None:
      checks.append(
        _assert_all(
          tf.logical_and(segment_ids >= 0, segment_ids < type_vocab_size),
          segment_ids,
          f"{signature}: every segment_ids value must be in [0, {type_vocab_size}) (this "
          "export's type_vocab_size); first value outside it:",
        )
      )
    with tf.control_dependencies(checks):
      return {k: tf.identity(v) for k, v in features.items()}

  def _run(self, features):
    outputs = dict(self.serve(features))
    for k in PACKED_KEYS:
      outputs[k] = tf.identity(features[k])
    return outputs

  @tf.function
  def serve_text(self, text_a, text_b):
    # A served request is not held to the signature's [batch] shape: a
    # 2-D batch would fail deep in the tokenizer. (Its rank is folded to the
    # signature's at trace time; its size and first dimension are not.) A
    # single string has no first dimension: -1 stands in, so it is named too.
    checks = [
      tf.debugging.assert_equal(
        tf.size(text),
        tf.concat([tf.shape(text), [-1]], axis=0)[0],
        message=f"serving_default: {name} must be a 1-D batch of texts ([batch]; one text "
        "goes in a batch of one)",
      )
      for name, text in (("text_a", text_a), ("text_b", text_b))
    ]
    with tf.control_dependencies(checks):
      text_a, text_b = tf.identity(text_a), tf.identity(text_b)
    return self._run(self.pack_text(text_a, text_b))

  @tf.function
  def serve_ids(self, input_ids, input_mask, segment_ids):
    # A signature's input shape is not enforced on a served request: a
    # longer row would otherwise fail deep in the graph, a 1-D one in a slice
    # naming no input. The rank is folded to 2 at trace time (tf.rank and
    # assert_rank see 2), so it is read from the shape: padded with -1s, its
    # entries 1:3 are [length, -1] only for [batch, length]. One check per
    # input covers both (a separate rank check added ~24 ops per request).
    s = self.max_seq_length
    checks = [
      tf.debugging.Assert(
        tf.reduce_all(tf.equal(tf.concat([tf.shape(tensor), [-1, -1, -1]], 0)[1:3], [s, -1])),
        [
          f"serve_ids: {name} must have {s} positions per row (this export's max_seq_length; "
          "pad shorter rows with 0s, or export with a larger --max-seq-length) and be 2-D, "
          f"[batch, {s}] (one row per text; one text goes in a batch of one); got shape",
          tf.shape(tensor),
        ],
      )
      for name, tensor in (("input_ids", input_ids), ("input_mask", input_mask),
                           ("segment_ids", segment_ids))
    ]  # fmt: skip
    with tf.control_dependencies(checks):
      features = {
        k: tf.identity(v) for k, v in zip(PACKED_KEYS, (input_ids, input_mask, segment_ids))
      }
    return self._run(self._check_values(SIGNATURE_IDS, features))

  @tf.function
  def serve_examples(self, examples):
    return self._run(self._check_values(SIGNATURE_EXAMPLES, self.parse_examples(examples)))

  def get_signatures(self):
    """`{signature name: concrete function}` for `tf.saved_model.save`."""
    if not self.jit_compile:
      self._store_joined_qkv_weights()
    if self.constant_weights:
      self._hold_constant_weights()
    # The class's tf.functions bound to this module (their traces are kept
    # per module), also once `_pin` below has shadowed them.
    serve_text, serve_ids, serve_examples = (
      getattr(type(self), name).__get__(self, type(self)) for name in SIGNATURE_METHODS
    )
    signatures = {
      SIGNATURE_TEXT: serve_text.get_concrete_function(
        **{k: tf.TensorSpec([None], tf.string, name=k) for k in ("text_a", "text_b")}
      ),
      SIGNATURE_IDS: serve_ids.get_concrete_function(
        **{k: tf.TensorSpec([None, self.max_seq_length], tf.int32, name=k) for k in PACKED_KEYS}
      ),
      SIGNATURE_EXAMPLES: serve_examples.get_concrete_function(
        examples=tf.TensorSpec([None], tf.string, name="examples")
      ),
    }
    self._pin(signatures)
    return signatures

  def _networks(self):
    """The Keras networks the module serves (its Layer attributes)."""
    return [n for n in vars(self).values() if isinstance(n, keras.Layer)]

  def _attention_layers(self):
    """Every `ElectraTransformerLayer` of the served networks, once."""
    layers = {}
    for network in self._networks():
      for layer in keras_compat.flatten_layers(network):
        if isinstance(layer, ElectraTransformerLayer):
          layers.setdefault(id(layer), layer)
    return list(layers.values())

  def _hold_constant_weights(self):
    """Reads the networks' weights once, for `_constant_weights_network`: matrices
    as arrays, vectors (biases, LayerNorm) as variables of the module; the joined
    query/key/value weights are not read again."""
    held = self._constants
    if held.matrices:
      return  # read once: the traced signatures hold these values
    seen = {
      id(w)
      for layer, _, _ in self._joined_qkv.entries
      for p in (layer.query, layer.key, layer.value)
      for w in p.weights
    }
    for network in self._networks():
      for weight in network.weights:
        if id(weight) in seen:
          continue
        seen.add(id(weight))
        value = np.asarray(weight)
        if value.ndim >= 2:
          held.matrices.append((weight, value))
        else:
          name = weight.path.replace("/", "_")
          held.vectors.append((weight, tf.Variable(value, trainable=False, name=name)))
    size = sum(value.nbytes for _, value in held.matrices)
    size += sum(np.asarray(kernel).nbytes for _, kernel, _ in self._joined_qkv.entries)
    if size > CONSTANT_WEIGHTS_MAX_BYTES:
      raise ValueError(
        f"constant_weights (--constant-weights): the served weights take {size / 2**30:.2f} GiB, "
        "and as constants they go into saved_model.pb, whose protocol buffer TensorFlow caps at "
        f"2 GiB (this export allows {CONSTANT_WEIGHTS_MAX_BYTES / 2**30:.2f} GiB); export without it"
      )
    self.constant_weights_vectors = [copy for _, copy in held.vectors]

  def _trackable_children(self, save_type="checkpoint", **kwargs):
    children = super()._trackable_children(save_type, **kwargs)
    if getattr(self, "constant_weights", False):
      # The networks' variables stay out: their values are in the graph.
      children = {k: v for k, v in children.items() if not isinstance(v, keras.Layer)}
    return children

  def _store_joined_qkv_weights(self):
    """Joins each attention layer's query, key and value kernels (and biases)
    once, into variables the export holds, so that a request does not copy them
    (`layer_utils.joined_qkv_weights`); a later call refreshes their values. With
    `constant_weights` the joined kernel is an array (a constant once traced)."""
    joined = self._joined_qkv
    if joined.entries:
      if not self.constant_weights:
        for layer, *variables in joined.entries:
          for variable, value in zip(variables, layer.joined_qkv_weights()):
            variable.assign(value)
      return
    for layer in self._attention_layers():
      kernel, bias = layer.joined_qkv_weights()
      if self.constant_weights:
        kernel = np.asarray(kernel)
      else:
        kernel = tf.Variable(kernel, trainable=False, name=f"{layer.name}/joined_qkv_kernel")
      bias = tf.Variable(bias, trainable=False, name=f"{layer.name}/joined_qkv_bias")
      joined.entries.append((layer, kernel, bias))
    self.joined_qkv_weights = [
      v for _, kernel, bias in joined.entries for v in (kernel, bias) if isinstance(v, tf.Variable)
    ]

  def _pin(self, signatures):
    """Makes the module's signature methods the traced functions themselves:
    `tf.saved_model.save` would trace every `tf.function` it finds once more
    (half as long again); traced functions are saved as they are."""
    for name, key in zip(SIGNATURE_METHODS, SIGNATURES):
      setattr(self, name, signatures[key])


class DiscriminatorServingModule(ElectraServingModule):
  """Replaced-token detection and the encoder's representations.

  Outputs: `rtd_logits`, `rtd_probs` (sigmoid, the probability that a token
  was replaced; `run_pretraining.py:PretrainingModel._get_discriminator_output`) `[B, S]`, `cls_output` `[B, H]` (the `[CLS]` row,
  there is no pooler) and `sequence_output` `[B, S, H]`.

  Args:
    discriminator: an `ElectraDiscriminator` with its head.
    tokenizer, max_seq_length, vocab_asset: see `ElectraServingModule`.
    **options: `name`, `real_length`, `length_multiple`, `jit_compile`,
      `constant_weights` of `ElectraServingModule`.
  """

  def __init__(self, discriminator, tokenizer, max_seq_length, vocab_asset=None, **options):
    super().__init__(tokenizer, max_seq_length, vocab_asset, **options)
    if getattr(discriminator, "head", None) is None:
      raise ValueError(
        "the discriminator has no replaced-token-detection head (an ElectraBackbone: an "
        "encoder only); export a model that has one"
      )
    self.discriminator = discriminator

  def serve(self, features):
    length = self.encoder_length(features["input_mask"])
    out = self.run_network(
      lambda x: self.discriminator(x, training=False), self.trim(features, length)
    )
    logits = _float32(out["logits"])
    return {
      "rtd_logits": self.pad_back(logits, length),
      "rtd_probs": self.pad_back(tf.sigmoid(logits), length),
      "cls_output": _float32(out["pooled_output"]),
      "sequence_output": self.pad_back(_float32(out["sequence_output"]), length),
    }


class MaskedLMServingModule(ElectraServingModule):
  """The generator as a masked LM: top-k tokens at the `[MASK]` positions.

  The positions are those of the `[MASK]` id in `input_ids` (within the
  mask), at most `max_predictions` per row, in order. In the text signature
  the literal `[MASK]` in the text marks them.

  Outputs: `masked_lm_positions` int32 `[B, N]` (0 in unused slots),
  `masked_lm_weights` float32 `[B, N]` (1 for a real slot), `top_k_ids`
  int32 and `top_k_probs` float32 `[B, N, K]` (softmax over the vocab),
  with N = min(max_predictions, S).

  Args:
    generator: an `ElectraGenerator` (one tower or Electric's two towers).
    tokenizer, max_seq_length, vocab_asset: see `ElectraServingModule`.
    top_k: K.
    max_predictions: N before capping at S.
    **options: `name`, `real_length`, `length_multiple`, `jit_compile`,
      `constant_weights` of `ElectraServingModule`.
  """

  def __init__(
    self,
    generator,
    tokenizer,
    max_seq_length,
    vocab_asset=None,
    top_k=5,
    max_predictions=20,
    **options,
  ):
    super().__init__(tokenizer, max_seq_length, vocab_asset, **options)
    vocab_size = generator.bert_config["vocab_size"]
    if not 1 <= top_k <= vocab_size:
      raise ValueError(f"top_k={top_k}; expected 1..{vocab_size} (the vocab size)")
    if max_predictions < 1:
      raise ValueError(f"max_predictions={max_predictions}; expected at least 1")
    self.generator = generator
    self.top_k = int(top_k)
    self.num_predictions = min(int(max_predictions), self.max_seq_length)
    self.mask_id = tokenizer.mask_id

  def tokenize(self, text):
    pieces = tf.strings.split(text, sep=MASK_PLACEHOLDER)  # [B, P], P >= 1
    piece_ids = self.tokenizer(pieces.flat_values)  # [B*P, None]
    # Every piece but a row's last is followed by one [MASK].
    piece_index = tf.range(tf.size(pieces.flat_values, out_type=tf.int64))
    last_index = tf.gather(pieces.row_limits() - 1, pieces.value_rowids())
    n_masks = tf.cast(piece_index < last_index, tf.int64)
    masks = tf.RaggedTensor.from_row_lengths(
      tf.fill([tf.reduce_sum(n_masks)], tf.constant(self.mask_id, tf.int32)), n_masks
    )
    piece_ids = tf.concat([piece_ids.with_row_splits_dtype(tf.int64), masks], axis=1)
    return tf.RaggedTensor.from_row_splits(
      piece_ids, tf.cast(pieces.row_splits, tf.int64)
    ).merge_dims(1, 2)

  def mask_positions(self, input_ids, input_mask):
    """`([B, N] positions, [B, N] float weights)` of the `[MASK]` tokens."""
    s = tf.shape(input_ids)[1]
    index = tf.range(s)[None, :]
    is_mask = tf.equal(input_ids, self.mask_id) & tf.not_equal(input_mask, 0)
    # Masked positions sort first, in order; the rest follow.
    key = tf.sort(tf.where(is_mask, index, s + index), axis=1)[:, : self.num_predictions]
    real = key < s
    return tf.where(real, key, 0), tf.cast(real, tf.float32)

  def serve(self, features):
    # On the full rows, so that N stays N; the positions are real tokens,
    # all inside the encoder's length.
    positions, weights = self.mask_positions(features["input_ids"], features["input_mask"])
    length = self.encoder_length(features["input_mask"])
    out = self.run_network(
      lambda x, p: self.generator(x, masked_lm_positions=p, training=False),
      self.trim(features, length),
      positions,
    )
    probs = tf.nn.softmax(_float32(out["mlm_logits"]), axis=-1)
    top_probs, top_ids = tf.math.top_k(probs, k=self.top_k)
    return {
      "masked_lm_positions": positions,
      "masked_lm_weights": weights,
      "top_k_ids": tf.cast(top_ids, tf.int32),
      "top_k_probs": top_probs,
    }


class TaskHeadServingModule(ElectraServingModule):
  """One fine-tuned task head of a `FinetuningModel`.

  Outputs by head type:
  - classification: `logits` `[B, C]`, `probabilities` (softmax) `[B, C]`,
    `predictions` int32 `[B]` (argmax);
  - regression: `predictions` `[B]` in the task's normalised units (the original's
    `finetune/classification/classification_tasks.py`: STS scores ÷ 5);
  - tagging: `logits` `[B, S, C]` and `predictions` int32 `[B, S]` at every
    token (the original scores each word's first sub-token; the client picks
    those). Its text signature packs `[CLS] a [SEP]` with segment ids 1, as
    the tagging featuriser does (`finetune/tagging/tagging_tasks.py`), and ignores `text_b`;
  - QA: `start_logits` `[B, S]`, `start_top_log_probs` / `start_top_index`
    `[B, K]`, `end_top_log_probs` / `end_top_index` `[B, K, K]` (joint
    prediction; else `end_logits` `[B, S]`), `answerable_logit` `[B]`
    (when the head has the answerable classifier). Its text signature takes
    the question as `text_a` (cut to `max_query_length` tokens) and the
    context as `text_b`, cut to fit one window (no doc-stride windows).

  Args:
    model: a `FinetuningModel`.
    task_name: which of its heads to serve.
    tokenizer, max_seq_length, vocab_asset: see `ElectraServingModule`.
    max_query_length: the QA question budget (the original's 64).
    **options: `name`, `real_length`, `length_multiple`, `jit_compile`,
      `constant_weights` of `ElectraServingModule`.
  """

  def __init__(
    self,
    model,
    task_name,
    tokenizer,
    max_seq_length,
    vocab_asset=None,
    max_query_length=64,
    **options,
  ):
    super().__init__(tokenizer, max_seq_length, vocab_asset, **options)
    heads = {h.task_name: h for h in model.heads}
    if task_name not in heads:
      raise ValueError(f"task {task_name!r} is not a head of the model; it has {sorted(heads)}")
    self.model = model
    self.task_name = task_name
    self.head = heads[task_name]
    self.max_query_length = int(max_query_length)
    if isinstance(self.head, ClassificationHead):
      self.kind = "regression" if self.head.regression else "classification"
    elif isinstance(self.head, TaggingHead):
      self.kind = "tagging"
    elif isinstance(self.head, QAHead):
      self.kind = "qa"
    else:
      raise ValueError(f"unsupported head type {type(self.head).__name__} for task {task_name!r}")

  def pack_text(self, text_a, text_b):
    if self.kind == "tagging":
      return text_preprocessor.pack_tagging(
        self.tokenizer, self.tokenize(text_a), self.max_seq_length
      )
    if self.kind == "qa":
      question, context = self._tokenize_both(text_a, text_b)
      return text_preprocessor.pack_question_context(
        self.tokenizer, question, context, self.max_seq_length, self.max_query_length
      )
    return super().pack_text(text_a, text_b)

  def serve(self, features):
    # The QA beam takes the top K positions, so it needs at least K.
    minimum = self.head.beam_size if self.kind == "qa" else 1
    length = self.encoder_length(features["input_mask"], minimum)
    out = self.run_network(self._encode_and_predict, self.trim(features, length))
    if self.kind == "classification":
      logits = _float32(out["logits"])
      return {
        "logits": logits,
        "probabilities": tf.nn.softmax(logits, axis=-1),
        "predictions": tf.cast(tf.argmax(logits, axis=-1), tf.int32),
      }
    if self.kind == "regression":
      return {"predictions": _float32(out["predictions"])}
    if self.kind == "tagging":
      logits = self.pad_back(_float32(out["logits"]), length)
      return {"logits": logits, "predictions": tf.cast(tf.argmax(logits, axis=-1), tf.int32)}
    outputs = {
      "start_logits": self.pad_back(_float32(out["start_logits"]), length, QA_MASKED_LOGIT)
    }
    if self.head.joint_prediction:
      outputs.update(
        start_top_log_probs=_float32(out["start_top_log_probs"]),
        start_top_index=tf.cast(out["start_top_index"], tf.int32),
        end_top_log_probs=_float32(out["end_top_log_probs"]),
        end_top_index=tf.cast(out["end_top_index"], tf.int32),
      )
    else:
      outputs["end_logits"] = self.pad_back(_float32(out["end_logits"]), length, QA_MASKED_LOGIT)
    if self.head.answerable_classifier:
      outputs["answerable_logit"] = _float32(out["answerable_logit"])
    return outputs

  def _encode_and_predict(self, features):
    encoded = self.model.encoder(features, training=False)
    head_features = dict(features)
    head_features.update(self.head.prediction_features(features))
    return self.head(encoded["sequence_output"], head_features, training=False)
