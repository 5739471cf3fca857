"""Test helpers for the checkpoint converter: the original's checkpoints at
small sizes in every layout (pre-training and fine-tuned, with or without
Adam slots), read back whole, compared bit for bit and listed like the
original's variable listings; and random encoder inputs."""

import numpy as np
import tensorflow as tf

from tests.helpers.official_checkpoint_helper import random_values
from tests.helpers.official_checkpoint_helper import spec_checkpoint_shapes
from tests.helpers.official_checkpoint_helper import spec_embedding_shapes
from tests.helpers.official_checkpoint_helper import spec_encoder_shapes
from tests.helpers.official_checkpoint_helper import spec_head_shapes
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint

# Small dims: V, H, L, I, E; generator Hg = H / 4 (Ig = 4 Hg), Lg = L.
DIMS = dict(V=40, H=16, L=2, I=48, Hg=4, Lg=2, Ig=16, P=32)


# BertConfig fields of the transformer the round-trip tests build.
TINY_TRANSFORMER = dict(
  hidden_size=DIMS["H"],
  num_hidden_layers=DIMS["L"],
  num_attention_heads=2,
  intermediate_size=DIMS["I"],
)


# name → (the original's layout, E, dims override, what inference must find)
LAYOUTS = {
  "default": ("default", 8, {}, {"generator_hidden_size": 0.25}),
  "small_plus_plus": ("default", 8, {"Hg": 16, "Ig": 64}, {"generator_hidden_size": 1.0}),
  "e_equals_h": ("default", None, {}, {"embedding_size": 16}),
  "untied_embeddings": ("untied_embeddings", 8, {}, {"untied_generator_embeddings": True}),
  "tied_generator": ("tied", 8, {}, {"untied_generator": False}),
  "mlm": ("mlm", 8, {}, {"electra_objective": False}),
  "uniform": ("uniform", 8, {}, {"uniform_generator": True}),
  "electric": ("electric", 8, {}, {"electric_objective": True, "two_tower_generator": True}),
  "half_generator_layers": ("default", 8, {"Lg": 1}, {"generator_layers": 0.5}),
  "electric_untied_embeddings": (
    "electric_untied",
    8,
    {},
    {"electric_objective": True, "untied_generator_embeddings": True},
  ),
}


def layout_shapes(name):
  layout, embedding_size, dims, _ = LAYOUTS[name]
  d = dict(DIMS, **dims)
  if layout != "electric_untied":
    return spec_checkpoint_shapes(layout, E=embedding_size, **d)
  # The original's `run_pretraining.py:PretrainingModel` (Electric two-tower generator): each tower has its own embeddings (width Hg, no projection);
  # the cloze head maps 2·Hg to the LTR tower's embedding width Hg.
  shapes = spec_checkpoint_shapes("uniform", E=embedding_size, **d)
  for tower in ("generator_ltr", "generator_rtl"):
    shapes.update(spec_embedding_shapes(tower, d["V"], d["Hg"], d["P"], 2))
    shapes.update(spec_encoder_shapes(tower, d["Hg"], d["Ig"], d["Lg"], d["Hg"]))
  shapes.update(spec_head_shapes("cloze_predictions", 2 * d["Hg"], d["Hg"], d["V"]))
  return shapes


def write_layout(directory, name, with_slots=True, global_step=123, seed=0):
  values = random_values(layout_shapes(name), seed=seed)
  prefix = directory / "model.ckpt-123"
  directory.mkdir(parents=True, exist_ok=True)
  if with_slots:
    # Distinct slot values (not the helper's zeros and ones), so a slot
    # swapped with another would be caught.
    rng = np.random.default_rng(seed + 1)
    for n, value in list(values.items()):
      for suffix in ("/adam_m", "/adam_v"):
        values[n + suffix] = rng.random(value.shape).astype(np.float32)
  write_name_based_checkpoint(prefix, values, with_slots=False, global_step=global_step)
  return prefix


