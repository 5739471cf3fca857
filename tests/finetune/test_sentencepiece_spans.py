"""QA and tagging with a SentencePiece model, on real German and Japanese
text (no spaces between Japanese words): pieces carry their characters in
the text, answers map to pieces and back by character offsets, and tags sit
on each word's first piece (the one holding its `▁`). Both doors: the
run_finetuning featurisers and the task models' preprocessor."""

import json
import random
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetune import task_builder
from electra_tf.finetune.qa.tasks import SpanBasedQAScorer
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor
from electra_tf.task_models.question_answerer import ElectraQuestionAnswerer
from electra_tf.task_models.token_tagger import IGNORED
from electra_tf.task_models.token_tagger import ElectraTokenTagger
from electra_tf.text import tokenizer_for
from electra_tf.text.full_tokenizer import full_tokenizer_for
from electra_tf.text.vocab import load_vocab
from electra_tf.text.vocab import train_sentencepiece
from electra_tf.training.finetuning_run import ModelRunner
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import squad_json
from tests.helpers.finetuning_testdata import tiny_hparams
from tests.helpers.finetuning_testdata import write_task_file
from tests.helpers.task_models import TINY
from tests.helpers.task_models import serve_text
from tests.helpers.translations import catalogue_messages

S = 128  # every context and sentence below fits one window
# (model type, vocab size, character coverage): small models, as the other
# SentencePiece tests train; Japanese needs a coverage below 1 to fit 400.
MODELS = {"de": ("unigram", 300, 0.99), "ja": ("bpe", 400, 0.98)}


def _model(language, directory):
  """(language, model path, short catalogue lines)."""
  model_type, size, coverage = MODELS[language]
  lines = [line for document in catalogue_messages(language) for line in document]
  path = directory / f"{language}.model"
  path.write_bytes(train_sentencepiece(lines, size, model_type, character_coverage=coverage))
  return language, str(path), [line for line in lines if 20 <= len(line) <= 60]


@pytest.fixture(scope="module", params=sorted(MODELS))
def language(request, tmp_path_factory):
  return _model(request.param, tmp_path_factory.mktemp(request.param))


def _answers(language, lines, count=16):
  """`(question, context, start, answer)`: German answers are whole words
  (one or two) and a cut inside a word; Japanese ones any 2-5 characters."""
  rng = random.Random(0)
  items = []
  for n, context in enumerate(lines[:count]):
    question = lines[-1 - n][:20]
    if language == "de":
      words = list(re.finditer(r"\S+", context))
      first = words[rng.randrange(len(words))]
      last = words[min(len(words) - 1, words.index(first) + n % 2)]
      items.append((question, context, first.start(), context[first.start() : last.end()]))
      long_word = max(words, key=lambda w: len(w.group()))
      begin = long_word.start() + 1
      items.append((question, context, begin, context[begin : long_word.end()]))
    else:
      while True:
        begin = rng.randrange(len(context) - 5)
        answer = context[begin : begin + rng.randint(2, 5)]
        if answer.strip() == answer:
          break
      items.append((question, context, begin, answer))
  return items


def _whole_word(text, begin, end):
  return text[begin - 1 : begin].strip() == "" and text[end : end + 1].strip() == ""


def _check_covering(context, spans, first, last, begin, end, exact):
  """Pieces `first..last` are the smallest run covering `[begin, end)`; their
  characters are the answer exactly where piece boundaries allow. Counts
  exact answers in `exact`."""
  got_begin, got_end = spans[first][0], spans[last][1]
  assert got_begin <= begin and got_end >= end, (context, begin, end, spans[first], spans[last])
  assert spans[first][1] > begin and spans[last][0] < end  # no piece to spare
  boundaries = {a for a, b in spans if b > a}, {b for a, b in spans if b > a}
  if begin in boundaries[0] and end in boundaries[1]:
    assert context[got_begin:got_end] == context[begin:end]
    exact.append(context[begin:end])


