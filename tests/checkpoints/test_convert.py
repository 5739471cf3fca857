"""The converter (`electra_tf.checkpoints.convert` and its CLI
`python -m electra_tf.convert_checkpoint`): official ↔ electra_tf in both
directions, bit-exact round trips for every layout of the original's
checkpoints, the original's variable listings, TF1 graph-mode loading, and
error messages."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import convert_checkpoint
from electra_tf.checkpoints import convert
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models import ElectraPretrainer
from electra_tf.models import official_names
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


def _layout_shapes(name):
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


def _write_layout(directory, name, with_slots=True, global_step=123, seed=0):
  values = random_values(_layout_shapes(name), seed=seed)
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


def _read_all(prefix):
  reader = tf.train.load_checkpoint(str(prefix))
  dtypes = reader.get_variable_to_dtype_map()
  return {n: reader.get_tensor(n) for n in dtypes}, dtypes


def assert_bit_exact(expected_prefix, actual_prefix):
  """Same names, shapes, dtypes and bytes for every entry."""
  expected, expected_dtypes = _read_all(expected_prefix)
  actual, actual_dtypes = _read_all(actual_prefix)
  assert sorted(set(expected) - set(actual)) == []
  assert sorted(set(actual) - set(expected)) == []
  assert expected_dtypes == actual_dtypes
  for name, value in expected.items():
    assert actual[name].shape == value.shape, name
    assert actual[name].dtype == value.dtype, name
    assert actual[name].tobytes() == value.tobytes(), name


# ----------------------------------------------------------------------------
# Shape inference
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_inference_finds_layout_and_sizes(name):
  _, embedding_size, dims, expected = LAYOUTS[name]
  config, _, _ = convert.infer_config_from_checkpoint(_layout_shapes(name))
  d = dict(DIMS, **dims)
  assert config.vocab_size == d["V"]
  assert config.embedding_size == (embedding_size or d["H"])
  assert config.model_hparam_overrides["hidden_size"] == d["H"]
  assert config.model_hparam_overrides["num_hidden_layers"] == d["L"]
  assert config.model_hparam_overrides["intermediate_size"] == d["I"]
  assert config.model_hparam_overrides["max_position_embeddings"] == d["P"]
  for key, value in expected.items():
    assert getattr(config, key) == value, key


def test_inference_of_original_small_listing(original_fixtures):
  listing = (original_fixtures / "variables" / "small_gen1.txt").read_text().splitlines()
  shapes = {}
  for line in listing:
    if line and not line.startswith("#"):
      name, shape, _ = line.split("\t")
      shapes[name] = [int(d) for d in shape.strip("[]").split(",") if d.strip()]
  config, layout, _ = convert.infer_config_from_checkpoint(shapes)
  assert layout == convert.LAYOUT_DEFAULT
  assert config.model_size == "small"
  assert config.generator_hidden_size == 1.0
  assert config.embedding_size == 128 and config.vocab_size == 7814


def test_inference_recognises_the_debug_model():
  shapes = spec_checkpoint_shapes("default", V=100, H=144, L=3, I=576, E=128, Hg=36, Lg=3, Ig=144)
  config, _, _ = convert.infer_config_from_checkpoint(shapes)
  assert config.model_hparam_overrides["num_attention_heads"] == 4
  assert config.generator_hidden_size == 0.25


def test_given_hparams_win_for_heads_and_are_checked(tmp_path):
  shapes = _layout_shapes("default")
  config, _, notes = convert.infer_config_from_checkpoint(
    shapes, {"model_hparam_overrides": {"num_attention_heads": 4}}
  )
  assert config.model_hparam_overrides["num_attention_heads"] == 4
  assert not any("attention heads" in n for n in notes)
  _, _, notes = convert.infer_config_from_checkpoint(shapes)
  assert any("attention heads" in n for n in notes)


# ----------------------------------------------------------------------------
# Official → Keras → official: bit-exact
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_round_trip_is_bit_exact_for_layout(tmp_path, name):
  source = _write_layout(tmp_path / "official", name)
  report = convert.convert(str(source), str(tmp_path / "keras"))
  assert report["not_converted"] == []
  assert report["global_step"] == 123
  # The converted hparams are saved next to the training checkpoint.
  saved = json.loads((tmp_path / "keras" / convert.HPARAMS_FILE).read_text())
  assert saved == report["hparams"]
  back = convert.convert(
    str(tmp_path / "keras"), str(tmp_path / "back"), with_optimizer_slots=False
  )
  assert any(convert.HPARAMS_FILE in n for n in back["notes"])
  # Without slots: the model tensors and global_step only.
  written, _ = _read_all(back["output"])
  original, _ = _read_all(source)
  assert set(written) == {n for n in original if not n.endswith(("/adam_m", "/adam_v"))}
  # Without the saved hparams, they are inferred from the training checkpoint.
  (tmp_path / "keras" / convert.HPARAMS_FILE).unlink()
  back = convert.convert(
    str(tmp_path / "keras"), str(tmp_path / "back_slots"), with_optimizer_slots=True
  )
  assert any("inferred from the checkpoint" in n for n in back["notes"])
  assert back["output"].endswith("model.ckpt-123")
  assert_bit_exact(source, back["output"])


def test_round_trip_without_slots_released_style(tmp_path):
  source = _write_layout(tmp_path / "official", "default", with_slots=False, global_step=None)
  report = convert.convert(str(source), str(tmp_path / "keras"))
  assert report["global_step"] is None
  assert any("no optimizer slots" in n for n in report["notes"])
  back = convert.keras_to_official(tmp_path / "keras", tmp_path / "back", hparams=report["hparams"])
  written, dtypes = _read_all(back["output"])
  original, _ = _read_all(source)
  assert set(written) == set(original) | {"global_step"}
  assert dtypes["global_step"] == tf.int64 and int(written["global_step"]) == 0
  for n, v in original.items():
    assert written[n].tobytes() == v.tobytes(), n


def test_tiny_original_round_trip_is_bit_exact(original_fixtures, tmp_path):
  hparams = original_fixtures / "models" / "tiny_hparams.json"
  source = original_fixtures / "models" / "tiny" / "model.ckpt-50"
  report = convert.official_to_keras(
    original_fixtures / "models" / "tiny", tmp_path / "keras", hparams=str(hparams)
  )
  assert report["global_step"] == 50 and report["not_converted"] == []
  back = convert.keras_to_official(
    tmp_path / "keras", tmp_path / "back", hparams=str(hparams), with_optimizer_slots=True
  )
  assert_bit_exact(source, back["output"])
  # The listing equals the original's, entry for entry.
  assert _listing(back["output"]) == _fixture_listing(original_fixtures / "variables" / "tiny.txt")


def test_run_pretraining_resumes_from_converted_checkpoint(original_fixtures, tmp_path):
  """The training checkpoint written by to-keras is what run_pretraining's
  model/optimizer restore: weights, slots and step of the original."""
  from electra_tf.checkpoints import checkpointing
  from electra_tf.training import pretraining_run

  hparams = json.loads((original_fixtures / "models" / "tiny_hparams.json").read_text())
  hparams.pop("pretrain_tfrecords")
  model_dir = tmp_path / "models" / "tiny"
  convert.official_to_keras(original_fixtures / "models" / "tiny", model_dir, hparams=hparams)
  config = PretrainingConfig("tiny", str(tmp_path), **hparams)
  model = pretraining_run.build_pretrainer(config, tf.distribute.get_strategy())
  manager = checkpointing.TrainingCheckpointManager(model, config.model_dir)
  assert manager.restore_latest() == 50
  original, _ = _read_all(original_fixtures / "models" / "tiny" / "model.ckpt-50")
  name_map = official_names.official_name_map(model)
  for name, variable in name_map.items():
    assert np.asarray(variable).tobytes() == original[name].tobytes(), name
  for name, slot in model.optimizer.official_slots(name_map).items():
    assert np.asarray(slot).tobytes() == original[name].tobytes(), name


def test_cli_runs_both_directions(original_fixtures, tmp_path, capsys):
  tiny = original_fixtures / "models" / "tiny"
  hparams = str(original_fixtures / "models" / "tiny_hparams.json")

  def run_cli(source, output, *flags):
    """`convert_checkpoint` with the tiny model's hparams; returns its stdout."""
    argv = ["--input", str(source), "--output", str(output), "--hparams", hparams, *flags]
    assert convert_checkpoint.main(argv) == 0
    return capsys.readouterr().out

  assert "global_step: 50" in run_cli(tiny, tmp_path / "k", "--direction", "to-keras")
  out = run_cli(tmp_path / "k", tmp_path / "o", "--with-optimizer-slots")
  assert "converted: 247 entries" in out and "not converted: 0 entries" in out
  assert_bit_exact(tiny / "model.ckpt-50", tmp_path / "o" / "model.ckpt-50")
  # What a .keras discriminator leaves out is listed.
  out = run_cli(tiny, tmp_path / "d.keras", "--part", "discriminator")
  assert "164 optimizer slots" in out
  assert "    generator_predictions/output_bias\n" in out and "    global_step" in out


