"""The rows peers publish, so that a run on the same GPU type can be put next
to them: NVIDIA's TF2 ELECTRA (pre-training ELECTRA-Base at 128 and 512,
SQuAD fine-tuning at 384, mixed precision with XLA) and the original's
ELECTRA-Small figure (1M steps at 128 × 128 in about 4 days on one V100).

On a GPU `bench_pretraining_step` and `bench_finetuning` run these shapes as
published; a `--quick` run on a CPU runs the same rows with towers shrunk to
`TINY_TOWERS` and a small batch, so that the code path is exercised; a full
run on a CPU skips them (ELECTRA-Base at batch 176 is days of CPU time) and
says so in a row.

Every measured row names the GPU model (`gpu_model`): the published figures
are comparable on the same GPU type and precision only.
"""

# The published figures, as the peers state them (sequences/s).
PRETRAINING_ROWS = (
  {
    "model_size": "base",
    "seq": 128,
    "batch": 176,
    "precision": "mixed_float16",
    "jit_compile": True,
    "published": "NVIDIA TF2 ELECTRA, batch 176/GPU AMP+XLA: A100 40GB 955 seq/s "
    "(V100 16GB at batch 88: 444)",
  },
  {
    "model_size": "base",
    "seq": 512,
    "batch": 24,
    "precision": "mixed_float16",
    "jit_compile": True,
    "published": "NVIDIA TF2 ELECTRA, batch 24/GPU AMP+XLA: A100 40GB 171 seq/s "
    "(V100 16GB at batch 12: 84)",
  },
  {
    "model_size": "small",
    "seq": 128,
    "batch": 128,
    "precision": "float32",
    "jit_compile": False,
    "published": "google-research/electra README: 1M steps in about 4 days on one V100, "
    "fp32, TF 1.15 (about 370 seq/s)",
  },
  {
    "model_size": "small",
    "seq": 128,
    "batch": 128,
    "precision": "mixed_float16",
    "jit_compile": True,
    "published": "(no published figure; the fast setting of the row above)",
  },
)
FINETUNING_ROWS = (
  {
    "task_name": "squad",
    "model_size": "base",
    "seq": 384,
    "batch": 32,
    "precision": "mixed_float16",
    "jit_compile": True,
    "published": "NVIDIA TF2 ELECTRA SQuAD v1.1, batch 32 AMP+XLA: A100 40GB 317 seq/s "
    "(TF32: 107; V100 16GB AMP at batch 16: 154)",
  },
)

# The smoke size of a `--quick` run on a machine without a GPU.
TINY_TOWERS = {
  "model_hparam_overrides": {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
  },
}
QUICK_SHAPE = {"batch": 4, "seq": 32}


def gpu_model():
  """The first visible GPU's name as TF reports it (e.g. "NVIDIA H100 80GB
  HBM3"), or None without a GPU."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  gpus = tf.config.list_physical_devices("GPU")
  if not gpus:
    return None
  return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")


def rows_to_run(rows, quick, gpus):
  """`(row, shape)` pairs to measure, `shape` = the keyword arguments of the
  shape (`model_size`, `batch`, `seq`, `tiny`), and the reason they are
  skipped (None when they run).

  Example:
    >>> runs, reason = rows_to_run(PRETRAINING_ROWS, quick=True, gpus=0)
    >>> runs[0][1]
    {'model_size': 'base', 'batch': 4, 'seq': 32, 'tiny': True}
    >>> rows_to_run(PRETRAINING_ROWS, quick=False, gpus=0)[0]
    []
  """
  if gpus:
    shapes = [{"model_size": r["model_size"], "batch": r["batch"], "seq": r["seq"]} for r in rows]
    return [(r, dict(s, tiny=False)) for r, s in zip(rows, shapes)], None
  if quick:
    return [(r, dict(model_size=r["model_size"], **QUICK_SHAPE, tiny=True)) for r in rows], None
  return [], "no GPU visible: the peers' rows run on a GPU only (a --quick run smoke-tests them)"


def describe_shape(row, shape):
  """The row's name part: size, shape, precision and XLA, with the shrunk
  smoke shape said as such."""
  text = (
    f"ELECTRA-{shape['model_size'].capitalize()} {shape['seq']} x batch {shape['batch']} "
    f"{row['precision']} xla={'on' if row['jit_compile'] else 'off'}"
  )
  if shape["tiny"]:
    text += f" (smoke size of {row['seq']} x batch {row['batch']}: towers H64 L2)"
  return text
