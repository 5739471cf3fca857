"""Newcomer sweep 22's bad cases (bench/reports/newcomer_sweep_22.md), one
test per class: damaged or partly copied model files."""

import shutil

import pytest

from electra_tf import convert_checkpoint
from electra_tf.sources import formats
from tests.helpers import model_formats
from tests.helpers.bad_inputs import one_line


@pytest.fixture(scope="module")
def six_formats(tmp_path_factory):
  return model_formats.write_six_formats(tmp_path_factory.mktemp("formats"))[0]


def _cut(path):
  with open(path, "rb") as f:
    data = f.read()
  with open(path, "wb") as f:
    f.write(data[: len(data) // 2])


def _flip_a_byte(path):
  with open(path, "rb") as f:
    data = bytearray(f.read())
  data[data.find(b"HDF") + 4000] ^= 0xFF  # inside the zipped weights: a bad CRC
  with open(path, "wb") as f:
    f.write(bytes(data))


def test_a_damaged_model_file_is_named_as_damaged(six_formats, tmp_path, capsys):
  """A half-copied model.safetensors (a SafetensorError traceback), a .keras
  file cut in half ("File not found" of a file that is there) or with a byte
  changed (a BadZipFile traceback): one line naming the file, nothing written."""
  hf = tmp_path / "hf"
  shutil.copytree(six_formats[formats.HUGGINGFACE], hf)
  _cut(hf / "model.safetensors")
  cut_keras, changed_keras = tmp_path / "cut.keras", tmp_path / "changed.keras"
  for path, damage in ((cut_keras, _cut), (changed_keras, _flip_a_byte)):
    shutil.copy(six_formats[formats.KERAS], path)
    damage(path)
  for source, expected in (
    (hf / "model.safetensors", "cannot be read ("),
    (cut_keras, "is not a whole .keras file (no zip archive's directory at its end)"),
    (changed_keras, "cannot be read as a .keras file (Bad CRC-32"),
  ):
    if source.name == "model.safetensors":
      given, output = hf, tmp_path / "from_hf.keras"
    else:  # a .keras model converts to the original's checkpoint directory
      given, output = source, tmp_path / f"official_{source.stem}"
    argv = ["--input", str(given), "--output", str(output)]
    assert convert_checkpoint.main(argv) == 2
    err = one_line(capsys)
    assert f"{str(source)!r} " in err and expected in err, err
    assert err.endswith("damaged or only partly copied? copy it again"), err
    assert not output.exists()


def test_line_based_data_files_name_lone_carriage_returns_and_other_encodings(tmp_path):
  """CoNLL files with classic-Mac line ends were read as one word line (f1
  100 on one label) or as "no sentence"; a Latin-1 MRQA file gave "'utf-8'
  codec can't decode" with no file; a SQuAD file with a byte-order mark was
  not JSON. Every line-based reader (TSV, CoNLL, JSON lines) reads through
  `file_io.line_text`."""
  from electra_tf.finetune.qa import metrics as qa_metrics
  from electra_tf.finetune.tagging.tasks import read_conll

  conll = tmp_path / "train.txt"
  conll.write_bytes(b"-DOCSTART- -X- O\r\rthe B-NP\rcat I-NP\r")
  with pytest.raises(ValueError) as e:
    read_conll(str(conll))
  assert str(e.value) == (
    f"{conll}, line 1: its lines end in a lone \\r (classic Mac); save it with \\n or \\r\\n "
    "line ends"
  )
  conll.write_bytes(b"the B-NP\r\ncat I-NP\r\n\r\n")
  assert read_conll(str(conll)) == [(["the", "cat"], ["B-NP", "I-NP"])]
  jsonl = tmp_path / "dev.jsonl"
  jsonl.write_bytes(b'{"header": {}}\n{"context": "caf\xe9", "qas": []}\n')
  with pytest.raises(ValueError) as e:
    list(qa_metrics.read_jsonl(str(jsonl)))
  assert str(e.value) == f"{jsonl}, line 2: not UTF-8 text (invalid continuation byte)"
  jsonl.write_bytes(b'{"header": {}}\n{"qas": [{"qid": "a", "answers": ["x"]}]}\n')
  assert qa_metrics.read_mrqa_answers(str(jsonl)) == {"a": ["x"]}
  squad = tmp_path / "dev.json"
  squad.write_bytes(b'\xef\xbb\xbf{"version": "1.1", "data": []}')
  assert qa_metrics.read_json(str(squad)) == {"version": "1.1", "data": []}


def test_an_empty_tf_config_with_a_multi_worker_strategy_is_one_line(tmp_path, monkeypatch):
  """`TF_CONFIG=` (set, empty): TensorFlow's "Expecting value: line 1 column 1"."""
  from electra_tf.configs.pretraining import PretrainingConfig
  from electra_tf.runtime import distribution

  monkeypatch.setenv("TF_CONFIG", "")
  config = PretrainingConfig("m", str(tmp_path), distribution_strategy="multi_worker_mirrored")
  with pytest.raises(ValueError) as e:
    distribution.get_strategy(config)
  assert str(e.value) == (
    "environment variable TF_CONFIG is set but empty; unset it (one worker) or give the "
    "cluster's JSON"
  )


def test_convert_takes_only_bools_for_its_switches(six_formats, tmp_path):
  """`convert(m, out, with_optimizer_slots="no")` wrote the Adam slots."""
  from electra_tf import convert

  output = tmp_path / "official"
  for name in ("with_optimizer_slots", "overwrite"):
    with pytest.raises(ValueError) as e:
      convert.convert(six_formats[formats.KERAS], str(output), **{name: "no"})
    assert str(e.value) == f"{name}='no'; expected True or False"
  assert not output.exists()


def test_a_utf16_vocab_is_named_as_utf16(tmp_path):
  """A vocab.txt saved as UTF-16 was "neither a WordPiece vocab.txt nor a
  SentencePiece model"; its encoding is the cause."""
  from electra_tf.text.vocab import Vocab

  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n", encoding="utf-16")
  with pytest.raises(ValueError) as e:
    Vocab.read(str(vocab))
  assert str(e.value) == (
    f"vocab file {str(vocab)!r} is UTF-16 text (it starts with UTF-16's byte-order mark); "
    "save it as UTF-8"
  )


def test_a_keras_file_without_its_weights_is_named(six_formats, tmp_path):
  """A .keras archive without its model.weights.h5 member: Keras's "Expected
  a model.weights.h5 or model.weights.npz file" named no file."""
  import zipfile

  from electra_tf.sources import any_format

  copy = tmp_path / "no_weights.keras"
  with zipfile.ZipFile(six_formats[formats.KERAS]) as source:
    with zipfile.ZipFile(copy, "w") as target:
      for name in source.namelist():
        if name != "model.weights.h5":
          target.writestr(name, source.read(name))
  with pytest.raises(ValueError) as e:
    any_format.load(str(copy), "discriminator")
  assert str(e.value) == (
    f"{str(copy)!r} holds no model.weights.h5 (its weights): damaged or only partly copied? "
    "copy it again"
  )


def test_a_published_directory_with_an_empty_config_is_named(six_formats, tmp_path):
  """A Hugging Face directory whose config.json is 0 bytes: "no Hugging Face
  config.json + model.safetensors", though both files are there."""
  hf = tmp_path / "hf"
  shutil.copytree(six_formats[formats.HUGGINGFACE], hf)
  (hf / "config.json").write_text("")
  with pytest.raises(ValueError) as e:
    formats.detect(str(hf))
  assert str(e.value) == (
    f"{str(hf / 'config.json')!r} is empty or no JSON object, so {str(hf)!r} is no model "
    "electra_tf reads (damaged or only partly copied? copy it again)"
  )


def test_a_damaged_tokenizer_config_is_named_not_a_missing_vocab(six_formats, tmp_path):
  """A Hugging Face directory whose tokenizer_config.json is cut in half:
  from_checkpoint said it had "no electra_tf config.json recording its vocab"."""
  import electra_tf

  hf = tmp_path / "hf"
  shutil.copytree(six_formats[formats.HUGGINGFACE], hf)
  _cut(hf / "tokenizer_config.json")
  with pytest.raises(ValueError) as e:
    electra_tf.ElectraClassifier.from_checkpoint(str(hf), num_classes=2, max_seq_length=16)
  assert str(e.value).startswith(f"{str(hf / 'tokenizer_config.json')!r} is not readable JSON: ")
