"""Pre-training hyperparameters: the original's `PretrainingConfig` (`configure_pretraining.py:PretrainingConfig`).

Construction order matters for overrides and is the original's: defaults →
user values → derived `max_predictions_per_seq` → debug settings → size
defaults → Electric → user values again.
"""

import os

from electra_tf.configs.bert_config import BertConfig
from electra_tf.configs.hparams import HParams

MODEL_SIZES = {
  # size: (hidden_size, num_hidden_layers); heads and FFN derive from H.
  "small": (256, 12),
  "base": (768, 12),
  "large": (1024, 24),
}

DISTRIBUTION_STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
MIXED_PRECISION_POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


class PretrainingConfig(HParams):
  """Every pre-training hparam of the original, plus a few for TF2 training.

  Args:
    model_name: model directory name; the model lives in
      `<data_dir>/models/<model_name>`.
    data_dir: root of data and models.
    **kwargs: hparam overrides; an unknown key raises `ValueError` naming it.

  Example:
  >>> config = PretrainingConfig("tiny", "/tmp/data", model_size="small",
  ...                            num_train_steps=100)
  >>> config.max_predictions_per_seq
  19
  """

  def __init__(self, model_name, data_dir, **kwargs):
    self.model_name = model_name
    self.debug = False
    self.do_train = True
    self.do_eval = False

    # objectives
    self.electra_objective = True
    self.electric_objective = False
    self.gen_weight = 1.0
    self.disc_weight = 50.0
    self.mask_prob = 0.15

    # optimization
    self.learning_rate = 5e-4
    self.lr_decay_power = 1.0
    self.weight_decay_rate = 0.01
    self.num_warmup_steps = 10000

    # training loop
    self.iterations_per_loop = 200
    self.save_checkpoints_steps = 1000
    self.num_train_steps = 1000000
    self.num_eval_steps = 100
    self.keep_checkpoint_max = 5

    # model size
    self.model_size = "small"
    self.model_hparam_overrides = kwargs.get("model_hparam_overrides", {})
    self.embedding_size = None
    self.vocab_size = 30522
    self.do_lower_case = True

    # generator
    self.uniform_generator = False
    self.two_tower_generator = False
    self.untied_generator_embeddings = False
    self.untied_generator = True
    self.generator_layers = 1.0
    self.generator_hidden_size = 0.25
    self.disallow_correct = False
    self.temperature = 1.0

    # batch and sequence sizes
    self.max_seq_length = 128
    self.train_batch_size = 128
    self.eval_batch_size = 128

    # TPU (mapped onto TPUClusterResolver + TPUStrategy)
    self.use_tpu = False
    self.num_tpu_cores = 1
    self.tpu_job_name = None
    self.tpu_name = None
    self.tpu_zone = None
    self.gcp_project = None

    # paths
    self.pretrain_tfrecords = os.path.join(data_dir, "pretrain_tfrecords/pretrain_data.tfrecord*")
    self.vocab_file = os.path.join(data_dir, "vocab.txt")
    self.model_dir = os.path.join(data_dir, "models", model_name)
    results_dir = os.path.join(self.model_dir, "results")
    self.results_txt = os.path.join(results_dir, "unsup_results.txt")
    self.results_pkl = os.path.join(results_dir, "unsup_results.pkl")

    # --- Beyond the original (TF2 training); documented in the README. ---
    # "default" picks TPU if use_tpu, else mirrored over num_gpus GPUs if >1,
    # else the default (single-device) strategy.
    self.distribution_strategy = "default"
    self.num_gpus = None  # None: all visible GPUs
    self.mixed_precision = "float32"
    self.jit_compile = False
    # XLA-fused elementwise kernels in the transformers' training path
    # (false: plain TF ops, same math and dropout masks).
    self.fused_training_kernels = True
    self.steps_per_execution = 1  # analogue of iterations_per_loop
    # A name-based TF1 checkpoint (official/original) to start from when the
    # model dir holds no checkpoint yet: weights and global_step are restored.
    self.init_checkpoint = None
    self.seed = None  # seeds masking/sampling/dropout and the input order
    self.log_every_steps = 1  # ETA line frequency (the original logs every step)
    self.save_summary_steps = 100  # TensorBoard scalars every N steps (Estimator's default)

    self._data_dir = data_dir
    self.update(kwargs)

    # derived; not an accepted hparam (the original creates it after update)
    self.max_predictions_per_seq = int((self.mask_prob + 0.005) * self.max_seq_length)

    if self.debug:
      self.train_batch_size = 8
      self.num_train_steps = 20
      self.eval_batch_size = 4
      self.iterations_per_loop = 1
      self.num_eval_steps = 2

    if self.model_size == "small":
      self.embedding_size = 128

    if self.electric_objective:
      self.two_tower_generator = True

    self.update(kwargs)

    # The original computes results paths from the default model dir; follow
    # an overridden model_dir unless the results paths were given explicitly.
    if "model_dir" in kwargs:
      results_dir = os.path.join(self.model_dir, "results")
      if "results_txt" not in kwargs:
        self.results_txt = os.path.join(results_dir, "unsup_results.txt")
      if "results_pkl" not in kwargs:
        self.results_pkl = os.path.join(results_dir, "unsup_results.pkl")
    self._validate()

  @property
  def data_dir(self):
    return self._data_dir

  def _validate(self):
    if self.model_size not in MODEL_SIZES:
      raise ValueError(
        f"Unknown model size {self.model_size!r} (hparam model_size); expected one of {sorted(MODEL_SIZES)}"
      )
    if self.distribution_strategy not in DISTRIBUTION_STRATEGIES:
      raise ValueError(
        f"hparam distribution_strategy={self.distribution_strategy!r}; expected one of {DISTRIBUTION_STRATEGIES}"
      )
    if self.mixed_precision not in MIXED_PRECISION_POLICIES:
      raise ValueError(
        f"hparam mixed_precision={self.mixed_precision!r}; expected one of {MIXED_PRECISION_POLICIES}"
      )
    if not isinstance(self.model_hparam_overrides, dict):
      raise ValueError("hparam model_hparam_overrides must be a JSON object of BertConfig fields")
    if self.electric_objective and (self.uniform_generator or not self.untied_generator):
      # The original crashes during graph construction here (a quirk of the original (README: Differences from the original)).
      raise ValueError(
        "electric_objective=True needs untied_generator=True and uniform_generator=False"
      )


