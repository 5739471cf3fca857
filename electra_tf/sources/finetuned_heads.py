"""Fine-tuned checkpoints: the encoder plus one `task_specific/<task>/` group
per task (the names the original's `run_finetuning.py` writes), read into a
`FinetuningModel` with each head's type and size taken from the task name
and the shapes.

Example:
  >>> task_groups(["electra/embeddings/word_embeddings",
  ...              "task_specific/rte/dense/kernel", "task_specific/rte/dense/bias"])
  {'rte': {'dense'}}
"""

import json
import os

from electra_tf.checkpoints import official as official_checkpoint
from electra_tf.checkpoints.reader import assign_tensors
from electra_tf.checkpoints.reader import read_name_based_checkpoint
from electra_tf.configs.finetuning import FinetuningConfig
from electra_tf.finetune import task_builder
from electra_tf.finetune.classification import tasks as classification_tasks
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.model import FinetuningModel
from electra_tf.finetune.qa import tasks as qa_tasks
from electra_tf.finetune.qa.head import QAHead
from electra_tf.finetune.tagging import tasks as tagging_tasks
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.hparams_input import load_hparams
from electra_tf.models import official_names
from electra_tf.sources.layout import NO_DATA_DIR
from electra_tf.sources.layout import check_shapes
from electra_tf.sources.layout import infer_config_and_model

# Head types of fine-tuning tasks, as `--hparams` `task_types` names them.
TASK_TYPES = ("classification", "regression", "tagging", "qa")
# Fine-tuning hparams that set the encoder's shape (checked against the checkpoint).
_FINETUNING_MODEL_KEYS = (
  "model_size",
  "embedding_size",
  "vocab_size",
  "model_hparam_overrides",
  "debug",
)
# QA head options that default to what the checkpoint's layer names say.
_QA_LAYOUT_KEYS = ("joint_prediction", "answerable_classifier", "answerable_uses_start_logits")
_TASK_TYPES_EXAMPLE = '--hparams \'{{"task_types": {{"{task}": "classification"}}}}\''


def task_groups(names):
  """`{task: set of layer names}` of the `task_specific/<task>/<layer>/...`
  entries among `names` (optimizer slots ignored)."""
  groups = {}
  for name in names:
    if official_names.is_non_model_entry(name):
      continue
    parts = name.split("/")
    if parts[0] == official_names.TASK_SCOPE:
      if len(parts) < 4:
        raise ValueError(
          f"unexpected checkpoint entry {name!r}: expected "
          f"{official_names.TASK_SCOPE}/<task>/<layer>/<kernel|bias>"
        )
      groups.setdefault(parts[1], set()).add(parts[2])
  return groups


def package_task_type(task_name):
  """The head type (one of `TASK_TYPES`) of a task electra_tf defines, or None."""
  task_class = task_builder.TASK_CLASSES.get(task_name)
  if task_class is None:
    return None
  for base, task_type in (
    (qa_tasks.QATask, "qa"),
    (classification_tasks.RegressionTask, "regression"),
    (classification_tasks.ClassificationTask, "classification"),
    (tagging_tasks.TaggingTask, "tagging"),
  ):
    if issubclass(task_class, base):
      return task_type
  raise ValueError(
    f"task {task_name!r}: {task_class.__name__} is none of the task kinds the "
    "converter knows (classification, regression, tagging, QA)"
  )


def _finetuning_hparams(hparams):
  """Splits `--hparams` for `--part finetuned` (fine-tuning hparams plus
  `task_types`) into `(user, model_hparams, finetuning_config, task_types)`:
  the whole dict, the keys that set the encoder's shape, a `FinetuningConfig`
  (validates the keys) and `{task: type}`."""
  user = load_hparams(hparams)
  rest = dict(user)
  task_types = rest.pop("task_types", None) or {}
  if not isinstance(task_types, dict):
    raise ValueError(
      f"--hparams task_types must be a JSON object {{task: type}}, got {task_types!r}"
    )
  for task, task_type in task_types.items():
    if task_type not in TASK_TYPES:
      raise ValueError(
        f"--hparams task_types: {task!r} has type {task_type!r}; expected one of {TASK_TYPES}"
      )
  try:
    config = FinetuningConfig("converted", NO_DATA_DIR, **rest)
  except ValueError as e:
    raise ValueError(
      f"--hparams for --part finetuned are fine-tuning hparams (as for "
      f"run_finetuning) plus task_types: {e}"
    ) from e
  model_hparams = {k: rest[k] for k in _FINETUNING_MODEL_KEYS if k in rest}
  return user, model_hparams, config, task_types


