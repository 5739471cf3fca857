"""Publishing to Hugging Face transformers (`convert_checkpoint --to huggingface`)
and reading its directories back: transformers' ElectraForPreTraining /
ElectraForMaskedLM and tokenizer against electra_tf, and bit-exact
Hugging Face -> electra_tf -> official round trips."""

import ast
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import convert
from electra_tf import convert_checkpoint
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.interop import huggingface
from electra_tf.models import ElectraPretrainer
from electra_tf.models import official_names
from electra_tf.text import wordpiece as tokenization
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.conftest import REPO_ROOT
from tests.helpers import interop
from tests.helpers import reference_hard_text
from tests.helpers.official_checkpoint_helper import spec_checkpoint_shapes
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint

TOLERANCE = 1e-5
SMALL = dict(V=50, H=32, L=2, I=64, E=16, Hg=8, Lg=2, Ig=32, P=64)


def _vocab(directory, size):
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(size - 5)]
  path = directory / "vocab.txt"
  path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  return str(path)


def _official(directory, layout="default", seed=0, **dims):
  """A random name-based checkpoint of `layout` (weights scaled like trained
  ones) and hparams giving its attention heads."""
  d = dict(SMALL, **dims)
  shapes = spec_checkpoint_shapes(layout, **d)
  rng = np.random.default_rng(seed)
  tensors = {
    n: (n.endswith("/gamma") + 0.1 * rng.normal(size=s)).astype(np.float32)
    for n, s in shapes.items()
  }
  directory.mkdir(parents=True)
  write_name_based_checkpoint(directory / "model.ckpt-7", tensors, with_slots=True)
  hparams = {"model_hparam_overrides": {"num_attention_heads": 4}}
  return str(directory), json.dumps(hparams), tensors


def _publish(source, output, part, vocab_file, hparams=None, to="huggingface"):
  argv = ["--input", str(source), "--output", str(output), "--to", to, "--part", part]
  if vocab_file is not None:
    argv += ["--vocab-file", str(vocab_file)]
  if hparams is not None:
    argv += ["--hparams", str(hparams)]
  assert convert_checkpoint.main(argv) == 0
  return str(output)


def _electra_tf_logits(pretrainer, feats, positions):
  disc = pretrainer.discriminator(feats)["logits"]
  gen = pretrainer.generator(feats, masked_lm_positions=positions)["mlm_logits"]
  return np.asarray(disc), np.asarray(gen)


def _hf_logits(directory, part, feats, positions):
  _, out = interop.transformers_logits(huggingface.ARCHITECTURES[part], directory, feats)
  if part == huggingface.PART_GENERATOR:
    out = np.take_along_axis(out, positions[:, :, None].astype(np.int64), axis=1)
  return out


def _assert_logits_close(pretrainer, disc_dir, gen_dir, feats, positions):
  disc, gen = _electra_tf_logits(pretrainer, feats, positions)
  real = feats["input_mask"].astype(bool)
  hf_disc = _hf_logits(disc_dir, huggingface.PART_DISCRIMINATOR, feats, positions)
  hf_gen = _hf_logits(gen_dir, huggingface.PART_GENERATOR, feats, positions)
  assert np.abs(hf_disc - disc)[real].max() < TOLERANCE
  assert np.abs(hf_gen - gen).max() < TOLERANCE
  # The comparison can fail: the logits vary across positions.
  assert disc[real].std() > 1e-4 and gen.std() > 1e-4


def test_names_follow_the_table():
  assert (
    huggingface.hf_name("generator/encoder/layer_1/intermediate/dense/kernel")
    == "electra.encoder.layer.1.intermediate.dense.weight"
  )
  assert (
    huggingface.hf_name("electra/embeddings/LayerNorm/gamma")
    == "electra.embeddings.LayerNorm.weight"
  )
  assert huggingface.hf_name("generator_predictions/output_bias") == "generator_lm_head.bias"
  assert huggingface.hf_name("generator_predictions/LayerNorm/beta") == (
    "generator_predictions.LayerNorm.bias"
  )
  with pytest.raises(ValueError, match="cloze_predictions/output_bias"):
    huggingface.hf_name("cloze_predictions/output_bias")


