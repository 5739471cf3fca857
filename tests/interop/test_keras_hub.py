"""Publishing to keras-hub (`convert_checkpoint --to keras-hub`): the preset
loads with `ElectraBackbone.from_preset` / `ElectraTokenizer.from_preset`,
every backbone weight comes from the checkpoint (the pooler aside), and the
outputs differ from electra_tf's only by keras-hub's tanh GELU."""

import json
import shutil

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf import convert
from electra_tf import convert_checkpoint
from electra_tf.interop import huggingface
from electra_tf.interop import keras_hub as keras_hub_preset
from electra_tf.models import official_names
from electra_tf.models.electra_backbone import ElectraBackbone
from electra_tf.models.electra_discriminator import ElectraDiscriminator
from electra_tf.sources import any_format
from electra_tf.text.tokenizer import ElectraTokenizer
from electra_tf.utils import keras_compat
from tests.helpers import interop
from tests.helpers.official_checkpoint_helper import spec_checkpoint_shapes
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint

DIMS = dict(V=50, H=32, L=2, I=64, E=16, Hg=8, Lg=2, Ig=32, P=64)


def _source(tmp_path, seed=0):
  """A random official checkpoint (4 heads), its vocab and hparams."""
  shapes = spec_checkpoint_shapes("default", **DIMS)
  rng = np.random.default_rng(seed)
  tensors = {
    n: (n.endswith("/gamma") + 0.1 * rng.normal(size=s)).astype(np.float32)
    for n, s in shapes.items()
  }
  (tmp_path / "ckpt").mkdir()
  write_name_based_checkpoint(tmp_path / "ckpt" / "model.ckpt-3", tensors)
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(DIMS["V"] - 5)]
  (tmp_path / "vocab.txt").write_text("".join(t + "\n" for t in tokens))
  hparams = json.dumps({"model_hparam_overrides": {"num_attention_heads": 4}})
  return str(tmp_path / "ckpt"), str(tmp_path / "vocab.txt"), hparams


def _publish(source, output, vocab, hparams, part="discriminator"):
  argv = ["--input", source, "--output", str(output), "--to", "keras-hub", "--part", part]
  assert convert_checkpoint.main(argv + ["--vocab-file", vocab, "--hparams", hparams]) == 0
  return str(output)


def _backbone_inputs(feats):
  return {
    "token_ids": feats["input_ids"],
    "segment_ids": feats["segment_ids"],
    "padding_mask": feats["input_mask"],
  }


def _ids(batch):
  """keras-hub tokenizers return Python lists outside `tf.function`."""
  rows = batch.to_list() if hasattr(batch, "to_list") else batch
  return [[int(i) for i in row] for row in rows]


def _use_exact_gelu(backbone):
  for layer in backbone.transformer_layers:
    parts = keras_compat.keras_hub_transformer_encoder_parts(layer)
    parts["intermediate"].activation = keras.activations.gelu


def _sequence_differences(backbone, encoder_outputs, feats):
  """Max |keras-hub - electra_tf| over real tokens, with keras-hub's tanh
  GELU and with the exact GELU swapped in."""
  real = feats["input_mask"].astype(bool)
  expected = np.asarray(encoder_outputs["sequence_output"])
  approximate = np.asarray(backbone(_backbone_inputs(feats))["sequence_output"])
  _use_exact_gelu(backbone)
  outputs = backbone(_backbone_inputs(feats))
  exact = np.asarray(outputs["sequence_output"])
  pooled = np.asarray(outputs["pooled_output"])
  np.testing.assert_allclose(pooled, np.tanh(exact[:, 0]), atol=1e-6)
  return np.abs(approximate - expected)[real].max(), np.abs(exact - expected)[real].max()