# ----------------------------------------------------------------------------
# The written variable list equals the original's
# ----------------------------------------------------------------------------


def _listing(prefix):
  dtypes = tf.train.load_checkpoint(str(prefix)).get_variable_to_dtype_map()
  return sorted((n, tuple(s), dtypes[n].name) for n, s in tf.train.list_variables(str(prefix)))


def _fixture_listing(path):
  entries = []
  for line in path.read_text().splitlines():
    if line and not line.startswith("#"):
      name, shape, dtype = line.split("\t")
      entries.append(
        (name, tuple(int(d) for d in shape.strip("[]").split(",") if d.strip()), dtype)
      )
  return sorted(entries)


@pytest.mark.slow
@pytest.mark.parametrize(
  "listing,kwargs",
  [
    ("small.txt", {}),
    ("small_gen1.txt", {"generator_hidden_size": 1.0}),
  ],
)
def test_written_listing_equals_original_small(original_fixtures, tmp_path, listing, kwargs):
  from electra_tf.checkpoints import checkpointing

  config = PretrainingConfig("small", str(tmp_path), model_size="small", vocab_size=7814, **kwargs)
  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  pretrainer.compile(pretraining_config=config)
  checkpointing.build_optimizer(pretrainer)
  tensors, _ = convert.official_tensors(
    official_names.official_name_map(pretrainer), pretrainer.optimizer, 1000000, True
  )
  prefix = convert.write_official_checkpoint(tensors, str(tmp_path / "out"), 1000000)
  assert _listing(prefix) == _fixture_listing(original_fixtures / "variables" / listing)


# ----------------------------------------------------------------------------
# Keras → official → Keras: identical outputs
# ----------------------------------------------------------------------------


