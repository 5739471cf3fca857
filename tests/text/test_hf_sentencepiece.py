"""Publishing with a SentencePiece vocab: the Hugging Face `tokenizer.json`
gives electra_tf's ids (single texts and pairs) on every line of German and
Japanese text, unigram and BPE, with and without lower-casing and accent
stripping; the publish command writes Hugging Face directories and keras-hub
presets whose tokenizers load and agree."""

import json
import os

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

import electra_tf
from electra_tf import convert_checkpoint
from electra_tf.interop import huggingface
from electra_tf.interop import keras_hub as keras_hub_preset
from electra_tf.text import hf_sentencepiece_tokenizer
from electra_tf.text import vocab as vocab_lib
from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from tests.helpers import interop
from tests.helpers.official_checkpoint_helper import spec_checkpoint_shapes
from tests.helpers.official_checkpoint_helper import write_name_based_checkpoint
from tests.helpers.translations import catalogue_messages

# Text that exercises what the corpus rarely holds: spelled special pieces,
# runs of spaces, tabs, full-width forms (the model's NFKC map), capitals and
# accents (the settings), Greek final sigma.
EXTRA_LINES = [
  "[CLS] [MASK] x[SEP] [PAD][UNK]",
  "  Grüße   aus\tKöln:  Straße, ÜBERGRÖẞE und 東京  ",
  "ＡＢＣ　１２３ ① ﬁne Ⅻ",
  "ΟΔΟΣ ΟΔΟΣ. Σ",
  "",
]
# (language, model type, vocab size, lower-case and strip accents)
MODELS = [
  ("de", "unigram", 400, False),
  ("de", "bpe", 400, False),
  ("ja", "unigram", 1000, False),
  ("ja", "bpe", 1000, False),
  ("de", "unigram", 400, True),
]
MAX_SEQ_LENGTH = 1024  # longer than any pair: nothing is truncated


def _model(directory, language, model_type, size, normalised):
  """(model path, lines): a small model trained on the language's
  catalogues (normalised as electra_tf would, where its settings say so)."""
  lines = [line for document in catalogue_messages(language) for line in document]
  path = directory / f"{language}_{model_type}{'_lower' if normalised else ''}.model"
  text = lines
  if normalised:
    text = [t.decode("utf-8") for t in _normalise(lines)]
  path.write_bytes(vocab_lib.train_sentencepiece(text, size, model_type))
  settings = {"do_lower_case": normalised, "strip_accents": normalised}
  vocab_lib.write_vocab_settings(str(path), settings)
  return path, lines + EXTRA_LINES


def _normalise(lines):
  from electra_tf.text.sentencepiece_tokenizer import normalize_text

  return normalize_text(tf.constant(lines), True, True).numpy().tolist()


def _electra_tf_rows(tokenizer, a, b=None):
  """electra_tf's packed ids and segments, padding dropped."""
  packed = tokenizer.pack(
    tokenizer(tf.constant(a)),
    None if b is None else tokenizer(tf.constant(b)),
    max_seq_length=MAX_SEQ_LENGTH,
  )
  lengths = packed["input_mask"].numpy().sum(axis=1)
  ids, segments = packed["input_ids"].numpy(), packed["segment_ids"].numpy()
  return (
    [row[:n].tolist() for row, n in zip(ids, lengths)],
    [row[:n].tolist() for row, n in zip(segments, lengths)],
  )


@pytest.mark.parametrize("language,model_type,size,normalised", MODELS)
def test_tokenizer_json_gives_electra_tf_ids_on_every_line(
  tmp_path, language, model_type, size, normalised
):
  transformers, _ = interop.require_transformers()
  path, lines = _model(tmp_path, language, model_type, size, normalised)
  ours = SentencePieceTokenizer(model_file=str(path))
  assert (ours.do_lower_case, ours.strip_accents) == (normalised, normalised)
  directory = tmp_path / "hf"
  directory.mkdir()
  huggingface.write_hf_sentencepiece_files(
    str(directory), path.read_bytes(), normalised, normalised, 512, str(path)
  )
  theirs = transformers.AutoTokenizer.from_pretrained(str(directory))
  assert type(theirs).__name__ == "TokenizersBackend"  # tokenizer.json as written

  expected_ids, _ = _electra_tf_rows(ours, lines)
  single = theirs(lines)["input_ids"]
  differ = [i for i, (e, g) in enumerate(zip(expected_ids, single)) if e != g]
  # tensorflow-text bundles its own SentencePiece build, which breaks exact
  # ties between segmentations of equal score ("yyyy": "yyy y" or "y yyy")
  # otherwise than the SentencePiece library; tokenizer.json gives the
  # library's choice there. Anything else is a real difference.
  reference = sentencepiece.SentencePieceProcessor(model_file=str(path))
  normalised_lines = [t.decode("utf-8") for t in ours.normalize(tf.constant(lines)).numpy()]
  assert len(differ) <= 0.01 * len(lines), differ
  for i in differ:
    assert single[i][1:-1] == reference.encode(normalised_lines[i]), lines[i]
    assert reference.decode(single[i]) == reference.decode(expected_ids[i])
    score = lambda row: sum(reference.get_score(p) for p in row)
    assert score(single[i]) == pytest.approx(score(expected_ids[i]), abs=1e-4)
  # Pairs: every line with the next one. A second text without pieces packs
  # as a single text in electra_tf (as in the original), so those go alone.
  texts = [
    line
    for i, (line, row) in enumerate(zip(lines, expected_ids))
    if len(row) > 2 and i not in differ
  ]
  following = texts[1:] + texts[:1]
  expected_ids, expected_segments = _electra_tf_rows(ours, texts, following)
  got = theirs(texts, following)
  assert got["input_ids"] == expected_ids
  assert got["token_type_ids"] == expected_segments

  # The comparison can fail: rare characters become [UNK], the spelled
  # special pieces stay text, and the settings change the ids.
  flat = [i for row in expected_ids for i in row]
  assert ours.unk_id in flat and len(flat) > 10000
  spelled = theirs(EXTRA_LINES[0], add_special_tokens=False)["input_ids"]
  assert not {ours.cls_id, ours.sep_id, ours.mask_id, ours.pad_id, ours.unk_id} & set(spelled)
  plain = SentencePieceTokenizer(model_file=str(path), do_lower_case=False, strip_accents=False)
  changed = sum(a != b for a, b in zip(_electra_tf_rows(plain, lines)[0], single))
  assert (changed > 100) == normalised


