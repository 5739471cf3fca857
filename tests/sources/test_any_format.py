"""The one door: each of the six model formats fed to the four entry points
that read models — the converter, the exporter, `run_finetuning`'s
`init_checkpoint` and `ElectraClassifier.from_checkpoint` — either works or
stops with the same one-line message."""

import json

import numpy as np
import pytest

import electra_tf
from electra_tf import convert
from electra_tf import run_finetuning
from electra_tf.finetune import task_builder
from electra_tf.models import official_names
from electra_tf.models.electra_backbone import ElectraBackbone
from electra_tf.serving import export as export_lib
from electra_tf.sources import any_format
from electra_tf.sources import formats
from electra_tf.text import wordpiece as tokenization
from tests.helpers import model_formats
from tests.helpers.finetuning_testdata import finetuning_config

HPARAMS = json.dumps(model_formats.PRETRAINING_HPARAMS)
ENCODER = "electra/encoder/layer_1/output/dense/kernel"


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
  return model_formats.write_six_formats(tmp_path_factory.mktemp("door"))


@pytest.fixture(scope="module")
def reference(sources):
  """One encoder kernel of the official checkpoint, which every format carries."""
  paths, _ = sources
  discriminator = any_format.load(paths[formats.OFFICIAL], "discriminator", HPARAMS).model
  return np.asarray(official_names.discriminator_name_map(discriminator)[ENCODER])


def _convert(path, fmt, tmp_path):
  """The natural conversion of each format: a `.keras` model to the
  original's format, everything else to a `.keras` model."""
  output = tmp_path / ("official_out" if fmt == formats.KERAS else "out.keras")
  part = "discriminator" if fmt in (formats.OFFICIAL, formats.TRAINING) else None
  hparams = HPARAMS if fmt == formats.OFFICIAL else None
  report = convert.convert(path, str(output), part=part, hparams=hparams)
  assert report["converted"]


def _export(path, fmt, tmp_path):
  kind = "task" if fmt == formats.FINETUNED else "discriminator"
  hparams = HPARAMS if fmt == formats.OFFICIAL else None
  model, _ = export_lib.load_model(checkpoint=path, kind=kind, hparams=hparams)
  if kind == "task":
    assert model.task_names == [model_formats.TASK]
  else:
    assert isinstance(model, ElectraBackbone)  # a keras-hub preset's has no head


def _init_checkpoint(path, fmt, tmp_path, vocab):
  data_dir = tmp_path / "data"
  (data_dir / "models").mkdir(parents=True)
  config = finetuning_config(
    "ft",
    str(data_dir),
    vocab_file=vocab,
    vocab_size=model_formats.DIMS["V"],
    task_names=[model_formats.TASK],
    init_checkpoint=path,
    max_seq_length=16,
    **model_formats.ENCODER_SIZES,
  )
  tasks = task_builder.get_tasks(config, tokenization.FullTokenizer(vocab))
  runner = run_finetuning.ModelRunner(config, tasks)
  return np.asarray(runner.model.official_name_map()[ENCODER])


def _from_checkpoint(path, fmt, tmp_path, vocab):
  sizes = dict(model_formats.ENCODER_SIZES)
  classifier = electra_tf.ElectraClassifier.from_checkpoint(
    path, vocab, num_classes=2, max_seq_length=16, **sizes
  )
  return np.asarray(classifier.official_name_map()[ENCODER])


@pytest.mark.parametrize("fmt", formats.FORMATS)
@pytest.mark.parametrize("consumer", ["convert", "export", "init_checkpoint", "from_checkpoint"])
def test_every_entry_point_reads_every_format_or_says_so_in_one_line(
  sources, reference, fmt, consumer, tmp_path
):
  paths, vocab = sources
  path = paths[fmt]

  def run():
    if consumer == "convert":
      return _convert(path, fmt, tmp_path)
    if consumer == "export":
      return _export(path, fmt, tmp_path)
    if consumer == "init_checkpoint":
      return _init_checkpoint(path, fmt, tmp_path, vocab)
    return _from_checkpoint(path, fmt, tmp_path, vocab)

  kernel = run()
  if kernel is not None:
    # Fine-tuning starts from the checkpoint's encoder, whatever its format.
    np.testing.assert_array_equal(kernel, reference)


def test_a_part_the_format_cannot_give_is_one_line(sources):
  paths, _ = sources
  with pytest.raises(ValueError) as e:
    any_format.load(paths[formats.HUGGINGFACE], "generator")
  assert (
    str(e.value)
    == f"{paths[formats.HUGGINGFACE]!r} holds the discriminator; expected the generator"
  )
  with pytest.raises(ValueError) as e:
    any_format.load(paths[formats.OFFICIAL], "finetuned")
  assert "is an official (name-based) checkpoint; expected a fine-tuned checkpoint" in str(e.value)


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_each_format_opens_as_its_own_source_detected_once(sources, fmt, monkeypatch):
  paths, _ = sources
  calls = []
  detect = formats.detect
  monkeypatch.setattr(formats, "detect", lambda path: calls.append(path) or detect(path))
  source = any_format.open_source(paths[fmt])
  assert (
    type(source).__name__
    == {
      formats.OFFICIAL: "OfficialSource",
      formats.FINETUNED: "FinetunedSource",
      formats.TRAINING: "TrainingSource",
      formats.KERAS: "KerasFileSource",
      formats.HUGGINGFACE: "HuggingFaceSource",
      formats.KERAS_HUB_PRESET: "KerasHubPresetSource",
    }[fmt]
  )
  assert source.format == fmt and any_format.open_source(source) is source
  # Everything a consumer asks of the source reads the path without detecting it again.
  recorded, run = source.recorded_inputs(), source.recorded_run()
  source.check_starts_finetuning()
  if fmt in any_format.READABLE[any_format.DISCRIMINATOR]:
    hparams = HPARAMS if fmt == formats.OFFICIAL else None
    assert source.load(any_format.DISCRIMINATOR, hparams).detected is source
  assert calls == [paths[fmt]]
  # The published formats describe their encoder as a run; a run dir gives its own config.json.
  if fmt in (formats.HUGGINGFACE, formats.KERAS_HUB_PRESET):
    assert run["kind"] == any_format.KIND_PUBLISHED and run["vocab"]["file"] == recorded.vocab_file
  elif fmt in (formats.TRAINING, formats.FINETUNED):
    assert run is source.run_config
  else:
    assert run is None
