"""Fine-tuning's name-based checkpoints fall back like pre-training's: a
truncated newest checkpoint is skipped with one line and the previous one
restored; none readable is one line; saving the skipped step again replaces
its files."""

import os

import pytest
import tensorflow as tf

from electra_tf.checkpoints import checkpointing
from electra_tf.checkpoints import reader
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.model import FinetuningModel
from electra_tf.optimization.adam_weight_decay import AdamWeightDecay

BERT = {
  "vocab_size": 30,
  "hidden_size": 8,
  "num_hidden_layers": 1,
  "num_attention_heads": 2,
  "intermediate_size": 16,
  "max_position_embeddings": 16,
}


def _manager(model_dir):
  model = FinetuningModel(
    BERT, [ClassificationHead("rte", 2, name="task_specific_rte")], embedding_size=8
  )
  model.build()
  model.compile(optimizer=AdamWeightDecay(1e-3))
  return checkpointing.NameBasedCheckpointManager(model, str(model_dir))


def _truncate(prefix):
  (data,) = tf.io.gfile.glob(prefix + ".data-*")
  with open(data, "r+b") as f:
    f.truncate(os.path.getsize(data) // 3)


def test_a_truncated_newest_name_based_checkpoint_falls_back(tmp_path):
  manager = _manager(tmp_path)
  for step in (2, 4):
    manager.model.optimizer.iterations.assign(step)
    manager.save(step)
  newest = manager.latest_checkpoint
  _truncate(newest)
  lines = []
  resumed = _manager(tmp_path)
  assert resumed.restore_latest(lines.append) == 2
  assert len(lines) == 1 and f"checkpoint {newest} cannot be read" in lines[0], lines
  assert "falling back to" in lines[0] and lines[0].endswith("(global step 2)")
  assert resumed.latest_checkpoint.endswith("model.ckpt-2")
  resumed.model.optimizer.iterations.assign(4)
  assert resumed.save(4) == newest
  assert reader.checkpoint_problem(newest) is None
  for name in os.listdir(tmp_path):
    if ".data-" in name:
      with open(tmp_path / name, "r+b") as f:
        f.truncate(8)
  with pytest.raises(reader.UnreadableCheckpointError, match="no readable checkpoint in"):
    _manager(tmp_path).restore_latest()
