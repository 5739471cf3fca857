"""Decomposed text (NFD, as macOS file names and some keyboards give it)
through the published `tokenizer.json`: the same ids as electra_tf on real
Korean and Vietnamese lines composed (NFC), decomposed (NFD) and partly
composed (a precomposed letter, then one more mark: text converted from
Windows-1258), for SentencePiece unigram and BPE, and for WordPiece."""

import unicodedata

import pytest
import sentencepiece
import tensorflow as tf
import tokenizers

from electra_tf.text import hf_sentencepiece_tokenizer
from electra_tf.text import hf_tokenizer
from electra_tf.text import vocab as vocab_lib
from electra_tf.text import wordpiece
from electra_tf.text.sentencepiece_tokenizer import SentencePieceTokenizer
from electra_tf.text.tokenizer import ElectraTokenizer
from tests.helpers import reference_hard_text
from tests.helpers.translations import catalogue_messages


def _partly_composed(text):
  """Each letter with two or more marks as its one-mark precomposed form and
  the last mark apart ("ấ" → "â" U+0301; a Hangul syllable with a final
  consonant → the open syllable and the final jamo)."""
  out = []
  for char in unicodedata.normalize("NFC", text):
    parts = unicodedata.normalize("NFD", char)
    out.append(unicodedata.normalize("NFC", parts[:-1]) + parts[-1] if len(parts) > 2 else char)
  return "".join(out)


FORMS = {
  "NFC": lambda t: unicodedata.normalize("NFC", t),
  "NFD": lambda t: unicodedata.normalize("NFD", t),
  "partly composed": _partly_composed,
}


def _lines(language):
  return [line for document in catalogue_messages(language) for line in document]


def _tokenizer_json(tmp_path, proto, name):
  path = tmp_path / f"{name}.json"
  hf_sentencepiece_tokenizer.write_tokenizer_json(str(path), proto, False, False, name)
  return tokenizers.Tokenizer.from_file(str(path))


