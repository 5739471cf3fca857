"""Newcomer sweep 15's bad cases (bench/reports/newcomer_sweep_15.md), one
test per class: a tied generator's size hparams (unused, and a fraction that
crashed the build), and a SavedModel-only flag taken by a portable export."""

from electra_tf import export_saved_model
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.training import pretraining_run
from tests.helpers import pretraining_data
from tests.helpers.bad_inputs import one_line


def test_a_tied_generator_s_size_fractions_are_said_unused_and_never_built(tmp_path, capsys):
  """`untied_generator: false` builds the full-size shared generator: an
  explicit generator_hidden_size was ignored silently, and generator_layers
  0.5 of one layer stopped the run with a BertConfig traceback."""
  pretraining_data.make_data_dir(tmp_path)
  hparams = pretraining_data.self_made_hparams(  # one layer: half of it is none
    untied_generator=False, generator_hidden_size=0.5, generator_layers=0.5
  )
  config = PretrainingConfig("m", str(tmp_path), **hparams)
  inputs = pretraining_run.validate_config(config)
  assert (
    "warning: untied_generator=false: the generator shares the discriminator's weights, so it "
    "is full size; generator_hidden_size=0.5, generator_layers=0.5 not used"
  ) in capsys.readouterr().err
  model = ElectraPretrainer.from_pretraining_config(config, inputs.vocab, inputs.bert_config)
  assert model.generator_config is None


def test_version_with_a_portable_format_is_refused(tmp_path, capsys):
  argv = ["--checkpoint", str(tmp_path / "m"), "--export-dir", str(tmp_path / "out")]
  assert export_saved_model.main(argv + ["--format", "onnx", "--version", "3"]) == 2
  assert one_line(capsys).endswith(
    "--version: for --format tf_saved_model only; a --format onnx export is one file in "
    "--export-dir (no version folders), its weights constants, in float32 unless --quantize"
  )
  assert not (tmp_path / "out").exists()