@pytest.mark.parametrize("part", ["discriminator", "generator"])
def test_preset_loads_with_every_weight_from_the_checkpoint(tmp_path, part):
  source, vocab, hparams = _source(tmp_path)
  preset = _publish(source, tmp_path / "preset", vocab, hparams, part)
  backbone = keras_hub.models.ElectraBackbone.from_preset(preset)
  pretrainer, _, _, _ = convert.load_official_pretrainer(source, hparams)
  electra_part = huggingface.pretrainer_part(pretrainer, part)
  assignments = keras_hub_preset._backbone_assignments(backbone, electra_part)
  # Every backbone weight is accounted for, each once ...
  assert sorted(id(v) for v, _, _ in assignments) == sorted(id(v) for v in backbone.weights)
  for variable, name, value in assignments:
    np.testing.assert_array_equal(np.asarray(variable), value, err_msg=str(name))
  # ... and every tensor of the part's encoder is used; only heads are left.
  used = {name for _, name, _ in assignments if name is not None}
  head = "discriminator_predictions/" if part == "discriminator" else "generator_predictions/"
  assert set(electra_part.tensors) - used == {n for n in electra_part.tensors if n.startswith(head)}
  unset = [path for v, name, _ in assignments if name is None for path in [v.path]]
  assert sorted(unset) == ["pooled_dense/bias", "pooled_dense/kernel"]
  feats, _ = interop.features(DIMS["V"])
  if part == "discriminator":
    encoder_outputs = pretrainer.discriminator(feats)
  else:
    encoder_outputs = pretrainer.generator(feats)
  approximate, exact = _sequence_differences(backbone, encoder_outputs, feats)
  assert exact < 1e-5
  assert approximate > 10 * exact  # the tanh GELU is what makes the difference
  marked = (tmp_path / "preset" / keras_hub_preset.GENERATOR_MARKER_FILE).exists()
  assert marked == (part == "generator")


def test_a_generator_preset_is_never_read_as_a_discriminator(tmp_path, capsys):
  source, vocab, hparams = _source(tmp_path)
  preset = _publish(source, tmp_path / "preset", vocab, hparams, "generator")
  expected = (
    f"keras-hub preset {preset!r} holds a generator's encoder (published with --part generator)"
  )
  for read in (
    lambda: any_format.load(preset, "discriminator"),
    lambda: any_format.open_source(preset).check_starts_finetuning(),
    lambda: electra_tf.ElectraClassifier.from_checkpoint(preset, num_classes=2),
  ):
    with pytest.raises(ValueError) as e:
      read()
    assert str(e.value).startswith(expected) and "\n" not in str(e.value)
  assert any_format.open_source(preset).recorded_run() is None  # nothing to fine-tune from
  argv = ["--input", preset, "--output", str(tmp_path / "x.keras"), "--part", "discriminator"]
  assert convert_checkpoint.main(argv) == 2
  assert expected in capsys.readouterr().err


def test_tiny_fixture_gelu_difference(original_fixtures, tmp_path):
  hparams = str(original_fixtures / "models" / "tiny_hparams.json")
  source = str(original_fixtures / "models" / "tiny")
  vocab = str(original_fixtures / "vocab.txt")
  preset = _publish(source, tmp_path / "preset", vocab, hparams)
  backbone = keras_hub.models.ElectraBackbone.from_preset(preset)
  golden = np.load(original_fixtures / "golden" / "tiny.npz")
  feats = {k: golden[k] for k in ("input_ids", "input_mask", "segment_ids")}
  approximate, exact = _sequence_differences(
    backbone, {"sequence_output": golden["disc_sequence_output"]}, feats
  )
  # Measured: 1.2e-4 with keras-hub's tanh GELU, 1e-6 with the exact one
  # (docs/publish.md).
  assert 2e-5 < approximate < 1e-3
  assert exact < 5e-6


def test_tokenizer_preset_matches_on_the_lee_corpus(original_fixtures, tmp_path):
  hparams = str(original_fixtures / "models" / "tiny_hparams.json")
  vocab_file = str(original_fixtures / "vocab.txt")
  source = str(original_fixtures / "models" / "tiny")
  preset = _publish(source, tmp_path / "preset", vocab_file, hparams)
  tokenizer = keras_hub.models.ElectraTokenizer.from_preset(preset)
  assert tokenizer.lowercase and tokenizer.strip_accents
  lines = (original_fixtures / "corpus" / "lee.txt").read_text("utf-8").splitlines()
  expected = ElectraTokenizer(vocab_file=vocab_file)(tf.constant(lines)).to_list()
  got = _ids(tokenizer(tf.constant(lines)))
  mismatches = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
  assert not mismatches, mismatches[:3]


