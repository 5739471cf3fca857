"""Every private Keras / TensorFlow API electra_tf relies on, in one place:
`tests/utils/test_keras_compat.py` exercises each, so an upgrade that moves
one fails there instead of deep inside training or export.
"""

import uuid

from keras.src import backend as _keras_backend
from keras.src.losses import loss as _keras_loss
import tensorflow as tf
from tensorflow.core.framework import summary_pb2  # noqa: F401  (TensorBoard summary protos)
from tensorflow.core.protobuf import trackable_object_graph_pb2  # noqa: F401  (checkpoint graph)
from tensorflow.python.framework import convert_to_constants as _convert_to_constants
import tensorflow_text as tf_text
from tensorflow_text.python.ops import sentencepiece_tokenizer as _tf_text_sentencepiece

# Where a layer names extra checkpoint children (Keras 3 leaves out those in plain lists).
TRACKABLE_CHILDREN_HOOK = "_trackable_children"

# A plain trackable object (a stand-in root when restoring object-based checkpoints).
AutoTrackable = tf.__internal__.tracking.AutoTrackable


def quiet_failed_restore(error):
  """After `tf.train.Checkpoint.read` raised `error`, tells its restore
  coordinator (found in the traceback's frames) that a partial restore is
  expected, so it does not log a line for every value left unrestored."""
  frame = error.__traceback__
  while frame is not None:
    for value in list(frame.tb_frame.f_locals.values()):
      if hasattr(value, "expect_partial_attr") and hasattr(value, "_deleter"):
        value.expect_partial = True
    frame = frame.tb_next


def autocast_scope(dtype):
  """Context in which Keras variables read as `dtype` (None: their own dtype)
  instead of being autocast to the layer's compute dtype."""
  return _keras_backend.AutocastScope(dtype)


def flatten_layers(layer, include_self=True):
  """`layer` (optionally) and every layer nested inside it, depth first."""
  return list(layer._flatten_layers(include_self=include_self))  # pylint: disable=protected-access


def loss_tracker(model):
  """The `Mean` metric through which Keras' own `train_step` logs `loss`."""
  return model._loss_tracker  # pylint: disable=protected-access


def unscale_loss_for_distribution(loss):
  """What Keras' own `train_step` logs of a compiled loss under a strategy
  (Keras divides it by the replicas for the gradient sum)."""
  return _keras_loss.unscale_loss_for_distribution(loss)


def all_reduce_sum_gradients(optimizer, grads_and_vars):
  """Keras' TF optimizer's cross-replica gradient sum (a no-op on one replica)."""
  return optimizer._all_reduce_sum_gradients(grads_and_vars)  # pylint: disable=protected-access


def apply_distributed_update(optimizer, grads_and_vars, learning_rate):
  """Runs Keras' TF optimizer's per-variable update under its distribution
  strategy (in a merge call where the strategy needs one)."""
  return tf.__internal__.distribute.interim.maybe_merge_call(
    optimizer._distributed_tf_update_step,  # pylint: disable=protected-access
    optimizer._distribution_strategy,  # pylint: disable=protected-access
    grads_and_vars,
    learning_rate,
  )


def keras_hub_transformer_encoder_parts(layer):
  """The weight-holding sublayers of a built `keras_hub.layers.TransformerEncoder`
  (private attributes in keras-hub 0.32), by role."""
  attention = layer._self_attention_layer  # pylint: disable=protected-access
  return {
    "query": attention._query_dense,  # pylint: disable=protected-access
    "key": attention._key_dense,  # pylint: disable=protected-access
    "value": attention._value_dense,  # pylint: disable=protected-access
    "attention_output": attention._output_dense,  # pylint: disable=protected-access
    "attention_layer_norm": layer._self_attention_layer_norm,  # pylint: disable=protected-access
    "intermediate": layer._feedforward_intermediate_dense,  # pylint: disable=protected-access
    "output": layer._feedforward_output_dense,  # pylint: disable=protected-access
    "output_layer_norm": layer._feedforward_layer_norm,  # pylint: disable=protected-access
  }


def freeze(concrete_function):
  """`concrete_function` with every variable it reads baked in as a constant (for
  the LiteRT converter); its outputs come back as a flat list."""
  return _convert_to_constants.convert_variables_to_constants_v2(concrete_function)


class _NamedSentencepieceModel(_tf_text_sentencepiece._SentencepieceModelResource):  # pylint: disable=protected-access
  """tensorflow-text's SentencePiece model resource under a name of its own."""

  def __init__(self, model):
    self._shared_name = "electra_tf_sentencepiece_" + uuid.uuid4().hex
    super().__init__(model, None)

  def _create_resource(self):
    with tf.name_scope("SentenceTokenizerInitializer"):
      return _tf_text_sentencepiece.gen_sentencepiece_tokenizer.sentencepiece_op(
        model=self._model, shared_name=self._shared_name
      )


def sentencepiece_tokenizer(model, out_type):
  """tensorflow-text's `SentencepieceTokenizer` whose model survives
  `tf.random.set_seed`, which clears TF's eager kernels and with them the
  model resource they own: a shared name of its own keeps the model in TF's
  resource manager until the process ends.
  """
  tokenizer = tf_text.SentencepieceTokenizer(model=model, out_type=out_type)
  tokenizer._model_resource = _NamedSentencepieceModel(model)  # pylint: disable=protected-access
  return tokenizer