def test_offsets_are_the_ids_and_their_characters(language):
  name, model, lines = language
  texts = lines + ["  Grüße  aus KÖLN, e\u0301 ", "東京に行く。", ""]
  for normalise in (False, True):
    tok = tokenizer_for(model, do_lower_case=normalise, strip_accents=normalise)
    rows = tok.tokenize_with_offsets(texts)
    assert [ids for ids, _ in rows] == tok(tf.constant(texts)).to_list()
    for text, (ids, spans) in zip(texts, rows):
      # In order, without gaps but whitespace: the text as written, not as normalised.
      assert "".join(text[a:b] for a, b in spans) == "".join(text.split())
      assert all(a <= b for a, b in spans)
      assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))
  # "e" + a combining accent, the accent stripped: the piece still holds both.
  assert rows[-3][1][-1] == (len(texts[-3]) - 3, len(texts[-3]) - 1)


def test_qa_featuriser_maps_answers_to_pieces_and_back(language, tmp_path):
  name, model, lines = language
  items = _answers(name, lines)
  data_dir, _ = make_data_dir(tmp_path)
  write_task_file(data_dir, "squadv1", "train.json", squad_json(_squad_paragraphs(items), "1.1"))
  hparams = tiny_hparams(
    len(load_vocab(model)),
    task_names=["squadv1"],
    vocab_file=model,
    max_seq_length=S,
    max_query_length=8,
    joint_prediction=False,
  )
  config = finetuning_config("m", data_dir, **hparams)
  tokenizer = full_tokenizer_for(model)
  task = task_builder.get_task(config, "squadv1", tokenizer)
  examples = task.get_examples("train")
  assert len(examples) == len(items)
  graph = tokenizer_for(model)
  scorer = SpanBasedQAScorer(config, task, split="train")
  expected, exact = {}, []
  for example, (question, context, begin, answer) in zip(examples, items):
    (features,) = task.featurize(example, True, for_eval=True)
    # The ids are the in-graph tokenizer's: the whole context, untouched.
    q_ids, c_ids = graph(tf.constant([question, context])).to_list()
    packed = [graph.cls_id] + q_ids[:8] + [graph.sep_id] + c_ids + [graph.sep_id]
    assert features["input_ids"][: len(packed)] == packed
    start, end = features["squadv1_start_positions"], features["squadv1_end_positions"]
    to_piece = features["squadv1_token_to_orig_map"]
    _, spans = task.context_pieces(example)
    _check_covering(
      context, spans, to_piece[start], to_piece[end], begin, begin + len(answer), exact
    )
    expected[example.qas_id] = context[spans[to_piece[start]][0] : spans[to_piece[end]][1]]
    # The model's best span is the label: the prediction is those characters.
    logits = np.full([S], -5.0, np.float32)
    scorer.update(
      {
        "eid": features["squadv1_eid"],
        "loss": 0.0,
        "start_logits": np.where(np.arange(S) == start, 5.0, logits),
        "end_logits": np.where(np.arange(S) == end, 5.0, logits),
        "answerable_logit": 0.0,
        "start_top_log_probs": np.zeros([1]),
        "start_top_index": np.zeros([1], np.int32),
        "end_top_log_probs": np.zeros([1, 1]),
        "end_top_index": np.zeros([1, 1], np.int32),
      }
    )
  predictions, _ = scorer.write_predictions(str(tmp_path / "preds.json"), str(tmp_path / "na"))
  assert dict(predictions) == expected
  assert len(exact) >= len(items) // 2  # most answers fall on piece boundaries
  if name == "de":  # a whole word of letters is whole pieces
    words = [a for _, c, s, a in items if a.isalpha() and _whole_word(c, s, s + len(a))]
    assert words and set(words) <= set(exact)


def _squad_paragraphs(items):
  return [
    {
      "context": c,
      "qas": [{"id": f"q{i}", "question": q, "answers": [{"text": a, "answer_start": s}]}],
    }
    for i, (q, c, s, a) in enumerate(items)
  ]


def _conll(sentences):
  """CoNLL lines: each word, a POS column, a chunk tag."""
  tags = ("B-NP", "I-NP", "O")
  return "".join(
    "".join(f"{w} X {tags[k % 3]}\n" for k, w in enumerate(words)) + "\n" for words in sentences
  )


