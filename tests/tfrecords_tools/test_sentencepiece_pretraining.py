"""German and Japanese end to end with a SentencePiece vocab: build_vocab
(unigram / bpe) → build_pretraining_dataset → a few pre-training steps."""

import glob
import json

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from electra_tf import build_pretraining_dataset
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.training import pretraining_run
from tests.helpers.pretraining_data import TINY
from tests.helpers.subprocesses import build_dataset_flags
from tests.helpers.translations import write_corpus
from tfrecords_tools import build_vocab


def _records(directory):
  rows = []
  for path in sorted(glob.glob(f"{directory}/pretrain_data.tfrecord-*")):
    for record in tf.data.TFRecordDataset(path):
      example = tf.train.Example.FromString(record.numpy())
      rows.append({k: list(v.int64_list.value) for k, v in example.features.feature.items()})
  return rows


@pytest.mark.slow  # ~15-25 s each: two builds and a few training steps
@pytest.mark.parametrize(
  "language, model_type, vocab_size", [("de", "unigram", 400), ("ja", "bpe", 1000)]
)
def test_vocab_records_and_pretraining(tmp_path, capsys, language, model_type, vocab_size):
  corpus = tmp_path / "corpus"
  lines = write_corpus(corpus, language)
  model = tmp_path / f"{language}.model"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", str(vocab_size), "--output", str(model)]
  assert build_vocab.main(argv + ["--model-type", model_type]) == 0

  # A lower-casing flag that contradicts the model's settings is one line.
  records_dir = tmp_path / "pretrain_tfrecords"
  flags = build_dataset_flags(corpus, model, records_dir, max_seq_length=32, seed=0)
  capsys.readouterr()
  assert build_pretraining_dataset.main(flags + ["--num-out-files", "2", "--do-lower-case"]) == 2
  err = capsys.readouterr().err.strip()
  assert "--do-lower-case contradicts" in err and f"{model.name}.json" in err
  assert len(err.splitlines()) == 1

  assert build_pretraining_dataset.main(flags + ["--num-out-files", "2"]) == 0
  rows = _records(records_dir)
  assert len(rows) > 20
  reference = sentencepiece.SentencePieceProcessor(model_file=str(model))
  ids = np.array([r["input_ids"] for r in rows])
  mask = np.array([r["input_mask"] for r in rows])
  assert (ids[:, 0] == 2).all()  # [CLS] of the model, not BERT's 101
  assert ((ids == 3) & (mask == 1)).sum(axis=1).min() >= 1  # its [SEP]
  assert ids.max() < vocab_size and ((ids == 0) == (mask == 0)).all()
  # The records hold the corpus' text as the model tokenises it, case and all.
  text = "\n".join(lines)
  first = ids[0, 1 : list(ids[0]).index(3)].tolist()
  assert reference.decode(first)[:10] in text

  config = PretrainingConfig(
    "m",
    str(tmp_path),
    **dict(
      TINY, vocab_size=vocab_size, vocab_file=str(model), num_train_steps=4, masking="whole_word"
    ),
  )
  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  objective = pretrainer.objective
  # Whole words by the model's word-start mark; a special piece is a word.
  pieces = [reference.id_to_piece(i) for i in range(vocab_size)]
  expected = [not p.startswith("\u2581") and i > 4 for i, p in enumerate(pieces)]
  assert pretrainer.word_continuation.tolist() == expected
  assert (objective.pad_id, objective.cls_id, objective.sep_id, objective.mask_id) == (0, 2, 3, 4)
  pretraining_run.train_or_eval(config)
  described = json.loads((tmp_path / "models" / "m" / "config.json").read_text())["vocab"]
  assert described["size"] == vocab_size
  assert described["special_ids"] == {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}
  # How the records' text was normalised: the model's settings, not the
  # WordPiece defaults of the hparams.
  assert (described["kind"], described["do_lower_case"], described["strip_accents"]) == (
    "sentencepiece",
    False,
    False,
  )
  assert tf.train.latest_checkpoint(str(tmp_path / "models" / "m")) is not None


@pytest.mark.parametrize("model_type", ["wordpiece", "unigram"])
def test_a_utf16_corpus_is_named_as_not_text_by_either_trainer(tmp_path, capsys, model_type):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("Grüße aus Köln und ein schöner Tag\n" * 300, encoding="utf-16")
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "200", "--output", str(tmp_path / "v")]
  assert build_vocab.main(argv + ["--model-type", model_type]) == 2
  (error,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
  assert "a.txt" in error and "are not text" in error and "convert it to UTF-8" in error
  assert not (tmp_path / "v").exists()
