import numpy as np
import pytest
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


def test_fixed_range_keeps_noise_flat_and_draws_the_reference(tmp_path):
  path = str(tmp_path / "curves.png")
  rng = np.random.default_rng(0)
  noise = 0.55 + 0.005 * rng.standard_normal(20)
  write_training_curves_png(
    path,
    [
      ("AUC FITTED", np.arange(20), noise),
      ("AUC FIXED", np.arange(20), noise, (0.5, 1.0), 0.5),
    ],
    width=800,
    height=400,
  )
  image = tf.io.decode_png(tf.io.read_file(path)).numpy()
  blue = np.all(image == (31, 119, 180), axis=-1)
  red = np.all(image == (214, 39, 40), axis=-1)
  fitted_rows = np.nonzero(blue.any(axis=1))[0]
  fixed_rows = np.nonzero(red.any(axis=1))[0]
  # autoscaled, +-0.01 fills the panel; on 0.5-1.0 it is a nearly flat line
  assert fitted_rows.max() - fitted_rows.min() > 200
  assert fixed_rows.max() - fixed_rows.min() < 20
  # the dashed reference at 0.5 sits on the bottom of the right panel, below the line
  grey = np.all(image == (150, 150, 150), axis=-1)
  grey_rows = np.nonzero(grey[:, 400:].sum(axis=1) > 20)[0]
  assert len(grey_rows) == 1 and grey_rows[0] > fixed_rows.max()
  # no reference on the left panel
  assert grey[:, :400].sum() == 0


def test_malformed_panel_is_rejected(tmp_path):
  with pytest.raises(ValueError, match="panel 0"):
    write_training_curves_png(str(tmp_path / "c.png"), [("A", [1], [1.0], None, 0.5, "x")])
