"""The pre-training run library (`electra_tf.training.pretraining_run`): input
checks, results files, in-process training with resume and evaluation,
TensorBoard summaries, precisions and strategies, init from the original's
checkpoint, and a user's own Keras script. Tiny configs; the longer runs are
marked slow."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.checkpoints import checkpointing
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.runtime import distribution
from electra_tf.training import pretraining_run
from tests.helpers.pretraining_data import EVAL_NAMES
from tests.helpers.pretraining_data import TINY
from tests.helpers.pretraining_data import eta_steps
from tests.helpers.pretraining_data import latest_step
from tests.helpers.pretraining_data import make_data_dir
from tests.helpers.pretraining_data import original_hparams
from tests.helpers.pretraining_data import self_made_hparams


def test_eval_without_checkpoint_is_an_error(tmp_path):
  make_data_dir(tmp_path)
  config = PretrainingConfig("m", str(tmp_path), **self_made_hparams(do_train=False, do_eval=True))
  with pytest.raises(ValueError, match="no checkpoint found"):
    pretraining_run.train_or_eval(config)


def test_relative_pattern_is_found_under_data_dir(tmp_path, monkeypatch):
  make_data_dir(tmp_path)
  monkeypatch.chdir("/")
  config = PretrainingConfig(
    "m",
    str(tmp_path),
    **self_made_hparams(pretrain_tfrecords="pretrain_tfrecords/pretrain_data.tfrecord*"),
  )
  assert len(pretraining_run.find_pretraining_files(config)) == 3


def test_write_eval_results(tmp_path):
  config = PretrainingConfig("m", str(tmp_path))
  results = {"masked_lm_loss": 2.5, "disc_auc": 0.75, "global_step": np.int64(7)}
  txt, json_path = pretraining_run.write_eval_results(results, config)
  assert txt == str(tmp_path / "models" / "m" / "results" / "unsup_results.txt")
  assert open(txt).read() == "disc_auc = 0.75\nglobal_step = 7\nmasked_lm_loss = 2.5\n"
  assert json.load(open(json_path)) == {"disc_auc": 0.75, "global_step": 7, "masked_lm_loss": 2.5}
  assert os.path.exists(config.results_pkl)
  # No temporary files are left next to the results.
  assert sorted(os.listdir(os.path.dirname(txt))) == [
    "unsup_results.json",
    "unsup_results.pkl",
    "unsup_results.txt",
  ]


# ----------------------------------------------------------------------------
# In-process runs on self-made data
# ----------------------------------------------------------------------------


@pytest.mark.slow
def test_train_resume_and_eval_in_process(tmp_path, capsys):
  make_data_dir(tmp_path)
  config = PretrainingConfig("m", str(tmp_path), **self_made_hparams(num_train_steps=4, seed=3))
  assert pretraining_run.train_or_eval(config) == 4
  model_dir = tmp_path / "models" / "m"
  assert latest_step(model_dir) == 4
  first = capsys.readouterr().out
  assert eta_steps(first) == [1, 2, 3, 4]
  # Same command with a later target: continues from step 4.
  config = PretrainingConfig("m", str(tmp_path), **self_made_hparams(num_train_steps=7, seed=3))
  assert pretraining_run.train_or_eval(config) == 7
  out = capsys.readouterr().out
  assert "Restored" in out and "model.ckpt-4" in out
  assert eta_steps(out) == [5, 6, 7]
  assert latest_step(model_dir) == 7
  # Already at the target: nothing to do.
  assert pretraining_run.train_or_eval(config) == 7
  assert "nothing to train" in capsys.readouterr().out
  # Eval writes the results.
  config = PretrainingConfig(
    "m", str(tmp_path), **self_made_hparams(do_train=False, do_eval=True, num_eval_steps=2, seed=3)
  )
  results = pretraining_run.train_or_eval(config)
  assert set(results) == EVAL_NAMES and results["global_step"] == 7
  lines = open(config.results_txt).read().splitlines()
  assert [line.split(" = ")[0] for line in lines] == sorted(EVAL_NAMES)
  # TensorBoard events: training scalars at global steps, eval under eval/.
  assert any(name.startswith("events.out.tfevents") for name in os.listdir(model_dir))
  assert any(name.startswith("events.out.tfevents") for name in os.listdir(model_dir / "eval"))


class _Crash(Exception):
  pass


class _CrashAfter(keras.callbacks.Callback):
  """Crashes the run after `steps` steps (after that step's checkpoint)."""

  def __init__(self, steps):
    super().__init__()
    self.steps = steps

  def on_train_batch_end(self, batch, logs=None):
    if int(self.model.optimizer.iterations.numpy()) >= self.steps:
      raise _Crash()


@pytest.mark.slow
def test_accumulated_run_resumes_at_the_step_bit_identical(tmp_path, capsys):
  """With gradient_accumulation_steps, a run stopped at a checkpoint and
  resumed ends with the weights of the run that never stopped."""
  make_data_dir(tmp_path)
  hparams = self_made_hparams(
    num_train_steps=4, seed=3, gradient_accumulation_steps=2, save_checkpoints_steps=2
  )
  whole = PretrainingConfig("whole", str(tmp_path), **hparams)
  assert pretraining_run.train_or_eval(whole) == 4
  line = "global batch 4 = 4 per replica x 1, 2 micro-batches of 2 per step"
  assert line in capsys.readouterr().out
  resumed = PretrainingConfig("resumed", str(tmp_path), **hparams)
  with pytest.raises(_Crash):
    pretraining_run.train_or_eval(resumed, callbacks=[_CrashAfter(2)])
  assert latest_step(tmp_path / "models" / "resumed") == 2
  assert pretraining_run.train_or_eval(resumed) == 4
  want = tf.train.load_checkpoint(tf.train.latest_checkpoint(whole.model_dir))
  got = tf.train.load_checkpoint(tf.train.latest_checkpoint(resumed.model_dir))
  names = set(want.get_variable_to_shape_map()) - {"_CHECKPOINTABLE_OBJECT_GRAPH"}
  assert names == set(got.get_variable_to_shape_map()) - {"_CHECKPOINTABLE_OBJECT_GRAPH"}
  for name in names:
    np.testing.assert_array_equal(got.get_tensor(name), want.get_tensor(name), err_msg=name)


@pytest.mark.slow
def test_debug_deletes_model_dir_with_a_warning(tmp_path, capsys):
  make_data_dir(tmp_path)
  model_dir = tmp_path / "models" / "m"
  os.makedirs(model_dir)
  (model_dir / "stale.txt").write_text("x")
  config = PretrainingConfig(
    "m",
    str(tmp_path),
    **self_made_hparams(
      debug=True, num_train_steps=1, model_hparam_overrides={}, train_batch_size=2
    ),
  )
  pretraining_run.train_or_eval(config)
  assert "WARNING: debug=True deletes the model dir" in capsys.readouterr().out
  assert not (model_dir / "stale.txt").exists()
  assert latest_step(model_dir) == 1


def _summaries(path):
  values = {}
  for name in os.listdir(path):
    if name.startswith("events.out.tfevents"):
      for record in tf.data.TFRecordDataset(os.path.join(path, name)):
        event = tf.compat.v1.Event.FromString(record.numpy())
        for value in event.summary.value:
          values.setdefault(value.tag, []).append(
            (event.step, float(tf.make_ndarray(value.tensor)))
          )
  return values


def test_training_summaries_have_losses_and_learning_rate(tmp_path):
  make_data_dir(tmp_path)
  config = PretrainingConfig(
    "m",
    str(tmp_path),
    **self_made_hparams(
      num_train_steps=4, save_summary_steps=2, learning_rate=1e-3, steps_per_execution=2
    ),
  )
  pretraining_run.train_or_eval(config)
  values = _summaries(tmp_path / "models" / "m")
  assert [s for s, _ in values["loss"]] == [2, 4]  # every 2 steps; the end is step 4
  assert "disc_loss" in values
  # The original's schedule: warmup 2 of 4 steps, linear decay, lr(2) = 5e-4.
  assert values["learning_rate"][0] == (2, pytest.approx(5e-4))


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_end_to_end(tmp_path, policy):
  make_data_dir(tmp_path)
  config = PretrainingConfig(
    "m", str(tmp_path), **self_made_hparams(num_train_steps=3, mixed_precision=policy)
  )
  assert pretraining_run.train_or_eval(config) == 3
  config = PretrainingConfig(
    "m",
    str(tmp_path),
    **self_made_hparams(do_train=False, do_eval=True, num_eval_steps=1, mixed_precision=policy),
  )
  results = pretraining_run.train_or_eval(config)
  assert all(np.isfinite(v) for v in results.values())
  # Variables stay float32 in the checkpoint.
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(config.model_dir))
  dtypes = reader.get_variable_to_dtype_map()
  assert all(
    d in (tf.float32, tf.int64) for n, d in dtypes.items() if "kernel" in n or "embeddings" in n
  ), dtypes


