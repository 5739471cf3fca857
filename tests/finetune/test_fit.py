"""Fine-tuning through `fit`: distribution, precision, resume, SIGTERM,
initialisation from a pre-training model dir, no dropped examples."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.checkpoints import checkpointing
from electra_tf.checkpoints import name_based
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.finetune import task_builder
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.model import FinetuningModel
from electra_tf.models import official_names
from electra_tf.models.electra_pretrainer import ElectraPretrainer
from electra_tf.optimization import factory as optimizer_factory
from electra_tf.optimization.schedule import ElectraLearningRateSchedule
from electra_tf.runtime import distribution
from electra_tf.text import wordpiece as tokenization
from electra_tf.training import finetuning_run as runner_lib
from tests.conftest import REPO_ROOT
from tests.helpers.finetuning_testdata import finetuning_config
from tests.helpers.finetuning_testdata import make_data_dir
from tests.helpers.finetuning_testdata import tiny_hparams
from tests.helpers.finetuning_testdata import tsv
from tests.helpers.finetuning_testdata import write_task_file
from tests.helpers.subprocesses import killed_in_save_command
from tests.helpers.subprocesses import local_worker_tf_configs
from tests.helpers.subprocesses import quiet_env

BERT = {
  "vocab_size": 40,
  "hidden_size": 16,
  "num_hidden_layers": 2,
  "num_attention_heads": 2,
  "intermediate_size": 32,
  "max_position_embeddings": 32,
  "hidden_dropout_prob": 0.0,
  "attention_probs_dropout_prob": 0.0,
}
SEQ = 12
SENTENCES = [
  "the cat sat on the mat",
  "a dog ran fast",
  "he walks in paris",
  "she is sad",
  "the red fox jumps over the dog",
  "they ran fast",
  "it was a great film",
  "the movie is awful",
]


def _model():
  heads = [
    ClassificationHead("rte", 2, dropout_rate=0.0, name="task_specific_rte"),
    ClassificationHead("sts", 1, regression=True, dropout_rate=0.0, name="task_specific_sts"),
  ]
  model = FinetuningModel(BERT, heads, embedding_size=8, name="finetuning_model")
  model.build()
  return model


def _multitask_batch(n=8, seed=0):
  """Rows of both tasks plus one padding row (task_id 2)."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, 40, size=(n, SEQ)).astype("int32")
  task_id = np.array([i % 2 for i in range(n)], "int32")
  task_id[-1] = 2
  return {
    "input_ids": ids,
    "input_mask": np.ones((n, SEQ), "int32"),
    "segment_ids": np.zeros((n, SEQ), "int32"),
    "task_id": task_id,
    "rte_eid": np.arange(n, dtype="int32"),
    "rte_label_ids": (ids[:, 0] % 2).astype("int32"),
    "sts_eid": np.arange(n, dtype="int32"),
    "sts_targets": (ids[:, 1] % 5).astype("float32"),
  }


def _one_step(model, optimizer, batch, global_batch):
  model.compile(optimizer=optimizer)
  dataset = tf.data.Dataset.from_tensors(batch).unbatch().batch(global_batch)
  history = model.fit(dataset, epochs=1, steps_per_epoch=1, verbose=0)
  return history.history["loss"][0]


@pytest.mark.slow
def test_mirrored_first_step_equals_one_device(two_replica_strategy):
  batch = _multitask_batch()
  single = _model()
  before = [w.numpy() for w in single.trainable_weights]
  # SGD with rate 1: each weight's change is minus its (replica-summed) gradient.
  loss_single = _one_step(single, keras.optimizers.SGD(1.0), batch, 8)
  with two_replica_strategy.scope():
    mirrored = _model()
    for w, value in zip(mirrored.trainable_weights, before):
      w.assign(value)
    loss_mirrored = _one_step(mirrored, keras.optimizers.SGD(1.0), batch, 8)
  assert loss_mirrored == pytest.approx(loss_single, rel=1e-5)
  changed = 0
  for a, b, w0 in zip(single.trainable_weights, mirrored.trainable_weights, before):
    np.testing.assert_allclose(b.numpy() - w0, a.numpy() - w0, rtol=1e-4, atol=1e-6)
    changed += int(np.abs(a.numpy() - w0).max() > 0)
  assert changed > len(before) // 2  # both heads and the encoder received gradients
  # The original's optimizer (AdamWeightDecay, layer-wise decay) too.
  names_single = single.official_name_map()
  single2, weights = _model(), [w.numpy() for w in single.trainable_weights]
  for w, v in zip(single2.trainable_weights, weights):
    w.assign(v)
  loss_a = _one_step(
    single2, optimizer_factory.finetuning_optimizer(single2.official_name_map(), 2, 10), batch, 8
  )
  with two_replica_strategy.scope():
    mirrored2 = _model()
    for w, v in zip(mirrored2.trainable_weights, weights):
      w.assign(v)
    loss_b = _one_step(
      mirrored2,
      optimizer_factory.finetuning_optimizer(mirrored2.official_name_map(), 2, 10),
      batch,
      8,
    )
  assert sorted(names_single) == sorted(mirrored2.official_name_map())
  assert loss_b == pytest.approx(loss_a, rel=1e-5)
  for a, b in zip(single2.trainable_weights, mirrored2.trainable_weights):
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-6)


