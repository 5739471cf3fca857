"""Where training runs and in which precision: `get_strategy` (a
`tf.distribute` strategy from the hparams and the original's TPU flags),
`set_mixed_precision` (the Keras dtype policy) and `setup_distribution` (both).

Example:
>>> from electra_tf.configs.pretraining import PretrainingConfig
>>> config = PretrainingConfig("m", "/tmp/d", distribution_strategy="one_device")
>>> strategy = setup_distribution(config)
>>> strategy.num_replicas_in_sync
1
"""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys

import keras
import tensorflow as tf

from electra_tf.configs.runtime import DISTRIBUTION_STRATEGIES
from electra_tf.configs.runtime import MIXED_PRECISION_POLICIES


def tpu_cluster_resolver_kwargs(config):
  """Keyword arguments of `TPUClusterResolver` from the original's flags;
  without `tpu_name` the TPU is the local one (`tpu=""`, as on a TPU VM)."""
  if not config.use_tpu and config.distribution_strategy != "tpu":
    raise ValueError(
      "TPU resolver requested but hparam use_tpu is False and distribution_strategy is not 'tpu'"
    )
  kwargs = {"tpu": config.tpu_name or "", "zone": config.tpu_zone, "project": config.gcp_project}
  if config.tpu_job_name:
    kwargs["job_name"] = config.tpu_job_name
  return kwargs


def resolve_strategy_name(config, num_visible_gpus=None):
  """The strategy `get_strategy` builds: `default` picks `tpu` if `use_tpu`,
  `mirrored` with more than one GPU, else `default` (single device)."""
  name = config.distribution_strategy
  if name not in DISTRIBUTION_STRATEGIES:
    raise ValueError(
      f"hparam distribution_strategy={name!r}; expected one of {DISTRIBUTION_STRATEGIES}"
    )
  if config.use_tpu and name not in ("default", "tpu"):
    raise ValueError(
      f"hparam use_tpu=True conflicts with distribution_strategy={name!r}; use 'tpu' or 'default'"
    )
  if name != "default":
    return name
  if config.use_tpu:
    return "tpu"
  if num_visible_gpus is None:
    num_visible_gpus = len(tf.config.list_physical_devices("GPU"))
  num_gpus = num_visible_gpus if config.num_gpus is None else config.num_gpus
  return "mirrored" if num_gpus > 1 else "default"


def _mirrored_devices(config):
  gpus = tf.config.list_logical_devices("GPU")
  if config.num_gpus is not None:
    if config.num_gpus < 0:
      raise ValueError(f"hparam num_gpus={config.num_gpus}; expected >= 0 or null")
    if config.num_gpus > len(gpus):
      raise ValueError(f"hparam num_gpus={config.num_gpus} but only {len(gpus)} GPU(s) are visible")
    gpus = gpus[: config.num_gpus]
  if gpus:
    return [d.name for d in gpus]
  # No GPU: mirror over every logical CPU device (tests split one CPU in two).
  return [d.name for d in tf.config.list_logical_devices("CPU")]


class _NestedReduceMultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
  """`MultiWorkerMirroredStrategy` whose `reduce` accepts what Keras 3's
  `fit` gives it and the collective strategy rejects: a nested batch, and
  scalar logs with `axis=0` (reduced across replicas, as on one worker)."""

  def reduce(self, reduce_op, value, axis):
    parent = super(_NestedReduceMultiWorkerMirroredStrategy, self)

    def reduce_one(v):
      local = (
        self.experimental_local_results(v)[0]
        if isinstance(v, tf.distribute.DistributedValues)
        else v
      )
      rank = getattr(getattr(local, "shape", None), "rank", None)
      return parent.reduce(reduce_op, v, axis=None if rank == 0 else axis)

    return tf.nest.map_structure(reduce_one, value)


