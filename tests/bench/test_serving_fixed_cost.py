"""bench.serving_fixed_cost: the op chain it divides by runs as many kernels as it says, and its profile counts each kernel once."""

from bench import serving_fixed_cost


def test_the_chain_executes_one_kernel_per_op_and_the_floor_none(tmp_path):
  # Grappler fuses a run of unary ops into one kernel; the chain must not be one.
  serving_fixed_cost.save_floor_and_chain(str(tmp_path), ops=30)
  chain = serving_fixed_cost.time_loaded(str(tmp_path / "chain"), repeats=3)
  floor = serving_fixed_cost.time_loaded(str(tmp_path / "floor"), repeats=3)
  assert chain["executed_ops"] == 30
  assert floor["executed_ops"] == 0
  assert chain["p50_ms"] > 0 and floor["p50_ms"] > 0


def test_the_profile_counts_each_kernel_of_a_call_once(tmp_path):
  import tensorflow as tf

  serving_fixed_cost.save_floor_and_chain(str(tmp_path), ops=30)
  serve = tf.saved_model.load(str(tmp_path / "chain")).signatures["serve"]
  profile = serving_fixed_cost.kernel_time(
    lambda: serve(x=tf.constant([0.5]), y=tf.constant([0.999])), calls=3
  )
  # The chain alternates x·y and sin: 15 of each per call, and no wrapper
  # event (a node's whole run, a shard) counted as a kernel.
  assert profile["by_op"]["Mul"]["count"] == 15
  assert profile["by_op"]["Sin"]["count"] == 15
  assert not set(profile["by_op"]) & set(serving_fixed_cost.PROFILE_WRAPPERS)
  assert profile["kernels_ms"] > 0 and profile["wall_ms"] > 0


def test_the_onednn_off_rows_run_without_onednn_kernels(tmp_path):
  from bench import graph_ops
  from bench.common import call_in_child
  from electra_tf.configs.pretraining import PretrainingConfig
  from electra_tf.models.electra_pretrainer import ElectraPretrainer
  from electra_tf.serving import export as export_lib
  from tests.helpers import serving as helpers

  # A tiny network that takes the benchmark's requests (128 ids, some over 1000).
  seq, vocab_size = serving_fixed_cost.SEQ, 2000
  vocab_file = graph_ops._vocab_file(str(tmp_path), vocab_size)
  overrides = dict(helpers.PRETRAIN_HPARAMS["model_hparam_overrides"], max_position_embeddings=seq)
  hparams = dict(
    helpers.PRETRAIN_HPARAMS,
    vocab_size=vocab_size,
    max_seq_length=seq,
    model_hparam_overrides=overrides,
  )
  model = ElectraPretrainer.from_pretraining_config(
    PretrainingConfig("tiny", str(tmp_path), **hparams)
  )
  model.build()
  path = export_lib.export(model, "discriminator", vocab_file, str(tmp_path / "export"))
  off = call_in_child(
    serving_fixed_cost.MODULE, "time_serve_ids", export_dir=path, repeats=3, onednn=False
  )
  assert off["onednn_kernels"] is False
  assert off["executed_ops"] > 0 and off["short"]["p50_ms"] > 0


def test_onednn_cannot_be_turned_off_once_tensorflow_runs(tmp_path):
  import pytest
  import tensorflow  # noqa: F401  (this process has imported it already)

  with pytest.raises(RuntimeError, match="before TensorFlow is imported"):
    serving_fixed_cost.time_serve_ids(str(tmp_path), repeats=1, onednn=False)
