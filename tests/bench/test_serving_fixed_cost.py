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
