import numpy as np
import tensorflow as tf

from electra_tf.utils.curves import write_training_curves_png


def test_png_draws_each_series_in_its_panel(tmp_path):
  path = str(tmp_path / "curves.png")
  steps = np.arange(1, 101)
  write_training_curves_png(
    path,
    [("TOTAL LOSS", steps, 100.0 - steps), ("DISCRIMINATOR AUC", [10, 100], [0.5, 0.9])],
    width=800,
    height=400,
  )
  image = tf.io.decode_png(tf.io.read_file(path)).numpy()
  assert image.shape == (400, 800, 3)
  blue = np.all(image == (31, 119, 180), axis=-1)
  red = np.all(image == (214, 39, 40), axis=-1)
  assert blue[:, :400].sum() > 100 and blue[:, 400:].sum() == 0
  assert red[:, 400:].sum() > 100 and red[:, :400].sum() == 0
  # a falling series: its leftmost ink is higher up than its rightmost ink
  ys, xs = np.nonzero(blue)
  assert ys[xs.argmin()] < ys[xs.argmax()]
  ys, xs = np.nonzero(red)
  assert ys[xs.argmin()] > ys[xs.argmax()]
  assert not (tmp_path / "curves.png.tmp").exists()
