"""The official names/shapes the model maps to equal the original's real
checkpoint listings for ELECTRA-Small and Small++ (the variable names of the original's checkpoints)."""

import pytest

from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models import ElectraPretrainer
from electra_tf.models import official_names
from electra_tf.optimization import factory as optimizer_factory


def _read_listing(path):
  """`{name: shape}` of a `tf.train.list_variables` listing, without optimizer
  slots and global_step."""
  shapes = {}
  for line in path.read_text().splitlines():
    if not line.strip() or line.startswith("#"):
      continue
    name, shape, _ = line.split("\t")
    if official_names.is_non_model_entry(name):
      continue
    shapes[name] = tuple(int(d) for d in shape.strip("[]").split(",") if d.strip())
  return shapes


@pytest.mark.parametrize(
  "listing,overrides",
  [
    ("small.txt", {}),
    ("small_gen1.txt", {"generator_hidden_size": 1.0}),
  ],
)
def test_small_names_and_shapes_match_original(original_fixtures, tmp_path, listing, overrides):
  expected = _read_listing(original_fixtures / "variables" / listing)
  # The listings were written with the fixtures' 7,814-entry vocab.
  config = PretrainingConfig(
    "small", str(tmp_path), model_size="small", vocab_size=7814, **overrides
  )
  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  ours = official_names.official_shapes(official_names.official_name_map(pretrainer))
  assert sorted(set(expected) - set(ours)) == []
  assert sorted(set(ours) - set(expected)) == []
  assert ours == expected
  # Every model weight has an official name (nothing is left unmapped).
  mapped = {id(v) for v in official_names.official_name_map(pretrainer).values()}
  assert mapped == {id(v) for v in pretrainer.weights}


def test_tiny_listing_matches(original_fixtures, tmp_path):
  import json

  expected = _read_listing(original_fixtures / "variables" / "tiny.txt")
  hparams = json.loads((original_fixtures / "models" / "tiny_hparams.json").read_text())
  hparams.pop("pretrain_tfrecords")
  pretrainer = ElectraPretrainer.from_pretraining_config(
    PretrainingConfig("tiny", str(tmp_path), **hparams)
  )
  ours = official_names.official_shapes(official_names.official_name_map(pretrainer))
  assert ours == expected


def test_keras_path_map_is_the_inverse(tmp_path):
  config = PretrainingConfig(
    "t",
    str(tmp_path),
    vocab_size=50,
    embedding_size=8,
    model_hparam_overrides={"hidden_size": 16, "num_hidden_layers": 1},
  )
  name_map = official_names.official_name_map(ElectraPretrainer.from_pretraining_config(config))
  reverse = optimizer_factory.keras_path_map(name_map)
  assert len(reverse) == len(name_map)
  for path, name in reverse.items():
    assert name_map[name].path == path