@pytest.mark.slow  # two tasks trained and evaluated (~10 s)
def test_run_finetuning_trains_and_answers_german_qa_and_chunking(tmp_path):
  _, model, lines = _model("de", tmp_path)
  items = _answers("de", lines, count=8)[::2]  # whole words
  data_dir, _ = make_data_dir(tmp_path)
  for split in ("train", "dev"):  # evaluated on what it trained on
    write_task_file(data_dir, "squadv1", f"{split}.json", squad_json(_squad_paragraphs(items)))
    write_task_file(data_dir, "chunk", f"{split}.txt", _conll(_words("de", lines, 6)))
  hparams = tiny_hparams(
    len(load_vocab(model)),
    task_names=["squadv1", "chunk"],
    vocab_file=model,
    max_seq_length=64,
    beam_size=4,
    init_checkpoint=None,
    learning_rate=3e-3,
    layerwise_lr_decay=0.0,
    num_train_epochs=15.0,
  )
  config = finetuning_config("m", data_dir, **hparams)
  config.model_dir += "_1"
  tokenizer = full_tokenizer_for(model)
  runner = ModelRunner(config, task_builder.get_tasks(config, tokenizer))
  losses = runner.train()
  assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])
  results = runner.evaluate()
  assert 0.0 <= results["chunk"]["f1"] <= 100.0
  with open(config.qa_preds_file("squadv1"), encoding="utf-8") as f:
    predictions = json.load(f)
  contexts = {f"q{i}": c for i, (_, c, _, _) in enumerate(items)}
  assert sorted(predictions) == sorted(contexts)
  # The context's own characters (case, umlauts, punctuation), never pieces joined.
  assert all(p in contexts[q] and "▁" not in p for q, p in predictions.items())
  assert results["squadv1"]["f1"] > 0.0  # trained on these questions


def _tiny(model, packing, **kwargs):
  preprocessor = ElectraTextPreprocessor.from_vocab_file(
    model, max_seq_length=S, packing=packing, **kwargs
  )
  return dict(TINY, vocab_size=preprocessor.tokenizer.vocab_size), preprocessor


def test_question_answerer_labels_and_answers_by_characters(language):
  name, model, lines = language
  keras.utils.set_random_seed(0)
  bert_config, preprocessor = _tiny(model, "question_context", max_query_length=8)
  qa = ElectraQuestionAnswerer(bert_config, preprocessor=preprocessor)
  questions, contexts, begins, answers = map(list, zip(*_answers(name, lines)))
  starts, ends = qa.answer_positions(questions, contexts, begins, answers)
  packed = preprocessor((tf.constant(questions), tf.constant(contexts)))["input_ids"].numpy()
  exact = []
  for i, (ids, spans) in enumerate(preprocessor.piece_spans(contexts)):
    offset = min(len(preprocessor.token_ids([questions[i]])[0]), 8) + 2
    assert packed[i, offset : offset + len(ids)].tolist() == ids
    end = begins[i] + len(answers[i])
    _check_covering(contexts[i], spans, starts[i] - offset, ends[i] - offset, begins[i], end, exact)
  assert len(exact) >= len(answers) // 2
  # Whatever span the untrained model scores best, the answer is the
  # context's characters from its first piece to its last.
  outputs = qa.predict((questions, contexts), verbose=0)
  got = qa.predict_answers(questions, contexts)
  for i, (ids, spans) in enumerate(preprocessor.piece_spans(contexts)):
    offset = min(len(preprocessor.token_ids([questions[i]])[0]), 8) + 2
    start = outputs["start_logits"][i, offset : offset + len(ids)]
    end = outputs["end_logits"][i, offset : offset + len(ids)]
    s, e = max(
      ((s, e) for s in range(len(ids)) for e in range(s, min(len(ids), s + 30))),
      key=lambda p: start[p[0]] + end[p[1]],
    )
    assert got[i] == contexts[i][spans[s][0] : spans[e][1]]


