"""bench.serving_fixed_cost: the op chain it divides by runs as many kernels as it says."""

from bench import serving_fixed_cost


def test_the_chain_executes_one_kernel_per_op_and_the_floor_none(tmp_path):
  # Grappler fuses a run of unary ops into one kernel; the chain must not be one.
  serving_fixed_cost.save_floor_and_chain(str(tmp_path), ops=30)
  chain = serving_fixed_cost.time_loaded(str(tmp_path / "chain"), repeats=3)
  floor = serving_fixed_cost.time_loaded(str(tmp_path / "floor"), repeats=3)
  assert chain["executed_ops"] == 30
  assert floor["executed_ops"] == 0
  assert chain["p50_ms"] > 0 and floor["p50_ms"] > 0