def _tf_config(text=None):
  """`TF_CONFIG` (the environment variable, or `text`) parsed and checked: None
  when unset, else a dict whose `cluster` maps job names to address lists and
  whose `task` names one of them; anything else is a one-line ValueError."""
  if text is None:
    text = os.environ.get("TF_CONFIG")
  if not text:
    return None
  if isinstance(text, dict):
    spec = text
  else:
    try:
      spec = json.loads(text)
    except json.JSONDecodeError as e:
      raise ValueError(f"environment variable TF_CONFIG is not valid JSON: {e}") from e
  expected = (
    'expected {"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": 0}}'
  )
  if not isinstance(spec, dict):
    raise ValueError(f"environment variable TF_CONFIG is {spec!r}; {expected}")
  cluster, task = spec.get("cluster", {}), spec.get("task", {})
  if not isinstance(cluster, dict) or not all(
    isinstance(v, (list, dict)) for v in cluster.values()
  ):
    raise ValueError(f"environment variable TF_CONFIG: 'cluster' is {cluster!r}; {expected}")
  if not isinstance(task, dict):
    raise ValueError(f"environment variable TF_CONFIG: 'task' is {task!r}; {expected}")
  index = task.get("index", 0)
  if isinstance(index, bool) or not isinstance(index, int) or index < 0:
    raise ValueError(f"environment variable TF_CONFIG: task index {index!r}; {expected}")
  job = task.get("type")
  if job is not None and job in cluster and index >= len(cluster[job]):
    raise ValueError(
      f"environment variable TF_CONFIG: task {job!r} index {index}, but the cluster lists "
      f"{len(cluster[job])} {job}(s) (indices from 0)"
    )
  if job is not None and cluster and job not in cluster and job != "evaluator":
    raise ValueError(
      f"environment variable TF_CONFIG: task type {job!r} is not a job of the cluster "
      f"({sorted(cluster)})"
    )
  return spec


def get_strategy(config):
  """Returns the `tf.distribute.Strategy` chosen by the hparams."""
  name = resolve_strategy_name(config)
  if name in ("default", "one_device", "mirrored"):
    # A worker of a cluster training alone: a non-chief's checkpoints are thrown away.
    workers = num_workers(tf_config=_tf_config())
    if workers > 1:
      raise ValueError(
        f"environment variable TF_CONFIG describes a cluster of {workers} workers but hparam "
        f"distribution_strategy={config.distribution_strategy!r} trains this process alone; "
        "set distribution_strategy to 'multi_worker_mirrored', or unset TF_CONFIG"
      )
  if name == "default":
    return tf.distribute.get_strategy()
  if name == "one_device":
    gpus = tf.config.list_logical_devices("GPU")
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
  if name == "mirrored":
    return tf.distribute.MirroredStrategy(devices=_mirrored_devices(config))
  if name == "multi_worker_mirrored":
    if "TF_CONFIG" in os.environ and not os.environ["TF_CONFIG"].strip():
      # TensorFlow parses a set TF_CONFIG itself ("Expecting value: line 1 column 1").
      raise ValueError(
        "environment variable TF_CONFIG is set but empty; unset it (one worker) or give "
        "the cluster's JSON"
      )
    _tf_config()  # a one-line error for a TF_CONFIG TensorFlow would misread
    return _NestedReduceMultiWorkerMirroredStrategy()
  # tpu
  resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
    **tpu_cluster_resolver_kwargs(config)
  )
  tf.config.experimental_connect_to_cluster(resolver)
  tf.tpu.experimental.initialize_tpu_system(resolver)
  strategy = tf.distribute.TPUStrategy(resolver)
  if config.num_tpu_cores and strategy.num_replicas_in_sync != config.num_tpu_cores:
    print(
      f"WARNING: hparam num_tpu_cores={config.num_tpu_cores} but the TPU has "
      f"{strategy.num_replicas_in_sync} cores; using all of them",
      flush=True,
    )
  return strategy


# CPU flags (Linux /proc/cpuinfo names) of native bfloat16 matmuls; without
# one, oneDNN converts bf16 to fp32 and back around every matmul.
NATIVE_BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
# GPUs from Ampere (compute capability 8.0) have bfloat16 tensor cores.
NATIVE_BF16_GPU_CAPABILITY = (8, 0)


def read_cpu_flags(cpuinfo_path="/proc/cpuinfo"):
  """The CPU's feature flags as Linux lists them, or None where unknown
  (another OS, an unreadable file)."""
  try:
    with open(cpuinfo_path) as f:
      for line in f:
        if line.startswith("flags"):
          return frozenset(line.split(":", 1)[1].split())
  except OSError:
    pass
  return None


def gpu_compute_capabilities():
  """`(major, minor)` (None where TF does not say) of every visible GPU."""
  return [
    tf.config.experimental.get_device_details(gpu).get("compute_capability")
    for gpu in tf.config.list_physical_devices("GPU")
  ]