@pytest.mark.slow
def test_mirrored_matches_one_device(tmp_path, two_replica_strategy):
  make_data_dir(tmp_path, num_examples=24)
  import keras

  losses, weights = {}, {}
  for strategy_name in ("one_device", "mirrored"):
    config = PretrainingConfig(
      strategy_name,
      str(tmp_path),
      **self_made_hparams(
        num_train_steps=3,
        seed=11,
        distribution_strategy=strategy_name,
        model_hparam_overrides=dict(
          TINY["model_hparam_overrides"], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
        ),
      ),
    )
    strategy = distribution.setup_distribution(config)
    if strategy_name == "mirrored":
      assert isinstance(strategy, tf.distribute.MirroredStrategy)
      # One MirroredStrategy per process: a second one would reuse the
      # session's collective instance keys (TensorFlow then fails with
      # "Shape mismatch in the collective instance").
      strategy = two_replica_strategy
    keras.utils.set_random_seed(11)
    model = pretraining_run.build_pretrainer(config, strategy)
    assert strategy.num_replicas_in_sync == (2 if strategy_name == "mirrored" else 1)
    batch = next(iter(pretraining_run.make_dataset(config, is_training=False)))
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    history = model.fit(dataset, steps_per_epoch=3, verbose=0, shuffle=False)
    losses[strategy_name] = history.history["loss"]
    weights[strategy_name] = [v.numpy() for v in model.trainable_variables]
    keras.utils.clear_session()
  np.testing.assert_allclose(losses["mirrored"], losses["one_device"], rtol=1e-5)
  for a, b in zip(weights["mirrored"], weights["one_device"]):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