def test_models_it_cannot_reproduce_are_refused(tmp_path):
  lines = [line for document in catalogue_messages("de") for line in document]
  for name, extra in (
    ("byte", {"byte_fallback": True}),
    ("user", {"user_defined_symbols": ["Köln"]}),
  ):
    sentencepiece.SentencePieceTrainer.train(
      sentence_iterator=iter(lines),
      model_prefix=str(tmp_path / name),
      vocab_size=400,
      pad_id=0,
      unk_id=1,
      bos_id=-1,
      eos_id=-1,
      control_symbols=["[CLS]", "[SEP]", "[MASK]"],
      minloglevel=2,
      **extra,
    )
    proto = (tmp_path / f"{name}.model").read_bytes()
    with pytest.raises(ValueError, match=r"^SentencePiece model 'm' uses (byte|user)[^\n]*$"):
      hf_sentencepiece_tokenizer.build_tokenizer(proto, source="m")


def test_wordpiece_tokenizer_files_give_segment_ids_too(tmp_path):
  """transformers' generic tokenizer returns `token_type_ids` only where
  `tokenizer_config.json` names them; ELECTRA's pairs need them."""
  transformers, _ = interop.require_transformers()
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]
  huggingface.write_hf_tokenizer_files(str(tmp_path), tokens, True, True, 16)
  encoded = transformers.AutoTokenizer.from_pretrained(str(tmp_path))("a", "b a")
  assert encoded["input_ids"] == [2, 5, 3, 6, 5, 3]
  assert encoded["token_type_ids"] == [0, 0, 0, 1, 1, 1]


def _checkpoint(directory, vocab_size):
  """A random name-based checkpoint for `vocab_size` ids (4 heads) and its hparams."""
  shapes = spec_checkpoint_shapes(
    "default", V=vocab_size, H=32, L=1, I=64, E=16, Hg=8, Lg=1, Ig=32, P=64
  )
  rng = np.random.default_rng(0)
  tensors = {
    n: (n.endswith("/gamma") + 0.1 * rng.normal(size=s)).astype(np.float32)
    for n, s in shapes.items()
  }
  directory.mkdir()
  write_name_based_checkpoint(directory / "model.ckpt-3", tensors)
  return str(directory), json.dumps({"model_hparam_overrides": {"num_attention_heads": 4}})


