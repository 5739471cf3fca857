"""Each private Keras/TF API in `keras_compat` still exists and does what
electra_tf relies on. A failure here after a Keras or TensorFlow upgrade names
the API that moved."""

import inspect

import keras
import numpy as np
import tensorflow as tf

from electra_tf.text.vocab import train_sentencepiece
from electra_tf.utils import keras_compat


def test_autocast_scope_reads_variables_in_their_own_dtype():
  keras.mixed_precision.set_global_policy("mixed_bfloat16")
  layer = keras.layers.Dense(2)
  layer.build((None, 3))
  with keras_compat.autocast_scope("bfloat16"):
    assert keras.ops.convert_to_tensor(layer.kernel).dtype == tf.bfloat16
  with keras_compat.autocast_scope(None):
    assert keras.ops.convert_to_tensor(layer.kernel).dtype == tf.float32


def test_flatten_layers_lists_nested_layers():
  inner = keras.Sequential([keras.layers.Dense(2, name="a"), keras.layers.Dense(2, name="b")])
  outer = keras.Sequential([inner, keras.layers.Dense(1, name="c")])
  outer.build((None, 3))
  names = [layer.name for layer in keras_compat.flatten_layers(outer, include_self=False)]
  assert {"a", "b", "c"} <= set(names)
  assert outer in keras_compat.flatten_layers(outer, include_self=True)
  assert outer not in keras_compat.flatten_layers(outer, include_self=False)


def test_optimizer_update_hooks_apply_a_step(two_replica_strategy):
  with two_replica_strategy.scope():
    variable = keras.Variable(np.ones([2], np.float32))
    optimizer = keras.optimizers.SGD(learning_rate=0.5)
    optimizer.build([variable])

  @tf.function
  def step():
    def replica_fn():
      grads_and_vars = [(tf.ones([2]), variable.value)]
      summed = keras_compat.all_reduce_sum_gradients(optimizer, grads_and_vars)
      keras_compat.apply_distributed_update(optimizer, summed, optimizer.learning_rate)

    two_replica_strategy.run(replica_fn)

  step()
  # Two replicas each contribute a gradient of 1: the sum is 2, times lr 0.5.
  np.testing.assert_allclose(variable.numpy(), [0.0, 0.0])


def test_auto_trackable_and_trackable_children_hook():
  root = keras_compat.AutoTrackable()
  root.v = tf.Variable(1.0)
  assert "v" in dict(getattr(root, keras_compat.TRACKABLE_CHILDREN_HOOK)())
  hook = getattr(keras.layers.Layer, keras_compat.TRACKABLE_CHILDREN_HOOK)
  assert "save_type" in inspect.signature(hook).parameters


def test_protos_are_importable():
  metadata = keras_compat.summary_pb2.SummaryMetadata(
    plugin_data=keras_compat.summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
  )
  assert metadata.plugin_data.plugin_name == "scalars"
  graph = keras_compat.trackable_object_graph_pb2.TrackableObjectGraph()
  graph.nodes.add()
  assert len(graph.nodes) == 1


def test_keras_hub_transformer_encoder_parts():
  import keras_hub

  layer = keras_hub.layers.TransformerEncoder(intermediate_dim=12, num_heads=2)
  layer.build((None, None, 8))
  parts = keras_compat.keras_hub_transformer_encoder_parts(layer)
  assert tuple(parts["query"].kernel.shape) == (8, 2, 4)
  assert tuple(parts["attention_output"].kernel.shape) == (2, 4, 8)
  assert tuple(parts["intermediate"].kernel.shape) == (8, 12)
  assert tuple(parts["output"].kernel.shape) == (12, 8)
  assert {id(v) for part in parts.values() for v in part.weights} == {id(v) for v in layer.weights}


def test_freeze_bakes_variables_into_constants():
  v = tf.Variable([2.0, 3.0])
  fn = tf.function(lambda x: {"y": x * v}).get_concrete_function(tf.TensorSpec([2], tf.float32))
  frozen = keras_compat.freeze(fn)
  v.assign([5.0, 7.0])  # the frozen function keeps the values it was frozen with
  ops = {op.type for op in frozen.graph.get_operations()}
  assert "ReadVariableOp" not in ops and not frozen.captured_inputs
  np.testing.assert_array_equal(frozen(tf.constant([1.0, 1.0]))[0].numpy(), [2.0, 3.0])


def test_no_private_paths_outside_the_compat_module():
  """`keras.src`, `tf.__internal__` and `tensorflow.core` appear only in
  keras_compat, so an upgrade has one place to mend."""
  import pathlib

  root = pathlib.Path(keras_compat.__file__).resolve().parents[1]
  offenders = []
  for path in root.rglob("*.py"):
    if path.name == "keras_compat.py":
      continue
    text = path.read_text()
    for needle in (
      "keras.src",
      "tf.__internal__",
      "tensorflow.core",
      "tensorflow.python",
      "._flatten_layers(",
      "._distribution_strategy",
    ):
      if needle in text:
        offenders.append(f"{path.relative_to(root)}: {needle}")
  assert not offenders, offenders


def test_loss_tracker_and_unscale_loss_for_distribution(two_replica_strategy):
  model = keras.Sequential([keras.layers.Dense(1)])
  model.compile(optimizer="sgd", loss="mse")
  assert isinstance(keras_compat.loss_tracker(model), keras.metrics.Mean)
  assert float(keras_compat.unscale_loss_for_distribution(tf.constant(3.0))) == 3.0
  with two_replica_strategy.scope():
    assert float(keras_compat.unscale_loss_for_distribution(tf.constant(3.0))) == 6.0


def test_sentencepiece_model_survives_set_random_seed():
  tokenizer = keras_compat.sentencepiece_tokenizer(
    train_sentencepiece(["Guten Morgen, Köln"] * 20, 30), tf.int32
  )
  traced = tf.function(tokenizer.tokenize)
  text = tf.constant(["Morgen Köln"])
  expected = tokenizer.tokenize(text).to_list()
  keras.utils.set_random_seed(1)  # clears the eager kernels
  assert tokenizer.tokenize(text).to_list() == expected
  assert tokenizer.tokenize_with_offsets(text)[0].to_list() == expected
  assert traced(text).to_list() == expected


def _failed_read(tmp_path):
  """A checkpoint with values nothing will claim (a slot), read into a layer
  of another shape: the read raises."""
  saved = keras.layers.Dense(3)
  saved.build((None, 2))
  extra = tf.Variable(tf.zeros(4))  # stands for an optimizer slot
  prefix = tf.train.Checkpoint(layer=saved, slot=extra).write(str(tmp_path / "ckpt"))
  other = keras.layers.Dense(5)
  other.build((None, 2))
  try:
    tf.train.Checkpoint(layer=other).read(prefix)
  except (ValueError, tf.errors.OpError) as e:
    return e
  raise AssertionError("the read of another shape did not raise")


def test_quiet_failed_restore_silences_the_unrestored_values_warnings(tmp_path, caplog):
  import gc  # pylint: disable=import-outside-toplevel

  def unrestored_warnings(quiet):
    caplog.clear()
    error = _failed_read(tmp_path)
    if quiet:
      keras_compat.quiet_failed_restore(error)
    del error
    gc.collect()
    return [r for r in caplog.records if "unrestored values" in r.getMessage()]

  with caplog.at_level("WARNING"):
    assert unrestored_warnings(quiet=False)  # what the helper is for
    assert not unrestored_warnings(quiet=True)
