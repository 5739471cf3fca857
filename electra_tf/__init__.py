"""electra_tf: ELECTRA (google-research/electra) on TensorFlow 2 / Keras 3."""

from electra_tf.configs.bert_config import BertConfig
from electra_tf.configs.hparams import load_hparams
from electra_tf.configs.pretraining import PretrainingConfig
from electra_tf.configs.pretraining import get_bert_config
from electra_tf.configs.pretraining import get_generator_config

__version__ = "0.1.0"

from electra_tf.checkpoints.official import load_official_checkpoint  # noqa: E402
from electra_tf.finetune.classification.classifier import ElectraClassifier  # noqa: E402
from electra_tf.finetune.text_preprocessor import ElectraTextPreprocessor  # noqa: E402
from electra_tf.models.electra_pretrainer import ElectraPretrainer  # noqa: E402
