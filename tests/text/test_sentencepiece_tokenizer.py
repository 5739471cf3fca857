"""The in-graph SentencePiece tokenizer, `tokenizer_for` and the vocab kind
recognised by content, on real German and Japanese text."""

import json
import shutil

import pytest
import sentencepiece
import tensorflow as tf

from electra_tf.text import tokenizer_for
from electra_tf.text import vocab as vocab_lib
from electra_tf.text import wordpiece
from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers.translations import catalogue_messages


@pytest.fixture(scope="module", params=[("de", "unigram", 400), ("ja", "bpe", 1000)])
def model(request, tmp_path_factory):
  """(model path, corpus lines) of a small model trained on one language."""
  language, model_type, size = request.param
  lines = [line for document in catalogue_messages(language) for line in document]
  path = tmp_path_factory.mktemp(language) / f"{language}.model"
  path.write_bytes(vocab_lib.train_sentencepiece(lines, size, model_type))
  return path, lines


def test_ids_equal_the_sentencepiece_package_on_every_line(model):
  path, lines = model
  tok = tokenizer_for(str(path))
  assert isinstance(tok, SentencePieceTokenizer)
  assert not tok.do_lower_case and not tok.strip_accents  # off without a settings file
  ids = tf.function(tok.call)(tf.constant(lines)).to_list()
  reference = sentencepiece.SentencePieceProcessor(model_file=str(path))
  expected = [reference.encode(line) for line in lines]
  differ = [i for i in range(len(lines)) if ids[i] != expected[i]]
  # tensorflow-text bundles its own SentencePiece build: between two
  # segmentations of exactly equal score it may pick the other one (a few
  # lines such as "uuuuuu"); anything else is a real difference.
  assert len(differ) <= 3, differ
  for i in differ:
    assert reference.decode(ids[i]) == reference.decode(expected[i])
    score = lambda row: sum(reference.get_score(p) for p in row)
    assert score(ids[i]) == pytest.approx(score(expected[i]), abs=1e-4)
  # The text reached the model untouched: cased letters and marks survive.
  pieces = {p for row in ids for p in reference.id_to_piece(row)}
  assert vocab_lib.special_token_ids(str(path)) == {
    "pad": 0,
    "unk": 1,
    "cls": 2,
    "sep": 3,
    "mask": 4,
  }
  flat = [i for row in ids for i in row]
  assert flat.count(tok.unk_id) < 0.005 * len(flat)  # only the rarest characters (coverage)
  assert any(
    any(c.isupper() or c in "äöüÄÖÜ" or "\u3040" <= c <= "\u30ff" for c in p) for p in pieces
  )


def test_special_pieces_come_only_from_ids_and_pack_uses_them(model):
  path, lines = model
  tok = tokenizer_for(str(path))
  spelled = tok(tf.constant(["[CLS] [MASK] [SEP] [PAD]"])).to_list()[0]
  assert not {tok.cls_id, tok.sep_id, tok.mask_id, tok.pad_id} & set(spelled)
  a, b = tok(tf.constant(lines[:3])), tok(tf.constant(lines[3:6]))
  packed = tok.pack(a, b, max_seq_length=24)
  ids, mask, segments = (packed[k].numpy() for k in ("input_ids", "input_mask", "segment_ids"))
  for row in range(3):
    n = int(mask[row].sum())
    assert ids[row, 0] == tok.cls_id and ids[row, n - 1] == tok.sep_id
    assert list(ids[row]).count(tok.sep_id) == 2 and (ids[row, n:] == tok.pad_id).all()
    assert segments[row, n - 1] == 1 and segments[row, 0] == 0
  # The WordPiece tokenizer packs the same ids the same way (one packing).
  wp = ElectraTokenizer(vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])
  for key, value in wp.pack(a, b, max_seq_length=24).items():
    assert (value.numpy() == packed[key].numpy()).all(), key


def test_settings_file_decides_normalisation_and_config_round_trips(model, tmp_path):
  path, _ = model
  copy = tmp_path / "lower.model"
  shutil.copy(path, copy)
  vocab_lib.write_vocab_settings(str(copy), {"do_lower_case": True, "strip_accents": True})
  tok = tokenizer_for(str(copy))
  assert tok.do_lower_case and tok.strip_accents
  text = tf.constant(["ÜBER Straße", "über strasse"])
  assert tok.normalize(text).numpy().tolist() == [b"uber stra\xc3\x9fe", b"uber strasse"]
  # An explicit argument that agrees is fine; one that contradicts the file is refused.
  assert tokenizer_for(str(copy), do_lower_case=True).do_lower_case
  with pytest.raises(vocab_lib.VocabSettingsConflict, match=r"lower\.model\.json.*=true"):
    tokenizer_for(str(copy), do_lower_case=False)
  for config in (tok.get_config(), SentencePieceTokenizer(proto=copy.read_bytes()).get_config()):
    config = json.loads(json.dumps(config))  # JSON-safe, as Keras saves it
    again = SentencePieceTokenizer.from_config(config)
    built = SentencePieceTokenizer(**{k: config[k] for k in ("model_file", "proto")})
    assert again.do_lower_case == config["do_lower_case"]
    assert again(text).to_list() == (tok if config["model_file"] else built)(text).to_list()
  (tmp_path / "lower.model.json").write_text('{"do_lower_case": "yes"}')
  with pytest.raises(ValueError, match=r"lower\.model\.json.*boolean 'do_lower_case'"):
    tokenizer_for(str(copy))


