"""Serving: export modules with named signatures (`modules`), exporting any
model, task models included (`export`), loading an export in Python
(`load`, which imports `tensorflow_text` first), and the LiteRT / ONNX files
of the ids-in network (`portable`).

Example:
  >>> from electra_tf import serving
  >>> callable(serving.load)
  True
"""

from electra_tf.serving.loading import load

__all__ = [
  "load",
]
