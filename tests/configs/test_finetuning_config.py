"""FinetuningConfig: defaults (`configure_finetuning.py:FinetuningConfig`) and construction order (`configure_finetuning.py:FinetuningConfig`)."""

import os

import pytest

from electra_tf.checkpoints import model_dir
from electra_tf.configs.finetuning import FinetuningConfig


def test_defaults(tmp_path):
  c = FinetuningConfig("m", str(tmp_path))
  expected = {
    "debug": False,
    "log_examples": False,
    "num_trials": 1,
    "do_train": True,
    "do_eval": True,
    "keep_all_models": True,
    "model_size": "small",
    "task_names": ["chunk"],
    "model_hparam_overrides": {},
    "vocab_size": 30522,
    "do_lower_case": True,
    "learning_rate": 1e-4,
    "weight_decay_rate": 0.01,
    "layerwise_lr_decay": 0.8,
    "warmup_proportion": 0.1,
    "save_checkpoints_steps": 1000000,
    "iterations_per_loop": 1000,
    "use_tfrecords_if_existing": True,
    "write_test_outputs": False,
    "n_writes_test": 5,
    "train_batch_size": 32,
    "eval_batch_size": 32,
    "predict_batch_size": 32,
    "double_unordered": True,
    "max_query_length": 64,
    "doc_stride": 128,
    "n_best_size": 20,
    "max_answer_length": 30,
    "answerable_classifier": True,
    "answerable_uses_start_logits": True,
    "answerable_weight": 0.5,
    "joint_prediction": True,
    "beam_size": 20,
    "qa_na_threshold": -2.75,
    "use_tpu": False,
    "num_tpu_cores": 1,
    "layerwise_lr_decay_variant": "faithful",
  }
  for key, value in expected.items():
    assert getattr(c, key) == value, key
  # chunk is the default single task: 256 tokens; small forces E=128
  assert c.max_seq_length == 256
  assert c.num_train_epochs == 3.0
  assert c.embedding_size == 128


def test_paths_use_joined_task_names(tmp_path):
  d = str(tmp_path)
  c = FinetuningConfig("m", d, task_names=["rte", "sts", "chunk"])
  pre = os.path.join(d, "models", "m")
  assert c.init_checkpoint == pre
  assert c.model_dir == os.path.join(pre, "finetuning_models", "rte,sts,chunk_model")
  assert c.results_txt == os.path.join(pre, "results", "rte,sts,chunk_results.txt")
  assert c.results_json == os.path.join(pre, "results", "rte,sts,chunk_results.json")
  assert c.qa_eval_file("squad") == os.path.join(
    pre, "results", "rte,sts,chunk_qa", "squad_eval.json"
  )
  assert c.qa_preds_file("squad").endswith("rte,sts,chunk_qa/squad_preds.json")
  assert c.qa_na_file("squad").endswith("rte,sts,chunk_qa/squad_null_odds.json")
  assert c.preprocessed_data_dir == os.path.join(
    pre, "finetuning_tfrecords", "rte,sts,chunk_tfrecords"
  )
  assert c.raw_data_dir("rte") == os.path.join(d, "finetuning_data", "rte")
  assert c.test_predictions("rte", "test", 2) == os.path.join(
    pre, "test_predictions", "rte_test_2_predictions.json"
  )
  # multi-task: no single-task defaults
  assert c.max_seq_length == 128 and c.num_train_epochs == 3.0


def test_vocab_file_prefers_model_dir(tmp_path):
  """The config reads no file: it names where the vocab is looked for, and
  the run takes the first that exists (the model dir's, else data_dir's)."""
  model_vocab = str(tmp_path / "models" / "m" / "vocab.txt")
  config = FinetuningConfig("m", str(tmp_path))
  assert config.default_vocab_files == (model_vocab, str(tmp_path / "vocab.txt"))
  assert model_dir.with_found_vocab_file(config).vocab_file == str(tmp_path / "vocab.txt")
  (tmp_path / "models" / "m").mkdir(parents=True)
  (tmp_path / "models" / "m" / "vocab.txt").write_text("[PAD]\n")
  config = FinetuningConfig("m", str(tmp_path))
  assert model_dir.with_found_vocab_file(config).vocab_file == model_vocab
  given = FinetuningConfig("m", str(tmp_path), vocab_file="elsewhere.txt")
  assert given.default_vocab_files == ()
  assert model_dir.with_found_vocab_file(given).vocab_file == "elsewhere.txt"


