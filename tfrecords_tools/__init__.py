"""Corpus → TFRecord builders (text files, OpenWebText, TFDS) and the vocab learner."""

# Quiets TensorFlow's start-up lines for `python -m tfrecords_tools.<tool>`
# (see electra_tf._quiet_tensorflow_start_up) before any tool imports it.
import electra_tf  # noqa: E402,F401  pylint: disable=unused-import
