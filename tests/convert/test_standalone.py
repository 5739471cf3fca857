"""The discriminator or the generator alone as a `.keras` model
(`electra_tf.convert.standalone`): round trips of each part with
what is left out listed, the original's tiny outputs, and encoder-only
checkpoints."""

import keras
import numpy as np
import pytest

from electra_tf import convert
from tests.helpers.conversion import DIMS
from tests.helpers.conversion import read_all
from tests.helpers.conversion import write_layout
from tests.helpers.official_checkpoint_helper import random_values
from tests.helpers.official_checkpoint_helper import spec_embedding_shapes
from tests.helpers.official_checkpoint_helper import spec_encoder_shapes
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint


def _assert_part_round_trip(source, report, keras_path, back_dir):
  """A part converted to `.keras`: whatever is not converted is listed
  (other towers, heads, global_step), and writing it back gives the
  converted entries bit for bit, plus global_step."""
  original, _ = read_all(source)
  assert sorted(report["converted"] + report["not_converted"]) == sorted(original)
  back = convert.keras_to_official(keras_path, back_dir)
  written, _ = read_all(back["output"])
  assert set(written) == set(report["converted"]) | {"global_step"}
  for n in report["converted"]:
    assert written[n].tobytes() == original[n].tobytes(), n


@pytest.mark.parametrize("name", ["default", "mlm", "electric", "uniform"])
def test_discriminator_part_round_trip(tmp_path, name):
  source = write_layout(tmp_path / "official", name, with_slots=False)
  report = convert.official_to_keras(source, str(tmp_path / "d.keras"), part="discriminator")
  assert all(
    n.startswith("electra/") or n.startswith("discriminator_predictions/")
    for n in report["converted"]
  )
  _assert_part_round_trip(source, report, tmp_path / "d.keras", tmp_path / "back")


@pytest.mark.parametrize("name", ["default", "untied_embeddings", "tied_generator", "electric"])
def test_generator_part_round_trip(tmp_path, name):
  source = write_layout(tmp_path / "official", name, with_slots=False)
  report = convert.official_to_keras(source, str(tmp_path / "g.keras"), part="generator")
  assert not any(n.startswith("discriminator_predictions/") for n in report["converted"])
  _assert_part_round_trip(source, report, tmp_path / "g.keras", tmp_path / "back")


def test_generator_part_of_uniform_checkpoint_is_an_error(tmp_path):
  source = write_layout(tmp_path / "official", "uniform", with_slots=False)
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
