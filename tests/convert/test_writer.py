"""The original-format checkpoints electra_tf writes
(`electra_tf.convert.writer`): the variable listing equals the
original's, and the original's TF1 graph-mode code restores them by name."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import convert
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.models import ElectraPretrainer
from electra_tf.models import official_names
from tests.helpers.conversion import checkpoint_listing
from tests.helpers.conversion import fixture_listing
from tests.helpers.conversion import read_all
from tests.helpers.conversion import write_layout


@pytest.mark.slow
@pytest.mark.parametrize(
  "listing,kwargs",
  [
    ("small.txt", {}),
    ("small_gen1.txt", {"generator_hidden_size": 1.0}),
  ],
)
def test_written_listing_equals_original_small(original_fixtures, tmp_path, listing, kwargs):
  from electra_tf.checkpoints import checkpointing

  config = PretrainingConfig("small", str(tmp_path), model_size="small", vocab_size=7814, **kwargs)
  pretrainer = ElectraPretrainer.from_pretraining_config(config)
  pretrainer.compile(pretraining_config=config)
  checkpointing.build_optimizer(pretrainer)
  tensors, _ = convert.official_tensors(
    official_names.official_name_map(pretrainer), pretrainer.optimizer, 1000000, True
  )
  prefix = convert.write_official_checkpoint(tensors, str(tmp_path / "out"), 1000000)
  assert checkpoint_listing(prefix) == fixture_listing(original_fixtures / "variables" / listing)


def test_written_checkpoint_restores_by_name_in_tf1_graph_mode(tmp_path):
  source = write_layout(tmp_path / "official", "default")
  convert.convert(str(source), str(tmp_path / "keras"))
  back = convert.keras_to_official(tmp_path / "keras", tmp_path / "back", with_optimizer_slots=True)
  expected, dtypes = read_all(source)
  model_names = [n for n in expected if not official_names.is_non_model_entry(n)]

  # Saver by name, as the original's Estimator restores its own checkpoints.
  graph = tf.Graph()
  with graph.as_default():
    variables = {
      n: tf.compat.v1.get_variable(n, shape=expected[n].shape, dtype=tf.float32)
      for n in expected
      if n != "global_step"
    }
    variables["global_step"] = tf.compat.v1.train.get_or_create_global_step()
    saver = tf.compat.v1.train.Saver(variables)
    with tf.compat.v1.Session(graph=graph) as session:
      saver.restore(session, back["output"])
      values = session.run(variables)
  for n, v in expected.items():
    assert np.array_equal(values[n], v), n

  # init_from_checkpoint with the assignment map of get_assignment_map_from_checkpoint
  # (the way fine-tuning and continued pre-training read a checkpoint).
  graph = tf.Graph()
  with graph.as_default():
    tvars = [
      tf.compat.v1.get_variable(n, shape=expected[n].shape, dtype=tf.float32) for n in model_names
    ]
    names = {v.name.split(":")[0] for v in tvars}
    assignment = {n: n for n, _ in tf.train.list_variables(str(tmp_path / "back")) if n in names}
    assert len(assignment) == len(model_names)
    tf.compat.v1.train.init_from_checkpoint(str(tmp_path / "back"), assignment)
    with tf.compat.v1.Session(graph=graph) as session:
      session.run(tf.compat.v1.global_variables_initializer())
      values = session.run({v.name.split(":")[0]: v for v in tvars})
  for n in model_names:
    assert np.array_equal(values[n], expected[n]), n