@pytest.mark.parametrize(
  "language,model_type,size",
  [("ko", "unigram", 800), ("ko", "bpe", 800), ("vi", "unigram", 400), ("vi", "bpe", 400)],
)
def test_sentencepiece_ids_on_composed_and_decomposed_lines(tmp_path, language, model_type, size):
  lines = _lines(language)
  path = tmp_path / f"{language}_{model_type}.model"
  path.write_bytes(vocab_lib.train_sentencepiece(lines, size, model_type))
  proto = path.read_bytes()
  ours = SentencePieceTokenizer(model_file=str(path))
  reference = sentencepiece.SentencePieceProcessor(model_file=str(path))
  theirs = _tokenizer_json(tmp_path, proto, f"{language}_{model_type}")
  composed = [e.ids for e in theirs.encode_batch(lines, add_special_tokens=False)]
  for form, convert in FORMS.items():
    texts = [convert(line) for line in lines]
    # The other forms really differ as text (else the test could not fail).
    assert (sum(t != line for t, line in zip(texts, lines)) > len(lines) // 3) == (form != "NFC")
    expected = ours(tf.constant(texts)).to_list()
    got = [e.ids for e in theirs.encode_batch(texts, add_special_tokens=False)]
    # Ties between segmentations of equal score: tensorflow-text's bundled
    # SentencePiece breaks them otherwise than the library, which
    # tokenizer.json follows (as tests/checkpoints/test_hf_sentencepiece.py).
    differ = [i for i, (e, g) in enumerate(zip(expected, got)) if e != g]
    assert len(differ) <= 0.01 * len(lines), (form, [texts[i] for i in differ[:3]])
    for i in differ:
      assert got[i] == reference.encode(texts[i]), (form, texts[i])
      score = lambda row: sum(reference.get_score(p) for p in row)
      assert score(got[i]) == pytest.approx(score(expected[i]), abs=1e-4)
    if form == "NFD":
      # The model's map composes: decomposed lines get the composed ids.
      assert sum(g == c for g, c in zip(got, composed)) >= 0.99 * len(lines)
    if form == "partly composed":
      # ... but leaves a precomposed letter and a further mark apart.
      assert sum(g != c for g, c in zip(got, composed)) > len(lines) // 3


def test_without_the_composition_steps_decomposed_lines_differ(tmp_path):
  """What the steps fix: `tokenizers`' own reading of the map keeps only a
  letter's first mark and never joins jamo."""
  for language, size in (("ko", 800), ("vi", 400)):
    lines = _lines(language)
    proto = vocab_lib.train_sentencepiece(lines, size, "unigram")
    model = hf_sentencepiece_tokenizer.read_model(proto)
    steps = hf_sentencepiece_tokenizer.composition_steps(model["charsmap"])
    assert len(steps) == 2  # the guard (a control character the map deletes), NFC
    plain = tokenizers.normalizers.Precompiled(model["charsmap"])
    with_steps = tokenizers.normalizers.Sequence(steps + [plain])
    decomposed = [unicodedata.normalize("NFD", line) for line in lines]
    reference = sentencepiece.SentencePieceProcessor(model_proto=proto)
    wanted = [reference.normalize(t).replace("\u2581", " ").split() for t in decomposed]
    fixed = sum(with_steps.normalize_str(t).split() == w for t, w in zip(decomposed, wanted))
    broken = sum(plain.normalize_str(t).split() == w for t, w in zip(decomposed, wanted))
    assert fixed == len(lines) and broken < len(lines) // 2, (language, fixed, broken)
  # A map that composes nothing needs no steps.
  assert hf_sentencepiece_tokenizer.composition_steps(b"") == []


def test_known_differences_stay_as_documented(tmp_path):
  """docs/publish.md names what tokenizer.json still composes otherwise
  than SentencePiece; this keeps that list true."""
  proto = vocab_lib.train_sentencepiece(_lines("vi"), 400, "unigram")
  model = hf_sentencepiece_tokenizer.read_model(proto)
  normalizer = hf_sentencepiece_tokenizer.normalizer(model, False, False)
  reference = sentencepiece.SentencePieceProcessor(model_proto=proto)

  def agree(text):
    return (
      normalizer.normalize_str(text) == reference.normalize(text).replace("\u2581", " ").strip()
    )

  # Matched: decomposed, partly composed, marks out of canonical order.
  for text in (
    "Nha\u0302\u0301n",
    "Nh\u00e2\u0301n",
    "a\u0302\u0323",
    "\u1100\u1161\u11a8",
    "\uac00\u11a8",
  ):
    assert agree(text), ascii(text)
  # Not matched: a mark below that no precomposed letter holds before a mark
  # above (NFC composes the letter with the second), U+1FBE before a mark,
  # U+0344, and characters newer than `tokenizers`' tables.
  for text in ("a\u0316\u0300", "\u1fbe\u0301", "a\u0344", "\U00011935\U00011930"):
    assert not agree(text), ascii(text)


@pytest.mark.parametrize("lower,strip", [(True, True), (True, False), (False, False)])
def test_wordpiece_ids_on_composed_and_decomposed_lines(lower, strip):
  """WordPiece applies no composition: electra_tf and tokenizer.json both
  keep decomposed text decomposed (accent stripping makes the forms alike)."""
  lines = _lines("ko") + _lines("vi")
  texts = {form: [convert(line) for line in lines] for form, convert in FORMS.items()}
  basic = wordpiece.BasicTokenizer(do_lower_case=lower, strip_accents=strip)
  vocab = reference_hard_text.make_vocab(texts["NFC"] + texts["NFD"][::3], [basic])
  ours = ElectraTokenizer(vocabulary=vocab, do_lower_case=lower, strip_accents=strip)
  theirs = hf_tokenizer.build_tokenizer(vocab, lower, strip)
  theirs.encode_special_tokens = True
  results = {}
  for form, forms_texts in texts.items():
    expected = ours(tf.constant(forms_texts)).to_list()
    got = [e.ids for e in theirs.encode_batch(forms_texts, add_special_tokens=False)]
    mismatches = [t for t, e, g in zip(forms_texts, expected, got) if e != g]
    assert not mismatches, (form, mismatches[:3])
    results[form] = got
  same = sum(a == b for a, b in zip(results["NFC"], results["NFD"]))
  # Stripping accents decomposes every form alike; otherwise they stay apart.
  assert (same == len(lines)) == (lower and strip), same
