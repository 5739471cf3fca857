"""Strategy and precision selection (electra_tf/distribution.py)."""

import json
import os
import re

import keras
import pytest
import tensorflow as tf

from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.runtime import distribution


def _config(**kwargs):
  return PretrainingConfig("m", "/tmp/unused_data_dir", **kwargs)


@pytest.mark.parametrize(
  "kwargs, gpus, expected",
  [
    ({}, 0, "default"),
    ({}, 1, "default"),
    ({}, 2, "mirrored"),
    ({"num_gpus": 1}, 4, "default"),
    ({"use_tpu": True}, 0, "tpu"),
    ({"distribution_strategy": "one_device"}, 2, "one_device"),
    ({"distribution_strategy": "mirrored"}, 0, "mirrored"),
    ({"distribution_strategy": "multi_worker_mirrored"}, 0, "multi_worker_mirrored"),
    ({"distribution_strategy": "tpu"}, 0, "tpu"),
  ],
)
def test_resolve_strategy_name(kwargs, gpus, expected):
  assert distribution.resolve_strategy_name(_config(**kwargs), num_visible_gpus=gpus) == expected


def test_use_tpu_conflicting_with_another_strategy_is_an_error():
  with pytest.raises(ValueError, match="use_tpu"):
    distribution.resolve_strategy_name(_config(use_tpu=True, distribution_strategy="mirrored"))


def test_unknown_strategy_is_rejected_by_the_config():
  with pytest.raises(ValueError, match="distribution_strategy"):
    _config(distribution_strategy="parameter_server")


def test_tpu_resolver_arguments_from_the_original_flags():
  config = _config(
    use_tpu=True,
    tpu_name="my-tpu",
    tpu_zone="us-central1-b",
    gcp_project="my-project",
    num_tpu_cores=8,
    tpu_job_name="tpu_worker",
  )
  assert distribution.tpu_cluster_resolver_kwargs(config) == {
    "tpu": "my-tpu",
    "zone": "us-central1-b",
    "project": "my-project",
    "job_name": "tpu_worker",
  }
  # No tpu_name: the local TPU (TPU VM); job name left to TensorFlow's default.
  local = distribution.tpu_cluster_resolver_kwargs(_config(use_tpu=True))
  assert local == {"tpu": "", "zone": None, "project": None}


def test_tpu_strategy_is_built_from_the_resolver(monkeypatch):
  calls = {}

  class FakeResolver:
    def __init__(self, **kwargs):
      calls["resolver"] = kwargs

  class FakeStrategy:
    num_replicas_in_sync = 8

    def __init__(self, resolver):
      calls["strategy_resolver"] = resolver

  monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", FakeResolver)
  monkeypatch.setattr(
    tf.config, "experimental_connect_to_cluster", lambda r: calls.setdefault("connected", r)
  )
  monkeypatch.setattr(
    tf.tpu.experimental, "initialize_tpu_system", lambda r: calls.setdefault("initialized", r)
  )
  monkeypatch.setattr(tf.distribute, "TPUStrategy", FakeStrategy)
  config = _config(use_tpu=True, tpu_name="t1", tpu_zone="z", gcp_project="p", num_tpu_cores=8)
  strategy = distribution.get_strategy(config)
  assert isinstance(strategy, FakeStrategy)
  assert calls["resolver"] == {"tpu": "t1", "zone": "z", "project": "p"}
  assert calls["connected"] is calls["initialized"] is calls["strategy_resolver"]


def test_tpu_rejects_float16():
  with pytest.raises(ValueError, match="mixed_bfloat16"):
    distribution.set_mixed_precision(_config(use_tpu=True, mixed_precision="mixed_float16"))


def test_mirrored_uses_both_logical_cpus():
  if len(tf.config.list_logical_devices("CPU")) < 2:
    pytest.skip("needs the two logical CPU devices of conftest.py")
  strategy = distribution.get_strategy(_config(distribution_strategy="mirrored"))
  assert isinstance(strategy, tf.distribute.MirroredStrategy)
  assert strategy.num_replicas_in_sync == 2


def test_one_device_and_default():
  one = distribution.get_strategy(_config(distribution_strategy="one_device"))
  assert isinstance(one, tf.distribute.OneDeviceStrategy)
  assert distribution.get_strategy(_config()).num_replicas_in_sync == 1


