"""Reading GLUE (`glue/<config>`) and SQuAD (`squad/v1.1`, `squad/v2.0`) from
prepared TensorFlow Datasets instead of the original's files
(`data_source="tfds"`; beyond the original), as the examples and JSON layout
the file readers give. The data must be prepared (`download=False`).
"""

from electra_tf.finetune.classification import tasks as classification_tasks
from electra_tf.utils import extras

tfds = extras.require("tensorflow_datasets", "tfds", 'hparam data_source="tfds"')

# task -> (tfds config, text_a feature, text_b feature or None)
GLUE_TFDS = {
  "cola": ("cola", "sentence", None),
  "sst": ("sst2", "sentence", None),
  "mrpc": ("mrpc", "sentence1", "sentence2"),
  "qqp": ("qqp", "question1", "question2"),
  "sts": ("stsb", "sentence1", "sentence2"),
  "mnli": ("mnli", "premise", "hypothesis"),
  "qnli": ("qnli", "question", "sentence"),
  "rte": ("rte", "sentence1", "sentence2"),
}
SQUAD_TFDS = {"squad": "squad/v2.0", "squadv1": "squad/v1.1"}


def _text(value):
  return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _load(name, split, config):
  try:
    return tfds.as_numpy(
      tfds.load(name, split=split, data_dir=config.tfds_data_dir, download=False)
    )
  except Exception as e:  # tfds raises several types for unprepared data
    raise ValueError(
      f"TFDS dataset {name!r} split {split!r} is not available (data_source=tfds, "
      f"tfds_data_dir={config.tfds_data_dir!r}): {str(e).strip().splitlines()[0]}"
    ) from None


def glue_tfds_split(task_name, split):
  """`(tfds name, tfds split)` for one of the original's splits."""
  tfds_config = GLUE_TFDS[task_name][0]
  if split == "diagnostic":
    return "glue/ax", "test"
  if task_name == "mnli":
    return "glue/mnli", {"dev": "validation_matched"}.get(split, split)
  return f"glue/{tfds_config}", {"dev": "validation"}.get(split, split)


def glue_examples(task, split):
  """The task's `InputExample`s of a split, read from TFDS."""
  config = task.config
  _, a_key, b_key = GLUE_TFDS[task.name]
  name, tfds_split = glue_tfds_split(task.name, split)
  if split == "diagnostic":
    a_key, b_key = "premise", "hypothesis"
  is_test = "test" in split or "diagnostic" in split
  regression = isinstance(task, classification_tasks.RegressionTask)
  label_names = None
  if not regression and task.name in ("rte", "qnli", "mnli"):
    label_names = tfds.builder(name, data_dir=config.tfds_data_dir).info.features["label"].names
  rows = list(_load(name, tfds_split, config))
  if config.debug:
    rows = rows[:99]
  examples = []
  for row in rows:
    if is_test:
      label = 0.0 if regression else task.label_list[0]
    elif regression:
      label = float(row["label"])
    elif label_names is not None:
      label = label_names[int(row["label"])]
    else:
      label = str(int(row["label"]))
    examples.append(
      classification_tasks.InputExample(
        int(row["idx"]), task.name, _text(row[a_key]), _text(row[b_key]) if b_key else None, label
      )
    )
  if split == "train" and config.double_unordered and task.name in ("mrpc", "sts"):
    offset = len(examples)
    examples += [
      classification_tasks.InputExample(e.eid + offset, e.task_name, e.text_b, e.text_a, e.label)
      for e in list(examples)
    ]
  return examples


def squad_data(task, split):
  """The split as the original's SQuAD JSON `data` list (one paragraph per question)."""
  config = task.config
  rows = _load(SQUAD_TFDS[task.name], {"dev": "validation"}.get(split, split), config)
  paragraphs = []
  for row in rows:
    answers = [
      {"text": _text(t), "answer_start": int(s)}
      for t, s in zip(row["answers"]["text"], row["answers"]["answer_start"])
    ]
    qa = {
      "id": _text(row["id"]),
      "question": _text(row["question"]),
      "answers": answers,
      "is_impossible": bool(row.get("is_impossible", False)),
    }
    paragraphs.append({"context": _text(row["context"]), "qas": [qa]})
  return [{"title": "tfds", "paragraphs": paragraphs}]


def use_tfds(task):
  """Makes `task` (GLUE or SQuAD) read its data from TFDS (its `example_source`)."""
  if task.name in GLUE_TFDS:
    task.example_source = glue_examples
  elif task.name in SQUAD_TFDS:
    task.example_source = squad_data
  else:
    raise ValueError(
      f"data_source=tfds supports GLUE and SQuAD, not task {task.name!r}; "
      f"supported: {sorted(GLUE_TFDS) + sorted(SQUAD_TFDS)}"
    )