def test_configs_read_no_file():
  """Reading files and detecting formats belongs to the run, not the config."""
  import electra_tf.configs as configs_pkg

  folder = os.path.dirname(configs_pkg.__file__)
  for name in sorted(os.listdir(folder)):
    if name.endswith(".py"):
      with open(os.path.join(folder, name), encoding="utf-8") as f:
        text = f.read()
      for call in ("gfile", "open(", "os.path.exists", "os.path.isfile", "os.listdir"):
        assert call not in text, f"electra_tf/configs/{name} calls {call}"


@pytest.mark.parametrize(
  "task,seq,epochs",
  [
    ("rte", 128, 10.0),
    ("sts", 128, 10.0),
    ("squad", 512, 2.0),
    ("squadv1", 512, 2.0),
    ("newsqa", 512, 2.0),
    ("triviaqa", 512, 2.0),
    ("naturalqs", 128, 3.0),
    ("chunk", 256, 3.0),
    ("mnli", 128, 3.0),
    ("cola", 128, 3.0),
  ],
)
def test_single_task_defaults(tmp_path, task, seq, epochs):
  c = FinetuningConfig("m", str(tmp_path), task_names=[task])
  assert (c.max_seq_length, c.num_train_epochs) == (seq, epochs)


def test_qa_default_resets_write_test_outputs_but_user_wins(tmp_path):
  c = FinetuningConfig(
    "m", str(tmp_path), task_names=["squad"], write_test_outputs=True, num_train_epochs=1.0
  )
  assert c.write_test_outputs is True and c.num_train_epochs == 1.0


def test_size_defaults(tmp_path):
  large = FinetuningConfig("m", str(tmp_path), model_size="large", task_names=["rte"])
  assert (large.learning_rate, large.layerwise_lr_decay, large.embedding_size) == (5e-5, 0.9, None)
  base = FinetuningConfig("m", str(tmp_path), model_size="base", task_names=["rte"])
  assert (base.learning_rate, base.layerwise_lr_decay, base.embedding_size) == (1e-4, 0.8, None)
  small = FinetuningConfig("m", str(tmp_path), embedding_size=64)
  assert small.embedding_size == 64  # user values win over size defaults
  lr = FinetuningConfig("m", str(tmp_path), model_size="large", learning_rate=1e-3)
  assert lr.learning_rate == 1e-3


def test_debug_settings_and_path_quirk(tmp_path):
  c = FinetuningConfig("m", str(tmp_path), debug=True, task_names=["rte"], num_trials=4)
  assert c.use_tfrecords_if_existing is False and c.iterations_per_loop == 1
  assert c.log_examples is True and c.num_train_epochs == 3.0
  assert c.num_trials == 4  # user value wins over debug's 1
  # path computed before kwargs: still loads the pre-trained checkpoint (original)
  assert c.init_checkpoint == os.path.join(str(tmp_path), "models", "m")
  # fixed: debug records go to their own cache dir
  assert c.preprocessed_data_dir.endswith("rte_tfrecords-debug")
  assert not FinetuningConfig(
    "m", str(tmp_path), task_names=["rte"]
  ).preprocessed_data_dir.endswith("-debug")


def test_unknown_and_bad_values(tmp_path):
  with pytest.raises(ValueError, match="learnin_rate"):
    FinetuningConfig("m", str(tmp_path), learnin_rate=1.0)
  with pytest.raises(ValueError, match="layerwise_lr_decay_variant"):
    FinetuningConfig("m", str(tmp_path), layerwise_lr_decay_variant="other")
  with pytest.raises(ValueError, match="task_names"):
    FinetuningConfig("m", str(tmp_path), task_names="rte")


def test_zero_warmup_is_refused(tmp_path):
  with pytest.raises(ValueError, match="warmup_proportion=0.0; expected > 0"):
    FinetuningConfig("m", str(tmp_path), task_names=["rte"], warmup_proportion=0.0)