def get_bert_config(config):
  """The discriminator's `BertConfig` from the size table (`configure_pretraining.py:PretrainingConfig`); shared
  by pre-training and fine-tuning."""
  if config.model_size not in MODEL_SIZES:
    raise ValueError(f"Unknown model size {config.model_size!r}")
  hidden_size, num_layers = MODEL_SIZES[config.model_size]
  args = {"hidden_size": hidden_size, "num_hidden_layers": num_layers}
  args["vocab_size"] = config.vocab_size
  args.update(**config.model_hparam_overrides)
  # heads and FFN follow the (possibly overridden) hidden size ...
  args["num_attention_heads"] = max(1, args["hidden_size"] // 64)
  args["intermediate_size"] = 4 * args["hidden_size"]
  # ... unless overridden explicitly
  args.update(**config.model_hparam_overrides)
  return BertConfig.from_dict(args)


def get_pretraining_bert_config(config):
  """`get_bert_config`, shrunk in debug mode as the original's model does (`run_pretraining.py:PretrainingModel`)."""
  bert_config = get_bert_config(config)
  if config.debug:
    bert_config = bert_config.replace(
      num_hidden_layers=3, hidden_size=144, intermediate_size=576, num_attention_heads=4
    )
  return bert_config


def get_generator_config(config, bert_config):
  """The generator's `BertConfig` (`run_pretraining.py:get_generator_config`): Python `round` (half to even);
  heads and FFN are always derived from the generator's hidden size."""
  hidden_size = int(round(bert_config.hidden_size * config.generator_hidden_size))
  return bert_config.replace(
    hidden_size=hidden_size,
    num_hidden_layers=int(round(bert_config.num_hidden_layers * config.generator_layers)),
    intermediate_size=4 * hidden_size,
    num_attention_heads=max(1, hidden_size // 64),
  )
