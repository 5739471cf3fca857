"""Shared test set-up: quiet TensorFlow, two logical CPU devices, fixture paths."""

import os
import pathlib
import signal

# The suite sends stop signals on purpose, and the commands keep a signal
# that was ignored when they started ignored (as `nohup` asks). A suite
# started in the background (`cmd &` ignores SIGINT) or under `nohup`
# (SIGHUP) must not hand that on to the processes it tests.
for _signum, _handler in (
  (signal.SIGINT, signal.default_int_handler),
  (signal.SIGHUP, signal.SIG_DFL),
):
  if signal.getsignal(_signum) == signal.SIG_IGN:
    signal.signal(_signum, _handler)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
# Under xdist, each worker's TensorFlow (and every process it starts, which
# inherits the variable) gets its share of the CPUs for intra-op threads:
# by default each process spins one per CPU on cores the other worker is
# using (on 2 CPUs with 2 workers, files ran about 20% faster with 1 each).
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
  _share = (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
  os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(max(1, _share)))

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

# Two logical CPU devices so that MirroredStrategy tests have two replicas.
# This must happen before TensorFlow initialises its devices.
_cpus = tf.config.list_physical_devices("CPU")
try:
  tf.config.set_logical_device_configuration(_cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
except RuntimeError:
  pass  # already initialised (e.g. by a plugin); tests needing 2 devices skip

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "original"


@pytest.fixture(scope="session")
def original_fixtures():
  """Path of `../shared/fixtures/original`; skips the test when it is absent."""
  if not SHARED_FIXTURES.is_dir():
    pytest.skip(f"shared fixtures of the original code not found at {SHARED_FIXTURES}")
  return SHARED_FIXTURES


@pytest.fixture(autouse=True)
def _reset_keras_state():
  """Each test starts in float32 with a fresh Keras name scope."""
  import keras

  keras.mixed_precision.set_global_policy("float32")
  # free_memory=False: a full gc.collect() per test costs 0.1-0.5 s and
  # frees nothing the next test needs; Python still collects on its own.
  keras.utils.clear_session(free_memory=False)
  yield
  keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="session")
def two_replica_strategy():
  """One `MirroredStrategy` over the two logical CPUs for the whole session.

  Separate strategy objects in one process reuse collective instance keys,
  and TensorFlow then fails with "Shape mismatch in the collective instance";
  tests running collectives should share this one.
  """
  devices = tf.config.list_logical_devices("CPU")
  if len(devices) < 2:
    pytest.skip("needs two logical CPU devices (set up at the top of conftest.py)")
  return tf.distribute.MirroredStrategy([d.name for d in devices[:2]])


# The longest file (the demo and every documented command, about a quarter of
# the suite's work on 2 cores) first.
_LONGEST_FILE = "test_demo.py"


def pytest_collection_modifyitems(items):
  """Files with end-to-end (`slow`) tests run first, the demo's before all:
  `--dist loadfile` hands whole files to the two workers in this order, and
  a long file handed out last leaves the other worker idle until it ends.
  The order within a file is kept."""
  slow_files = {item.path for item in items if item.get_closest_marker("slow")}

  def rank(item):
    if item.path.name == _LONGEST_FILE:
      return 0
    return 1 if item.path in slow_files else 2

  items.sort(key=rank)  # stable: each file's tests keep their order