@pytest.mark.parametrize("untied_embeddings", [False, True])
def test_names_and_shapes_are_transformers_own(tmp_path, untied_embeddings):
  transformers, _ = interop.require_transformers()
  config = PretrainingConfig(
    "m",
    str(tmp_path),
    vocab_size=40,
    embedding_size=8,
    untied_generator_embeddings=untied_embeddings,
    model_hparam_overrides={"hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 64},
  )
  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  pretrainer.build()
  for part in (huggingface.PART_DISCRIMINATOR, huggingface.PART_GENERATOR):
    electra_part = huggingface.pretrainer_part(pretrainer, part)
    written = huggingface.hf_tensors(electra_part.tensors)
    hf_config = transformers.ElectraConfig(**huggingface.hf_config(electra_part))
    model = getattr(transformers, huggingface.ARCHITECTURES[part])(hf_config)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    expected.pop("generator_lm_head.weight", None)  # tied to the word embeddings
    assert {k: v.shape for k, v in written.items()} == expected


def test_tiny_fixture_matches_transformers(original_fixtures, tmp_path):
  hparams = str(original_fixtures / "models" / "tiny_hparams.json")
  source = original_fixtures / "models" / "tiny"
  vocab = original_fixtures / "vocab.txt"
  disc_dir = _publish(source, tmp_path / "d", "discriminator", vocab, hparams)
  gen_dir = _publish(source, tmp_path / "g", "generator", vocab, hparams)
  config = json.loads((tmp_path / "g" / "config.json").read_text())
  assert (config["hidden_size"], config["embedding_size"], config["num_attention_heads"]) == (
    16,
    32,
    1,
  )
  assert config["hidden_act"] == "gelu" and config["layer_norm_eps"] == 1e-12
  pretrainer, _, _, _ = convert.load_official_pretrainer(source, hparams)
  golden = np.load(original_fixtures / "golden" / "tiny.npz")
  feats = {k: golden[k] for k in ("input_ids", "input_mask", "segment_ids")}
  positions = golden["masked_lm_positions"]
  _assert_logits_close(pretrainer, disc_dir, gen_dir, feats, positions)
  # And against the original's own outputs.
  real = golden["input_mask"].astype(bool)
  hf_disc = _hf_logits(disc_dir, "discriminator", feats, positions)
  assert np.abs(hf_disc - golden["disc_logits"])[real].max() < TOLERANCE
  masked = dict(feats, input_ids=golden["masked_input_ids"])
  hf_gen = _hf_logits(gen_dir, "generator", masked, positions)
  assert np.abs(hf_gen - golden["gen_mlm_logits"]).max() < TOLERANCE


@pytest.mark.slow
def test_trained_model_matches_transformers(tmp_path):
  model_dir, hparams, vocab = interop.trained_run(tmp_path / "run")
  hparams_json = json.dumps(hparams)
  # No --vocab-file: the run's <data_dir>/vocab.txt is found from its model dir.
  disc_dir = _publish(model_dir, tmp_path / "d", "discriminator", None, hparams_json)
  assert (tmp_path / "d" / "vocab.txt").read_text() == vocab.read_text()
  gen_dir = _publish(model_dir, tmp_path / "g", "generator", vocab, hparams_json)
  # electra_tf's own view of the checkpoint, through the official converter.
  official = convert.keras_to_official(model_dir, tmp_path / "o", hparams=hparams)
  pretrainer, _, _, _ = convert.load_official_pretrainer(official["output"], hparams)
  feats, positions = interop.features(hparams["vocab_size"], length=hparams["max_seq_length"])
  _assert_logits_close(pretrainer, disc_dir, gen_dir, feats, positions)


def test_layouts_match_transformers(tmp_path):
  """Untied generator embeddings and E = H (no embeddings_project)."""
  for name, layout, dims in (
    ("untied", "untied_embeddings", {}),
    ("e_is_h", "default", {"E": None}),
  ):
    source, hparams, _ = _official(tmp_path / name / "ckpt", layout, **dims)
    vocab = _vocab(tmp_path / name, SMALL["V"])
    disc_dir = _publish(source, tmp_path / name / "d", "discriminator", vocab, hparams)
    gen_dir = _publish(source, tmp_path / name / "g", "generator", vocab, hparams)
    pretrainer, _, _, _ = convert.load_official_pretrainer(source, hparams)
    feats, positions = interop.features(SMALL["V"])
    _assert_logits_close(pretrainer, disc_dir, gen_dir, feats, positions)


def _tensors_of(prefix):
  reader = tf.train.load_checkpoint(prefix)
  return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


def _assert_round_trip_bit_exact(hf_dir, tmp_path):
  from safetensors.numpy import load_file

  keras_path = str(tmp_path / "model.keras")
  assert convert_checkpoint.main(["--input", hf_dir, "--output", keras_path]) == 0
  report = convert.keras_to_official(keras_path, tmp_path / "official")
  official = _tensors_of(report["output"])
  assert official.pop("global_step") == 0
  stored = load_file(os.path.join(hf_dir, huggingface.WEIGHTS_FILE))
  stored.pop("generator_lm_head.weight", None)
  assert sorted(huggingface.hf_name(n) for n in official) == sorted(stored)
  for name, value in official.items():
    hf_value = stored[huggingface.hf_name(name)]
    expected = hf_value.T if huggingface.is_transposed(name) else hf_value
    assert value.dtype == np.float32 and value.tobytes() == np.ascontiguousarray(expected).tobytes()
  return official


@pytest.mark.parametrize("part", ["discriminator", "generator"])
def test_round_trip_of_published_model_is_bit_exact(tmp_path, part):
  source, hparams, original = _official(tmp_path / "ckpt")
  vocab = _vocab(tmp_path, SMALL["V"])
  hf_dir = _publish(source, tmp_path / "hf", part, vocab, hparams)
  official = _assert_round_trip_bit_exact(hf_dir, tmp_path)
  # ... and equal to the checkpoint it was published from, name for name.
  for name, value in official.items():
    assert value.tobytes() == original[name].tobytes(), name


@pytest.mark.parametrize("architecture", ["ElectraForPreTraining", "ElectraForMaskedLM"])
def test_round_trip_of_transformers_model_is_bit_exact(tmp_path, architecture):
  transformers, torch = interop.require_transformers()
  torch.manual_seed(0)
  config = transformers.ElectraConfig(
    vocab_size=30,
    embedding_size=8,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=40,
  )
  getattr(transformers, architecture)(config).save_pretrained(str(tmp_path / "hf"))
  _assert_round_trip_bit_exact(str(tmp_path / "hf"), tmp_path)


MODES = [(True, True), (True, False), (False, True)]  # lower+strip, lower only, cased


def _hf_tokenizer_ids(tmp_path, tokens, lower, strip, lines):
  transformers, _ = interop.require_transformers()
  directory = tmp_path / f"tok_{int(lower)}{int(strip)}"
  directory.mkdir()
  huggingface.write_hf_tokenizer_files(str(directory), tokens, lower, strip, 512)
  tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory))
  # tokenizer.json runs unchanged; the settings stay visible.
  assert type(tokenizer).__name__ == "TokenizersBackend"
  assert tokenizer.init_kwargs["do_lower_case"] == lower
  # transformers' own ELECTRA class still loads the directory (with its own,
  # approximate, normaliser).
  assert transformers.ElectraTokenizerFast.from_pretrained(str(directory)).do_lower_case == lower
  return tokenizer(lines, add_special_tokens=False)["input_ids"]


