"""Task registry: `task_names` → task objects (the original's `finetune/task_builder.py`)."""

from electra_tf.finetune.classification import tasks as classification_tasks
from electra_tf.finetune.qa import tasks as qa_tasks
from electra_tf.finetune.tagging import tasks as tagging_tasks

TASK_CLASSES = {
  "cola": classification_tasks.CoLA,
  "mrpc": classification_tasks.MRPC,
  "mnli": classification_tasks.MNLI,
  "sst": classification_tasks.SST,
  "rte": classification_tasks.RTE,
  "qnli": classification_tasks.QNLI,
  "qqp": classification_tasks.QQP,
  "sts": classification_tasks.STS,
  "squad": qa_tasks.SQuAD,
  "squadv1": qa_tasks.SQuADv1,
  "newsqa": qa_tasks.NewsQA,
  "naturalqs": qa_tasks.NaturalQuestions,
  "triviaqa": qa_tasks.TriviaQA,
  "searchqa": qa_tasks.SearchQA,
  "chunk": tagging_tasks.Chunking,
}


def get_task(config, task_name, tokenizer):
  if task_name not in TASK_CLASSES:
    raise ValueError(
      f"Unknown task {task_name!r} in hparam task_names; known tasks: {sorted(TASK_CLASSES)}"
    )
  return TASK_CLASSES[task_name](config, tokenizer)


def get_tasks(config, tokenizer):
  """One task object per name in `config.task_names`, in that order."""
  tasks = [get_task(config, name, tokenizer) for name in config.task_names]
  if config.data_source == "tfds":
    from electra_tf.finetune import tfds_source  # deferred: slow tensorflow_datasets

    for task in tasks:
      tfds_source.use_tfds(task)
  return tasks