def _encoder_features(vocab, batch, length, padded_from, second_segment_from, seed):
  """`(rng, features)`: random `input_ids`, the second example padded from
  `padded_from`, segment 1 from `second_segment_from`; `rng` draws the rest."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(0, vocab, size=(batch, length)).astype("int32")
  mask = np.ones_like(ids)
  mask[1, padded_from:] = 0
  segments = np.zeros_like(ids)
  segments[:, second_segment_from:] = 1
  return rng, {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def _features(vocab, batch=2, length=9, seed=0):
  _, features = _encoder_features(vocab, batch, length, 6, 4, seed)
  features["masked_lm_positions"] = np.array([[1, 3, 5], [2, 4, 0]], "int32")
  return features


def _outputs(pretrainer, features):
  out = pretrainer(features, training=False)
  flat = {}
  for tower, values in out.items():
    for key in ("sequence_output", "mlm_logits", "logits"):
      if key in values:
        flat[f"{tower}/{key}"] = np.asarray(values[key])
  return flat


@pytest.mark.parametrize(
  "kwargs",
  [
    {},
    {"electric_objective": True, "electra_objective": False},
    {"untied_generator": False},
  ],
)
def test_keras_to_official_to_keras_gives_identical_outputs(tmp_path, kwargs):
  hparams = dict(
    vocab_size=40,
    embedding_size=8,
    model_hparam_overrides=dict(TINY_TRANSFORMER),
    **kwargs,
  )
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  keras.utils.set_random_seed(3)
  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  pretrainer.build()
  convert.write_training_checkpoint(pretrainer, config, str(tmp_path / "train"), 17)
  features = _features(40)
  expected = _outputs(pretrainer, features)

  # As run_pretraining leaves it: no hparams file; inferred from the shapes.
  report = convert.keras_to_official(tmp_path / "train", tmp_path / "official")
  assert report["global_step"] == 17
  assert any("optimizer slots" in n for n in report["not_converted"])
  convert.official_to_keras(tmp_path / "official", str(tmp_path / "p.keras"), hparams=hparams)
  restored = keras.saving.load_model(str(tmp_path / "p.keras"), compile=False)
  actual = _outputs(restored, features)
  assert sorted(actual) == sorted(expected)
  for key, value in expected.items():
    np.testing.assert_array_equal(actual[key], value, err_msg=key)


def test_mixed_precision_training_checkpoint_to_official(tmp_path):
  hparams = dict(
    vocab_size=40,
    embedding_size=8,
    mixed_precision="mixed_float16",
    model_hparam_overrides=dict(TINY_TRANSFORMER, num_hidden_layers=1),
  )
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  keras.mixed_precision.set_global_policy("mixed_float16")
  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  pretrainer.build()
  convert.write_training_checkpoint(pretrainer, config, str(tmp_path / "train"), 4)
  assert pretrainer.optimizer.__class__.__name__ == "LossScaleOptimizer"
  keras.mixed_precision.set_global_policy("float32")
  # No hparams: layout, sizes and the LossScaleOptimizer come from the checkpoint.
  report = convert.keras_to_official(
    tmp_path / "train", tmp_path / "official", with_optimizer_slots=True
  )
  assert any("loss scale" in n for n in report["not_converted"])
  written, dtypes = _read_all(report["output"])
  name_map = official_names.official_name_map(pretrainer)
  assert set(written) == (
    {"global_step"} | set(name_map) | {n + s for n in name_map for s in ("/adam_m", "/adam_v")}
  )
  assert all(d == tf.float32 for n, d in dtypes.items() if n != "global_step")
  for name, variable in name_map.items():
    assert written[name].tobytes() == np.asarray(variable).tobytes(), name


def test_load_official_pretrainer_needs_no_config(tmp_path):
  source = _write_layout(tmp_path / "official", "electric", with_slots=False)
  pretrainer, config, tensors, info = convert.load_official_pretrainer(source)
  assert info["layout"] == convert.LAYOUT_TWO_TOWER and config.electric_objective
  for name, variable in official_names.official_name_map(pretrainer).items():
    assert np.asarray(variable).tobytes() == tensors[name].tobytes(), name


def test_keras_file_to_official_round_trip(tmp_path):
  source = _write_layout(tmp_path / "official", "default", with_slots=False)
  convert.official_to_keras(source, str(tmp_path / "p.keras"))
  report = convert.convert(str(tmp_path / "p.keras"), str(tmp_path / "back"), global_step=123)
  assert report["output"].endswith("model.ckpt-123")
  assert_bit_exact(source, report["output"])


# ----------------------------------------------------------------------------
# Parts: discriminator and generator alone
# ----------------------------------------------------------------------------


def _assert_part_round_trip(source, report, keras_path, back_dir):
  """A part converted to `.keras`: whatever is not converted is listed
  (other towers, heads, global_step), and writing it back gives the
  converted entries bit for bit, plus global_step."""
  original, _ = _read_all(source)
  assert sorted(report["converted"] + report["not_converted"]) == sorted(original)
  back = convert.keras_to_official(keras_path, back_dir)
  written, _ = _read_all(back["output"])
  assert set(written) == set(report["converted"]) | {"global_step"}
  for n in report["converted"]:
    assert written[n].tobytes() == original[n].tobytes(), n


@pytest.mark.parametrize("name", ["default", "mlm", "electric", "uniform"])
def test_discriminator_part_round_trip(tmp_path, name):
  source = _write_layout(tmp_path / "official", name, with_slots=False)
  report = convert.official_to_keras(source, str(tmp_path / "d.keras"), part="discriminator")
  assert all(
    n.startswith("electra/") or n.startswith("discriminator_predictions/")
    for n in report["converted"]
  )
  _assert_part_round_trip(source, report, tmp_path / "d.keras", tmp_path / "back")


@pytest.mark.parametrize("name", ["default", "untied_embeddings", "tied_generator", "electric"])
def test_generator_part_round_trip(tmp_path, name):
  source = _write_layout(tmp_path / "official", name, with_slots=False)
  report = convert.official_to_keras(source, str(tmp_path / "g.keras"), part="generator")
  assert not any(n.startswith("discriminator_predictions/") for n in report["converted"])
  _assert_part_round_trip(source, report, tmp_path / "g.keras", tmp_path / "back")


def test_generator_part_of_uniform_checkpoint_is_an_error(tmp_path):
  source = _write_layout(tmp_path / "official", "uniform", with_slots=False)
  with pytest.raises(ValueError, match="no generator"):
    convert.official_to_keras(source, str(tmp_path / "g.keras"), part="generator")


def test_parts_of_tiny_match_the_original_outputs(original_fixtures, tmp_path):
  hparams = str(original_fixtures / "models" / "tiny_hparams.json")
  golden = dict(np.load(original_fixtures / "golden" / "tiny.npz"))
  convert.official_to_keras(
    original_fixtures / "models" / "tiny",
    str(tmp_path / "d.keras"),
    part="discriminator",
    hparams=hparams,
  )
  convert.official_to_keras(
    original_fixtures / "models" / "tiny",
    str(tmp_path / "g.keras"),
    part="generator",
    hparams=hparams,
  )
  disc = keras.saving.load_model(str(tmp_path / "d.keras"), compile=False)
  gen = keras.saving.load_model(str(tmp_path / "g.keras"), compile=False)
  out = disc(
    {
      "input_ids": golden["input_ids"],
      "input_mask": golden["input_mask"],
      "segment_ids": golden["segment_ids"],
    }
  )
  np.testing.assert_allclose(np.asarray(out["logits"]), golden["disc_logits"], atol=1e-5)
  out = gen(
    {
      "input_ids": golden["masked_input_ids"],
      "input_mask": golden["input_mask"],
      "segment_ids": golden["segment_ids"],
      "masked_lm_positions": golden["masked_lm_positions"],
    }
  )
  np.testing.assert_allclose(np.asarray(out["mlm_logits"]), golden["gen_mlm_logits"], atol=1e-5)


def test_fine_tuned_style_checkpoint_converts_encoder_and_lists_heads(tmp_path):
  d = DIMS
  shapes = spec_embedding_shapes("electra", d["V"], 8, d["P"], 2)
  shapes.update(spec_encoder_shapes("electra", d["H"], d["I"], d["L"], 8))
  shapes.update(
    {"task_specific/mnli/dense/kernel": (d["H"], 3), "task_specific/mnli/dense/bias": (3,)}
  )
  prefix = tmp_path / "ft" / "model.ckpt-5"
  (tmp_path / "ft").mkdir()
  write_name_based_checkpoint(prefix, random_values(shapes), global_step=5)
  report = convert.official_to_keras(prefix, str(tmp_path / "e.keras"), part="discriminator")
  assert report["layout"] == convert.LAYOUT_ENCODER
  assert "task_specific/mnli/dense/kernel" in report["not_converted"]
  with pytest.raises(ValueError, match="encoder only.*--part finetuned converts both"):
    convert.official_to_keras(prefix, str(tmp_path / "p.keras"), part="pretrainer")


# ----------------------------------------------------------------------------
# The written checkpoint loads in the original's TF1 graph-mode code paths
# ----------------------------------------------------------------------------


def test_written_checkpoint_restores_by_name_in_tf1_graph_mode(tmp_path):
  source = _write_layout(tmp_path / "official", "default")
  convert.convert(str(source), str(tmp_path / "keras"))
  back = convert.keras_to_official(tmp_path / "keras", tmp_path / "back", with_optimizer_slots=True)
  expected, dtypes = _read_all(source)
  model_names = [n for n in expected if not official_names.is_non_model_entry(n)]

  # Saver by name, as the original's Estimator restores its own checkpoints.
  graph = tf.Graph()
  with graph.as_default():
    variables = {
      n: tf.compat.v1.get_variable(n, shape=expected[n].shape, dtype=tf.float32)
      for n in expected
      if n != "global_step"
    }
    variables["global_step"] = tf.compat.v1.train.get_or_create_global_step()
    saver = tf.compat.v1.train.Saver(variables)
    with tf.compat.v1.Session(graph=graph) as session:
      saver.restore(session, back["output"])
      values = session.run(variables)
  for n, v in expected.items():
    assert np.array_equal(values[n], v), n

  # init_from_checkpoint with the assignment map of get_assignment_map_from_checkpoint
  # (the way fine-tuning and continued pre-training read a checkpoint).
  graph = tf.Graph()
  with graph.as_default():
    tvars = [
      tf.compat.v1.get_variable(n, shape=expected[n].shape, dtype=tf.float32) for n in model_names
    ]
    names = {v.name.split(":")[0] for v in tvars}
    assignment = {n: n for n, _ in tf.train.list_variables(str(tmp_path / "back")) if n in names}
    assert len(assignment) == len(model_names)
    tf.compat.v1.train.init_from_checkpoint(str(tmp_path / "back"), assignment)
    with tf.compat.v1.Session(graph=graph) as session:
      session.run(tf.compat.v1.global_variables_initializer())
      values = session.run({v.name.split(":")[0]: v for v in tvars})
  for n in model_names:
    assert np.array_equal(values[n], expected[n]), n


# ----------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------


def test_not_an_electra_checkpoint(tmp_path):
  (tmp_path / "c").mkdir()
  write_name_based_checkpoint(
    tmp_path / "c" / "model.ckpt-1",
    {"bert/embeddings/word_embeddings": np.zeros((4, 2), "float32")},
  )
  with pytest.raises(ValueError, match="not an ELECTRA checkpoint"):
    convert.convert(str(tmp_path / "c"), str(tmp_path / "out"))


def test_truncated_checkpoint(tmp_path):
  prefix = _write_layout(tmp_path / "official", "default")
  data = tmp_path / "official" / "model.ckpt-123.data-00000-of-00001"
  data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
  with pytest.raises(ValueError, match="truncated or corrupt"):
    convert.convert(str(prefix), str(tmp_path / "out"))


def test_missing_layer_is_reported(tmp_path):
  values = random_values(_layout_shapes("default"))
  values = {n: v for n, v in values.items() if "electra/encoder/layer_0/" not in n}
  (tmp_path / "c").mkdir()
  write_name_based_checkpoint(tmp_path / "c" / "model.ckpt-1", values)
  with pytest.raises(ValueError, match=r"layers \[0\] are missing"):
    convert.convert(str(tmp_path / "c"), str(tmp_path / "out"))


def test_missing_tensor_is_reported(tmp_path):
  values = random_values(_layout_shapes("default"))
  del values["generator_predictions/output_bias"]
  (tmp_path / "c").mkdir()
  write_name_based_checkpoint(tmp_path / "c" / "model.ckpt-1", values)
  with pytest.raises(ValueError, match="generator_predictions/output_bias"):
    convert.convert(str(tmp_path / "c"), str(tmp_path / "out"))


@pytest.mark.parametrize(
  "hparams,shown",
  [
    ({"embedding_size": 12}, "config gives [40, 12], checkpoint has [40, 8]"),
    ({"generator_hidden_size": 0.5}, "config gives [8, 8], checkpoint has [4, 4]"),
    ({"model_size": "small"}, "config gives [256, 256], checkpoint has [16, 16]"),
    ({"uniform_generator": True}, "in the checkpoint but not in the config's model"),
  ],
)
def test_mismatched_config_shows_both(tmp_path, hparams, shown):
  source = _write_layout(tmp_path / "official", "default", with_slots=False)
  with pytest.raises(ValueError) as error:
    convert.convert(str(source), str(tmp_path / "out"), hparams=json.dumps(hparams))
  message = str(error.value)
  assert shown in message
  assert str(source) in message
  assert json.dumps(hparams, sort_keys=True) in message


def test_keras_checkpoint_with_mismatched_hparams(tmp_path):
  source = _write_layout(tmp_path / "official", "default")
  report = convert.convert(str(source), str(tmp_path / "keras"))
  wrong = dict(report["hparams"], embedding_size=12)
  wrong = {k: wrong[k] for k in ("vocab_size", "embedding_size", "model_hparam_overrides")}
  with pytest.raises(ValueError) as error:
    convert.convert(str(tmp_path / "keras"), str(tmp_path / "back"), hparams=wrong)
  message = str(error.value)
  assert "does not match the model built from the hparams" in message
  assert "[40, 12]" in message and "[40, 8]" in message


def test_wrong_direction_and_options(tmp_path):
  source = _write_layout(tmp_path / "official", "default", with_slots=False)
  with pytest.raises(ValueError, match="use --direction to-keras"):
    convert.convert(str(source), str(tmp_path / "o"), direction="to-official")
  with pytest.raises(ValueError, match="only the pretrainer is written as a training"):
    convert.convert(str(source), str(tmp_path / "o"), part="discriminator")
  with pytest.raises(ValueError, match="does not exist"):
    convert.convert(str(tmp_path / "nothing"), str(tmp_path / "o"))
  with pytest.raises(ValueError, match="already holds checkpoints"):
    convert.convert(str(source), str(tmp_path / "official"))
  assert (
    convert_checkpoint.main(["--input", str(tmp_path / "nothing"), "--output", str(tmp_path / "o")])
    == 2
  )


# ----------------------------------------------------------------------------
# Fine-tuned checkpoints: electra/* plus task_specific/<task>/* (the variable names of the original's fine-tuned checkpoints)
# ----------------------------------------------------------------------------


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


def _finetuned_shapes(tasks, E=8):
  """Encoder (H=16, L=2, E=8 so with a projection) plus the heads of `tasks`:
  `{task: (kind, num_labels)}`."""
  d = DIMS
  shapes = spec_embedding_shapes("electra", d["V"], E, d["P"], 2)
  shapes.update(spec_encoder_shapes("electra", d["H"], d["I"], d["L"], E))
  for task, (kind, n) in tasks.items():
    shapes.update(spec_task_head_shapes(task, kind, d["H"], n))
  return shapes


def _write_finetuned(directory, tasks, with_slots=False, global_step=42, seed=0, shapes=None):
  directory.mkdir(parents=True, exist_ok=True)
  prefix = directory / f"model.ckpt-{global_step or 0}"
  values = random_values(shapes or _finetuned_shapes(tasks), seed=seed)
  write_name_based_checkpoint(prefix, values, with_slots=with_slots, global_step=global_step)
  return prefix


# name → (tasks, --hparams, expected (head class, attributes) per task in head order)
FINETUNED = {
  "classification": (
    {"rte": ("classification", 2)},
    None,
    [("ClassificationHead", {"num_labels": 2, "regression": False})],
  ),
  "regression": (
    {"sts": ("regression", 1)},
    None,
    [("ClassificationHead", {"num_labels": 1, "regression": True})],
  ),
  "tagging": ({"chunk": ("tagging", 5)}, None, [("TaggingHead", {"num_labels": 5})]),
  "qa": (
    {"squad": ("qa", None)},
    None,
    [
      (
        "QAHead",
        {
          "joint_prediction": True,
          "answerable_classifier": True,
          "answerable_uses_start_logits": True,
        },
      )
    ],
  ),
  "qa_no_joint": (
    {"newsqa": ("qa_no_joint", None)},
    None,
    [
      (
        "QAHead",
        {
          "joint_prediction": False,
          "answerable_classifier": True,
          "answerable_uses_start_logits": True,
        },
      )
    ],
  ),
  "qa_plain_answerable": (
    {"triviaqa": ("qa_plain_answerable", None)},
    None,
    [
      (
        "QAHead",
        {
          "joint_prediction": True,
          "answerable_classifier": True,
          "answerable_uses_start_logits": False,
        },
      )
    ],
  ),
  "multi_task": (
    {
      "mnli": ("classification", 3),
      "sts": ("regression", 1),
      "chunk": ("tagging", 7),
      "squadv1": ("qa", None),
    },
    {"task_names": ["sts", "squadv1", "mnli", "chunk"], "beam_size": 4},
    [
      ("ClassificationHead", {"num_labels": 1, "regression": True}),
      ("QAHead", {"joint_prediction": True, "beam_size": 4}),
      ("ClassificationHead", {"num_labels": 3, "regression": False}),
      ("TaggingHead", {"num_labels": 7}),
    ],
  ),
  "unknown_tasks_typed": (
    {"mytagger": ("tagging", 4), "myscore": ("regression", 1), "myqa": ("qa", None)},
    {"task_types": {"mytagger": "tagging", "myscore": "regression"}},
    [
      ("QAHead", {"joint_prediction": True}),
      ("ClassificationHead", {"num_labels": 1, "regression": True}),
      ("TaggingHead", {"num_labels": 4}),
    ],
  ),
}


@pytest.mark.parametrize("name", sorted(FINETUNED))
def test_finetuned_official_to_keras_to_official_is_bit_exact(tmp_path, name):
  tasks, hparams, expected_heads = FINETUNED[name]
  source = _write_finetuned(tmp_path / "ft", tasks)
  # No --part: a checkpoint with task heads is converted as a fine-tuning model.
  report = convert.convert(str(tmp_path / "ft"), str(tmp_path / "ft.keras"), hparams=hparams)
  assert report["part"] == "finetuned"
  assert report["not_converted"] == ["global_step"] and report["global_step"] == 42
  assert sorted(report["converted"]) == sorted(_finetuned_shapes(tasks))

  model = keras.saving.load_model(str(tmp_path / "ft.keras"), compile=False)
  assert type(model).__name__ == "FinetuningModel"
  order = hparams["task_names"] if hparams and "task_names" in hparams else sorted(tasks)
  assert model.task_names == order
  for head, (cls, attributes) in zip(model.heads, expected_heads):
    assert type(head).__name__ == cls, head.task_name
    for key, value in attributes.items():
      assert getattr(head, key) == value, (head.task_name, key)
  # The weights are the checkpoint's, under the one name map.
  original, _ = _read_all(source)
  for n, variable in model.official_name_map().items():
    assert np.asarray(variable).tobytes() == original[n].tobytes(), n

  back = convert.convert(str(tmp_path / "ft.keras"), str(tmp_path / "back"), global_step=42)
  assert back["output"].endswith("model.ckpt-42")
  assert_bit_exact(source, back["output"])


def test_finetuned_checkpoint_with_slots_lists_them(tmp_path):
  """As run_finetuning writes it: Adam slots and global_step next to the
  weights; the .keras model holds the weights, the rest is listed."""
  tasks = {"rte": ("classification", 2), "squad": ("qa", None)}
  source = _write_finetuned(tmp_path / "ft", tasks, with_slots=True, global_step=9)
  report = convert.official_to_keras(tmp_path / "ft", str(tmp_path / "ft.keras"), part="finetuned")
  original, _ = _read_all(source)
  assert sorted(report["converted"] + report["not_converted"]) == sorted(original)
  assert sorted(report["not_converted"]) == sorted(
    [n for n in original if n.endswith(("/adam_m", "/adam_v"))] + ["global_step"]
  )
  back = convert.keras_to_official(tmp_path / "ft.keras", tmp_path / "back", global_step=9)
  written, dtypes = _read_all(back["output"])
  assert set(written) == set(report["converted"]) | {"global_step"}
  assert dtypes["global_step"] == tf.int64 and int(written["global_step"]) == 9
  for n in report["converted"]:
    assert written[n].tobytes() == original[n].tobytes(), n
  with pytest.raises(ValueError, match="without optimizer state"):
    convert.keras_to_official(tmp_path / "ft.keras", tmp_path / "slots", with_optimizer_slots=True)


def _finetuning_features(vocab, batch=3, length=24, seed=0):
  rng, features = _encoder_features(vocab, batch, length, 15, 8, seed)
  features["task_id"] = np.array([0, 1, 2], "int32")
  for task in ("rte", "sts", "chunk", "squad"):
    features[task + "_eid"] = np.arange(batch, dtype="int32")
  features["rte_label_ids"] = np.array([1, 0, 1], "int32")
  features["sts_targets"] = np.array([0.2, 0.9, 0.5], "float32")
  features["chunk_labels"] = rng.integers(0, 5, size=(batch, length)).astype("int32")
  features["chunk_labels_mask"] = (rng.random((batch, length)) < 0.5).astype("float32")
  features["chunk_labeled_positions"] = rng.integers(0, length, size=(batch, length)).astype(
    "int32"
  )
  features["squad_start_positions"] = np.array([9, 10, 0], "int32")
  features["squad_end_positions"] = np.array([11, 12, 0], "int32")
  features["squad_is_impossible"] = np.array([0, 0, 1], "int32")
  return features


def _flat_outputs(outputs):
  flat = {}
  for key, value in outputs.items():
    if isinstance(value, dict):
      flat.update({f"{key}/{k}": np.asarray(v) for k, v in value.items()})
    else:
      flat[key] = np.asarray(value)
  return flat


@pytest.mark.parametrize(
  "tasks", [["rte"], ["sts"], ["chunk"], ["squad"], ["squad", "rte", "chunk", "sts"]]
)
def test_finetuned_keras_to_official_to_keras_gives_identical_outputs(tmp_path, tasks):
  from electra_tf.finetune.classification.head import ClassificationHead
  from electra_tf.finetune.model import FinetuningModel
  from electra_tf.finetune.qa.head import QAHead
  from electra_tf.finetune.tagging.head import TaggingHead

  make = {
    "rte": lambda: ClassificationHead("rte", 2, name="task_specific_rte"),
    "sts": lambda: ClassificationHead("sts", 1, regression=True, name="task_specific_sts"),
    "chunk": lambda: TaggingHead("chunk", 5, name="task_specific_chunk"),
    "squad": lambda: QAHead("squad", beam_size=3, name="task_specific_squad"),
  }
  bert = dict(TINY_TRANSFORMER, vocab_size=40, max_position_embeddings=32)
  keras.utils.set_random_seed(5)
  model = FinetuningModel(
    bert, [make[t]() for t in tasks], embedding_size=8, name="finetuning_model"
  )
  model.build()
  # Random values everywhere (heads start with zero biases), so a swapped
  # or dropped variable changes the outputs.
  rng = np.random.default_rng(1)
  for variable in model.weights:
    variable.assign(0.2 * rng.standard_normal(variable.shape).astype("float32"))
  model.save(str(tmp_path / "m.keras"))
  features = _finetuning_features(40)
  features["task_id"] = features["task_id"] % len(tasks)
  expected = _flat_outputs(model(features, training=False))

  report = convert.keras_to_official(tmp_path / "m.keras", tmp_path / "official")
  written, dtypes = _read_all(report["output"])
  # Exactly the original's names and shapes, float32, and global_step int64.
  spec = _finetuned_shapes(
    {
      "rte": ("classification", 2),
      "sts": ("regression", 1),
      "chunk": ("tagging", 5),
      "squad": ("qa", None),
    }
  )
  spec = {
    n: s for n, s in spec.items() if not n.startswith("task_specific/") or n.split("/")[1] in tasks
  }
  assert {n: tuple(v.shape) for n, v in written.items() if n != "global_step"} == spec
  assert all(d == tf.float32 for n, d in dtypes.items() if n != "global_step")
  assert dtypes["global_step"] == tf.int64

  hparams = {
    "task_names": tasks,
    "beam_size": 3,
    "model_hparam_overrides": {"num_attention_heads": 2},
  }
  convert.official_to_keras(tmp_path / "official", str(tmp_path / "back.keras"), hparams=hparams)
  restored = keras.saving.load_model(str(tmp_path / "back.keras"), compile=False)
  actual = _flat_outputs(restored(features, training=False))
  assert sorted(actual) == sorted(expected)
  for key, value in expected.items():
    np.testing.assert_array_equal(actual[key], value, err_msg=key)


def test_finetuned_unknown_task_type_is_an_error(tmp_path):
  _write_finetuned(tmp_path / "ft", {"rte": ("classification", 2), "mytask": ("tagging", 4)})
  with pytest.raises(ValueError) as error:
    convert.convert(str(tmp_path / "ft"), str(tmp_path / "m.keras"))
  message = str(error.value)
  assert "'mytask'" in message
  assert '{"task_types": {"mytask": "classification"}}' in message
  assert "classification, regression, tagging, qa" in message
  # Given its type, it converts.
  report = convert.convert(
    str(tmp_path / "ft"), str(tmp_path / "m.keras"), hparams={"task_types": {"mytask": "tagging"}}
  )
  assert dict(report["tasks"])["mytask"] == "tagging, 4 tags"
  assert (
    convert_checkpoint.main(
      ["--input", str(tmp_path / "ft"), "--output", str(tmp_path / "n.keras")]
    )
    == 2
  )


@pytest.mark.parametrize(
  "tasks,hparams,shown",
  [
    # a known regression task with three outputs
    (
      {"sts": ("classification", 3)},
      None,
      "regression task (one output) but task_specific/sts/dense/kernel is [16, 3]",
    ),
    # a QA variant forced by --hparams that the shapes contradict
    (
      {"squad": ("qa", None)},
      {"joint_prediction": False},
      "task_specific/squad/dense_1/kernel: config gives [16, 1], checkpoint has [512, 1]",
    ),
    # the encoder's size from --hparams is checked too
    (
      {"rte": ("classification", 2)},
      {"embedding_size": 12},
      "config gives [40, 12], checkpoint has [40, 8]",
    ),
    (
      {"rte": ("classification", 2), "sts": ("regression", 1)},
      {"task_names": ["rte", "mnli"]},
      "not in the checkpoint: ['mnli']; not in task_names: ['sts']",
    ),
    (
      {"rte": ("classification", 2)},
      {"task_types": {"mnli": "classification"}},
      "task_types names ['mnli'], which the checkpoint has no heads for",
    ),
    (
      {"rte": ("classification", 2)},
      {"task_types": {"rte": "ranking"}},
      "'rte' has type 'ranking'",
    ),
    (
      {"rte": ("classification", 2)},
      {"generator_hidden_size": 0.5},
      "Unknown hparam 'generator_hidden_size'",
    ),
  ],
)
def test_finetuned_mismatches_show_both(tmp_path, tasks, hparams, shown):
  _write_finetuned(tmp_path / "ft", tasks)
  with pytest.raises(ValueError) as error:
    convert.official_to_keras(
      tmp_path / "ft", str(tmp_path / "m.keras"), part="finetuned", hparams=hparams
    )
  assert shown in str(error.value)


def test_finetuned_head_with_an_extra_layer_is_an_error(tmp_path):
  shapes = _finetuned_shapes({"rte": ("classification", 2)})
  shapes.update(
    {"task_specific/rte/dense_1/kernel": (16, 2), "task_specific/rte/dense_1/bias": (2,)}
  )
  _write_finetuned(tmp_path / "ft", None, shapes=shapes)
  with pytest.raises(ValueError) as error:
    convert.official_to_keras(tmp_path / "ft", str(tmp_path / "m.keras"))
  message = str(error.value)
  assert "in the checkpoint but not in the config's model" in message
  assert "task_specific/rte/dense_1/kernel [16, 2]" in message


def test_finetuned_part_options(tmp_path):
  _write_finetuned(tmp_path / "ft", {"rte": ("classification", 2)})
  with pytest.raises(ValueError, match="written as a .keras model only"):
    convert.convert(str(tmp_path / "ft"), str(tmp_path / "dir"), part="finetuned")
  with pytest.raises(ValueError, match="already has the original's names"):
    convert.convert(str(tmp_path / "ft"), str(tmp_path / "o"), direction="to-official")
  pretraining = _write_layout(tmp_path / "official", "default", with_slots=False)
  with pytest.raises(ValueError, match="not a fine-tuned model"):
    convert.official_to_keras(pretraining, str(tmp_path / "p.keras"), part="finetuned")
  # A pre-training checkpoint with a task head is neither layout.
  shapes = dict(_layout_shapes("default"), **spec_task_head_shapes("rte", "classification", 16, 2))
  _write_finetuned(tmp_path / "mixed", None, shapes=shapes)
  with pytest.raises(ValueError, match=r"also the scopes \['discriminator_predictions', "):
    convert.official_to_keras(tmp_path / "mixed", str(tmp_path / "m.keras"))


def test_finetuned_cli_both_directions(tmp_path, capsys):
  tasks = {"rte": ("classification", 2), "chunk": ("tagging", 5), "squad": ("qa", None)}
  source = _write_finetuned(
    tmp_path / "rte,chunk,squad_model_1", tasks, with_slots=True, global_step=1000
  )
  assert (
    convert_checkpoint.main(
      [
        "--input",
        str(tmp_path / "rte,chunk,squad_model_1"),
        "--output",
        str(tmp_path / "m.keras"),
        "--hparams",
        json.dumps({"task_names": ["rte", "chunk", "squad"]}),
      ]
    )
    == 0
  )
  out = capsys.readouterr().out
  assert "  part: finetuned\n" in out
  assert "  task rte: classification, 2 labels\n" in out
  assert "  task chunk: tagging, 5 tags\n" in out
  assert "  task squad: qa (joint_prediction, answerable_classifier, " in out
  assert "optimizer slots" in out and "    global_step\n" in out
  assert (
    convert_checkpoint.main(
      [
        "--input",
        str(tmp_path / "m.keras"),
        "--output",
        str(tmp_path / "o"),
        "--global-step",
        "1000",
      ]
    )
    == 0
  )
  assert "not converted: 0 entries" in capsys.readouterr().out
  written, _ = _read_all(tmp_path / "o" / "model.ckpt-1000")
  original, _ = _read_all(source)
  assert set(written) == {n for n in original if not n.endswith(("/adam_m", "/adam_v"))}
  for n, value in written.items():
    assert value.tobytes() == original[n].tobytes(), n


def test_finetuned_encoder_of_tiny_matches_the_original_outputs(original_fixtures, tmp_path):
  """The shared fixtures hold no fine-tuned checkpoint; the nearest is the
  original's tiny pre-training checkpoint. Its encoder plus two heads, as a
  fine-tuned checkpoint: the converted model's encoder gives the original's
  discriminator outputs, and a classification head's logits are the [CLS]
  vector times the checkpoint's kernel."""
  reader = tf.train.load_checkpoint(str(original_fixtures / "models" / "tiny" / "model.ckpt-50"))
  values = {
    n: reader.get_tensor(n)
    for n in reader.get_variable_to_shape_map()
    if n.startswith("electra/") and not n.endswith(("/adam_m", "/adam_v"))
  }
  rng = np.random.default_rng(0)
  heads = dict(
    spec_task_head_shapes("mnli", "classification", 64, 3),
    **spec_task_head_shapes("squad", "qa", 64),
  )
  values.update({n: rng.normal(size=s).astype("float32") for n, s in heads.items()})
  (tmp_path / "ft").mkdir()
  write_name_based_checkpoint(
    tmp_path / "ft" / "model.ckpt-3", values, with_slots=False, global_step=3
  )
  hparams = json.loads((original_fixtures / "models" / "tiny_hparams.json").read_text())
  hparams = {k: hparams[k] for k in ("model_hparam_overrides", "embedding_size", "vocab_size")}
  report = convert.official_to_keras(
    tmp_path / "ft", str(tmp_path / "m.keras"), hparams=dict(hparams, task_names=["mnli", "squad"])
  )
  assert report["not_converted"] == ["global_step"]
  model = keras.saving.load_model(str(tmp_path / "m.keras"), compile=False)
  golden = dict(np.load(original_fixtures / "golden" / "tiny.npz"))
  batch = golden["input_ids"].shape[0]
  features = {
    "input_ids": golden["input_ids"],
    "input_mask": golden["input_mask"],
    "segment_ids": golden["segment_ids"],
    "task_id": np.zeros(batch, "int32"),
    "mnli_label_ids": np.zeros(batch, "int32"),
    "mnli_eid": np.arange(batch),
    "squad_start_positions": np.zeros(batch, "int32"),
    "squad_end_positions": np.zeros(batch, "int32"),
    "squad_is_impossible": np.zeros(batch, "int32"),
    "squad_eid": np.arange(batch),
  }
  encoder = model.encoder({k: features[k] for k in ("input_ids", "input_mask", "segment_ids")})
  np.testing.assert_allclose(
    np.asarray(encoder["sequence_output"]), golden["disc_sequence_output"], atol=1e-5
  )
  out = model(features, training=False)
  cls = golden["disc_sequence_output"][:, 0]
  expected = (
    cls @ values["task_specific/mnli/dense/kernel"] + values["task_specific/mnli/dense/bias"]
  )
  np.testing.assert_allclose(np.asarray(out["mnli"]["logits"]), expected, atol=1e-4)
  # start logits: sequence · dense kernel, −1000 outside the second segment and [CLS]
  start = np.asarray(out["squad"]["start_logits"])
  allowed = golden["input_mask"] * golden["segment_ids"]
  allowed[:, 0] = 1
  raw = (golden["disc_sequence_output"] @ values["task_specific/squad/dense/kernel"])[..., 0] + (
    values["task_specific/squad/dense/bias"][0]
  )
  np.testing.assert_allclose(start, raw + 1000.0 * (allowed - 1.0), atol=1e-3)
