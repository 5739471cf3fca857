"""The shared config base: typed fields with help, strict updates with "did you mean"."""

import dataclasses

import pytest

from electra_tf.configs import reference
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.configs.hparams import ConfigBase
from electra_tf.configs.hparams import hparam
from electra_tf.configs.pretraining import PretrainingConfig

CONFIGS = [PretrainingConfig, FinetuningConfig]


@pytest.mark.parametrize("config_class", CONFIGS)
def test_every_field_is_typed_and_has_help(config_class, tmp_path):
  fields = dataclasses.fields(config_class)
  assert len(fields) > 40
  for f in fields:
    assert f.type is not dataclasses.MISSING, f.name
    help_text = f.metadata.get("help", "")
    assert help_text.strip() and not help_text.startswith(" "), f.name
  # Every public attribute an instance carries is a declared field.
  config = config_class("m", str(tmp_path))
  public = {k for k in vars(config) if not k.startswith("_")}
  assert public == {f.name for f in fields}
  assert list(config.to_dict()) == [f.name for f in fields]


@pytest.mark.parametrize("config_class", CONFIGS)
@pytest.mark.parametrize(
  "typo,suggestion",
  [("lerning_rate", "learning_rate"), ("max_seq_len", "max_seq_length"), ("sed", "seed")],
)
def test_unknown_key_suggests_the_closest(config_class, typo, suggestion, tmp_path):
  with pytest.raises(ValueError) as info:
    config_class("m", str(tmp_path), **{typo: 1})
  message = str(info.value)
  assert message.startswith(
    f"Unknown hparam {typo!r} — did you mean {suggestion!r}? Valid hparams:"
  )
  assert "learning_rate" in message.split("Valid hparams:")[1]
  assert "\n" not in message


def test_unknown_key_without_a_close_name(tmp_path):
  with pytest.raises(ValueError, match=r"^Unknown hparam 'zzzzqqq'\. Valid hparams: ") as info:
    PretrainingConfig("m", str(tmp_path), zzzzqqq=1)
  assert "did you mean" not in str(info.value)


def test_update_after_construction_is_strict(tmp_path):
  config = FinetuningConfig("m", str(tmp_path))
  config.update({"learning_rate": 3e-5, "task_names": ["rte"]})
  assert (config.learning_rate, config.task_names) == (3e-5, ["rte"])
  with pytest.raises(ValueError, match="did you mean 'num_train_epochs'"):
    config.update({"num_train_epoch": 1.0})
  pretraining = PretrainingConfig("m", str(tmp_path))
  with pytest.raises(ValueError, match="max_predictions_per_seq.*derived"):
    pretraining.update({"max_predictions_per_seq": 3})
  assert pretraining.max_predictions_per_seq == 19


def test_mutable_defaults_are_not_shared(tmp_path):
  a = FinetuningConfig("m", str(tmp_path))
  b = FinetuningConfig("m", str(tmp_path))
  a.task_names.append("rte")
  a.model_hparam_overrides["hidden_size"] = 8
  assert b.task_names == ["chunk"] and b.model_hparam_overrides == {}
  assert FinetuningConfig.__dataclass_fields__["task_names"].default_factory() == ["chunk"]


def test_repr_lists_sorted_hparams(tmp_path):
  lines = repr(PretrainingConfig("m", str(tmp_path))).splitlines()
  assert lines == sorted(lines)
  assert "disc_weight 50.0" in lines and "max_predictions_per_seq 19" in lines


def test_reference_reads_help_and_catches_undeclared_attributes():
  @dataclasses.dataclass(init=False, repr=False, eq=False)
  class Small(ConfigBase):
    steps: int = hparam(10, "How many steps.")
    path: str = hparam(None, "Where it goes.")

    def __init__(self, extra=False, **kwargs):
      self.set_defaults()
      self.path = "/root/x"
      if extra:
        self.undeclared = 1
      self.update(kwargs)

  table = reference._table(Small(steps=3), "/root")
  assert "| `steps` | `3` | How many steps. |" in table
  assert "| `path` | `<data_dir>/x` | Where it goes. |" in table
  with pytest.raises(KeyError, match="undeclared"):
    reference._table(Small(extra=True), "/root")

  @dataclasses.dataclass(init=False, repr=False, eq=False)
  class NoHelp(ConfigBase):
    steps: int = hparam(10, "")

    def __init__(self):
      self.set_defaults()

  with pytest.raises(KeyError, match="'steps'.*no help"):
    reference._table(NoHelp(), "/root")
