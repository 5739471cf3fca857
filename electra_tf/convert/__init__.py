"""Checkpoint conversion between the original's name-based TF1 checkpoints
and electra_tf (training checkpoints and `.keras` models), in both directions,
and publishing as Hugging Face / keras-hub (`publish`); `api.convert` detects
the direction from the input. Models are read through `electra_tf.sources`,
with the names of `electra_tf.models.official_names`.
`python -m electra_tf.convert_checkpoint` is the command line.

Example:
  >>> from electra_tf import convert
  >>> convert.DIRECTIONS
  ('to-keras', 'to-official')
  >>> # convert.convert("models/tiny", "/tmp/tiny_disc.keras", part="discriminator")
"""

from electra_tf.checkpoints.reader import read_name_based_checkpoint
from electra_tf.convert.api import DIRECTIONS
from electra_tf.convert.api import convert
from electra_tf.convert.api import format_report
from electra_tf.convert.publish import TARGETS
from electra_tf.convert.publish import publish
from electra_tf.convert.to_keras import PARTS
from electra_tf.convert.to_keras import official_to_keras
from electra_tf.convert.to_keras import training_checkpoint_to_keras
from electra_tf.convert.to_official import keras_to_official
from electra_tf.convert.to_official import load_keras_source
from electra_tf.convert.writer import HPARAMS_FILE
from electra_tf.convert.writer import KERAS_SUFFIX
from electra_tf.convert.writer import official_tensors
from electra_tf.convert.writer import write_official_checkpoint
from electra_tf.convert.writer import write_training_checkpoint
from electra_tf.sources.finetuned_heads import TASK_TYPES
from electra_tf.sources.finetuned_heads import load_official_finetuning_model
from electra_tf.sources.layout import LAYOUT_DEFAULT
from electra_tf.sources.layout import LAYOUT_ENCODER
from electra_tf.sources.layout import LAYOUT_MLM
from electra_tf.sources.layout import LAYOUT_TIED
from electra_tf.sources.layout import LAYOUT_TWO_TOWER
from electra_tf.sources.layout import LAYOUT_UNIFORM
from electra_tf.sources.layout import LAYOUT_UNTIED_EMBEDDINGS
from electra_tf.sources.layout import infer_config_from_checkpoint
from electra_tf.sources.layout import load_official_pretrainer
from electra_tf.sources.object_graph import infer_hparams_from_training_checkpoint