def test_cased_model_gives_a_cased_tokenizer(tmp_path):
  source, vocab, _ = _source(tmp_path)
  hparams = json.dumps(
    {"model_hparam_overrides": {"num_attention_heads": 4}, "do_lower_case": False}
  )
  preset = _publish(source, tmp_path / "preset", vocab, hparams)
  tokenizer = keras_hub.models.ElectraTokenizer.from_preset(preset)
  assert not tokenizer.lowercase and not tokenizer.strip_accents
  assert _ids(tokenizer(tf.constant(["w1 W1"]))) == [[6, 1]]


def test_preset_reads_back_bit_exact_and_a_wrong_preset_is_one_line(tmp_path, capsys):
  """electra_tf -> keras-hub preset -> electra_tf: every encoder variable
  bit-exact, through the one door and `convert_checkpoint --input <preset>`;
  a BERT preset or a corrupt weights file stops with one line (exit 2)."""
  source, vocab, hparams = _source(tmp_path)
  preset = _publish(source, tmp_path / "preset", vocab, hparams)
  pretrainer, _, _, _ = convert.load_official_pretrainer(source, hparams)
  expected = official_names.discriminator_name_map(pretrainer.discriminator, include_head=False)
  loaded = any_format.load(preset, "discriminator")
  assert isinstance(loaded.model, ElectraBackbone) and not isinstance(
    loaded.model, ElectraDiscriminator
  )
  assert keras_hub_preset.UNTRAINED_HEAD in loaded.notes
  got = official_names.discriminator_name_map(loaded.model)
  assert sorted(got) == sorted(expected)
  for name, variable in expected.items():
    np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(variable), err_msg=name)
  output = tmp_path / "encoder.keras"
  argv = ["--input", preset, "--output", str(output), "--part", "discriminator"]
  assert convert_checkpoint.main(argv) == 0
  assert (
    "keras-hub backbone preset holds no replaced-token-detection head" in capsys.readouterr().out
  )
  # Republishing a preset is refused as that, not for a --vocab-file it would not need.
  argv = ["--input", preset, "--output", str(tmp_path / "hf"), "--to", "huggingface"]
  assert convert_checkpoint.main(argv) == 2
  err = capsys.readouterr().err
  assert (
    f"{preset!r} is a keras-hub preset directory; expected" in err and "--vocab-file" not in err
  )
  feats, _ = interop.features(DIMS["V"])
  encoder = keras.saving.load_model(str(output), compile=False)
  np.testing.assert_array_equal(
    np.asarray(encoder(feats)["sequence_output"]),
    np.asarray(pretrainer.discriminator(feats)["sequence_output"]),
  )
  # Another family: a BERT backbone preset written by keras-hub itself.
  bert = str(tmp_path / "bert")
  keras_hub.models.BertBackbone(
    vocabulary_size=DIMS["V"], num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16
  ).save_to_preset(bert)
  # A corrupt one: the weights file cut short.
  corrupt = tmp_path / "corrupt"
  shutil.copytree(preset, corrupt)
  with open(corrupt / "model.weights.h5", "r+b") as f:
    f.truncate(200)
  for path, message in (
    (bert, "holds a keras_hub>BertBackbone; expected an ELECTRA backbone"),
    (str(corrupt), "model.weights.h5' does not hold this model's weights"),
  ):
    with pytest.raises(ValueError, match=message) as e:
      any_format.load(path, "discriminator")
    assert "\n" not in str(e.value)
    capsys.readouterr()
    argv = ["--input", path, "--output", str(tmp_path / "x.keras"), "--part", "discriminator"]
    assert convert_checkpoint.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err, err
  with pytest.raises(ValueError, match="a keras-hub preset holds an encoder only"):
    convert.convert(preset, str(tmp_path / "g.keras"), part="generator")
