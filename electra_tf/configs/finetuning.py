"""Fine-tuning hyperparameters: the original's `FinetuningConfig` (`configure_finetuning.py:FinetuningConfig`).

Construction order is the original's: defaults → paths (computed before the
user's values, so `init_checkpoint` ignores a user `debug=True`) → user values
→ single-task defaults → model-size defaults → debug settings → user values
again.

One deliberate fix: the original named the tfrecord cache directory before
applying the user's values, so a debug run wrote its truncated 100-line data
into the normal cache and later non-debug runs silently trained on it
(a quirk of the original (README: Differences from the original)). Here a debug run always uses the `-debug` directory.
"""

import os

import tensorflow as tf

from electra_tf.configs.hparams import HParams
from electra_tf.configs.pretraining import DISTRIBUTION_STRATEGIES
from electra_tf.configs.pretraining import MIXED_PRECISION_POLICIES

QA_TASK_SUBSTRINGS = ("squad", "qa")
LAYERWISE_LR_VARIANTS = ("faithful", "fixed")
DATA_SOURCES = ("files", "tfds")


class FinetuningConfig(HParams):
  """Every fine-tuning hparam of the original, plus a few for TF2.

  Args:
    model_name: name of the pre-trained model directory
      `<data_dir>/models/<model_name>`; all outputs are written under it.
    data_dir: root holding `finetuning_data/<task>/`, `models/` and
      (optionally) `vocab.txt`.
    **kwargs: hparam overrides; an unknown key raises `ValueError` naming it.

  Example:
  >>> config = FinetuningConfig("electra_small", "/tmp/data", task_names=["rte"])
  >>> config.num_train_epochs, config.embedding_size
  (10.0, 128)
  """

  def __init__(self, model_name, data_dir, **kwargs):
    # general
    self.model_name = model_name
    self.debug = False
    self.log_examples = False
    self.num_trials = 1  # negative: loop forever
    self.do_train = True
    self.do_eval = True
    self.keep_all_models = True

    # model
    self.model_size = "small"
    self.task_names = ["chunk"]
    self.model_hparam_overrides = {}
    self.embedding_size = None
    self.vocab_size = 30522
    self.do_lower_case = True

    # training
    self.learning_rate = 1e-4
    self.weight_decay_rate = 0.01
    self.layerwise_lr_decay = 0.8  # <= 0 disables it
    self.num_train_epochs = 3.0
    self.warmup_proportion = 0.1
    self.save_checkpoints_steps = 1000000
    self.iterations_per_loop = 1000
    self.use_tfrecords_if_existing = True

    # writing model outputs to disk
    self.write_test_outputs = False
    self.n_writes_test = 5

    # sizing
    self.max_seq_length = 128
    self.train_batch_size = 32
    self.eval_batch_size = 32
    self.predict_batch_size = 32
    self.double_unordered = True

    # QA
    self.max_query_length = 64
    self.doc_stride = 128
    self.n_best_size = 20
    self.max_answer_length = 30
    self.answerable_classifier = True
    self.answerable_uses_start_logits = True
    self.answerable_weight = 0.5
    self.joint_prediction = True
    self.beam_size = 20
    self.qa_na_threshold = -2.75

    # TPU
    self.use_tpu = False
    self.num_tpu_cores = 1
    self.tpu_job_name = None
    self.tpu_name = None
    self.tpu_zone = None
    self.gcp_project = None

    # --- Beyond the original (TF2); documented in the README. ---
    # "faithful": embeddings decay^(n+2) ... top layer decay^2, heads 1 (the
    # original); "fixed": embeddings decay^(n+1) ... top layer decay^1.
    self.layerwise_lr_decay_variant = "faithful"
    # "files": the original's file layouts; "tfds": GLUE/SQuAD from prepared
    # TensorFlow Datasets (`glue/<task>`, `squad/v1.1`, `squad/v2.0`).
    self.data_source = "files"
    self.tfds_data_dir = None  # None: TFDS's default data dir
    self.seed = None  # seeds shuffling/initialisation per trial (seed + trial)
    self.log_every_steps = 10  # ETA line frequency (the original's ETAHook)
    # Where and in which precision training runs: the same hparams as
    # pre-training, decided by `electra_tf.training.distribution`.
    self.distribution_strategy = "default"
    self.num_gpus = None  # None: all visible GPUs
    self.mixed_precision = "float32"
    self.jit_compile = False
    self.steps_per_execution = 1  # analogue of iterations_per_loop
    self.save_summary_steps = 100  # TensorBoard scalars every N steps
    self.keep_checkpoint_max = 5  # the Estimator's default
    # The original batches predictions by predict_batch_size with
    # drop_remainder, losing the tail when it differs from eval_batch_size.
    self.drop_predict_tail = False

    # default locations of data files
    self.data_dir = data_dir
    pretrained_model_dir = os.path.join(data_dir, "models", model_name)
    self._pretrained_model_dir = pretrained_model_dir
    self.vocab_file = os.path.join(pretrained_model_dir, "vocab.txt")
    if not tf.io.gfile.exists(self.vocab_file):
      self.vocab_file = os.path.join(data_dir, "vocab.txt")
    # The original names its paths with the user's task_names but with the
    # *default* debug flag (`configure_finetuning.py:FinetuningConfig`).
    task_names = kwargs.get("task_names", self.task_names)
    if isinstance(task_names, str):
      raise ValueError(
        f"hparam task_names must be a list of task names, got the string {task_names!r}"
      )
    task_names_str = ",".join(task_names)
    self.init_checkpoint = None if self.debug else pretrained_model_dir
    self.model_dir = os.path.join(
      pretrained_model_dir, "finetuning_models", task_names_str + "_model"
    )
    results_dir = os.path.join(pretrained_model_dir, "results")
    self.results_txt = os.path.join(results_dir, task_names_str + "_results.txt")
    # JSON instead of the original's pickle (same content: a list of trial dicts).
    self.results_json = os.path.join(results_dir, task_names_str + "_results.json")
    self._qa_topdir = os.path.join(results_dir, task_names_str + "_qa")
    self._preprocessed_base = os.path.join(
      pretrained_model_dir, "finetuning_tfrecords", task_names_str + "_tfrecords"
    )
    self.preprocessed_data_dir = self._preprocessed_base
    self._test_predictions_dir = os.path.join(pretrained_model_dir, "test_predictions")

    self.update(kwargs)

    # default hyperparameters for single-task models
    if len(self.task_names) == 1:
      task_name = self.task_names[0]
      if task_name in ("rte", "sts"):
        self.num_train_epochs = 10.0
      elif any(s in task_name for s in QA_TASK_SUBSTRINGS):
        # "naturalqs" contains neither substring and keeps 128 / 3 epochs,
        # as in the original (a quirk of the original (README: Differences from the original)).
        self.max_seq_length = 512
        self.num_train_epochs = 2.0
        self.write_test_outputs = False
      elif task_name == "chunk":
        self.max_seq_length = 256
      else:
        self.num_train_epochs = 3.0

    # default hyperparameters for different model sizes
    if self.model_size == "large":
      self.learning_rate = 5e-5
      self.layerwise_lr_decay = 0.9
    elif self.model_size == "small":
      self.embedding_size = 128

    # debug-mode settings
    if self.debug:
      self.save_checkpoints_steps = 1000000
      self.use_tfrecords_if_existing = False
      self.num_trials = 1
      self.iterations_per_loop = 1
      self.train_batch_size = 32
      self.num_train_epochs = 3.0
      self.log_examples = True
      # Fix of a quirk of the original (README: Differences from the original): keep debug records out of the normal cache.
      if "preprocessed_data_dir" not in kwargs:
        self.preprocessed_data_dir = self._preprocessed_base + "-debug"

    # passed-in arguments override (for example) debug-mode defaults
    self.update(kwargs)
    self._validate()

  def _validate(self):
    if not self.task_names:
      raise ValueError("hparam task_names must name at least one task")
    if self.layerwise_lr_decay_variant not in LAYERWISE_LR_VARIANTS:
      raise ValueError(
        f"hparam layerwise_lr_decay_variant={self.layerwise_lr_decay_variant!r}; "
        f"expected one of {LAYERWISE_LR_VARIANTS}"
      )
    if self.data_source not in DATA_SOURCES:
      raise ValueError(f"hparam data_source={self.data_source!r}; expected one of {DATA_SOURCES}")
    if self.distribution_strategy not in DISTRIBUTION_STRATEGIES:
      raise ValueError(
        f"hparam distribution_strategy={self.distribution_strategy!r}; "
        f"expected one of {DISTRIBUTION_STRATEGIES}"
      )
    if self.mixed_precision not in MIXED_PRECISION_POLICIES:
      raise ValueError(
        f"hparam mixed_precision={self.mixed_precision!r}; expected one of {MIXED_PRECISION_POLICIES}"
      )
    for name in (
      "train_batch_size",
      "eval_batch_size",
      "predict_batch_size",
      "steps_per_execution",
    ):
      if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
        raise ValueError(f"hparam {name}={getattr(self, name)!r}; expected a positive integer")
    if not isinstance(self.model_hparam_overrides, dict):
      raise ValueError("hparam model_hparam_overrides must be a JSON object of BertConfig fields")
    if len(set(self.task_names)) != len(self.task_names):
      raise ValueError(f"hparam task_names has duplicates: {self.task_names}")

  # Paths that depend on a task or trial (the original stores `str.format`
  # methods in these attributes).
  def raw_data_dir(self, task_name):
    return os.path.join(self.data_dir, "finetuning_data", task_name)

  def qa_eval_file(self, task_name):
    return os.path.join(self._qa_topdir, f"{task_name}_eval.json")

  def qa_preds_file(self, task_name):
    return os.path.join(self._qa_topdir, f"{task_name}_preds.json")

  def qa_na_file(self, task_name):
    return os.path.join(self._qa_topdir, f"{task_name}_null_odds.json")

  def test_predictions(self, task_name, split, trial):
    # The original pickles these; we write JSON under a .json name.
    return os.path.join(self._test_predictions_dir, f"{task_name}_{split}_{trial}_predictions.json")

  @property
  def pretrained_model_dir(self):
    return self._pretrained_model_dir
