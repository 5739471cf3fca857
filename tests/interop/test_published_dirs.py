"""A Hugging Face directory and a keras-hub preset that electra_tf published
hold their tokenizer; every entry point that reads models — the converter,
the exporter, `run_finetuning`'s `init_checkpoint` and the task models —
reads them with no extra flag (no `--vocab-file`, no sizes), with the
casing they record. The published model here is cased (`do_lower_case`
false), so a tokenizer that fell back to the lower-casing default would
give other ids."""

import json

import numpy as np
import pytest
import tensorflow as tf

import electra_tf
from electra_tf import convert
from electra_tf import convert_checkpoint
from electra_tf import export_saved_model
from electra_tf import run_finetuning
from electra_tf.finetune import task_builder
from electra_tf.models import official_names
from electra_tf.serving import loading as serving_loading
from electra_tf.sources import any_format
from electra_tf.sources import formats
from electra_tf.training import finetuning_run
from tests.helpers import model_formats

ENCODER = "electra/encoder/layer_1/output/dense/kernel"
CASED = dict(model_formats.PRETRAINING_HPARAMS, do_lower_case=False, strip_accents=False)
# The vocab's tokens are lower-case (`w0`, `w1`, ...): "W3" is [UNK] to a
# cased tokenizer and `w3` to a lower-casing one.
TEXT = "W3 w3"


def _ids(vocab_file, *tokens):
  with open(vocab_file, encoding="utf-8") as f:
    vocab = [line.rstrip("\n") for line in f]
  return [vocab.index(t) for t in tokens]


@pytest.fixture(scope="module")
def published(tmp_path_factory):
  """`({format: path}, vocab, reference kernel)`: one random official
  checkpoint published, cased, as a Hugging Face directory and a keras-hub
  preset, with no vocab anywhere near them."""
  root = tmp_path_factory.mktemp("published")
  official = model_formats.official_checkpoint(root / "official")
  vocab = model_formats.write_vocab(root / "vocab.txt")
  hparams = json.dumps(CASED)
  paths = {}
  for target, fmt in (
    ("huggingface", formats.HUGGINGFACE),
    ("keras-hub", formats.KERAS_HUB_PRESET),
  ):
    paths[fmt] = str(root / fmt)
    convert.publish(str(official), paths[fmt], to=target, hparams=hparams, vocab_file=vocab)
  discriminator = any_format.load(str(official), "discriminator", hparams).model
  reference = np.asarray(official_names.discriminator_name_map(discriminator)[ENCODER])
  return paths, vocab, reference


FORMATS = [formats.HUGGINGFACE, formats.KERAS_HUB_PRESET]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_door_finds_the_tokenizer_and_its_casing(published, fmt):
  paths, vocab, _ = published
  recorded = any_format.recorded_inputs(paths[fmt])
  assert recorded.vocab_file.startswith(paths[fmt])
  assert recorded.do_lower_case is False
  with open(recorded.vocab_file, encoding="utf-8") as f, open(vocab, encoding="utf-8") as g:
    assert f.read().split() == g.read().split()
  # Neither records a trained length (a backbone has only its position table).
  assert recorded.max_seq_length is None


def _served_ids(export_dir, text):
  module = serving_loading.load(str(export_dir))
  out = module.signatures["serving_default"](text_a=tf.constant([text]), text_b=tf.constant([""]))
  ids, mask = out["input_ids"].numpy()[0], out["input_mask"].numpy()[0]
  return [int(i) for i, m in zip(ids, mask) if m], module


@pytest.mark.slow
def test_exporter_reads_a_hugging_face_directory_without_vocab_file(published, tmp_path, capsys):
  paths, vocab, _ = published
  out = tmp_path / "serving"
  argv = ["--checkpoint", paths[formats.HUGGINGFACE], "--export-dir", str(out), "--version", "1"]
  assert export_saved_model.main(argv) == 0
  printed = capsys.readouterr().out
  # A Hugging Face directory records no trained length: the default, capped
  # by the position table (64), and a line that says so.
  assert "Serving max_seq_length 64 (the default:" in printed
  assert "records no trained length" in printed
  ids, module = _served_ids(out / "1", TEXT)
  assert ids == _ids(vocab, "[CLS]", "[UNK]", "w3", "[SEP]")  # cased, as recorded
  assert module.signatures["serve_ids"].structured_input_signature[1]["input_ids"].shape[1] == 64


