"""Layer-wise learning-rate decay of the original's fine-tuning (`model/optimization.py:create_optimizer`).

Each official variable name's rate is `lr * decay ** exponent`, the
exponent `n + 2 - depth` with embeddings at depth 0, `encoder/layer_<k>` at
k+1 and `task_specific` at n+2: the top layer gets decay² (the original's
off-by-one). `fixed=True` gives it decay¹ and the embeddings decay^(n+1).
"""


def layer_depths(num_layers, fixed=False):
  """Substring key → exponent, the original's table (`model/optimization.py:create_optimizer`).

  Args:
    num_layers: n, the number of transformer layers.
    fixed: without the original's off-by-one.

  Returns:
    Dict from a substring of a variable name to the exponent of the decay.

  Example:
  >>> layer_depths(12)["encoder/layer_11/"], layer_depths(12)["/embeddings/"]
  (2, 14)
  """
  offset = 1 if fixed else 2
  top = num_layers + offset
  exponents = {"/embeddings/": top, "/embeddings_project/": top}
  for k in range(num_layers):
    exponents[f"encoder/layer_{k}/"] = top - (k + 1)
  exponents["task_specific/"] = 0
  return exponents


def layerwise_exponents(variable_names, num_layers, fixed=False):
  """The decay exponent of each official variable name.

  Args:
    variable_names: iterable of official names.
    num_layers: n, the encoder depth.
    fixed: see the module docstring.

  Returns:
    Dict name → exponent.

  Raises:
    ValueError: a name matches no key (as in the original) or several.
  """
  table = layer_depths(num_layers, fixed)
  exponents = {}
  for name in variable_names:
    # "/<name>", so that top-level names match; keys end with "/", so
    # `encoder/layer_1/` does not match layer 11.
    matches = [key for key in table if key in "/" + name]
    if not matches:
      raise ValueError(
        f"No learning rate specified for variable {name!r}; expected it to contain "
        "'/embeddings/', '/embeddings_project/', 'encoder/layer_<k>/' (k < "
        f"{num_layers}) or 'task_specific/'"
      )
    if len(matches) > 1:
      raise ValueError(f"Variable {name!r} matches several layer-wise keys: {matches}")
    exponents[name] = table[matches[0]]
  return exponents


def layerwise_lr_multipliers(variable_names, num_layers, layerwise_lr_decay_power, fixed=False):
  """Name → learning-rate multiplier `decay ** exponent`.

  Args:
    variable_names: iterable of official names.
    num_layers: n.
    layerwise_lr_decay_power: the decay; <= 0 disables layer-wise rates
      (all multipliers 1), as in the original.
    fixed: see the module docstring.

  Example:
  >>> m = layerwise_lr_multipliers(["electra/encoder/layer_1/output/dense/bias",
  ...                               "task_specific/cola/dense/kernel"], 2, 0.5)
  >>> m["electra/encoder/layer_1/output/dense/bias"], m["task_specific/cola/dense/kernel"]
  (0.25, 1.0)
  """
  if layerwise_lr_decay_power <= 0:
    return {name: 1.0 for name in variable_names}
  return {
    name: float(layerwise_lr_decay_power) ** exponent
    for name, exponent in layerwise_exponents(variable_names, num_layers, fixed).items()
  }
