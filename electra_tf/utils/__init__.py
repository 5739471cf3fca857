"""Floor 0, helpers every other room may use and that know nothing of
ELECTRA: atomic file writes (`file_io`, the one helper for them), the private
Keras APIs a Keras release may move (`keras_compat`), FLOP counting,
training-curve plots and the optional extras' imports (`extras`). Nothing here
imports another electra_tf room."""