@pytest.mark.slow
def test_exporter_reads_a_keras_hub_task_preset_without_vocab_file(published, tmp_path, capsys):
  paths, vocab, _ = published
  # A backbone preset has no task head to serve: fine-tune one (here: build
  # it) at 24 tokens and save it as a task preset; it keeps its tokenizer.
  classifier = electra_tf.ElectraClassifier.from_preset(
    paths[formats.KERAS_HUB_PRESET], num_classes=2, max_seq_length=24
  )
  preset = tmp_path / "task_preset"
  classifier.save_to_preset(str(preset))
  out = tmp_path / "serving"
  argv = ["--checkpoint", str(preset), "--model", "task", "--export-dir", str(out)]
  assert export_saved_model.main(argv) == 0
  assert (
    f"Serving max_seq_length 24 (recorded in {preset / 'task.json'})" in capsys.readouterr().out
  )
  ids, module = _served_ids(out / "1", TEXT)
  assert ids == _ids(vocab, "[CLS]", "[UNK]", "w3", "[SEP]")
  assert module.signatures["serve_ids"].structured_input_signature[1]["input_ids"].shape[1] == 24


def _convert_cli(argv, capsys):
  code = convert_checkpoint.main(argv)
  return code, capsys.readouterr().err


@pytest.mark.parametrize("fmt", FORMATS)
def test_converter_takes_part_discriminator_and_refuses_a_part_not_there(
  published, fmt, tmp_path, capsys
):
  paths, _, reference = published
  output = tmp_path / "disc.keras"
  code, err = _convert_cli(
    ["--input", paths[fmt], "--output", str(output), "--part", "discriminator"], capsys
  )
  assert code == 0 and "convert_checkpoint: error" not in err
  loaded = any_format.load(str(output), "discriminator").model
  kernel = official_names.discriminator_name_map(loaded, include_head=False)[ENCODER]
  np.testing.assert_array_equal(np.asarray(kernel), reference)
  code, err = _convert_cli(
    ["--input", paths[fmt], "--output", str(tmp_path / "gen.keras"), "--part", "generator"],
    capsys,
  )
  assert code == 2
  assert err.count("\n") == 1 and "Traceback" not in err
  assert "generator" in err and "discriminator" in err
  assert not (tmp_path / "gen.keras").exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_finetuning_starts_from_a_published_directory_with_no_other_hparam(
  published, fmt, tmp_path
):
  paths, vocab, reference = published
  data_dir = tmp_path / "data"
  (data_dir / "models").mkdir(parents=True)
  hparams = {"task_names": [model_formats.TASK], "init_checkpoint": paths[fmt]}
  config = finetuning_run.make_config("ft", str(data_dir), hparams)
  # The vocab, its casing and the encoder's sizes come from the directory.
  assert config.vocab_file == any_format.recorded_inputs(paths[fmt]).vocab_file
  assert (config.do_lower_case, config.vocab_size) == (False, model_formats.DIMS["V"])
  tokenizer = finetuning_run.finetuning_tokenizer(config)
  assert tokenizer.convert_tokens_to_ids(tokenizer.tokenize(TEXT)) == _ids(vocab, "[UNK]", "w3")
  config.max_seq_length = 16  # the cache-free part of a run: the model and its initialisation
  tasks = task_builder.get_tasks(config, tokenizer)
  runner = run_finetuning.ModelRunner(config, tasks)
  np.testing.assert_array_equal(np.asarray(runner.model.official_name_map()[ENCODER]), reference)


@pytest.mark.parametrize("door", ["from_checkpoint", "from_preset"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_task_models_read_a_published_directory_with_no_extra_argument(published, fmt, door):
  paths, vocab, reference = published
  if door == "from_preset" and fmt == formats.HUGGINGFACE:
    with pytest.raises(ValueError, match="expected a keras-hub preset directory"):
      electra_tf.ElectraClassifier.from_preset(paths[fmt], num_classes=2)
    return
  load = getattr(electra_tf.ElectraClassifier, door)
  classifier = load(paths[fmt], num_classes=2, max_seq_length=16)
  np.testing.assert_array_equal(np.asarray(classifier.official_name_map()[ENCODER]), reference)
  packed = classifier.pack(tf.constant([TEXT]))
  ids = [int(i) for i, m in zip(packed["input_ids"][0], packed["input_mask"][0]) if m]
  assert ids == _ids(vocab, "[CLS]", "[UNK]", "w3", "[SEP]")
