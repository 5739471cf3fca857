"""Typed configs: the pre-training and fine-tuning hparams (`pretraining`,
`finetuning`, rejecting unknown keys), the encoder sizes (`bert_config`),
loading hparams from JSON (`hparams`), the packaged presets (`presets`, the
JSON files in `presets/`) and the generated hparam reference (`reference`).
A run's `config.json` is read and written in `checkpoints.model_dir`."""