def read_all(prefix):
  reader = tf.train.load_checkpoint(str(prefix))
  dtypes = reader.get_variable_to_dtype_map()
  return {n: reader.get_tensor(n) for n in dtypes}, dtypes


def assert_bit_exact(expected_prefix, actual_prefix):
  """Same names, shapes, dtypes and bytes for every entry."""
  expected, expected_dtypes = read_all(expected_prefix)
  actual, actual_dtypes = read_all(actual_prefix)
  assert sorted(set(expected) - set(actual)) == []
  assert sorted(set(actual) - set(expected)) == []
  assert expected_dtypes == actual_dtypes
  for name, value in expected.items():
    assert actual[name].shape == value.shape, name
    assert actual[name].dtype == value.dtype, name
    assert actual[name].tobytes() == value.tobytes(), name


def checkpoint_listing(prefix):
  dtypes = tf.train.load_checkpoint(str(prefix)).get_variable_to_dtype_map()
  return sorted((n, tuple(s), dtypes[n].name) for n, s in tf.train.list_variables(str(prefix)))


def fixture_listing(path):
  entries = []
  for line in path.read_text().splitlines():
    if line and not line.startswith("#"):
      name, shape, dtype = line.split("\t")
      entries.append(
        (name, tuple(int(d) for d in shape.strip("[]").split(",") if d.strip()), dtype)
      )
  return sorted(entries)


def encoder_features(vocab, batch, length, padded_from, second_segment_from, seed):
  """`(rng, features)`: random `input_ids`, the second example padded from
  `padded_from`, segment 1 from `second_segment_from`; `rng` draws the rest."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(0, vocab, size=(batch, length)).astype("int32")
  mask = np.ones_like(ids)
  mask[1, padded_from:] = 0
  segments = np.zeros_like(ids)
  segments[:, second_segment_from:] = 1
  return rng, {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def spec_task_head_shapes(task, kind, H, n=None):
  """A task's head variables as the variable names of the original's fine-tuned checkpoints lists them."""
  p = f"task_specific/{task}"

  def dense(name, n_in, n_out):
    return {f"{p}/{name}/kernel": (n_in, n_out), f"{p}/{name}/bias": (n_out,)}

  if kind in ("classification", "regression", "tagging"):
    return dense("dense", H, n)
  if kind == "qa":  # joint_prediction, answerable_classifier, answerable_uses_start_logits
    return {
      **dense("dense", H, 1),
      **dense("qa_hidden", 2 * H, 512),
      **dense("dense_1", 512, 1),
      **dense("dense_2", 2 * H, 512),
      **dense("dense_3", 512, 1),
    }
  if kind == "qa_no_joint":  # joint_prediction=False
    return {
      **dense("dense", H, 1),
      **dense("dense_1", H, 1),
      **dense("dense_2", 2 * H, 512),
      **dense("dense_3", 512, 1),
    }
  if kind == "qa_plain_answerable":  # answerable_uses_start_logits=False
    return {
      **dense("dense", H, 1),
      **dense("qa_hidden", 2 * H, 512),
      **dense("dense_1", 512, 1),
      **dense("dense_2", H, 1),
    }
  raise ValueError(kind)


def finetuned_shapes(tasks, E=8):
  """Encoder (H=16, L=2, E=8 so with a projection) plus the heads of `tasks`:
  `{task: (kind, num_labels)}`."""
  d = DIMS
  shapes = spec_embedding_shapes("electra", d["V"], E, d["P"], 2)
  shapes.update(spec_encoder_shapes("electra", d["H"], d["I"], d["L"], E))
  for task, (kind, n) in tasks.items():
    shapes.update(spec_task_head_shapes(task, kind, d["H"], n))
  return shapes


def write_finetuned(directory, tasks, with_slots=False, global_step=42, seed=0, shapes=None):
  directory.mkdir(parents=True, exist_ok=True)
  prefix = directory / f"model.ckpt-{global_step or 0}"
  values = random_values(shapes or finetuned_shapes(tasks), seed=seed)
  write_name_based_checkpoint(prefix, values, with_slots=with_slots, global_step=global_step)
  return prefix
