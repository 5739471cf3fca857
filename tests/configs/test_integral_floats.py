"""Integral floats for integer hparams become ints when parsed (JSON's `1e6`
is a float: it must not reach Keras' `range()` as one); other floats stay
refused. Command-line integer flags keep argparse's `int`, which refuses
`1e6` before any work."""

import dataclasses
import json
import types

import pytest

from electra_tf import build_pretraining_dataset
from electra_tf import run_pretraining
from electra_tf.configs import hparams as hparams_lib
from electra_tf.configs.bert_config import BertConfig
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.configs.pretraining import get_pretraining_bert_config
from tests.helpers.pretraining_data import TINY
from tests.helpers.pretraining_data import eta_steps
from tests.helpers.pretraining_data import latest_step
from tests.helpers.pretraining_data import make_data_dir
from tfrecords_tools import build_vocab

# Every config a command builds from `--model-name`, `--data-dir` and hparams.
CONFIGS = [
  cls
  for cls in hparams_lib._CONFIG_CLASSES.values()  # pylint: disable=protected-access
  if "model_name" in {f.name for f in dataclasses.fields(cls)}
]


def _is_int(annotation):
  if isinstance(annotation, types.UnionType):
    return int in annotation.__args__
  return annotation is int


def _int_fields(cls):
  return [f for f in dataclasses.fields(cls) if _is_int(f.type) and not f.metadata.get("derived")]


def test_both_commands_configs_are_covered():
  assert {PretrainingConfig, FinetuningConfig} <= set(CONFIGS)
  assert len(_int_fields(PretrainingConfig)) > 10 and len(_int_fields(FinetuningConfig)) > 10


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda cls: cls.__name__)
def test_every_int_hparam_takes_an_integral_float_as_an_int(cls, tmp_path):
  for f in _int_fields(cls):
    value = f.default if isinstance(f.default, int) else 1
    config = cls("m", str(tmp_path), **{f.name: float(value)})
    assert type(getattr(config, f.name)) is int, f.name
    assert getattr(config, f.name) == value, f.name


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda cls: cls.__name__)
def test_a_non_integral_float_stays_refused(cls, tmp_path):
  for f in _int_fields(cls):
    with pytest.raises(ValueError, match=rf"^hparam '{f.name}' must be an integer"):
      cls("m", str(tmp_path), **{f.name: 2.5})


def test_num_train_steps_1e6_is_the_int_1000000(tmp_path):
  config = PretrainingConfig("m", str(tmp_path), **json.loads('{"num_train_steps": 1e6}'))
  assert config.num_train_steps == 1000000 and type(config.num_train_steps) is int
  assert list(range(config.num_train_steps))[-1] == 999999


def test_model_hparam_overrides_take_integral_floats(tmp_path):
  overrides = {"hidden_size": 64.0, "num_hidden_layers": 2e0, "intermediate_size": 128}
  config = PretrainingConfig("m", str(tmp_path), model_hparam_overrides=overrides)
  bert_config = get_pretraining_bert_config(config)
  assert (bert_config.hidden_size, bert_config.num_hidden_layers) == (64, 2)
  assert type(bert_config.hidden_size) is int and type(bert_config.num_hidden_layers) is int
  with pytest.raises(
    ValueError, match="^BertConfig field hidden_size must be an integer, got 64.5"
  ):
    BertConfig.from_dict({"hidden_size": 64.5})


@pytest.mark.slow  # a run of the command (~40 s on 2 shared cores)
def test_run_pretraining_with_float_counts_trains_2_steps(tmp_path, capsys):
  make_data_dir(tmp_path)
  # As a user writes them in JSON: every count a float.
  hparams = dict(TINY, vocab_size=60, num_train_steps=2, seed=3)
  text = json.dumps(hparams)
  for key in ("num_train_steps", "train_batch_size", "max_seq_length", "hidden_size"):
    text = text.replace(f'"{key}": {hparams.get(key, 32)}', f'"{key}": {hparams.get(key, 32)}e0')
  assert '"num_train_steps": 2e0' in text and '"hidden_size": 32e0' in text
  code = run_pretraining.main(["--data-dir", str(tmp_path), "--model-name", "m", "--hparams", text])
  assert code == 0
  assert eta_steps(capsys.readouterr().out) == [1, 2]
  assert latest_step(tmp_path / "models" / "m") == 2


@pytest.mark.parametrize(
  "main, argv",
  [
    (build_pretraining_dataset.main, ["--num-out-files", "1e3"]),
    (build_vocab.main, ["--vocab-size", "8e3"]),
  ],
)
def test_integer_flags_refuse_float_spellings_before_any_work(main, argv, capsys):
  with pytest.raises(SystemExit) as exit_info:
    main(argv)
  assert exit_info.value.code == 2
  assert f"argument {argv[0]}: invalid int value: '{argv[1]}'" in capsys.readouterr().err
