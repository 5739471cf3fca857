"""The shared config base: typed fields with help, strict updates with "did you mean"."""

import dataclasses
import json

import pytest

from electra_tf.configs import reference
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.configs.hparams import RUN_CONFIG_FORMAT
from electra_tf.configs.hparams import ConfigBase
from electra_tf.configs.hparams import hparam
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.hparams_input import load_hparams

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


@pytest.mark.parametrize(
  "key,value,message",
  [
    ("debug", "false", "hparam 'debug' must be true or false, got the str 'false'"),
    ("num_train_steps", "100", "hparam 'num_train_steps' must be an integer, got the str '100'"),
    ("num_train_steps", 2.5, "hparam 'num_train_steps' must be an integer, got the float 2.5"),
    ("learning_rate", True, "hparam 'learning_rate' must be a number, got the bool True"),
    ("mask_prob", None, "hparam 'mask_prob' must be a number, got the NoneType None"),
    ("seed", "1", "hparam 'seed' must be an integer or null, got the str '1'"),
    ("model_hparam_overrides", [], "hparam 'model_hparam_overrides' must be a JSON object"),
    ("model_size", 1, "hparam 'model_size' must be a string, got the int 1"),
  ],
)
def test_values_of_the_wrong_type_name_the_key(tmp_path, key, value, message):
  with pytest.raises(ValueError) as info:
    PretrainingConfig("m", str(tmp_path), **{key: value})
  assert str(info.value).startswith(message)


def test_values_that_fit_their_types(tmp_path):
  import numpy as np

  config = PretrainingConfig(
    "m",
    str(tmp_path),
    num_train_steps=1e6,  # JSON's 1e6 is a float
    learning_rate=1,
    vocab_size=np.int64(64),
    seed=None,
    keep_checkpoint_max=None,
    init_checkpoint=tmp_path / "ckpt",
  )
  assert config.num_train_steps == 1e6 and config.learning_rate == 1
  finetuning = FinetuningConfig("m", str(tmp_path), task_names=("rte",), tfds_data_dir=None)
  assert finetuning.task_names == ("rte",)
  with pytest.raises(ValueError, match="hparam 'task_names' must be a list"):
    FinetuningConfig("m", str(tmp_path), task_names={"rte": 1})


@pytest.mark.parametrize(
  "kind, recorded, command",
  [
    ("pretraining", "PretrainingConfig", "FinetuningConfig"),
    ("finetuning", "FinetuningConfig", "PretrainingConfig"),
  ],
)
def test_a_run_config_of_another_kind_is_one_line(tmp_path, kind, recorded, command):
  path = tmp_path / "config.json"
  path.write_text(
    json.dumps({"format": RUN_CONFIG_FORMAT, "kind": kind, "config_class": recorded, "hparams": {}})
  )
  with pytest.raises(ValueError, match=rf"is the config.json of a {kind} run \({recorded}\); "):
    load_hparams(str(path), command)
  assert load_hparams(str(path), recorded) == {}  # its own kind is read


def test_a_directory_or_binary_file_as_hparams_is_named(tmp_path):
  (tmp_path / "d.json").mkdir()
  with pytest.raises(ValueError, match=r"^--hparams: '.*d.json' is a directory; expected a .json"):
    load_hparams(str(tmp_path / "d.json"))
  (tmp_path / "b.json").write_bytes(b"\xff\xfe{\x00")
  with pytest.raises(ValueError, match=r"^--hparams: '.*b.json' is not UTF-8 text"):
    load_hparams(str(tmp_path / "b.json"))


def test_a_key_given_twice_is_named_not_overwritten(tmp_path):
  text = '{"learning_rate": 1e-3, "train_batch_size": 8, "learning_rate": 5e-4}'
  (tmp_path / "hp.json").write_text(text)
  message = "key 'learning_rate' is given more than once; give each hparam once"
  with pytest.raises(ValueError, match=rf"^--hparams: '.*hp.json': {message}$"):
    load_hparams(str(tmp_path / "hp.json"))
  with pytest.raises(ValueError, match=rf"^--hparams: {message}$"):
    load_hparams(text)
  # Nested objects too; the same key in two objects is not a repeat.
  assert load_hparams('{"a": {"x": 1}, "b": {"x": 2}}') == {"a": {"x": 1}, "b": {"x": 2}}
  with pytest.raises(ValueError, match="key 'x' is given more than once"):
    load_hparams('{"model_hparam_overrides": {"x": 1, "x": 2}}')