@pytest.mark.parametrize("lower,strip", MODES)
def test_tokenizer_matches_on_the_lee_corpus(original_fixtures, tmp_path, lower, strip):
  vocab_file = str(original_fixtures / "vocab.txt")
  tokens = huggingface.read_vocab(vocab_file, 7814)
  lines = (original_fixtures / "corpus" / "lee.txt").read_text("utf-8").splitlines()
  lines += ["Café DÉJÀ vu, naïve 東京 straße", "tab\there\u00a0nbsp", "a\u0001b ﬁne", "x[y]z"]
  ours = ElectraTokenizer(vocab_file=vocab_file, do_lower_case=lower, strip_accents=strip)
  expected = ours(tf.constant(lines)).to_list()
  got = _hf_tokenizer_ids(tmp_path, tokens, lower, strip, lines)
  mismatches = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
  assert not mismatches, mismatches[:3]
  assert sum(len(row) for row in expected) > 50000


def test_tokenizer_matches_on_the_hard_lines(tmp_path):
  """The hard-text fixture (every P* code point, Greek sigma contexts, words
  over 100 and 200 characters, `[MASK]` in raw text, unassigned and recent
  code points...): the same ids in every mode."""
  lines = reference_hard_text.hard_lines()
  lines += ["\U0001d16d\U0001d165 a\u0301\U0001d16d\u0316\U0001d165 \U0001d15f\U0001d172"]
  lines += ["ΑΣ\u0301 ΑΣ\x00Β ΑΣ\U000e0001 ΑΣ\ue000 x\U00011938 [MASK][SEP]x"]
  basics = [tokenization.BasicTokenizer(lower, strip) for lower, strip in MODES]
  tokens = reference_hard_text.make_vocab(lines, basics)
  vocab_file = tmp_path / "vocab.txt"
  vocab_file.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  for lower, strip in MODES:
    ours = ElectraTokenizer(vocab_file=str(vocab_file), do_lower_case=lower, strip_accents=strip)
    expected = ours(tf.constant(lines)).to_list()
    got = _hf_tokenizer_ids(tmp_path, tokens, lower, strip, lines)
    mismatches = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
    assert not mismatches, (lower, strip, len(mismatches), mismatches[:3])
    assert sum(len(row) for row in expected) > 5000
    assert sum(row.count(ours.unk_id) for row in expected) > 10