def test_publish_command_on_a_sentencepiece_vocab(tmp_path, capsys):
  import keras_hub

  transformers, _ = interop.require_transformers()
  path, lines = _model(tmp_path, "de", "unigram", 400, False)
  lower, _ = _model(tmp_path, "de", "bpe", 400, True)
  size = len(vocab_lib.load_vocab(str(path)))
  source, hparams = _checkpoint(tmp_path / "ckpt", size)
  ours = SentencePieceTokenizer(model_file=str(path))
  expected = ours(tf.constant(lines)).to_list()

  def publish(output, to, vocab=path):
    argv = ["--input", source, "--output", str(output), "--to", to, "--hparams", hparams]
    return convert_checkpoint.main(argv + ["--vocab-file", str(vocab)])

  hf_dir = tmp_path / "hf"
  assert publish(hf_dir, "huggingface") == 0
  assert sorted(os.listdir(hf_dir)) == [
    "config.json",
    "model.safetensors",
    "sentencepiece.model",
    "sentencepiece.model.json",
    "tokenizer.json",
    "tokenizer_config.json",
  ]
  assert (hf_dir / "sentencepiece.model").read_bytes() == path.read_bytes()
  assert json.loads((hf_dir / "config.json").read_text())["vocab_size"] == size
  config = json.loads((hf_dir / "tokenizer_config.json").read_text())
  assert config["cls_token"] == "[CLS]" and config["do_lower_case"] is False
  theirs = transformers.AutoTokenizer.from_pretrained(str(hf_dir))
  # (Every line, ties included, is the test above; here lines without ties.)
  probe = slice(0, 100)
  assert theirs(lines[probe], add_special_tokens=False)["input_ids"] == expected[probe]

  # keras-hub: the backbone and keras-hub's generic SentencePiece tokenizer,
  # here republished from the Hugging Face directory (its model is found there).
  preset = tmp_path / "kh"
  argv = ["--input", str(hf_dir), "--output", str(preset), "--to", "keras-hub"]
  assert convert_checkpoint.main(argv) == 0
  assert (preset / "assets" / "tokenizer" / "vocabulary.spm").read_bytes() == path.read_bytes()
  hub_tokenizer = keras_hub.models.Tokenizer.from_preset(str(preset))
  assert isinstance(hub_tokenizer, keras_hub.tokenizers.SentencePieceTokenizer)
  got = hub_tokenizer(lines[probe])  # Python lists, through the SentencePiece library
  assert [[int(i) for i in row] for row in got] == expected[probe]
  backbone = keras_hub.models.ElectraBackbone.from_preset(str(preset))
  assert backbone.token_embedding.input_dim == size
  # docs/publish.md's packing gives electra_tf's features.
  pad_id = hub_tokenizer.token_to_id("[PAD]")
  assert pad_id == ours.pad_id
  packer = keras_hub.layers.MultiSegmentPacker(
    sequence_length=64,
    start_value=hub_tokenizer.token_to_id("[CLS]"),
    end_value=hub_tokenizer.token_to_id("[SEP]"),
    pad_value=pad_id,
  )
  a, b = lines[:4], lines[4:8]
  token_ids, segment_ids = packer((hub_tokenizer(a), hub_tokenizer(b)))
  packed = ours.pack(ours(tf.constant(a)), ours(tf.constant(b)), max_seq_length=64)
  np.testing.assert_array_equal(np.asarray(token_ids), packed["input_ids"].numpy())
  np.testing.assert_array_equal(np.asarray(segment_ids), packed["segment_ids"].numpy())
  outputs = backbone(
    {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": token_ids != pad_id}
  )
  assert tuple(outputs["sequence_output"].shape) == (4, 64, 32)

  # electra_tf's task models start from that preset (its SentencePiece model),
  # and their own presets carry keras-hub's tokenizer too.
  classifier = electra_tf.ElectraClassifier.from_preset(
    str(preset), max_seq_length=64, num_classes=2
  )
  features = classifier.preprocessor((tf.constant(a), tf.constant(b)))
  np.testing.assert_array_equal(features["input_ids"].numpy(), packed["input_ids"].numpy())
  task_preset = classifier.save_to_preset(str(tmp_path / "task"))
  assert keras_hub.models.Tokenizer.from_preset(task_preset)(lines[probe]) == expected[probe]
  restored = electra_tf.ElectraClassifier.from_preset(task_preset)
  texts = tf.constant(lines[:4])
  np.testing.assert_array_equal(restored(texts), classifier(texts))

  # A vocab built lower-cased: Hugging Face applies it, keras-hub cannot (a
  # task preset then has no keras-hub tokenizer).
  no_tokenizer = str(tmp_path / "task_lower")
  lower_tokenizer = SentencePieceTokenizer(model_file=str(lower))
  encoder = classifier.finetuning_model.encoder
  keras_hub_preset.write_task_preset(None, encoder, lower_tokenizer, no_tokenizer)
  assert "config.json" in os.listdir(no_tokenizer)
  assert "tokenizer.json" not in os.listdir(no_tokenizer)
  lower_source, lower_hparams = _checkpoint(
    tmp_path / "ckpt_lower", len(vocab_lib.load_vocab(str(lower)))
  )
  argv = ["--input", lower_source, "--output", str(tmp_path / "kh_lower"), "--to", "keras-hub"]
  argv += ["--hparams", lower_hparams, "--vocab-file", str(lower)]
  capsys.readouterr()
  assert convert_checkpoint.main(argv) == 2
  err = capsys.readouterr().err.strip()
  assert len(err.splitlines()) == 1 and "cannot apply" in err, err
  assert not (tmp_path / "kh_lower").exists()
  argv[argv.index("keras-hub")] = "huggingface"
  argv[argv.index(str(tmp_path / "kh_lower"))] = str(tmp_path / "hf_lower")
  assert convert_checkpoint.main(argv) == 0
  lowered = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf_lower"))
  lower_ids = SentencePieceTokenizer(model_file=str(lower))(tf.constant(lines)).to_list()
  assert lowered(lines[probe], add_special_tokens=False)["input_ids"] == lower_ids[probe]
  assert lower_ids[probe] != expected[probe]