@pytest.mark.parametrize("strategy", ["default", "one_device"])
def test_tf_config_of_a_cluster_without_a_multi_worker_strategy_is_one_line(monkeypatch, strategy):
  """A worker of a 2-worker cluster that would train alone (worker 1's
  checkpoints would go to a temporary dir thrown away at the end)."""
  cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
  monkeypatch.setenv(
    "TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}})
  )
  with pytest.raises(ValueError) as e:
    distribution.get_strategy(_config(distribution_strategy=strategy))
  assert str(e.value) == (
    "environment variable TF_CONFIG describes a cluster of 2 workers but hparam "
    f"distribution_strategy={strategy!r} trains this process alone; set distribution_strategy to "
    "'multi_worker_mirrored', or unset TF_CONFIG"
  )
  # One worker (a cluster of one) trains as before.
  monkeypatch.setenv(
    "TF_CONFIG",
    json.dumps({"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}}),
  )
  assert (
    distribution.get_strategy(_config(distribution_strategy=strategy)).num_replicas_in_sync == 1
  )


def test_num_gpus_larger_than_visible_is_an_error():
  with pytest.raises(ValueError, match="num_gpus"):
    distribution.get_strategy(_config(distribution_strategy="mirrored", num_gpus=3))


@pytest.mark.parametrize("policy", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_setup_sets_the_keras_policy(policy):
  distribution.setup_distribution(_config(mixed_precision=policy))
  assert keras.mixed_precision.global_policy().name == policy
  layer = keras.layers.Dense(2)
  layer.build((None, 3))
  assert layer.variable_dtype == "float32"
  assert (
    layer.compute_dtype
    == {"float32": "float32", "mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}[policy]
  )


@pytest.mark.parametrize(
  "device, cpu_flags, capabilities, slower",
  [
    ("cpu", {"avx2", "fma"}, (), True),
    ("cpu", {"avx512f", "avx512_bf16"}, (), False),
    ("cpu", {"avx512f", "amx_bf16", "amx_tile"}, (), False),
    ("cpu", {"avx512f", "avx512_vnni"}, (), True),  # AVX-512 without its bf16 extension
    ("cpu", None, (), False),  # unknown (not Linux): no claim
    ("gpu", None, [(7, 0)], True),  # V100
    ("gpu", None, [(7, 5)], True),  # T4
    ("gpu", None, [(8, 0)], False),  # A100
    ("gpu", None, [(9, 0), (7, 5)], True),  # one old GPU slows the whole step
    ("gpu", None, [None], False),
    ("tpu", {"avx2"}, (), False),
  ],
)
def test_bf16_slowdown_decision(device, cpu_flags, capabilities, slower):
  reason = distribution.bf16_slowdown_reason(device, cpu_flags, capabilities)
  assert (reason is not None) == slower


def test_cpu_flags_from_cpuinfo(tmp_path):
  cpuinfo = tmp_path / "cpuinfo"
  cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512_bf16\nbugs\t\t: x\n")
  assert distribution.read_cpu_flags(str(cpuinfo)) == {"fpu", "avx2", "avx512_bf16"}
  assert distribution.read_cpu_flags(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_bf16_warning_is_one_line_only_where_bf16_is_slow(policy, capsys):
  distribution.set_mixed_precision(_config(mixed_precision=policy))
  printed = capsys.readouterr().out
  flags = distribution.read_cpu_flags()
  slow_here = distribution.bf16_slowdown_reason("cpu", flags) is not None
  if policy == "mixed_bfloat16" and slow_here and not tf.config.list_physical_devices("GPU"):
    assert printed.count("\n") == 1 and "slower than float32" in printed
  else:
    assert "slower than float32" not in printed
  keras.mixed_precision.set_global_policy("float32")


def test_unknown_precision_is_rejected():
  with pytest.raises(ValueError, match="mixed_precision"):
    _config(mixed_precision="float16")


@pytest.mark.parametrize(
  "tf_config, expected",
  [
    (None, True),
    ({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 0}}, True),
    ({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}, False),
    (
      {"cluster": {"chief": ["c:0"], "worker": ["a:1"]}, "task": {"type": "worker", "index": 0}},
      False,
    ),
    (
      {"cluster": {"chief": ["c:0"], "worker": ["a:1"]}, "task": {"type": "chief", "index": 0}},
      True,
    ),
  ],
)
def test_is_chief(monkeypatch, tf_config, expected):
  monkeypatch.delenv("TF_CONFIG", raising=False)
  arg = json.dumps(tf_config) if tf_config else None
  assert distribution.is_chief(tf_config=arg) is expected


def test_device_report_names_replicas_precision_xla_and_batch_split(two_replica_strategy):
  config = PretrainingConfig("m", "/tmp/d", mixed_precision="mixed_bfloat16", jit_compile=True)
  line = distribution.device_report(config, two_replica_strategy, 128)
  assert line.startswith("Devices: 2 replica(s) on CPU (")
  assert "precision mixed_bfloat16; XLA on; global batch 128 = 64 per replica x 2" in line
  assert line.endswith("one micro-batch of 64 per step (no gradient accumulation)")
  line = distribution.device_report(config, two_replica_strategy, 128, accumulation_steps=4)
  assert line.endswith("4 micro-batches of 16 per step (gradient accumulation over 4)")
  with pytest.raises(ValueError, match=r"train_batch_size=20 .* \(4\) x replicas \(2\) = 8$"):
    distribution.report_devices(config, two_replica_strategy, 20, accumulation_steps=4)


@pytest.mark.slow
def test_missing_gpu_warning_says_why_tensorflow_sees_none():
  import tensorflow as tf

  if not tf.test.is_built_with_cuda() or tf.config.list_physical_devices("GPU"):
    pytest.skip("needs a CUDA build of TensorFlow that sees no GPU (this test's machine has one)")
  if not os.path.exists("/dev/nvidia0"):  # nothing suggests a GPU: no warning
    assert distribution.missing_gpu_warning(environ={}, nvidia_smi="") is None
  warning = distribution.missing_gpu_warning(environ={"CUDA_VISIBLE_DEVICES": "0"}, nvidia_smi="")
  assert warning.startswith("WARNING: TensorFlow sees no GPU although CUDA_VISIBLE_DEVICES=0")
  # The reason comes from TensorFlow's own log of its GPU probe.
  assert re.search(r"TensorFlow says: .*(cuInit|cuda|CUDA)", warning), warning


def test_device_report_of_the_default_strategy():
  config = PretrainingConfig("m", "/tmp/d")
  line = distribution.device_report(config, tf.distribute.get_strategy(), 8)
  assert line.startswith("Devices: 1 replica(s) on CPU (/device:CPU:0), 1 worker(s)")
  assert "precision float32; XLA off; global batch 8 = 8 per replica x 1" in line