def test_the_kind_is_recognised_by_content_not_by_name(model, tmp_path):
  path, _ = model
  as_txt = tmp_path / "vocab.txt"
  shutil.copy(path, as_txt)
  assert vocab_lib.vocab_kind(str(as_txt)) == "sentencepiece"
  assert isinstance(tokenizer_for(str(as_txt)), SentencePieceTokenizer)
  vocab_lib.check_vocab_file(str(as_txt), len(vocab_lib.load_vocab(str(path))))
  with pytest.raises(ValueError, match="vocab_size=7 but vocab file .* set vocab_size to"):
    vocab_lib.check_vocab_file(str(as_txt), 7)
  text_vocab = tmp_path / "words.model"
  text_vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhallo\n", encoding="utf-8")
  assert isinstance(tokenizer_for(str(text_vocab)), ElectraTokenizer)
  with pytest.raises(ValueError, match="is a SentencePiece model, not a WordPiece vocab.txt"):
    ElectraTokenizer(vocab_file=str(as_txt))
  with pytest.raises(ValueError, match="is a SentencePiece model; this step needs a WordPiece"):
    wordpiece.FullTokenizer(str(as_txt))
  with pytest.raises(ValueError, match="is a WordPiece vocab.txt, not a SentencePiece model"):
    SentencePieceTokenizer(model_file=str(text_vocab))
  latin1 = tmp_path / "latin1.txt"  # a text vocab with bytes that are not UTF-8 stays text
  latin1.write_bytes(b"[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncaf\xe9\n")
  assert vocab_lib.vocab_kind(str(latin1)) == "wordpiece"
  assert vocab_lib.load_vocab(str(latin1))["caf"] == 5
  garbage = tmp_path / "broken.model"
  garbage.write_bytes(path.read_bytes()[:1000])
  with pytest.raises(ValueError, match="neither a WordPiece vocab.txt nor a SentencePiece model"):
    tokenizer_for(str(garbage))


def test_a_foreign_model_brings_its_own_pad_and_unk_but_needs_cls_sep_mask(tmp_path):
  lines = [line for document in catalogue_messages("de") for line in document]

  def train(path, **special):
    sentencepiece.SentencePieceTrainer.train(
      sentence_iterator=iter(lines),
      model_prefix=str(path),
      vocab_size=300,
      minloglevel=2,
      **special,
    )
    return f"{path}.model"

  albert_like = train(
    tmp_path / "albert",
    pad_id=0,
    unk_id=1,
    bos_id=-1,
    eos_id=-1,
    control_symbols="[CLS],[SEP],[MASK]",
  )
  assert vocab_lib.special_token_ids(albert_like) == {
    "pad": 0,
    "unk": 1,
    "cls": 2,
    "sep": 3,
    "mask": 4,
  }
  assert vocab_lib.load_vocab(albert_like)["<unk>"] == 1
  plain = train(tmp_path / "plain")  # <unk>=0, <s>, </s>, no padding piece
  with pytest.raises(
    ValueError, match=r"lacks the piece\(s\) \['\[CLS\]', '\[SEP\]', '\[MASK\]'\]"
  ):
    tokenizer_for(plain)


@pytest.mark.parametrize("model", [("de", "unigram", 400)], indirect=True)  # one is enough
def test_saved_model_round_trip_without_the_model_file(model, tmp_path):
  path, lines = model
  copy = tmp_path / "moved.model"
  shutil.copy(path, copy)
  tok = tokenizer_for(str(copy))

  class Serving(tf.Module):
    def __init__(self):
      super().__init__()
      self.tok = tok

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, text):
      return self.tok.pack(self.tok(text), max_seq_length=16)

  expected = Serving()(tf.constant(lines[:4]))["input_ids"].numpy().tolist()
  tf.saved_model.save(Serving(), str(tmp_path / "saved"))
  copy.unlink()  # the model's bytes travel inside the SavedModel
  loaded = tf.saved_model.load(str(tmp_path / "saved"))
  assert loaded(tf.constant(lines[:4]))["input_ids"].numpy().tolist() == expected
  assert expected[0][0] == 2
