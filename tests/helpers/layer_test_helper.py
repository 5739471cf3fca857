"""Shared keras-hub-style checks for this package's layers and models.

`run_layer_test` checks, for one layer class on a tiny config:
- `get_config` covers every constructor argument and `from_config` rebuilds
  an equal config;
- the layer runs and (optionally) returns the expected shapes;
- a `.keras` save/load round trip restores the config and the weights, so
  the reloaded layer gives the same outputs;
- under `mixed_float16` and `mixed_bfloat16` global policies the layer runs,
  keeps float32 variables, and the named outputs are float32.

Example:
  run_layer_test(
      ElectraDiscriminatorHead, {"hidden_size": 8},
      call_args={"hidden_states": np.ones((2, 3, 8), "float32")},
      expected_output_shape=(2, 3), float32_outputs=[None], tmp_path=tmp_path)
"""

import inspect

import keras
import numpy as np


@keras.saving.register_keras_serializable(package="electra_tf_tests")
class LayerWrapper(keras.Model):
  """A model around one layer so it can be saved as `.keras`; calls the layer
  on a dict of its call arguments (with `training=False`)."""

  def __init__(self, layer, **kwargs):
    super().__init__(**kwargs)
    if isinstance(layer, dict):
      layer = keras.saving.deserialize_keras_object(layer)
    self.inner = layer

  def build(self, input_shape=None):
    self.built = True

  def call(self, inputs):
    return _call(self.inner, inputs)

  def get_config(self):
    config = super().get_config()
    config["layer"] = keras.saving.serialize_keras_object(self.inner)
    return config


def _accepts_training(layer):
  return "training" in inspect.signature(layer.call).parameters


def _call(layer, call_args):
  """`layer(first, **rest)`: Keras builds from the first positional argument."""
  names = list(call_args)
  kwargs = {name: call_args[name] for name in names[1:]}
  if _accepts_training(layer):
    kwargs["training"] = False
  return layer(call_args[names[0]], **kwargs)


def _select(outputs, key):
  """`key` None means the output itself; otherwise a dict key."""
  return outputs if key is None else outputs[key]


def check_config_round_trip(layer_cls, init_kwargs):
  layer = layer_cls(**init_kwargs)
  config = layer.get_config()
  signature = inspect.signature(layer_cls.__init__)
  for name, param in signature.parameters.items():
    if name == "self" or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
      continue
    assert name in config, f"{layer_cls.__name__}.get_config() lacks constructor argument {name!r}"
  revived = layer_cls.from_config(config)
  assert revived.get_config() == config
  return layer


def check_saved_model_round_trip(layer, call_args, tmp_path, atol=1e-6):
  """Saves `layer` (already called) in a `.keras` file and compares outputs."""
  wrapper = LayerWrapper(layer)
  expected = wrapper(call_args)
  path = str(tmp_path / f"{layer.name}.keras")
  wrapper.save(path)
  restored = keras.saving.load_model(path)
  assert type(restored.inner) is type(layer)
  assert restored.inner.get_config() == layer.get_config()
  actual = restored(call_args)
  keras.tree.map_structure(
    lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol),
    expected,
    actual,
  )
  return restored


def check_mixed_precision(
  layer_cls,
  init_kwargs,
  call_args,
  float32_outputs=(),
  policies=("mixed_float16", "mixed_bfloat16"),
):
  """Runs the layer under each mixed policy: variables stay float32 and the
  outputs named in `float32_outputs` (None = the whole output) are float32."""
  previous = keras.mixed_precision.global_policy()
  try:
    for policy in policies:
      keras.mixed_precision.set_global_policy(policy)
      layer = layer_cls(**init_kwargs)
      outputs = _call(layer, call_args)
      for variable in layer.weights:
        assert variable.dtype == "float32", f"{policy}: {variable.path} is {variable.dtype}"
      for key in float32_outputs:
        value = _select(outputs, key)
        assert str(value.dtype) in ("float32", "<dtype: 'float32'>"), (
          f"{policy}: output {key!r} of {layer_cls.__name__} is {value.dtype}, expected float32"
        )
        assert np.all(np.isfinite(np.asarray(value))), f"{policy}: output {key!r} not finite"
  finally:
    keras.mixed_precision.set_global_policy(previous)


def run_layer_test(
  layer_cls,
  init_kwargs,
  call_args,
  tmp_path,
  expected_output_shape=None,
  float32_outputs=(),
  run_saving_test=True,
  run_mixed_precision_test=True,
):
  """All checks above; `expected_output_shape` is a shape or a dict of
  shapes (for dict outputs). Returns the (called) layer and its outputs."""
  layer = check_config_round_trip(layer_cls, init_kwargs)
  outputs = _call(layer, call_args)
  if expected_output_shape is not None:
    if isinstance(expected_output_shape, dict):
      for key, shape in expected_output_shape.items():
        assert tuple(outputs[key].shape) == tuple(shape), (key, outputs[key].shape, shape)
    else:
      assert tuple(outputs.shape) == tuple(expected_output_shape)
  if run_saving_test:
    check_saved_model_round_trip(layer, call_args, tmp_path)
  if run_mixed_precision_test:
    check_mixed_precision(layer_cls, init_kwargs, call_args, float32_outputs)
  return layer, outputs