def bf16_slowdown_reason(device, cpu_flags=None, gpu_capabilities=()):
  """Why `mixed_bfloat16` would run slower than float32 on this hardware.

  Args:
    device: "tpu", "gpu" or "cpu", where the model runs.
    cpu_flags: the CPU's flags (`read_cpu_flags()`); None when unknown,
      which gives no reason.
    gpu_capabilities: `(major, minor)` of every GPU (`gpu_compute_capabilities()`).

  Returns:
    A short reason, or None where bf16 is native (TPU; GPU 8.0+; CPU with
    AVX512_BF16 or AMX) or the hardware is unknown.

  Example:
  >>> bf16_slowdown_reason("cpu", {"avx2", "fma"})
  'the CPU has no native bfloat16 matmuls (neither AVX512_BF16 nor AMX)'
  >>> bf16_slowdown_reason("gpu", gpu_capabilities=[(8, 6)]) is None
  True
  """
  if device == "tpu":
    return None
  if device == "gpu":
    old = [
      cc for cc in gpu_capabilities if cc is not None and tuple(cc) < NATIVE_BF16_GPU_CAPABILITY
    ]
    if old:
      major, minor = old[0]
      return f"GPU compute capability {major}.{minor} has no bfloat16 tensor cores (8.0+ has)"
    return None
  if cpu_flags is None or set(NATIVE_BF16_CPU_FLAGS) & set(cpu_flags):
    return None
  return "the CPU has no native bfloat16 matmuls (neither AVX512_BF16 nor AMX)"


def _bf16_slowdown_reason_here(config):
  if resolve_strategy_name(config) == "tpu":
    return bf16_slowdown_reason("tpu")
  capabilities = gpu_compute_capabilities()
  if capabilities:
    return bf16_slowdown_reason("gpu", gpu_capabilities=capabilities)
  return bf16_slowdown_reason("cpu", cpu_flags=read_cpu_flags())


def set_mixed_precision(config):
  """Sets the global Keras dtype policy from hparam `mixed_precision`
  (`compile` adds loss scaling for `mixed_float16`); `mixed_bfloat16` on
  hardware without native bf16 matmuls prints one warning line."""
  policy = config.mixed_precision
  if policy not in MIXED_PRECISION_POLICIES:
    raise ValueError(
      f"hparam mixed_precision={policy!r}; expected one of {MIXED_PRECISION_POLICIES}"
    )
  if policy == "mixed_float16" and resolve_strategy_name(config) == "tpu":
    raise ValueError(
      "hparam mixed_precision='mixed_float16' is not supported on TPU; use 'mixed_bfloat16'"
    )
  if policy == "mixed_bfloat16":
    reason = _bf16_slowdown_reason_here(config)
    if reason:
      print(
        f"WARNING: mixed_precision='mixed_bfloat16' will be slower than float32 here: {reason}; "
        "use float32 (or mixed_float16 on a GPU)",
        flush=True,
      )
  keras.mixed_precision.set_global_policy(policy)
  return keras.mixed_precision.global_policy()


@contextlib.contextmanager
def dtype_policy(name):
  """Sets the global Keras dtype policy to `name` for a `with` block (layers
  built inside without an explicit dtype follow it), then restores it."""
  previous = keras.mixed_precision.global_policy().name
  keras.mixed_precision.set_global_policy(name)
  try:
    yield
  finally:
    keras.mixed_precision.set_global_policy(previous)


def setup_distribution(config):
  """Sets the precision policy, then returns the strategy to build under."""
  set_mixed_precision(config)
  return get_strategy(config)


def _task_and_cluster(strategy, tf_config):
  """`(task type, task index, cluster dict)` from the strategy's cluster
  resolver, else from `TF_CONFIG`; `(None, 0, {})` without either."""
  resolver = getattr(strategy, "cluster_resolver", None) if strategy is not None else None
  if resolver is not None and getattr(resolver, "task_type", None) is not None:
    return resolver.task_type, resolver.task_id, resolver.cluster_spec().as_dict()
  spec = _tf_config(tf_config)
  if spec is None:
    return None, 0, {}
  task = spec.get("task", {})
  return task.get("type"), int(task.get("index", 0)), spec.get("cluster", {})


def is_chief(strategy=None, tf_config=None):
  """Whether this process writes the real checkpoints and summaries: always,
  except for non-chief workers of a multi-worker cluster."""
  task_type, task_id, cluster = _task_and_cluster(strategy, tf_config)
  if task_type is None or task_type == "chief":
    return True
  if task_type == "worker":
    # Without an explicit chief, worker 0 is the chief.
    return "chief" not in cluster and task_id == 0
  return False


def num_workers(strategy=None, tf_config=None):
  """Number of worker processes in the cluster (1 without `TF_CONFIG`)."""
  _, _, cluster = _task_and_cluster(strategy, tf_config)
  return max(1, sum(len(cluster.get(kind, [])) for kind in ("chief", "worker")))