def test_distribution_and_precision_hparams_are_pretrainings(tmp_path):
  from electra_tf.runtime import distribution

  with pytest.raises(ValueError, match="distribution_strategy='gpus'"):
    FinetuningConfig("m", str(tmp_path), distribution_strategy="gpus")
  with pytest.raises(ValueError, match="mixed_precision='float16'"):
    FinetuningConfig("m", str(tmp_path), mixed_precision="float16")
  with pytest.raises(ValueError, match="predict_batch_size=0"):
    FinetuningConfig("m", str(tmp_path), predict_batch_size=0)
  tpu = FinetuningConfig(
    "m", str(tmp_path), use_tpu=True, tpu_name="t1", tpu_zone="z", gcp_project="p"
  )
  assert distribution.resolve_strategy_name(tpu, num_visible_gpus=0) == "tpu"
  assert distribution.tpu_cluster_resolver_kwargs(tpu) == {"tpu": "t1", "zone": "z", "project": "p"}
  with pytest.raises(ValueError, match="not supported on TPU"):
    distribution.set_mixed_precision(
      FinetuningConfig("m", str(tmp_path), use_tpu=True, mixed_precision="mixed_float16")
    )
  gpus = FinetuningConfig("m", str(tmp_path))
  assert distribution.resolve_strategy_name(gpus, num_visible_gpus=2) == "mirrored"
  assert distribution.resolve_strategy_name(gpus, num_visible_gpus=1) == "default"


def test_gradient_accumulation_steps_must_divide_the_global_batch(tmp_path):
  from electra_tf.configs.pretraining import PretrainingConfig

  for make in (
    lambda **kw: FinetuningConfig("m", str(tmp_path), task_names=["rte"], **kw),
    lambda **kw: PretrainingConfig("m", str(tmp_path), **kw),
  ):
    assert make().gradient_accumulation_steps == 1
    assert make(train_batch_size=64, gradient_accumulation_steps=16).train_batch_size == 64
    with pytest.raises(ValueError, match="train_batch_size=30 must be divisible by gradient_acc"):
      make(train_batch_size=30, gradient_accumulation_steps=4)
    with pytest.raises(ValueError, match="gradient_accumulation_steps=0; expected an integer"):
      make(gradient_accumulation_steps=0)


@pytest.mark.parametrize(
  "name, value, expected",
  [
    ("learning_rate", -1e-4, "expected > 0"),
    ("learning_rate", 0, "expected > 0"),
    ("layerwise_lr_decay", -0.5, "expected >= 0"),
    ("weight_decay_rate", -0.01, "expected >= 0"),
    ("num_train_epochs", 0, "expected > 0"),
    ("num_trials", 0, "expected a positive integer"),
    ("max_seq_length", 2, r"expected at least 5 \(\[CLS\], two \[SEP\]"),
    # A stride of 0 made SQuAD's windows without end (memory grew until killed).
    ("doc_stride", 0, "expected a positive integer"),
    ("max_query_length", 0, "expected a positive integer"),
    ("n_best_size", -1, "expected a positive integer"),
    ("max_answer_length", 0, "expected a positive integer"),
  ],
)
def test_fine_tuning_ranges_are_checked_as_pre_training_s(name, value, expected):
  with pytest.raises(ValueError, match=f"hparam {name}=.*; {expected}"):
    FinetuningConfig("m", "/tmp/data", task_names=["rte"], **{name: value})
  # 0 is the documented way to turn layer-wise decay off.
  assert (
    FinetuningConfig("m", "/tmp/data", task_names=["rte"], layerwise_lr_decay=0).layerwise_lr_decay
    == 0
  )


def test_get_bert_config_of_a_size_name_says_what_it_takes():
  from electra_tf.configs.pretraining import get_bert_config

  with pytest.raises(
    TypeError,
    match="get_bert_config takes a PretrainingConfig or FinetuningConfig, got str 'small'",
  ):
    get_bert_config("small")


def test_a_run_that_neither_trains_nor_evaluates_is_named_as_such():
  with pytest.raises(
    ValueError, match="^hparams do_train and do_eval are both false: nothing to do$"
  ):
    FinetuningConfig("m", "/tmp/data", task_names=["rte"], do_train=False, do_eval=False)


def test_wrong_json_types_inside_task_names_and_overrides_are_named():
  from electra_tf.configs.pretraining import get_pretraining_bert_config

  with pytest.raises(ValueError, match=r"task_names must be a list of task names \(strings\)"):
    FinetuningConfig("m", "/tmp/data", task_names=[1])
  config = FinetuningConfig(
    "m", "/tmp/data", task_names=["rte"], model_hparam_overrides={"hidden_size": "128"}
  )
  with pytest.raises(ValueError, match="field hidden_size must be an integer, got '128'"):
    get_pretraining_bert_config(config)
