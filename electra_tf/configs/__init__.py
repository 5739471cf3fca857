"""Typed configs: the pre-training and fine-tuning hparams (`pretraining`,
`finetuning`, rejecting unknown keys), the encoder sizes (`bert_config`),
loading hparams from JSON (`hparams`), the packaged presets (`presets`, the
JSON files in `presets/`), a run's `config.json` (`model_dir`) and the
generated hparam reference (`reference`)."""
