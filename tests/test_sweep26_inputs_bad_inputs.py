"""Newcomer sweep 26's bad input cases (bench/reports/newcomer_sweep_26.md,
rows 19, 41, 42, 47), one test per class: a SentencePiece model named other
than *.model, a non-ASCII character where a JSON file we read fails, a
non-ASCII letter in an unknown BertConfig field, and the records folder as
held_out_tfrecords."""

import json
import os
import re

import pytest

from electra_tf import run_pretraining
from electra_tf.checkpoints import model_dir
from electra_tf.configs.bert_config import BertConfig
from electra_tf.sources import formats
from electra_tf.text import vocab as vocab_lib
from tests.helpers.bad_inputs import one_line
from tests.helpers.pretraining_data import make_data_dir
from tests.helpers.pretraining_data import self_made_hparams
from tfrecords_tools import build_vocab

NBSP = "U+00A0 NO-BREAK SPACE, not ASCII: replace it with a plain space"


def test_a_sentencepiece_model_named_like_its_piece_list_is_refused(tmp_path, capsys):
  """Row 19: `--model-type unigram --output sp.vocab` wrote the binary model
  under the name of SentencePiece's text list of pieces."""
  corpus = tmp_path / "c"
  corpus.mkdir()
  (corpus / "a.txt").write_text("the cat sat on the mat\n" * 20)
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "120", "--model-type", "unigram"]
  out = tmp_path / "sp.vocab"
  assert build_vocab.main(argv + ["--output", str(out)]) == 2
  assert one_line(capsys) == (
    f"error: --output '{out}': --model-type unigram writes a SentencePiece model, which other "
    f"tools look for as *.model; name it '{tmp_path / 'sp.model'}'"
  )
  assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_a_non_ascii_character_where_a_json_file_fails_is_named(tmp_path):
  """Row 41: a no-break space after a colon in a hand-edited run config.json
  or vocab.txt.json; the error named only a column, where editors show a space."""
  run = tmp_path / "run"
  run.mkdir()
  (run / "config.json").write_text('{\n  "format":\xa01}', encoding="utf-8")
  with pytest.raises(ValueError) as e:
    model_dir.read_run_config(str(run))
  assert str(e.value) == (
    f"run config {str(run / 'config.json')!r} is not valid JSON: Expecting value: line 2 "
    f"column 12 (char 13): the character there is {NBSP}"
  )
  # A published directory's config.json, read to tell its format.
  with pytest.raises(
    ValueError, match=f"config file '.*config.json' is not valid JSON .*{re.escape(NBSP)}"
  ):
    formats.detect(str(run))
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
  (tmp_path / "vocab.txt.json").write_text('{"do_lower_case":\xa0true}', encoding="utf-8")
  with pytest.raises(
    ValueError, match=f"vocab settings file '.*vocab.txt.json' .*{re.escape(NBSP)}\\)$"
  ):
    vocab_lib.vocab_settings(str(vocab))
  # An ASCII mistake reads as before.
  (tmp_path / "vocab.txt.json").write_text('{"do_lower_case":}')
  with pytest.raises(ValueError, match=r"is not valid JSON \(Expecting value: .* \(char 17\)\)$"):
    vocab_lib.vocab_settings(str(vocab))


def test_a_non_ascii_letter_in_an_unknown_bert_config_field_is_shown(tmp_path, capsys):
  """Row 42: a Cyrillic 'е' in a model_hparam_overrides key: the unknown field
  and the valid one read the same in the list of valid fields."""
  hp = tmp_path / "hp.json"
  hp.write_text(json.dumps({"model_hparam_overrides": {"hidden_siz\u0435": 32}}))
  argv = ["--data-dir", str(tmp_path), "--model-name", "n", "--hparams", str(hp)]
  assert run_pretraining.main(argv) == 2
  assert (
    "Unknown BertConfig field 'hidden_siz\\u0435' (its '\u0435' is U+0435 CYRILLIC SMALL LETTER "
    "IE, not ASCII) — did you mean 'hidden_size'? Valid BertConfig fields: "
  ) in one_line(capsys)
  assert not (tmp_path / "models").exists()
  with pytest.raises(ValueError, match="^Unknown BertConfig field 'hiden_size' — did you mean"):
    BertConfig.from_dict({"hiden_size": 32})


def test_the_records_folder_as_held_out_tfrecords_names_the_pattern(tmp_path, capsys):
  """Row 47: the folder (which holds records) was said to match no file."""
  make_data_dir(tmp_path)
  folder = str(tmp_path / "pretrain_tfrecords")
  hparams = self_made_hparams(held_out_tfrecords=folder, held_out_batches=2)
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", json.dumps(hparams)]
  assert run_pretraining.main(argv) == 2
  pattern = os.path.join(folder, "pretrain_data.tfrecord*")
  err = one_line(capsys)
  assert f"hparam held_out_tfrecords: pre-training file pattern ['{folder}'] matches" in err
  assert err.endswith(f"give a pattern of its record files, such as {pattern!r}")
  assert not (tmp_path / "models").exists()
