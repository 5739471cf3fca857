"""Reading TensorBoard event files back: the scalar series a run wrote."""

import glob
import os

import tensorflow as tf


def scalar_events(log_dir):
  """{tag: [(step, value)]} from the TensorBoard event files directly in
  `log_dir`, sorted by step (a step written twice keeps its last value), in
  both scalar forms (`simple_value` and `tf.summary`'s tensor)."""
  series = {}
  for path in sorted(glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))):
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        number = (
          tf.make_ndarray(value.tensor).item() if value.HasField("tensor") else value.simple_value
        )
        series.setdefault(value.tag, {})[event.step] = float(number)
  return {tag: sorted(points.items()) for tag, points in series.items()}
