"""A WordPiece vocab carries its settings (`<vocab.txt>.json`, as a
SentencePiece model does): the builder, pre-training, fine-tuning, export and
publishing follow them without the flag, and refuse a contradicting flag in
one line; a vocab without the file keeps today's defaults. Real Vietnamese
text (Django's catalogue), where accents tell words apart."""

import importlib
import json
import shutil

import pytest

from electra_tf import build_pretraining_dataset
from electra_tf.serving import export as export_lib
from electra_tf.text import tokenizer_for
from electra_tf.text import vocab as vocab_lib
from electra_tf.training import finetuning_run
from electra_tf.training import pretraining_run
from tests.helpers.subprocesses import build_dataset_flags
from tests.helpers.translations import catalogue_messages
from tfrecords_tools import build_vocab

LINES = 300
# The module, not the `publish` function the package exports under its name.
publish = importlib.import_module("electra_tf.convert.publish")


@pytest.fixture(scope="module")
def vietnamese(tmp_path_factory):
  """`(corpus dir, vocab built with --no-strip-accents)`."""
  root = tmp_path_factory.mktemp("vi")
  lines = [line for document in catalogue_messages("vi") for line in document][:LINES]
  corpus = root / "corpus"
  corpus.mkdir()
  (corpus / "vi.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
  vocab = root / "vocab.txt"
  argv = ["--corpus-dir", str(corpus), "--vocab-size", "600", "--output", str(vocab)]
  assert build_vocab.main(argv + ["--no-strip-accents"]) == 0
  return corpus, vocab


def _records(corpus, vocab, out, *flags):
  argv = build_dataset_flags(corpus, vocab, out, max_seq_length=32, seed=0)
  assert build_pretraining_dataset.main(argv + ["--num-out-files", "1", *flags]) == 0
  (shard,) = sorted(p for p in out.iterdir() if "tfrecord" in p.name)
  return shard.read_bytes()


def test_the_vocab_records_what_it_was_built_with(vietnamese):
  _, vocab = vietnamese
  with open(vocab_lib.settings_path(str(vocab)), encoding="utf-8") as f:
    settings = json.load(f)
  assert settings["kind"] == "wordpiece"
  assert (settings["do_lower_case"], settings["strip_accents"]) == (True, False)
  assert settings["vocab_size"] == len(vocab.read_text("utf-8").splitlines())
  assert settings["special_tokens"] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  tok = tokenizer_for(str(vocab))
  assert (tok.do_lower_case, tok.strip_accents) == (True, False)


def test_records_without_the_flag_equal_records_with_it(vietnamese, tmp_path):
  corpus, vocab = vietnamese
  without = _records(corpus, vocab, tmp_path / "without")
  with_flag = _records(corpus, vocab, tmp_path / "with", "--no-strip-accents")
  assert without == with_flag
  # An old vocab (the same tokens, no settings file) keeps today's default,
  # accent stripping: other records, which the flag brings back.
  old = tmp_path / "old" / "vocab.txt"
  old.parent.mkdir()
  shutil.copy(vocab, old)
  assert not vocab_lib.has_recorded_settings(str(old))
  assert _records(corpus, old, tmp_path / "old_default") != without
  assert _records(corpus, old, tmp_path / "old_flag", "--no-strip-accents") == without


def test_a_contradicting_flag_is_refused_in_one_line(vietnamese, tmp_path, capsys):
  corpus, vocab = vietnamese
  argv = build_dataset_flags(corpus, vocab, tmp_path / "out", max_seq_length=32)
  assert build_pretraining_dataset.main(argv + ["--do-strip-accents"]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1, err
  assert "--do-strip-accents" in err[0] and f"{vocab}.json" in err[0]
  assert "strip_accents=false" in err[0]
  assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
  # Lower-casing that agrees with the file is accepted.
  argv = build_dataset_flags(corpus, vocab, tmp_path / "agree", max_seq_length=32, seed=0)
  assert build_pretraining_dataset.main(argv + ["--do-lower-case", "--num-out-files", "1"]) == 0


def test_every_reader_follows_the_settings_and_refuses_a_contradiction(vietnamese, tmp_path):
  _, vocab = vietnamese
  conflict = vocab_lib.VocabSettingsConflict
  # Pre-training and fine-tuning: the hparams' defaults give way, a set one must agree.
  size = len(vocab.read_text("utf-8").splitlines())
  hparams = {"vocab_file": str(vocab), "vocab_size": size}
  config = pretraining_run.make_config("m", str(tmp_path), hparams)
  assert (config.do_lower_case, config.strip_accents) == (True, False)
  with pytest.raises(conflict, match=r"^hparam strip_accents=true contradicts .*vocab\.txt\.json"):
    pretraining_run.make_config("m", str(tmp_path), dict(hparams, strip_accents=True))
  config = finetuning_run.make_config("m", str(tmp_path), {"vocab_file": str(vocab)})
  assert (config.do_lower_case, config.strip_accents) == (True, False)
  with pytest.raises(conflict, match="hparam do_lower_case=false"):
    finetuning_run.make_config(
      "m", str(tmp_path), {"vocab_file": str(vocab), "do_lower_case": False}
    )
  # Export: its flags only turn normalisation off.
  assert export_lib.normalisation(None, str(vocab)) == (True, False)
  assert export_lib.normalisation(None, str(vocab), no_strip_accents=True) == (True, False)
  with pytest.raises(conflict, match="^--no-lower-case contradicts"):
    export_lib.normalisation(None, str(vocab), no_lower_case=True)
  # Publishing.
  # The settings file wins over the run's defaults (both True here).
  run_defaults = {"do_lower_case": True, "strip_accents": True}
  assert publish._vocab_normalisation(str(vocab), {}, run_defaults) == {  # pylint: disable=protected-access
    "do_lower_case": True,
    "strip_accents": False,
  }
  with pytest.raises(conflict, match="hparam strip_accents=true"):
    publish._vocab_normalisation(str(vocab), {"strip_accents": True}, run_defaults)  # pylint: disable=protected-access
  # Every conflict message is one line.
  try:
    tokenizer_for(str(vocab), strip_accents=True)
  except conflict as e:
    assert "\n" not in str(e)
  else:
    raise AssertionError("tokenizer_for took a contradicting strip_accents")


def test_without_lower_casing_strip_accents_is_no_contradiction(tmp_path):
  # WordPiece strips accents only while lower-casing: a cased vocab accepts either flag.
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nÉlan\n", encoding="utf-8")
  vocab_lib.write_vocab_settings(str(vocab), {"do_lower_case": False, "strip_accents": True})
  assert vocab_lib.resolve_normalisation(str(vocab), strip_accents=False) == (False, False)
  with pytest.raises(vocab_lib.VocabSettingsConflict, match="do_lower_case=true"):
    vocab_lib.resolve_normalisation(str(vocab), do_lower_case=True)


@pytest.mark.parametrize("stale", [{"vocab_size": 4000}, {"kind": "sentencepiece"}])
def test_another_vocabs_settings_file_is_refused_in_one_line(vietnamese, tmp_path, capsys, stale):
  """A settings file left beside a replaced vocab.txt would apply another
  vocab's normalisation silently (a cased file on an uncased vocab turns
  every capitalised word into [UNK])."""
  corpus, vocab = vietnamese
  copied = tmp_path / "vocab.txt"
  shutil.copy(vocab, copied)
  with open(vocab_lib.settings_path(str(vocab)), encoding="utf-8") as f:
    settings = json.load(f)
  settings.update(stale, do_lower_case=False)
  vocab_lib.write_vocab_settings(str(copied), settings)
  argv = build_dataset_flags(corpus, copied, tmp_path / "out", max_seq_length=32)
  assert build_pretraining_dataset.main(argv) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1, err
  ((key, value),) = stale.items()
  assert f"{copied}.json" in err[0] and f"says {key} {value!r}" in err[0]
  assert "another vocab" in err[0]
  assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
  with pytest.raises(ValueError, match="belongs to another vocab"):
    vocab_lib.Vocab.read(str(copied))
