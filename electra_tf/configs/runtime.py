"""Where and how a run computes: the hparams pre-training and fine-tuning
share (distribution, precision, XLA, TPU, seed, summaries, checkpoints).

Example:
  >>> MIXED_PRECISION_POLICIES
  ('float32', 'mixed_float16', 'mixed_bfloat16')
"""

import dataclasses

from electra_tf.configs.hparams import ConfigBase
from electra_tf.configs.hparams import hparam

DISTRIBUTION_STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
MIXED_PRECISION_POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


@dataclasses.dataclass(init=False, repr=False, eq=False)
class RuntimeHparams(ConfigBase):
  """The run-time block of `PretrainingConfig` and `FinetuningConfig`."""

  # TPU (the original's flags, mapped onto TPUClusterResolver + TPUStrategy)
  use_tpu: bool = hparam(False, "Train on a TPU (`TPUClusterResolver` + `TPUStrategy`).")
  num_tpu_cores: int = hparam(1, "TPU cores (the original's `num_shards`).")
  tpu_job_name: str | None = hparam(None, "TPU job name for the cluster resolver.")
  tpu_name: str | None = hparam(None, "TPU name or grpc address for the cluster resolver.")
  tpu_zone: str | None = hparam(None, "GCE zone of the TPU.")
  gcp_project: str | None = hparam(None, "GCP project of the TPU.")
  # Beyond the original (TF2): documented in docs/pretrain.md and docs/hparams.md.
  distribution_strategy: str = hparam(
    "default",
    "`default`, `one_device`, `mirrored`, `multi_worker_mirrored` or `tpu`.",
  )
  num_gpus: int | None = hparam(None, "GPUs used by `mirrored`; null = all visible.")
  mixed_precision: str = hparam(
    "float32", "`float32`, `mixed_float16` (dynamic loss scaling) or `mixed_bfloat16`."
  )
  jit_compile: bool = hparam(False, "XLA-compile the training step.")
  steps_per_execution: int = hparam(1, "Training steps per `tf.function` call.")
  gradient_accumulation_steps: int = hparam(
    1,
    "Micro-batches per training step: each replica's share of `train_batch_size` (still the "
    "global batch) is cut into this many, their gradients summed and applied once (the same "
    "update, in less memory).",
  )
  seed: int | None = hparam(
    None,
    "Seeds initialisation, masking/sampling and the input order; with a seed a resumed run "
    "continues with the next batch; null = random.",
  )
  save_summary_steps: int = hparam(100, "TensorBoard scalar period in steps (0: none).")
  keep_checkpoint_max: int | None = hparam(5, "Checkpoints kept; 0 or null keeps all.")

  def validate_runtime(self):
    """One-line `ValueError`s naming the hparam, for the run-time block."""
    if self.distribution_strategy not in DISTRIBUTION_STRATEGIES:
      raise ValueError(
        f"hparam distribution_strategy={self.distribution_strategy!r}; "
        f"expected one of {DISTRIBUTION_STRATEGIES}"
      )
    if self.mixed_precision not in MIXED_PRECISION_POLICIES:
      raise ValueError(
        f"hparam mixed_precision={self.mixed_precision!r}; expected one of {MIXED_PRECISION_POLICIES}"
      )
    k = self.gradient_accumulation_steps
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
      raise ValueError(f"hparam gradient_accumulation_steps={k!r}; expected an integer >= 1")
    batch = getattr(self, "train_batch_size", None)
    if isinstance(batch, int) and batch % k:
      raise ValueError(
        f"hparam train_batch_size={batch} must be divisible by gradient_accumulation_steps={k}"
      )
    if self.seed is not None and not 0 <= self.seed < 2**32:
      # numpy's and Keras' seeds are unsigned 32-bit.
      raise ValueError(f"hparam seed={self.seed}; expected an integer in [0, 2**32) or null")
    steps = self.save_summary_steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
      raise ValueError(f"hparam save_summary_steps={steps!r}; expected an integer >= 0 (0: none)")
    if self.num_gpus is not None and self.num_gpus < 0:
      raise ValueError(f"hparam num_gpus={self.num_gpus}; expected >= 0 or null")
    if self.keep_checkpoint_max is not None and self.keep_checkpoint_max < 0:
      raise ValueError(
        f"hparam keep_checkpoint_max={self.keep_checkpoint_max}; expected >= 0 or null"
      )