@pytest.mark.parametrize("lower,strip", MODES)
def test_tokenizer_json_normalises_every_code_point_as_electra_tf(tmp_path, lower, strip):
  """Each code point alone (between spaces): `tokenizer.json`'s normaliser and
  pre-tokeniser give electra_tf's words; this is where Rust's Unicode tables
  (case mapping, NFD) would show a difference from Python's."""
  interop.require_transformers()
  from tokenizers import Tokenizer

  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]
  directory = tmp_path / "tok"
  directory.mkdir()
  huggingface.write_hf_tokenizer_files(str(directory), tokens, lower, strip, 512)
  backend = Tokenizer.from_file(str(directory / huggingface.TOKENIZER_FILE))
  ours = ElectraTokenizer(vocabulary=tokens, do_lower_case=lower, strip_accents=strip)
  cps = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
  lines = [" ".join(map(chr, cps[i : i + 2000])) for i in range(0, len(cps), 2000)]
  expected = ours.normalize_words(tf.constant(lines)).to_list()
  for line, words in zip(lines, expected):
    normalised = backend.normalizer.normalize_str(line)
    got = [w for w, _ in backend.pre_tokenizer.pre_tokenize_str(normalised)]
    assert got == [w.decode("utf-8") for w in words], [
      (hex(ord(c)), w) for c, w in zip(line[::2], got) if c.lower() != w
    ][:5]


def test_writes_nothing_on_bad_input(tmp_path, capsys):
  source, hparams, _ = _official(tmp_path / "ckpt")
  short_vocab = _vocab(tmp_path, SMALL["V"] - 1)
  argv = ["--input", source, "--output", str(tmp_path / "out"), "--to", "huggingface"]
  assert convert_checkpoint.main(argv + ["--vocab-file", short_vocab, "--hparams", hparams]) == 2
  assert "has 49 tokens; the model's word embeddings have 50 rows" in capsys.readouterr().err
  assert not os.path.exists(tmp_path / "out")
  assert convert_checkpoint.main(argv + ["--hparams", hparams]) == 2
  assert "give --vocab-file" in capsys.readouterr().err
  (tmp_path / "full").mkdir()
  (tmp_path / "full" / "x").write_text("keep")
  argv[3] = str(tmp_path / "full")
  vocab = _vocab(tmp_path, SMALL["V"])
  assert convert_checkpoint.main(argv + ["--vocab-file", vocab]) == 2
  assert "exists and is not empty" in capsys.readouterr().err


def test_reading_rejects_what_electra_tf_cannot_compute(tmp_path, capsys):
  source, hparams, _ = _official(tmp_path / "ckpt")
  vocab = _vocab(tmp_path, SMALL["V"])
  hf_dir = _publish(source, tmp_path / "hf", "discriminator", vocab, hparams)
  config_path = os.path.join(hf_dir, "config.json")
  config = json.loads(open(config_path).read())
  out = str(tmp_path / "m.keras")
  open(config_path, "w").write(json.dumps(dict(config, hidden_act="gelu_new")))
  assert convert_checkpoint.main(["--input", hf_dir, "--output", out]) == 2
  assert "hidden_act 'gelu_new'" in capsys.readouterr().err
  open(config_path, "w").write(json.dumps(dict(config, num_hidden_layers=1)))
  assert convert_checkpoint.main(["--input", hf_dir, "--output", out]) == 2
  assert "unexpected ['electra.encoder.layer.1." in capsys.readouterr().err
  assert not os.path.exists(out)


