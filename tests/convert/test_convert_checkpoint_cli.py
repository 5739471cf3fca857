"""The command line `python -m electra_tf.convert_checkpoint`: both
directions for the original's tiny pre-training checkpoint and for a
fine-tuned checkpoint, and the report it prints."""

import json

from electra_tf import convert_checkpoint
from electra_tf.sources import formats
from tests.helpers import model_formats
from tests.helpers.conversion import assert_bit_exact
from tests.helpers.conversion import read_all
from tests.helpers.conversion import write_finetuned


def test_cli_runs_both_directions(original_fixtures, tmp_path, capsys):
  tiny = original_fixtures / "models" / "tiny"
  hparams = str(original_fixtures / "models" / "tiny_hparams.json")

  def run_cli(source, output, *flags):
    """`convert_checkpoint` with the tiny model's hparams; returns its stdout."""
    argv = ["--input", str(source), "--output", str(output), "--hparams", hparams, *flags]
    assert convert_checkpoint.main(argv) == 0
    return capsys.readouterr().out

  assert "global_step: 50" in run_cli(tiny, tmp_path / "k", "--direction", "to-keras")
  out = run_cli(tmp_path / "k", tmp_path / "o", "--with-optimizer-slots")
  assert "converted: 247 entries" in out and "not converted: 0 entries" in out
  assert_bit_exact(tiny / "model.ckpt-50", tmp_path / "o" / "model.ckpt-50")
  # What a .keras discriminator leaves out is listed.
  out = run_cli(tiny, tmp_path / "d.keras", "--part", "discriminator")
  assert "164 optimizer slots" in out
  assert "    generator_predictions/output_bias\n" in out and "    global_step" in out


def test_finetuned_cli_both_directions(tmp_path, capsys):
  tasks = {"rte": ("classification", 2), "chunk": ("tagging", 5), "squad": ("qa", None)}
  source = write_finetuned(
    tmp_path / "rte,chunk,squad_model_1", tasks, with_slots=True, global_step=1000
  )
  assert (
    convert_checkpoint.main(
      [
        "--input",
        str(tmp_path / "rte,chunk,squad_model_1"),
        "--output",
        str(tmp_path / "m.keras"),
        "--hparams",
        json.dumps({"task_names": ["rte", "chunk", "squad"]}),
      ]
    )
    == 0
  )
  out = capsys.readouterr().out
  assert "  part: finetuned\n" in out
  assert "  task rte: classification, 2 labels\n" in out
  assert "  task chunk: tagging, 5 tags\n" in out
  assert "  task squad: qa (joint_prediction, answerable_classifier, " in out
  assert "optimizer slots" in out and "    global_step\n" in out
  assert (
    convert_checkpoint.main(
      [
        "--input",
        str(tmp_path / "m.keras"),
        "--output",
        str(tmp_path / "o"),
        "--global-step",
        "1000",
      ]
    )
    == 0
  )
  assert "not converted: 0 entries" in capsys.readouterr().out
  negative = ["--input", str(tmp_path / "m.keras"), "--output", str(tmp_path / "neg")]
  assert convert_checkpoint.main(negative + ["--global-step", "-5"]) == 2
  assert "--global-step -5: expected a step in [0, 2**63)" in capsys.readouterr().err
  assert not (tmp_path / "neg").exists()
  written, _ = read_all(tmp_path / "o" / "model.ckpt-1000")
  original, _ = read_all(source)
  assert set(written) == {n for n in original if not n.endswith(("/adam_m", "/adam_v"))}
  for n, value in written.items():
    assert value.tobytes() == original[n].tobytes(), n


def test_an_existing_keras_output_is_not_replaced_without_overwrite(tmp_path, capsys):
  source = str(model_formats.official_checkpoint(tmp_path / "official"))
  output = tmp_path / "discriminator.keras"
  output.write_bytes(b"a model someone depends on")
  argv = ["--input", source, "--output", str(output), "--part", "discriminator"]
  argv += ["--hparams", json.dumps(model_formats.PRETRAINING_HPARAMS)]
  assert convert_checkpoint.main(argv) == 2
  err = capsys.readouterr().err
  assert f"--output {str(output)!r} exists; pass --overwrite" in err and len(err.splitlines()) == 1
  assert output.read_bytes() == b"a model someone depends on"
  assert convert_checkpoint.main(argv + ["--overwrite"]) == 0
  assert formats.detect(str(output)).format == formats.KERAS
