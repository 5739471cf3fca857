from electra_tf.training.callbacks import TrainingSummaries
from electra_tf.utils.events import scalar_events


def test_scalar_events_reads_the_series_a_run_wrote_sorted_by_step(tmp_path):
  summaries = TrainingSummaries(str(tmp_path))
  for step in (20, 0, 10):
    summaries.write(step, {"disc_loss": step / 10, "note": "not a number"}, learning_rate=False)
  summaries.write(10, {"disc_loss": 5.0}, learning_rate=False)  # rewritten: the last wins
  assert scalar_events(str(tmp_path)) == {"disc_loss": [(0, 0.0), (10, 5.0), (20, 2.0)]}


def test_scalar_events_of_a_dir_without_events_is_empty(tmp_path):
  assert scalar_events(str(tmp_path)) == {}