def test_two_tower_generator_is_refused(tmp_path, capsys):
  source, hparams, _ = _official(tmp_path / "ckpt", "electric")
  vocab = _vocab(tmp_path, SMALL["V"])
  argv = ["--input", source, "--output", str(tmp_path / "g"), "--to", "huggingface"]
  argv += ["--part", "generator", "--vocab-file", vocab, "--hparams", hparams]
  assert convert_checkpoint.main(argv) == 2
  assert "two-tower" in capsys.readouterr().err
  assert official_names.GENERATOR_LTR_SCOPE  # the layout under test


def test_publishes_from_keras_files_and_hugging_face_dirs(tmp_path):
  """Other sources: `.keras` parts written by the converter, and a Hugging
  Face directory republished (Hugging Face -> keras-hub goes the same way)."""
  source, hparams, original = _official(tmp_path / "ckpt")
  vocab = _vocab(tmp_path, SMALL["V"])
  for part in ("discriminator", "generator"):
    keras_path = str(tmp_path / f"{part}.keras")
    convert.official_to_keras(source, keras_path, part=part, hparams=hparams)
    from_keras = _publish(keras_path, tmp_path / f"{part}_from_keras", part, vocab)
    from_hf = _publish(from_keras, tmp_path / f"{part}_from_hf", part, vocab)
    from safetensors.numpy import load_file

    scopes = ("electra/", "discriminator_predictions/")
    if part == "generator":
      scopes = ("electra/embeddings/", "generator/", "generator_predictions/")
    by_hf_name = {huggingface.hf_name(n): n for n in original if n.startswith(scopes)}
    for directory in (from_keras, from_hf):
      stored = load_file(os.path.join(directory, huggingface.WEIGHTS_FILE))
      assert sorted(stored) == sorted(by_hf_name)
      for name, value in stored.items():
        official = by_hf_name[name]
        expected = (
          original[official].T if huggingface.is_transposed(official) else original[official]
        )
        assert value.tobytes() == np.ascontiguousarray(expected).tobytes(), name
  # The tokenizer settings travel with a Hugging Face directory.
  config = json.loads((tmp_path / "generator_from_hf" / "tokenizer_config.json").read_text())
  assert config["do_lower_case"] is True and config["strip_accents"] is True


def test_electra_tf_never_imports_torch_or_transformers():
  from tests.test_module_graph import module_files

  offenders = []
  for name, path in module_files().items():
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
      if isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names]
      elif isinstance(node, ast.ImportFrom) and node.module:
        modules = [node.module]
      else:
        continue
      offenders += [f"{name}: {m}" for m in modules if m.split(".")[0] in ("torch", "transformers")]
  assert not offenders, offenders


@pytest.mark.slow
def test_publishing_needs_no_torch(tmp_path):
  """A fresh process where importing torch or transformers fails writes the
  Hugging Face directory all the same."""
  source, hparams, _ = _official(tmp_path / "ckpt")
  vocab = _vocab(tmp_path, SMALL["V"])
  argv = ["--input", source, "--output", str(tmp_path / "hf"), "--to", "huggingface"]
  argv += ["--vocab-file", vocab, "--hparams", hparams]
  # A finder that refuses the imports, rather than None in sys.modules: other
  # libraries (scipy's array-API checks) read sys.modules['torch'] when present.
  script = (
    "import sys\n"
    "class Refuse:\n"
    "  def find_spec(self, name, path=None, target=None):\n"
    "    if name.split('.')[0] in ('torch', 'transformers'):\n"
    "      raise ImportError(f'{name} is refused in this test')\n"
    "sys.meta_path.insert(0, Refuse())\n"
    "from electra_tf import convert_checkpoint\n"
    f"sys.exit(convert_checkpoint.main({argv!r}))\n"
  )
  result = subprocess.run(
    [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT
  )
  assert result.returncode == 0, result.stderr[-2000:]
  assert sorted(os.listdir(tmp_path / "hf")) == [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
  ]
