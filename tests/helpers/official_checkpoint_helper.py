"""Test helpers: the original's checkpoint names written out independently of
`electra_tf.models.official_names`, and a writer of name-based TF1 checkpoints."""

import os

import numpy as np
import tensorflow as tf


def _dense_shapes(scope, n_in, n_out):
  return {f"{scope}/kernel": (n_in, n_out), f"{scope}/bias": (n_out,)}


def _layer_norm_shapes(scope, width):
  return {f"{scope}/gamma": (width,), f"{scope}/beta": (width,)}


def spec_encoder_shapes(scope, h, f, num_layers, embedding_width):
  """Spec the variable names of the original's checkpoints block pattern plus the optional `embeddings_project`."""
  shapes = {}
  if embedding_width != h:
    shapes.update(_dense_shapes(f"{scope}/embeddings_project", embedding_width, h))
  for i in range(num_layers):
    p = f"{scope}/encoder/layer_{i}"
    for part in ("query", "key", "value"):
      shapes.update(_dense_shapes(f"{p}/attention/self/{part}", h, h))
    shapes.update(_dense_shapes(f"{p}/attention/output/dense", h, h))
    shapes.update(_layer_norm_shapes(f"{p}/attention/output/LayerNorm", h))
    shapes.update(_dense_shapes(f"{p}/intermediate/dense", h, f))
    shapes.update(_dense_shapes(f"{p}/output/dense", f, h))
    shapes.update(_layer_norm_shapes(f"{p}/output/LayerNorm", h))
  return shapes


def spec_embedding_shapes(scope, vocab, width, positions, types):
  p = f"{scope}/embeddings"
  return {
    f"{p}/word_embeddings": (vocab, width),
    f"{p}/position_embeddings": (positions, width),
    f"{p}/token_type_embeddings": (types, width),
    **_layer_norm_shapes(f"{p}/LayerNorm", width),
  }


def spec_head_shapes(scope, in_width, width, vocab):
  return {
    **_dense_shapes(f"{scope}/dense", in_width, width),
    **_layer_norm_shapes(f"{scope}/LayerNorm", width),
    f"{scope}/output_bias": (vocab,),
  }


def spec_checkpoint_shapes(layout, V, H, L, I, E, Hg, Lg, Ig, P=512, T=2):
  """Model variables of a pre-training checkpoint, the variable names of the original's checkpoints–8.3.

  layout: "default", "untied_embeddings", "tied", "mlm", "uniform" or
  "electric". `E` None means H.
  """
  E = H if E is None else E
  shapes = spec_embedding_shapes("electra", V, E, P, T)
  shapes.update(spec_encoder_shapes("electra", H, I, L, E))
  disc_head = {
    **_dense_shapes("discriminator_predictions/dense", H, H),
    **_dense_shapes("discriminator_predictions/dense_1", H, 1),
  }
  if layout == "default":
    shapes.update(spec_encoder_shapes("generator", Hg, Ig, Lg, E))
    shapes.update(spec_head_shapes("generator_predictions", Hg, E, V))
    shapes.update(disc_head)
  elif layout == "untied_embeddings":
    shapes.update(spec_embedding_shapes("generator", V, Hg, P, T))
    shapes.update(spec_encoder_shapes("generator", Hg, Ig, Lg, Hg))
    shapes.update(spec_head_shapes("generator_predictions", Hg, Hg, V))
    shapes.update(disc_head)
  elif layout == "tied":
    shapes.update(spec_head_shapes("generator_predictions", H, E, V))
    shapes.update(disc_head)
  elif layout == "mlm":
    shapes.update(spec_head_shapes("generator_predictions", H, E, V))
  elif layout == "uniform":
    shapes.update(disc_head)
  elif layout == "electric":
    shapes.update(spec_encoder_shapes("generator_ltr", Hg, Ig, Lg, E))
    shapes.update(spec_encoder_shapes("generator_rtl", Hg, Ig, Lg, E))
    shapes.update(spec_head_shapes("cloze_predictions", 2 * Hg, E, V))
    shapes.update(disc_head)
  else:
    raise ValueError(layout)
  return shapes


def random_values(shapes, seed=0):
  rng = np.random.default_rng(seed)
  return {n: rng.normal(size=s).astype(np.float32) for n, s in shapes.items()}


def write_name_based_checkpoint(
  prefix, tensors, with_slots=True, global_step=7, checkpoint_file=True
):
  """Writes `tensors` (name → array) as a TF1 name-based checkpoint, adding
  `/adam_m`, `/adam_v` slots and `global_step` as the original does."""
  tensors = dict(tensors)
  if with_slots:
    for name, value in list(tensors.items()):
      tensors[name + "/adam_m"] = np.zeros_like(value)
      tensors[name + "/adam_v"] = np.ones_like(value)
  if global_step is not None:
    tensors["global_step"] = np.int64(global_step)
  names = sorted(tensors)
  tf.raw_ops.SaveV2(
    prefix=str(prefix),
    tensor_names=names,
    shape_and_slices=[""] * len(names),
    tensors=[tf.constant(tensors[n]) for n in names],
  )
  if checkpoint_file:
    directory = os.path.dirname(str(prefix))
    with open(os.path.join(directory, "checkpoint"), "w") as f:
      f.write(f'model_checkpoint_path: "{os.path.basename(str(prefix))}"\n')
  return names