def _task_order(groups, user, notes):
  """The heads' order (it gives each task its `task_id`): `task_names` from
  --hparams, which must name exactly the checkpoint's tasks, else sorted."""
  found = sorted(groups)
  if "task_names" not in user:
    if len(found) > 1:
      notes.append(
        f"task order (task_id) {found} is alphabetical: the checkpoint does not "
        "record it; pass the run's task_names in --hparams if it differed"
      )
    return found
  given = list(user["task_names"])
  if sorted(given) != found:
    raise ValueError(
      f"--hparams task_names {given} do not name the checkpoint's tasks {found} (not in the "
      f"checkpoint: {sorted(set(given) - set(found))}; not in task_names: "
      f"{sorted(set(found) - set(given))})"
    )
  return given


def _task_type(task, layers, task_types, notes):
  """A task's head type: `task_types` from --hparams, else the package's
  task of that name, else QA when the layers are QA-only names."""
  known = package_task_type(task)
  if task in task_types:
    if known is not None and known != task_types[task]:
      notes.append(
        f"task {task}: --hparams task_types says {task_types[task]} (electra_tf's "
        f"{task} task is {known})"
      )
    return task_types[task]
  if known is not None:
    return known
  if layers - {"dense"}:
    notes.append(f"task {task}: not an electra_tf task; a QA head from its layers {sorted(layers)}")
    return "qa"
  raise ValueError(
    f"task {task!r} of the checkpoint is not a task electra_tf knows "
    f"({', '.join(sorted(task_builder.TASK_CLASSES))}), and classification, regression and tagging "
    f"heads have the same variables ({official_names.TASK_SCOPE}/{task}/dense/kernel, bias): "
    f"give its type with {_TASK_TYPES_EXAMPLE.format(task=task)} (one of "
    f"{', '.join(TASK_TYPES)})"
  )


def _build_task_head(task, task_type, layers, shapes, config, user):
  """`(head, description)` of one task, sized from the checkpoint's shapes."""
  name = "task_specific_" + task  # as the tasks' create_head names them
  if task_type == "qa":
    # dense (start) always; qa_hidden with joint prediction; dense_2 the
    # answerable classifier, dense_3 when it reads the start probabilities.
    options = {
      "joint_prediction": "qa_hidden" in layers,
      "answerable_classifier": "dense_2" in layers,
      "answerable_uses_start_logits": "dense_3" in layers,
    }
    options.update({k: user[k] for k in _QA_LAYOUT_KEYS if k in user})
    head = QAHead(
      task,
      beam_size=config.beam_size,
      answerable_weight=config.answerable_weight,
      name=name,
      **options,
    )
    flags = ", ".join(k for k, v in options.items() if v) or "no joint prediction or answerable"
    return head, f"qa ({flags}; beam_size {config.beam_size})"
  kernel_name = f"{official_names.TASK_SCOPE}/{task}/dense/kernel"
  kernel = shapes.get(kernel_name)
  if kernel is None or len(kernel) != 2:
    found = (
      "no such entry" if kernel is None else f"shape {official_checkpoint.describe_shape(kernel)}"
    )
    raise ValueError(
      f"task {task!r} ({task_type}): expected {kernel_name} [H, num_labels], the "
      f"checkpoint has {found} (the task's layers: {sorted(layers)})"
    )
  num_labels = int(kernel[1])
  if task_type == "tagging":
    return TaggingHead(task, num_labels, name=name), f"tagging, {num_labels} tags"
  if task_type == "regression":
    if num_labels != 1:
      raise ValueError(
        f"task {task!r} is a regression task (one output) but {kernel_name} is "
        f"{official_checkpoint.describe_shape(kernel)}; if it is a classifier, say so with "
        f"{_TASK_TYPES_EXAMPLE.format(task=task)}"
      )
    return ClassificationHead(task, 1, regression=True, name=name), "regression"
  return ClassificationHead(task, num_labels, name=name), f"classification, {num_labels} labels"


