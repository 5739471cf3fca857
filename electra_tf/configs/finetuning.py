"""Fine-tuning hyperparameters: the original's `FinetuningConfig` (`configure_finetuning.py:FinetuningConfig`).

Construction order is the original's: defaults → paths (before the user's
values) → user values → single-task, model-size and debug defaults → user
values again; but a debug run caches its records in a `-debug` directory
(a quirk of the original (docs/differences.md)).
"""

import dataclasses
import os

from electra_tf.configs.hparams import check_optimizer_name
from electra_tf.configs.hparams import check_path_hparam
from electra_tf.configs.hparams import check_run_flags
from electra_tf.configs.hparams import hparam
from electra_tf.configs.pretraining import check_number
from electra_tf.configs.pretraining import default_embedding_size
from electra_tf.configs.runtime import RuntimeHparams

QA_TASK_SUBSTRINGS = ("squad", "qa")
LAYERWISE_LR_VARIANTS = ("faithful", "fixed")
DATA_SOURCES = ("files", "tfds")


# (name, low, high, (low included, high included)) of the fine-tuning
# optimizer's settings: `run_finetuning`'s hparams and the task models' `compile`.
OPTIMIZER_RANGES = (
  ("learning_rate", 0, None, (False, True)),
  ("weight_decay_rate", 0, None, (True, True)),
  ("layerwise_lr_decay", 0, None, (True, True)),
  ("warmup_proportion", 0, 1, (False, True)),
)


