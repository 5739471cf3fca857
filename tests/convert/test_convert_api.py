"""`convert.convert` (`electra_tf.convert.api`), the direction
detected from the input: official → electra_tf → official is bit-exact for
every layout of the original's pre-training checkpoints, with or without the
saved hparams; wrong directions and options are errors."""

import json

import pytest

from electra_tf import convert
from electra_tf import convert_checkpoint
from electra_tf.sources import formats
from tests.helpers.conversion import LAYOUTS
from tests.helpers.conversion import assert_bit_exact
from tests.helpers.conversion import read_all
from tests.helpers.conversion import write_layout


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_round_trip_is_bit_exact_for_layout(tmp_path, name):
  source = write_layout(tmp_path / "official", name)
  report = convert.convert(str(source), str(tmp_path / "keras"))
  assert report["not_converted"] == []
  assert report["global_step"] == 123
  # The converted hparams are saved next to the training checkpoint.
  saved = json.loads((tmp_path / "keras" / convert.HPARAMS_FILE).read_text())
  assert saved == report["hparams"]
  back = convert.convert(
    str(tmp_path / "keras"), str(tmp_path / "back"), with_optimizer_slots=False
  )
  assert any(convert.HPARAMS_FILE in n for n in back["notes"])
  # Without slots: the model tensors and global_step only.
  written, _ = read_all(back["output"])
  original, _ = read_all(source)
  assert set(written) == {n for n in original if not n.endswith(("/adam_m", "/adam_v"))}
  # Without the saved hparams, they are inferred from the training checkpoint.
  (tmp_path / "keras" / convert.HPARAMS_FILE).unlink()
  back = convert.convert(
    str(tmp_path / "keras"), str(tmp_path / "back_slots"), with_optimizer_slots=True
  )
  assert any("inferred from the checkpoint" in n for n in back["notes"])
  assert back["output"].endswith("model.ckpt-123")
  assert_bit_exact(source, back["output"])


def test_wrong_direction_and_options(tmp_path):
  source = write_layout(tmp_path / "official", "default", with_slots=False)
  with pytest.raises(ValueError, match="use --direction to-keras"):
    convert.convert(str(source), str(tmp_path / "o"), direction="to-official")
  with pytest.raises(ValueError, match="only the pretrainer is written as a training"):
    convert.convert(str(source), str(tmp_path / "o"), part="discriminator")
  with pytest.raises(ValueError, match="does not exist"):
    convert.convert(str(tmp_path / "nothing"), str(tmp_path / "o"))
  with pytest.raises(ValueError, match="already holds checkpoints"):
    convert.convert(str(source), str(tmp_path / "official"))
  # An --output that is a file, for a conversion that writes a checkpoint directory.
  (tmp_path / "a_file").write_text("x")
  with pytest.raises(ValueError, match="'.*a_file' is a file; this conversion writes a checkpoint"):
    convert.convert(str(source), str(tmp_path / "a_file"))
  assert (
    convert_checkpoint.main(["--input", str(tmp_path / "nothing"), "--output", str(tmp_path / "o")])
    == 2
  )


def test_each_conversion_detects_its_input_s_format_once(tmp_path, monkeypatch):
  """The format is detected once and passed on (the direction used to detect it again)."""
  calls = []
  real_detect = formats.detect

  def counting_detect(*args, **kwargs):
    calls.append(args[0])
    return real_detect(*args, **kwargs)

  monkeypatch.setattr(formats, "detect", counting_detect)
  source = write_layout(tmp_path / "official", sorted(LAYOUTS)[0])
  convert.convert(str(source), str(tmp_path / "keras"))
  assert len(calls) == 1, calls
  calls.clear()
  convert.convert(str(tmp_path / "keras"), str(tmp_path / "back"))
  assert len(calls) == 1, calls