def check_batch_split(global_batch_size, replicas, accumulation_steps=1):
  """Raises a one-line `ValueError` unless the global training batch divides
  into `accumulation_steps` equal micro-batches on each of `replicas`."""
  if global_batch_size % (accumulation_steps * replicas):
    raise ValueError(
      f"hparam train_batch_size={global_batch_size} must be divisible by "
      f"gradient_accumulation_steps ({accumulation_steps}) x replicas ({replicas}) = "
      f"{accumulation_steps * replicas}"
    )


def device_report(config, strategy, global_batch_size, accumulation_steps=1):
  """The one start-up line saying where and how a run trains: devices,
  workers, precision, XLA and the batch split."""
  try:
    devices = list(strategy.extended.worker_devices)
  except (AttributeError, RuntimeError):  # the default strategy: TensorFlow's placement
    gpus = tf.config.list_logical_devices("GPU")
    devices = [(gpus or tf.config.list_logical_devices("CPU"))[0].name]
  kinds = sorted({re.sub(r".*device:([A-Z_]+):\d+$", r"\1", d) for d in devices})
  replicas = strategy.num_replicas_in_sync
  per_replica = global_batch_size // max(replicas, 1)
  if accumulation_steps > 1:
    split = (
      f"{accumulation_steps} micro-batches of {per_replica // accumulation_steps} per step "
      f"(gradient accumulation over {accumulation_steps})"
    )
  else:
    split = f"one micro-batch of {per_replica} per step (no gradient accumulation)"
  return (
    f"Devices: {replicas} replica(s) on {'/'.join(kinds)} ({', '.join(devices)}), "
    f"{num_workers(strategy)} worker(s), {type(strategy).__name__}; precision "
    f"{config.mixed_precision}; XLA {'on' if config.jit_compile else 'off'}; global batch "
    f"{global_batch_size} = {per_replica} per replica x {replicas}, {split}"
  )


# TensorFlow's C++ lines that say why no GPU was found.
_GPU_REASON = re.compile(r"cuInit|cuda|CUDA|dlopen|libcud|GPU will not be used|driver", re.I)


def _gpu_probe_reason():
  """What TensorFlow logs when it looks for GPUs, in a fresh process with its C++ log on."""
  code = "import tensorflow as tf; tf.config.list_physical_devices('GPU')"
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0")
  try:
    probe = subprocess.run(
      [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
  except (OSError, subprocess.TimeoutExpired) as e:
    return f"(could not ask: {e})"
  lines = [line.split("] ", 1)[-1].strip() for line in probe.stderr.splitlines()]
  reasons = [line for line in lines if _GPU_REASON.search(line)]
  return "; ".join(dict.fromkeys(reasons)) or "(nothing)"


def missing_gpu_warning(environ=None, nvidia_smi=None):
  """A WARNING line when this machine looks like it has a GPU (`nvidia-smi`
  installed, `/dev/nvidia0`, or `CUDA_VISIBLE_DEVICES` naming one) and
  TensorFlow, built with CUDA, sees none; else None.

  Args:
    environ: the environment to read (default `os.environ`).
    nvidia_smi: path of `nvidia-smi` (default: looked up on PATH); "" for none.
  """
  environ = os.environ if environ is None else environ
  if not tf.test.is_built_with_cuda() or tf.config.list_physical_devices("GPU"):
    return None
  nvidia_smi = shutil.which("nvidia-smi") if nvidia_smi is None else nvidia_smi
  hints = []
  visible = environ.get("CUDA_VISIBLE_DEVICES")
  if visible not in (None, "", "-1"):
    hints.append(f"CUDA_VISIBLE_DEVICES={visible}")
  if nvidia_smi:
    hints.append(f"{nvidia_smi} is installed")
  if os.path.exists("/dev/nvidia0"):
    hints.append("/dev/nvidia0 exists")
  if not hints:
    return None
  return (
    f"WARNING: TensorFlow sees no GPU although {', '.join(hints)}: this run trains on the CPU. "
    f"TensorFlow says: {_gpu_probe_reason()}. Install the CUDA build (pip install "
    "'tensorflow[and-cuda]') or fix the driver, or set CUDA_VISIBLE_DEVICES=-1 to run on the CPU "
    "on purpose."
  )


def report_devices(config, strategy, global_batch_size, print_fn=print, accumulation_steps=1):
  """Checks the batch split (`check_batch_split`), then prints
  `device_report`, and `missing_gpu_warning` when there is one."""
  check_batch_split(global_batch_size, strategy.num_replicas_in_sync, accumulation_steps)
  warning = missing_gpu_warning()
  if warning:
    print_fn(warning)
  print_fn(device_report(config, strategy, global_batch_size, accumulation_steps))