@dataclasses.dataclass(init=False, repr=False, eq=False)
class FinetuningConfig(RuntimeHparams):
  """Every fine-tuning hparam of the original, plus a few for TF2.

  Args:
    model_name: name of the pre-trained model directory
      `<data_dir>/models/<model_name>`; all outputs are written under it.
    data_dir: root holding `finetuning_data/<task>/`, `models/` and
      (optionally) `vocab.txt`.
    **kwargs: hparam overrides; an unknown key raises `ValueError` naming it
      and the closest valid name.

  Example:
  >>> config = FinetuningConfig("electra_small", "/tmp/data", task_names=["rte"])
  >>> config.num_train_epochs, config.embedding_size
  (10.0, 128)
  """

  # general
  model_name: str = hparam(None, "Model directory name (the `--model-name` flag).")
  debug: bool = hparam(
    False, "Tiny model (3 layers, H=144) and few steps, as the original's debug mode."
  )
  log_examples: bool = hparam(False, "Log the first example's features.")
  num_trials: int = hparam(
    1, "Fine-tuning runs with fresh initialisation; the median is reported. Negative: forever."
  )
  do_train: bool = hparam(True, "Train.")
  do_eval: bool = hparam(True, "Evaluate.")
  keep_all_models: bool = hparam(True, "Keep every trial's model dir (false keeps the last).")

  # model
  model_size: str = hparam("small", "`small`, `base` or `large` (size table of the original).")
  task_names: list = hparam(
    ["chunk"], 'Tasks to fine-tune on jointly (e.g. `["mnli"]`, `["rte", "sts"]`).'
  )
  model_hparam_overrides: dict = hparam(
    {}, "Dict of `BertConfig` fields overriding the size table."
  )
  embedding_size: int | None = hparam(
    None, "Embedding width E; null means the hidden size; `small` forces 128."
  )
  vocab_size: int = hparam(30522, "Model vocabulary size (rows of the word-embedding table).")
  do_lower_case: bool = hparam(True, "Lower-case text when tokenizing.")
  strip_accents: bool = hparam(
    True,
    "Strip accents when tokenizing (only with do_lower_case); taken from the pre-trained "
    "model's config.json unless set.",
  )

  # training
  learning_rate: float = hparam(
    1e-4, "Peak learning rate before decay (the warm-up multiplies the decayed rate)."
  )
  weight_decay_rate: float = hparam(
    0.01, "Decoupled weight decay, scaled by the learning rate; not for LayerNorm/bias."
  )
  layerwise_lr_decay: float = hparam(0.8, "Layer-wise learning-rate decay factor; 0 disables it.")
  optimizer: str = hparam(
    "adam",
    "`adam`: the original's AdamWeightDecay; `lamb`: LAMB (trust ratio per variable, LayerNorm/bias "
    "excluded) for large global batches. Both clip the global norm at 1.",
  )
  num_train_epochs: float = hparam(3.0, "Epochs (task defaults apply for one task).")
  warmup_proportion: float = hparam(0.1, "Warm-up as a fraction of the training steps.")
  save_checkpoints_steps: int = hparam(1000000, "Checkpoint period in steps.")
  iterations_per_loop: int = hparam(
    1000, "TPU loop size in the original; see `steps_per_execution`."
  )
  use_tfrecords_if_existing: bool = hparam(
    True,
    "Reuse the cached featurised TFRecords while the settings and data files they were built "
    "from are unchanged (a change rebuilds them, with a line saying which).",
  )

  # writing model outputs to disk
  write_test_outputs: bool = hparam(False, "Write test-set predictions (GLUE and SQuAD 2.0).")
  n_writes_test: int = hparam(5, "Only trials ≤ this write test predictions.")

  # sizing
  max_seq_length: int = hparam(128, "Tokens per example, including [CLS]/[SEP].")
  train_batch_size: int = hparam(32, "Global training batch size.")
  eval_batch_size: int = hparam(32, "Global evaluation batch size.")
  predict_batch_size: int = hparam(32, "Prediction batch size.")
  double_unordered: bool = hparam(True, "Add swapped sentence pairs for MRPC and STS training.")

  # QA
  max_query_length: int = hparam(64, "QA: question tokens kept.")
  doc_stride: int = hparam(128, "QA: stride of the sliding document windows.")
  n_best_size: int = hparam(20, "QA: candidates kept per window.")
  max_answer_length: int = hparam(30, "QA: longest answer in tokens.")
  answerable_classifier: bool = hparam(True, "QA: train the answerable classifier.")
  answerable_uses_start_logits: bool = hparam(
    True, "QA: the answerable classifier reads the start logits."
  )
  answerable_weight: float = hparam(0.5, "QA: weight of the answerable loss.")
  joint_prediction: bool = hparam(
    True, "QA: predict the end conditioned on the start (beam search)."
  )
  beam_size: int = hparam(20, "QA: beam size of joint prediction.")
  qa_na_threshold: float = hparam(-2.75, "SQuAD 2.0 no-answer threshold.")

  # --- Beyond the original (TF2); documented in docs/finetune.md and docs/hparams.md. ---
  # "faithful": embeddings decay^(n+2) ... top layer decay^2, heads 1 (the
  # original); "fixed": embeddings decay^(n+1) ... top layer decay^1.
  layerwise_lr_decay_variant: str = hparam(
    "faithful", "`faithful` (top layer decay², as the original) or `fixed` (decay¹)."
  )
  data_source: str = hparam(
    "files", "`files` (the original's layouts) or `tfds` (prepared TFDS GLUE/SQuAD)."
  )
  tfds_data_dir: str | None = hparam(None, "TFDS data dir for `data_source: tfds`.")
  log_every_steps: int = hparam(10, "Period of the progress (ETA) line.")
  drop_predict_tail: bool = hparam(
    False,
    "Drop the last partial `predict_batch_size` batch as the original does (and print what "
    "was dropped); false scores every example.",
  )

  # paths (defaults computed from data_dir, model_name and task_names)
  data_dir: str = hparam(None, "Root of data and models (the `--data-dir` flag).")
  vocab_file: str | None = hparam(
    None,
    "WordPiece vocab (special-token ids are looked up in it); default: the model dir's "
    "`vocab.txt` when it exists, else `<data_dir>/vocab.txt`.",
  )
  init_checkpoint: str | None = hparam(None, "Checkpoint to start from.")
  model_dir: str = hparam(None, "Where checkpoints and logs go.")
  results_txt: str = hparam(None, "Results text file.")
  results_json: str = hparam(None, "Results as JSON (replaces the original's pickle).")
  preprocessed_data_dir: str = hparam(None, "Cache of featurised TFRecords.")

  def __init__(self, model_name, data_dir, **kwargs):
    check_run_flags(model_name, data_dir)
    self.set_defaults()
    self.model_name = model_name

    # default locations of data files
    self.data_dir = data_dir
    pretrained_model_dir = os.path.join(data_dir, "models", model_name)
    self._pretrained_model_dir = pretrained_model_dir
    # Without hparam vocab_file: the model dir's vocab, else data_dir's (a config reads no
    # file: `finetuning_run.make_inputs` looks which exists).
    self.vocab_file = os.path.join(pretrained_model_dir, "vocab.txt")
    self._default_vocab_files = (self.vocab_file, os.path.join(data_dir, "vocab.txt"))
    if "vocab_file" in kwargs:
      self._default_vocab_files = ()
    # The original names its paths with the user's task_names but the *default* debug flag.
    task_names = kwargs.get("task_names", self.task_names)
    if isinstance(task_names, str):
      raise ValueError(
        f"hparam task_names must be a list of task names, got the string {task_names!r}"
      )
    if isinstance(task_names, (list, tuple)) and not all(
      isinstance(name, str) for name in task_names
    ):
      raise ValueError(
        f"hparam task_names must be a list of task names (strings), got {task_names!r}"
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
        # as in the original (a quirk of the original (docs/differences.md)).
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
    self.embedding_size = default_embedding_size(self.model_size) or self.embedding_size

    # debug-mode settings
    if self.debug:
      self.save_checkpoints_steps = 1000000
      self.use_tfrecords_if_existing = False
      self.num_trials = 1
      self.iterations_per_loop = 1
      self.train_batch_size = 32
      self.num_train_epochs = 3.0
      self.log_examples = True
      # Fix of a quirk of the original (docs/differences.md): keep debug records out of the normal cache.
      if "preprocessed_data_dir" not in kwargs:
        self.preprocessed_data_dir = self._preprocessed_base + "-debug"

    # passed-in arguments override (for example) debug-mode defaults
    self.update(kwargs)
    self._validate()

  def _validate(self):
    check_optimizer_name(self.optimizer)
    if not self.task_names:
      raise ValueError("hparam task_names must name at least one task")
    if not self.do_train and not self.do_eval:
      raise ValueError("hparams do_train and do_eval are both false: nothing to do")
    if not self.warmup_proportion > 0:
      # The original divides by zero in its schedule.
      raise ValueError(
        f"hparam warmup_proportion={self.warmup_proportion}; expected > 0 (the warm-up "
        "fraction of the training steps; the original divides by zero with 0)"
      )
    # The same range checks as pre-training's: a negative rate trains backwards.
    for name, low, high, closed in OPTIMIZER_RANGES:
      check_number(self, name, low, high, closed)
    check_number(self, "num_train_epochs", 0, None, (False, True))
    check_number(self, "answerable_weight", 0, None, (True, True))
    if (
      self.write_test_outputs
      and self.do_eval
      and (not isinstance(self.n_writes_test, int) or self.n_writes_test < 1)
    ):
      raise ValueError(
        f"hparam n_writes_test={self.n_writes_test!r} with write_test_outputs true: no trial "
        "would write test predictions; expected at least 1 (or write_test_outputs false)"
      )
    if self.layerwise_lr_decay_variant not in LAYERWISE_LR_VARIANTS:
      raise ValueError(
        f"hparam layerwise_lr_decay_variant={self.layerwise_lr_decay_variant!r}; "
        f"expected one of {LAYERWISE_LR_VARIANTS}"
      )
    if self.data_source not in DATA_SOURCES:
      raise ValueError(f"hparam data_source={self.data_source!r}; expected one of {DATA_SOURCES}")
    if self.tfds_data_dir is not None and self.data_source == "files":
      raise ValueError(
        f"hparam tfds_data_dir={self.tfds_data_dir!r} is read only with data_source \"tfds\" "
        "(data_source is \"files\": the tasks' files under the data dir)"
      )
    for name in (
      "init_checkpoint",
      "vocab_file",
      "model_dir",
      "results_txt",
      "results_json",
      "preprocessed_data_dir",
    ):
      check_path_hparam(self, name)
    self.validate_runtime()
    for name in (
      "train_batch_size",
      "eval_batch_size",
      "predict_batch_size",
      "steps_per_execution",
      # QA windows: a stride of 0 would make windows without end.
      "max_query_length",
      "doc_stride",
      "n_best_size",
      "max_answer_length",
      "beam_size",  # joint prediction keeps the top beam_size starts and ends
    ):
      if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
        raise ValueError(f"hparam {name}={getattr(self, name)!r}; expected a positive integer")
    if len(set(self.task_names)) != len(self.task_names):
      raise ValueError(f"hparam task_names has duplicates: {self.task_names}")
    if not isinstance(self.num_trials, int) or self.num_trials == 0:
      raise ValueError(
        f"hparam num_trials={self.num_trials!r}; expected a positive integer (or a negative "
        "one: trials until stopped)"
      )
    # [CLS] text_a [SEP] text_b [SEP]: room for the markers and a token of each text.
    if not isinstance(self.max_seq_length, int) or self.max_seq_length < 5:
      raise ValueError(
        f"hparam max_seq_length={self.max_seq_length!r}; expected at least 5 ([CLS], two "
        "[SEP] and a token of each text)"
      )

  # Paths that depend on a task or trial.
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
  def default_vocab_files(self):
    """Where the vocab is looked for, in order, when hparam `vocab_file` is
    not given (empty when it is): the model dir's `vocab.txt`, then data_dir's."""
    return self._default_vocab_files

  @property
  def pretrained_model_dir(self):
    return self._pretrained_model_dir