def load_official_finetuning_model(path, hparams=None):
  """Reads a fine-tuned name-based checkpoint (`electra/...` and
  `task_specific/<task>/...`) into a `FinetuningModel`, strictly: every
  model entry must be a variable of the model with the same shape.

  Args:
    path: checkpoint prefix or directory.
    hparams: fine-tuning hparams (see `_finetuning_hparams`), or None.

  Returns:
    `(model, tensors, info)`: `tensors` holds every checkpoint entry; `info`
    has `prefix`, `layout`, `notes`, `hparams` (reusable as --hparams) and
    `tasks` (`[(task, description)]` in head order).
  """
  prefix, tensors = read_name_based_checkpoint(path)
  shapes = {n: tuple(int(d) for d in t.shape) for n, t in tensors.items()}
  groups = task_groups(shapes)
  if not groups:
    raise ValueError(
      f"checkpoint {prefix!r} has no {official_names.TASK_SCOPE}/<task>/ heads, "
      "so it is not a fine-tuned model; use --part pretrainer or discriminator"
    )
  others = sorted(
    {n.split("/", 1)[0] for n in shapes if not official_names.is_non_model_entry(n)}
    - {official_names.DISCRIMINATOR_SCOPE, official_names.TASK_SCOPE}
  )
  if others:
    raise ValueError(
      f"checkpoint {prefix!r} has task heads but also the scopes {others}; a "
      f"fine-tuned model holds only {official_names.DISCRIMINATOR_SCOPE}/... and "
      f"{official_names.TASK_SCOPE}/..."
    )
  user, model_hparams, ft_config, task_types = _finetuning_hparams(hparams)
  config, merged, layout, notes, _ = infer_config_and_model(shapes, model_hparams, source=prefix)
  unknown = sorted(set(task_types) - set(groups))
  if unknown:
    raise ValueError(
      f"--hparams task_types names {unknown}, which the checkpoint has no heads "
      f"for (its tasks: {sorted(groups)})"
    )
  order = _task_order(groups, user, notes)
  heads, tasks, types = [], [], {}
  for task in order:
    types[task] = _task_type(task, groups[task], task_types, notes)
    head, description = _build_task_head(task, types[task], groups[task], shapes, ft_config, user)
    heads.append(head)
    tasks.append((task, description))

  model = FinetuningModel.from_finetuning_config(config, heads)
  name_map = model.official_name_map()
  check_shapes(
    official_names.official_shapes(name_map), shapes, repr(prefix), user, layout, task_heads=True
  )
  assign_tensors(name_map, tensors)
  used = dict(user)
  used.update(merged, task_names=order, task_types=types)
  return (
    model,
    tensors,
    {"prefix": prefix, "layout": layout, "notes": notes, "hparams": used, "tasks": tasks},
  )


# --- label names of a head, for publishing --------------------------------------


def _mapping_labels(path):
  """The tag names of a tagging task's label mapping (`{tag: id}` JSON), by id."""
  with open(path, encoding="utf-8") as f:
    mapping = json.load(f)
  if not isinstance(mapping, dict) or sorted(mapping.values()) != list(range(len(mapping))):
    raise ValueError(f"{path!r} is not a label mapping {{tag: id}} with ids 0..n-1")
  return [tag for tag, _ in sorted(mapping.items(), key=lambda item: item[1])]


def label_mapping_candidates(task, config=None, source=None):
  """Where a tagging task's label mapping may be: the fine-tuning run's
  feature cache, and the cache beside a trial dir
  `<model dir>/finetuning_models/<tasks>_model_<trial>`."""
  candidates = []
  if config is not None:
    prefix = "debug_" if config.debug else ""
    candidates.append(
      os.path.join(config.preprocessed_data_dir, f"{prefix}{task}_label_mapping.json")
    )
  if source:
    trial = os.path.abspath(os.fspath(source))
    if not os.path.isdir(trial):
      trial = os.path.dirname(trial)
    models, name = os.path.split(trial)
    if os.path.basename(models) == "finetuning_models" and "_model" in name:
      tasks = name[: name.rindex("_model")]
      cache = os.path.join(os.path.dirname(models), "finetuning_tfrecords", tasks + "_tfrecords")
      for suffix in ("", "-debug"):
        for prefix in ("", "debug_"):
          candidates.append(os.path.join(cache + suffix, f"{prefix}{task}_label_mapping.json"))
  return candidates


def head_type(head):
  """The type (one of `TASK_TYPES`) of a head layer."""
  if isinstance(head, QAHead):
    return "qa"
  if isinstance(head, TaggingHead):
    return "tagging"
  return "regression" if head.regression else "classification"


def head_label_names(task, head_type, num_labels, given=None, config=None, source=None):
  """The label names of a head, index = label id, for a published model.

  From `given` (the user's list), else the task electra_tf defines, else a
  tagging task's saved label mapping, else `LABEL_<i>` with a note.

  Returns:
    `(names, notes)`.
  """
  if given is not None:
    if not isinstance(given, (list, tuple)) or len(given) != num_labels:
      raise ValueError(
        f"--hparams label_names for task {task!r}: {given!r}; expected a list of "
        f"{num_labels} names (one per output, in label-id order)"
      )
    return [str(name) for name in given], []
  if head_type == "qa":
    return [], []
  if head_type == "regression":
    return [task], []
  task_class = task_builder.TASK_CLASSES.get(task)
  if head_type == "classification" and task_class is not None:
    if issubclass(task_class, classification_tasks.ClassificationTask):
      names = task_class(
        FinetuningConfig("converted", NO_DATA_DIR, task_names=[task]), None
      ).label_list
      if len(names) == num_labels:
        return list(names), []
  if head_type == "tagging":
    for path in label_mapping_candidates(task, config, source):
      if os.path.isfile(path):
        names = _mapping_labels(path)
        if len(names) == num_labels:
          return names, [f"label names from {path}"]
  return [f"LABEL_{i}" for i in range(num_labels)], [
    f"task {task}: label names unknown (named LABEL_0..LABEL_{num_labels - 1}); give them with "
    f'--hparams \'{{"label_names": {{"{task}": [...]}}}}\''
  ]
