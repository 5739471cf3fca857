import json

import pytest

from electra_tf import PretrainingConfig
from electra_tf import get_bert_config
from electra_tf import get_generator_config
from electra_tf import load_hparams
from electra_tf.configs.pretraining import get_pretraining_bert_config


def test_defaults_and_derived_values():
  config = PretrainingConfig("m", "/data")
  assert config.max_predictions_per_seq == 19
  assert config.embedding_size == 128  # small forces 128
  assert config.disc_weight == 50.0 and config.learning_rate == 5e-4
  assert config.model_dir == "/data/models/m"
  assert config.pretrain_tfrecords == "/data/pretrain_tfrecords/pretrain_data.tfrecord*"
  assert config.results_txt == "/data/models/m/results/unsup_results.txt"


@pytest.mark.parametrize(
  "mask_prob,seq,expected", [(0.15, 128, 19), (0.15, 512, 79), (0.25, 512, 130)]
)
def test_max_predictions_per_seq(mask_prob, seq, expected):
  config = PretrainingConfig("m", "/d", mask_prob=mask_prob, max_seq_length=seq)
  assert config.max_predictions_per_seq == expected


def test_unknown_and_derived_keys_are_rejected():
  with pytest.raises(ValueError, match="Unknown hparam 'learning_rat'.*learning_rate"):
    PretrainingConfig("m", "/d", learning_rat=1.0)
  with pytest.raises(ValueError, match="max_predictions_per_seq"):
    PretrainingConfig("m", "/d", max_predictions_per_seq=20)


def test_debug_then_user_values_win():
  config = PretrainingConfig("m", "/d", debug=True, num_train_steps=7)
  assert config.train_batch_size == 8 and config.num_train_steps == 7
  config = PretrainingConfig("m", "/d", embedding_size=64)
  assert config.embedding_size == 64
  assert PretrainingConfig("m", "/d", model_size="base").embedding_size is None
  assert PretrainingConfig("m", "/d", electric_objective=True).two_tower_generator


@pytest.mark.parametrize(
  "size,h,l,a,i,hg,ag,ig",
  [
    ("small", 256, 12, 4, 1024, 64, 1, 256),
    ("base", 768, 12, 12, 3072, 192, 3, 768),
    ("large", 1024, 24, 16, 4096, 256, 4, 1024),
  ],
)
def test_size_table_and_generator(size, h, l, a, i, hg, ag, ig):
  config = PretrainingConfig("m", "/d", model_size=size)
  bert = get_bert_config(config)
  assert (
    bert.hidden_size,
    bert.num_hidden_layers,
    bert.num_attention_heads,
    bert.intermediate_size,
    bert.vocab_size,
  ) == (h, l, a, i, 30522)
  gen = get_generator_config(config, bert)
  assert (
    gen.hidden_size,
    gen.num_attention_heads,
    gen.intermediate_size,
    gen.num_hidden_layers,
  ) == (hg, ag, ig, l)


def test_overrides_and_generator_ignores_head_overrides():
  config = PretrainingConfig(
    "m",
    "/d",
    model_hparam_overrides={"hidden_size": 64, "num_attention_heads": 2},
    generator_hidden_size=0.33333,
  )
  bert = get_bert_config(config)
  assert (bert.hidden_size, bert.num_attention_heads, bert.intermediate_size) == (64, 2, 256)
  gen = get_generator_config(config, bert)
  assert (gen.hidden_size, gen.num_attention_heads, gen.intermediate_size) == (21, 1, 84)
  # Python round is half-to-even: 0.5 * 5 = 2.5 -> 2
  config = PretrainingConfig(
    "m", "/d", model_hparam_overrides={"num_hidden_layers": 5}, generator_layers=0.5
  )
  assert get_generator_config(config, get_bert_config(config)).num_hidden_layers == 2


def test_debug_model_shrinks():
  bert = get_pretraining_bert_config(PretrainingConfig("m", "/d", debug=True, model_size="large"))
  assert (
    bert.num_hidden_layers,
    bert.hidden_size,
    bert.intermediate_size,
    bert.num_attention_heads,
  ) == (3, 144, 576, 4)


def test_hparams_sources(tmp_path):
  assert load_hparams('{"debug": true}') == {"debug": True}
  path = tmp_path / "h.json"
  path.write_text(json.dumps({"vocab_size": 7}))
  assert load_hparams(str(path)) == {"vocab_size": 7}
  with pytest.raises(ValueError, match="does not exist"):
    load_hparams(str(tmp_path / "missing.json"))
  with pytest.raises(ValueError, match="JSON"):
    load_hparams("{not json")


def test_bad_values_name_the_key():
  with pytest.raises(ValueError, match="model_size"):
    PretrainingConfig("m", "/d", model_size="huge")
  with pytest.raises(ValueError, match="mixed_precision"):
    PretrainingConfig("m", "/d", mixed_precision="fp8")