def _learnable_data(n, seed):
  """rte-only batches whose label is whether token 7 occurs."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(8, 40, size=(n, SEQ)).astype("int32")
  labels = rng.integers(0, 2, size=n).astype("int32")
  ids[labels == 1, 3] = 7
  return {
    "input_ids": ids,
    "input_mask": np.ones((n, SEQ), "int32"),
    "segment_ids": np.zeros((n, SEQ), "int32"),
    "task_id": np.zeros(n, "int32"),
    "rte_eid": np.arange(n, dtype="int32"),
    "rte_label_ids": labels,
    "sts_eid": np.zeros(n, "int32"),
    "sts_targets": np.zeros(n, "float32"),
  }


def _train_and_score(policy):
  keras.utils.set_random_seed(3)
  with distribution.dtype_policy(policy):
    model = _model()
    optimizer = optimizer_factory.finetuning_optimizer(
      model.official_name_map(), 2, 60, learning_rate=3e-3, layerwise_lr_decay=0.0
    )
    model.compile(optimizer=optimizer)
    train = tf.data.Dataset.from_tensor_slices(_learnable_data(256, 1)).repeat().batch(16)
    losses = model.fit(train, epochs=1, steps_per_epoch=60, verbose=0).history["loss"]
    dev = _learnable_data(128, 2)
    logits = model(dev, training=False)["rte"]["logits"]
  accuracy = float(np.mean(np.argmax(np.asarray(logits, np.float32), -1) == dev["rte_label_ids"]))
  return model, losses, accuracy


@pytest.mark.slow
def test_mixed_precision_matches_float32():
  _, losses32, accuracy32 = _train_and_score("float32")
  assert accuracy32 > 0.8  # learnable, so the comparison below means something
  for policy in ("mixed_float16", "mixed_bfloat16"):
    model, losses, accuracy = _train_and_score(policy)
    assert np.all(np.isfinite(losses)), (policy, losses)
    assert model.compute_dtype == policy.split("_")[1]
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer) == (
      policy == "mixed_float16"
    )
    assert abs(accuracy - accuracy32) <= 0.1, (policy, accuracy, accuracy32)


# ---------------------------------------------------------------------------
# Whole runs on files: the runner and the CLI.
# ---------------------------------------------------------------------------


def _write_rte(data_dir, n_train=24, n_dev=7):
  header = [["index", "sentence1", "sentence2", "label"]]
  rows = []
  for i in range(max(n_train, n_dev)):
    a, b = SENTENCES[i % 8], SENTENCES[(i * 3 + 1) % 8]
    rows.append([i, a, b, "entailment" if i % 2 else "not_entailment"])
  write_task_file(data_dir, "rte", "train.tsv", tsv(header + rows[:n_train]))
  write_task_file(data_dir, "rte", "dev.tsv", tsv(header + rows[:n_dev]))


@pytest.fixture
def rte_data(tmp_path):
  data_dir, vocab_size = make_data_dir(tmp_path)
  _write_rte(data_dir)
  return data_dir, vocab_size


def _rte_hparams(vocab_size, **kwargs):
  """Tiny RTE hparams; the model starts from random weights unless
  `init_checkpoint` is given."""
  kwargs.setdefault("init_checkpoint", None)
  return tiny_hparams(vocab_size, task_names=["rte"], **kwargs)


def _config(rte_data, **kwargs):
  data_dir, vocab_size = rte_data
  return finetuning_config("m", data_dir, **_rte_hparams(vocab_size, **kwargs))


def test_every_dev_example_is_scored_whatever_the_batch_sizes(rte_data, capsys):
  # 7 dev examples padded to 8 records (eval_batch_size 4), batched by 5:
  # the original's drop_remainder loses records 5-7, two of them real.
  config = _config(rte_data, eval_batch_size=4, predict_batch_size=5)
  config.model_dir += "_1"
  tasks = task_builder.get_tasks(config, tokenization.FullTokenizer(config.vocab_file))
  runner = runner_lib.ModelRunner(config, tasks)
  eids = sorted(int(row["eid"]) for row in runner.predict(tasks[0], "dev"))
  assert eids == list(range(7))
  config.drop_predict_tail = True
  eids = sorted(int(row["eid"]) for row in runner.predict(tasks[0], "dev"))
  assert eids == list(range(5))
  assert "the last 3 of 8 dev records" in capsys.readouterr().out


def test_resume_restores_step_slots_and_learning_rate(rte_data, tmp_path):
  config = _config(rte_data, save_checkpoints_steps=4, num_train_epochs=2.0)
  config.model_dir += "_1"
  tasks = task_builder.get_tasks(config, tokenization.FullTokenizer(config.vocab_file))
  runner = runner_lib.ModelRunner(config, tasks)
  losses = runner.train()
  assert runner.train_steps == 24 // 4 * 2 == len(losses)
  state = tf.train.get_checkpoint_state(config.model_dir)
  steps = sorted(int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths)
  assert steps == [0, 4, 8, 12]
  uninterrupted = _checkpoint_values(config.model_dir)
  # A new run on the same dir after "losing" the last checkpoint resumes at 8.
  os.remove(os.path.join(config.model_dir, "checkpoint"))
  state_lines = [
    'model_checkpoint_path: "model.ckpt-8"',
    'all_model_checkpoint_paths: "model.ckpt-8"',
  ]
  with open(os.path.join(config.model_dir, "checkpoint"), "w") as f:
    f.write("\n".join(state_lines) + "\n")
  resumed = runner_lib.ModelRunner(config, tasks)
  resumed.model.compile(
    optimizer=optimizer_factory.finetuning_optimizer_from_config(config, resumed.model, 12)
  )
  manager = checkpointing.NameBasedCheckpointManager(resumed.model, config.model_dir)
  assert manager.restore_latest() == 8
  reader = tf.train.load_checkpoint(os.path.join(config.model_dir, "model.ckpt-8"))
  kernel = "electra/encoder/layer_1/output/dense/kernel"
  np.testing.assert_array_equal(resumed.name_map[kernel].numpy(), reader.get_tensor(kernel))
  slots = resumed.model.optimizer.official_slots(resumed.name_map)
  np.testing.assert_array_equal(
    slots[kernel + "/adam_v"].numpy(), reader.get_tensor(kernel + "/adam_v")
  )
  schedule = ElectraLearningRateSchedule(config.learning_rate, 12, warmup_proportion=0.1)
  assert float(resumed.model.optimizer.learning_rate) == pytest.approx(float(schedule(8)))
  # The resume state: input position and dropout seed generators.
  scope = official_names.TRAINING_STATE_SCOPE
  assert manager.batches_consumed == 8
  seed_states = checkpointing.seed_generator_states(resumed.model)
  assert seed_states
  for i, variable in enumerate(seed_states):
    np.testing.assert_array_equal(
      variable.numpy(), reader.get_tensor(f"{scope}/seed_generator_{i}")
    )
  # Training continues from 8 to 12 (4 steps), not from 0, and ends where
  # the uninterrupted run did, bit for bit.
  np.testing.assert_array_equal(resumed.train(), losses[8:])
  assert tf.train.latest_checkpoint(config.model_dir).endswith("model.ckpt-12")
  values = _checkpoint_values(config.model_dir)
  assert sorted(values) == sorted(uninterrupted)
  for name, value in uninterrupted.items():
    np.testing.assert_array_equal(values[name], value, err_msg=name)
  # A checkpoint without the resume state (the original's) resumes at the step.
  tensors = {n: t for n, t in uninterrupted.items() if not n.startswith(scope + "/")}
  name_based.save_name_based(tensors, str(tmp_path / "original"), 12)
  manager = checkpointing.NameBasedCheckpointManager(resumed.model, str(tmp_path / "original"))
  manager.input_position.assign(99)
  assert manager.restore_latest() == 12 and manager.batches_consumed == 12


def test_missing_task_dir_is_one_line_and_writes_nothing(rte_data):
  data_dir, vocab_size = rte_data
  hparams = tiny_hparams(vocab_size, task_names=["mnli"], init_checkpoint=None)
  result = _cli(data_dir, hparams)
  assert result.returncode == 2
  lines = result.stderr.strip().splitlines()
  assert lines[-1].startswith("run_finetuning: error: hparam task_names: no data directory")
  assert "mnli" in lines[-1]
  assert not os.path.exists(os.path.join(data_dir, "models", "m", "finetuning_models"))


def _command(data_dir, hparams, model_name="m"):
  return [
    sys.executable,
    "-m",
    "electra_tf.run_finetuning",
    "--data-dir",
    data_dir,
    "--model-name",
    model_name,
    "--hparams",
    json.dumps(hparams),
  ]


def _cli(data_dir, hparams, wait=True, extra_env=None, model_name="m"):
  cmd = _command(data_dir, hparams, model_name)
  env = quiet_env(**(extra_env or {}))
  if wait:
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, env=env, timeout=600)
  return subprocess.Popen(
    cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
  )


def _trial_dir(data_dir, model_name):
  return os.path.join(data_dir, "models", model_name, "finetuning_models", "rte_model_1")


def _latest_step(model_dir):
  prefix = tf.train.latest_checkpoint(model_dir)
  return None if prefix is None else int(prefix.rsplit("-", 1)[1])


def _interrupted(command, signum=None, at_step=None, timeout=300):
  """Runs `command`, sending `signum` once it logs global step `at_step` or
  later (none for a command that kills itself); returns (exit status, output)."""
  proc = subprocess.Popen(
    command,
    cwd=REPO_ROOT,
    env=quiet_env(),
    stdout=subprocess.PIPE,
    stderr=subprocess.STDOUT,
    text=True,
  )
  lines, deadline = [], time.time() + timeout
  try:
    for line in proc.stdout:
      lines.append(line)
      match = re.search(r"\b(\d+)/\d+ = [\d.]+%, SPS", line)
      if signum is not None and match and int(match.group(1)) >= at_step:
        proc.send_signal(signum)
        signum = None
      assert time.time() < deadline, "".join(lines[-20:])
    proc.wait(timeout=timeout)
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()
  return proc.returncode, "".join(lines)


def _checkpoint_values(model_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


@pytest.mark.slow
def test_cli_killed_anywhere_then_rerun_ends_bit_identical(rte_data):
  """kill -9 between saves, kill -9 inside a checkpoint save, then SIGTERM,
  then Ctrl-C (SIGINT), each followed by the same command again: the end is the uninterrupted
  run's, every checkpoint entry bit for bit. Dropout is on and
  mixed_float16 skips steps, so the input position runs ahead of the step.
  Each step is two accumulated micro-batches, so a kill can land between
  them: the re-run starts that step again."""
  data_dir, vocab_size = rte_data
  hparams = _rte_hparams(
    vocab_size,
    mixed_precision="mixed_float16",
    gradient_accumulation_steps=2,
    num_train_epochs=3.0,  # 24 examples / 4 per batch * 3 = 18 steps
    save_checkpoints_steps=3,
    keep_checkpoint_max=1,
    log_every_steps=1,
  )
  full = _cli(data_dir, hparams, model_name="full")
  assert full.returncode == 0, full.stderr[-2000:]
  assert "2 micro-batches of 2 per step (gradient accumulation over 2)" in full.stdout + full.stderr
  command, model_dir = _command(data_dir, hparams, "split"), _trial_dir(data_dir, "split")

  status, output = _interrupted(command, signal.SIGKILL, at_step=4)
  assert status == -signal.SIGKILL, output[-2000:]
  saved = _latest_step(model_dir)
  assert saved is not None and 3 <= saved <= 12, output[-2000:]

  # Killed in its second save: the files are written, the state file still
  # names the first, so that is where the next run resumes.
  target = min(saved + 6, 18)
  status, output = _interrupted(killed_in_save_command(command, target))
  assert status == -signal.SIGKILL, output[-2000:]
  assert f"Resuming from {model_dir}/model.ckpt-{saved} at step {saved}" in output
  assert os.path.exists(os.path.join(model_dir, f"model.ckpt-{target}.index"))
  resumed = _latest_step(model_dir)
  assert resumed == target - 3 and resumed > saved

  status, output = _interrupted(command, signal.SIGTERM, at_step=resumed + 1)
  stopped = _latest_step(model_dir)
  assert status == 143, output[-2000:]
  assert (
    f"global step {stopped} after saving its checkpoint ({model_dir}/model.ckpt-{stopped})"
    in output
  )
  assert resumed < stopped < 18

  # Ctrl-C (SIGINT), as a person sends it: the same save, one line, exit 130.
  status, output = _interrupted(command, signal.SIGINT, at_step=stopped + 1)
  interrupted = _latest_step(model_dir)
  assert status == 130, output[-2000:]
  assert "Traceback" not in output and "KeyboardInterrupt" not in output
  assert (
    f"interrupted (Ctrl-C): stopped at global step {interrupted} after saving its checkpoint "
    f"({model_dir}/model.ckpt-{interrupted})" in output
  )
  assert stopped < interrupted < 18
  stopped = interrupted

  result = _cli(data_dir, hparams, model_name="split")
  assert result.returncode == 0, result.stderr[-2000:]
  # The run's log lines go to stdout as plain text.
  assert f"Resuming from {model_dir}/model.ckpt-{stopped} at step {stopped}" in result.stdout
  assert _latest_step(model_dir) == 18
  expected = _checkpoint_values(_trial_dir(data_dir, "full"))
  values = _checkpoint_values(model_dir)
  assert sorted(values) == sorted(expected)
  for name, value in expected.items():
    np.testing.assert_array_equal(values[name], value, err_msg=name)
  state = official_names.TRAINING_STATE_SCOPE
  assert values[f"{state}/input_position"] > 18  # float16 skipped steps
  assert f"{state}/loss_scale/dynamic_scale" in values and f"{state}/seed_generator_0" in values
  with open(os.path.join(data_dir, "models", "split", "results", "rte_results.json")) as f:
    assert list(json.load(f)[0]["rte"]) == ["accuracy", "loss"]


@pytest.mark.slow
def test_finetunes_from_a_run_pretraining_model_dir(rte_data):
  data_dir, vocab_size = rte_data
  overrides = tiny_hparams(vocab_size)["model_hparam_overrides"]
  pretraining_config = PretrainingConfig(
    "m",
    data_dir,
    model_size="base",
    vocab_size=vocab_size,
    embedding_size=8,
    model_hparam_overrides=overrides,
    max_seq_length=32,
  )
  pretrainer = ElectraPretrainer.from_pretraining_config(pretraining_config)
  pretrainer.build()
  pretrainer.compile(pretraining_config=pretraining_config)
  checkpointing.TrainingCheckpointManager(pretrainer, pretraining_config.model_dir).save(0)
  # The default init_checkpoint: models/<model-name>, as written by run_pretraining.
  config = finetuning_config(
    "m", data_dir, **tiny_hparams(vocab_size, task_names=["rte"], num_train_epochs=1.0)
  )
  config.model_dir += "_1"
  tasks = task_builder.get_tasks(config, tokenization.FullTokenizer(config.vocab_file))
  runner = runner_lib.ModelRunner(config, tasks)
  expected = official_names.discriminator_name_map(pretrainer.discriminator, include_head=False)
  encoder_names = [n for n in runner.name_map if n.startswith("electra/")]
  assert len(encoder_names) == len(runner.model.encoder.weights)
  for name in encoder_names:
    np.testing.assert_array_equal(runner.name_map[name].numpy(), expected[name].numpy())
  assert len(runner.train()) == runner.train_steps


@pytest.mark.slow
def test_two_local_workers_finetune_and_only_the_chief_writes(rte_data):
  data_dir, vocab_size = rte_data
  hparams = _rte_hparams(
    vocab_size,
    save_checkpoints_steps=3,
    log_every_steps=1,
    distribution_strategy="multi_worker_mirrored",
  )
  procs = [
    _cli(data_dir, hparams, wait=False, extra_env={"TF_CONFIG": tf_config})
    for tf_config in local_worker_tf_configs(2)
  ]
  outputs = []
  try:
    for proc in procs:
      outputs.append(proc.communicate(timeout=600)[0])
      assert proc.returncode == 0, outputs[-1][-3000:]
  finally:
    for proc in procs:
      if proc.poll() is None:
        proc.kill()
  # Both trained to the end (24 examples / 4 per batch = 6 steps); only the
  # chief (worker 0) evaluated and wrote.
  for out in outputs:
    assert "6/6 = 100.0%" in out, out[-3000:]
  assert "rte: accuracy:" in outputs[0] and "rte: accuracy:" not in outputs[1]
  root = os.path.join(data_dir, "models", "m")
  model_dir = os.path.join(root, "finetuning_models", "rte_model_1")
  names = set(os.listdir(model_dir))
  assert {"model.ckpt-0.index", "model.ckpt-3.index", "model.ckpt-6.index", "checkpoint"} <= names
  assert all(
    n.startswith(("model.ckpt-", "checkpoint", "events.out.tfevents", "config.json")) for n in names
  )
  with open(os.path.join(root, "results", "rte_results.json")) as f:
    assert len(json.load(f)) == 1


def test_finetuned_checkpoint_through_keras_and_back_evaluates_the_same(rte_data, tmp_path):
  from electra_tf import convert  # pylint: disable=g-import-not-at-top

  data_dir, vocab_size = rte_data
  hparams = _rte_hparams(vocab_size)
  config = finetuning_config("m", data_dir, **hparams)
  config.model_dir += "_1"
  tasks = task_builder.get_tasks(config, tokenization.FullTokenizer(config.vocab_file))
  trained = runner_lib.ModelRunner(config, tasks)
  trained.train()
  results = trained.evaluate()
  rows = {int(r["eid"]): r["logits"] for r in trained.predict(tasks[0], "dev")}
  assert len(rows) == 7

  keras_path = str(tmp_path / "rte.keras")
  official_dir = str(tmp_path / "official")
  report = convert.convert(config.model_dir, keras_path, hparams=hparams)
  # The resume state is in the checkpoint but neither converted nor listed.
  scope = official_names.TRAINING_STATE_SCOPE
  assert any(n.startswith(scope + "/") for n in _checkpoint_values(config.model_dir))
  slots = [n + s for n in report["converted"] for s in ("/adam_m", "/adam_v")]
  assert report["not_converted"] == sorted(slots + ["global_step"])
  convert.convert(keras_path, official_dir, global_step=6)
  for source in (official_dir, keras_path):
    eval_config = _config(rte_data, do_train=False, init_checkpoint=source)
    eval_config.model_dir = str(tmp_path / "no_model_dir")
    evaluator = runner_lib.ModelRunner(eval_config, tasks)
    assert evaluator.evaluate()["rte"] == pytest.approx(results["rte"], abs=1e-5)
    for row in evaluator.predict(tasks[0], "dev"):
      np.testing.assert_allclose(row["logits"], rows[int(row["eid"])], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_runner_under_mirrored_strategy_trains_checkpoints_resumes_and_scores(
  rte_data, two_replica_strategy
):
  config = _config(rte_data, save_checkpoints_steps=3)
  config.model_dir += "_1"
  tasks = task_builder.get_tasks(config, tokenization.FullTokenizer(config.vocab_file))
  runner = runner_lib.ModelRunner(config, tasks, strategy=two_replica_strategy)
  losses = runner.train()
  assert len(losses) == 6 and np.all(np.isfinite(losses))
  assert tf.train.latest_checkpoint(config.model_dir).endswith("model.ckpt-6")
  results = runner.evaluate()
  # The mirrored checkpoint restores into a single-device evaluation.
  eval_config = _config(rte_data, do_train=False, init_checkpoint=config.model_dir)
  eval_config.model_dir = config.model_dir
  assert runner_lib.ModelRunner(eval_config, tasks).evaluate()["rte"] == pytest.approx(
    results["rte"], abs=1e-5
  )
  # And a mirrored re-run resumes at the end: nothing left to train.
  again = runner_lib.ModelRunner(config, tasks, strategy=two_replica_strategy)
  assert again.train() == []