# ----------------------------------------------------------------------------
# On the original's checkpoint
# ----------------------------------------------------------------------------


def test_init_checkpoint_starts_at_step_50_with_the_original_weights(tmp_path, original_fixtures):
  config = PretrainingConfig(
    "cont",
    str(tmp_path),
    **original_hparams(
      original_fixtures,
      init_checkpoint=str(original_fixtures / "models" / "tiny"),
      num_train_steps=52,
    ),
  )
  strategy = distribution.setup_distribution(config)
  model = pretraining_run.build_pretrainer(config, strategy)
  assert checkpointing.global_step(model) == 50
  ckpt = str(original_fixtures / "models" / "tiny" / "model.ckpt-50")
  expected = tf.train.load_variable(ckpt, "electra/embeddings/word_embeddings")
  tables = [v.numpy() for v in model.trainable_variables if tuple(v.shape) == expected.shape]
  assert any(np.array_equal(t, expected) for t in tables)
  # Fresh optimizer slots.
  slots = [v for v in model.optimizer.variables if tuple(v.shape) == expected.shape]
  assert slots and all(not np.any(v.numpy()) for v in slots)


USER_SCRIPT = '''
import keras
from electra_tf.checkpoints import checkpointing
from electra_tf.runtime import distribution
from electra_tf.training import callbacks as eta_logger
from electra_tf.data import pretraining_dataset as pretrain_data
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.configs.pretraining import PretrainingConfig

config = PretrainingConfig("my_model", DATA_DIR, **HPARAMS)
strategy = distribution.setup_distribution(config)  # precision + strategy
with strategy.scope():
  model = ElectraPretrainer.from_pretraining_config(config)
  model.compile(pretraining_config=config)  # AdamWeightDecay + the original's schedule
  manager = checkpointing.TrainingCheckpointManager(
      model, config.model_dir, keep_checkpoint_max=config.keep_checkpoint_max)
dataset = pretrain_data.get_dataset(
    config.pretrain_tfrecords, config.max_seq_length, config.train_batch_size,
    is_training=True)
model.fit(dataset, epochs=1, steps_per_epoch=config.num_train_steps, verbose=0,
          shuffle=False, callbacks=[
    # resumes from the newest checkpoint, saves every N steps and at the end,
    # stops at the absolute step num_train_steps
    checkpointing.PretrainingCheckpoint(manager, config.save_checkpoints_steps,
                                        num_train_steps=config.num_train_steps),
    eta_logger.ETALogger(config.num_train_steps),
])
'''


@pytest.mark.slow
def test_user_script_trains_and_resumes_like_the_cli(tmp_path, capsys):
  make_data_dir(tmp_path)
  hparams = self_made_hparams(num_train_steps=3, save_checkpoints_steps=2)
  hparams["pretrain_tfrecords"] = str(tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord*")
  exec(USER_SCRIPT, {"DATA_DIR": str(tmp_path), "HPARAMS": hparams})  # pylint: disable=exec-used
  assert latest_step(tmp_path / "models" / "my_model") == 3
  assert eta_steps(capsys.readouterr().out) == [1, 2, 3]
  # The run library continues the user's run.
  hparams["num_train_steps"] = 5
  config = PretrainingConfig("my_model", str(tmp_path), **hparams)
  assert pretraining_run.train_or_eval(config) == 5
  assert eta_steps(capsys.readouterr().out) == [4, 5]


def test_checkpoint_restores_every_pretrainer_variable(tmp_path):
  make_data_dir(tmp_path)
  config = PretrainingConfig("m", str(tmp_path), **self_made_hparams(num_train_steps=2))
  strategy = tf.distribute.get_strategy()
  model = pretraining_run.build_pretrainer(config, strategy)
  model.fit(pretraining_run.make_dataset(config, True), steps_per_epoch=2, verbose=0, shuffle=False)
  manager = checkpointing.TrainingCheckpointManager(model, config.model_dir, chief=True)
  manager.save()
  restored = pretraining_run.build_pretrainer(config, strategy)
  assert (
    checkpointing.TrainingCheckpointManager(restored, config.model_dir, chief=True).restore_latest()
    == 2
  )
  assert len(model.weights) == len(restored.weights)
  for a, b in zip(model.weights, restored.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
  assert len(model.optimizer.variables) == len(restored.optimizer.variables)
  for a, b in zip(model.optimizer.variables, restored.optimizer.variables):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