def _words(language, lines, count=12):
  """Pre-split sentences: German words split on spaces; Japanese runs of
  1-3 characters (a text without spaces split as a user's segmenter might)."""
  rng = random.Random(1)
  sentences = []
  for line in [line for line in lines if len(line) <= 40][:count]:
    words = line.split()
    if language == "ja":
      chunks = []
      for word in words:
        while word:
          size = rng.randint(1, 3)
          chunks.append(word[:size])
          word = word[size:]
      words = chunks
    sentences.append(words)
  return sentences


def test_tagging_labels_each_words_first_piece(language, tmp_path):
  name, model, lines = language
  sentences = _words(name, lines)
  data_dir, _ = make_data_dir(tmp_path)
  write_task_file(data_dir, "chunk", "train.txt", _conll(sentences))
  hparams = tiny_hparams(
    len(load_vocab(model)), task_names=["chunk"], vocab_file=model, max_seq_length=S
  )
  task = task_builder.get_task(
    finetuning_config("m", data_dir, **hparams), "chunk", full_tokenizer_for(model)
  )
  graph = tokenizer_for(model)
  pieces = {i: p for p, i in load_vocab(model).items()}
  bert_config, preprocessor = _tiny(model, "tagging")
  tagger = ElectraTokenTagger(bert_config, num_tags=3, preprocessor=preprocessor)
  joined = [" ".join(words) for words in sentences]
  labels = tagger.wordpiece_labels(joined, [[k % 3 for k in range(len(w))] for w in sentences])
  packed = preprocessor(tf.constant(joined))["input_ids"].numpy()
  for i, (example, words) in enumerate(zip(task.get_examples("train"), sentences)):
    # Each word on its own, untouched; its first piece holds its `▁`.
    per_word = graph(tf.constant(words)).to_list()
    firsts = 1 + np.cumsum([0] + [len(p) for p in per_word[:-1]])
    assert all(pieces[p[0]].startswith("▁") for p in per_word)
    (features,) = task.featurize(example, True)
    flat = [graph.cls_id] + [t for p in per_word for t in p] + [graph.sep_id]
    assert features["input_ids"][: len(flat)] == flat
    assert features["chunk_labeled_positions"][: len(words)] == firsts.tolist()
    # The task model reads the words joined by spaces: the same pieces, the same firsts.
    assert packed[i, : len(flat)].tolist() == flat
    assert np.flatnonzero(labels[i] != IGNORED).tolist() == firsts.tolist()
    assert labels[i, firsts].tolist() == [k % 3 for k in range(len(words))]
  predicted = tagger.predict_tags(joined)
  assert [len(row) for row in predicted] == [len(words) for words in sentences]
  assert all(0 <= t < 3 for row in predicted for t in row)


@pytest.mark.slow  # an export and a fresh interpreter (~20 s)
def test_japanese_question_answerer_export_serves_the_same_logits(tmp_path):
  _, model, lines = _model("ja", tmp_path)
  keras.utils.set_random_seed(0)
  bert_config, preprocessor = _tiny(model, "question_context", max_query_length=8)
  qa = ElectraQuestionAnswerer(bert_config, preprocessor=preprocessor)
  questions, contexts = lines[:3], lines[3:6]
  outputs = qa.predict((questions, contexts), verbose=0)
  version_dir = qa.export(str(tmp_path / "serving" / "1"))
  # The preprocessor holds the model's bytes, not its path: the asset is written from them.
  with open(model, "rb") as f, open(f"{version_dir}/assets/sentencepiece.model", "rb") as g:
    assert g.read() == f.read()
  served = serve_text(version_dir, questions, contexts, ["start_logits", "input_ids"])
  packed = preprocessor((tf.constant(questions), tf.constant(contexts)))["input_ids"].numpy()
  np.testing.assert_array_equal(served["input_ids"][:, :S], packed)
  mask = packed != 0
  np.testing.assert_allclose(
    served["start_logits"][:, :S][mask], outputs["start_logits"][mask], rtol=1e-4, atol=1e-4
  )
