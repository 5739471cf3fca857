"""Typed configs: the pre-training and fine-tuning hparams (`pretraining`,
`finetuning`, rejecting unknown keys), the encoder sizes (`bert_config`),
what they share (`hparams`) and the generated hparam reference
(`reference`). Configs are built from values: reading `--hparams` (and the
packaged presets' JSON in `presets/`) is `electra_tf.hparams_input`'s; a
run's `config.json` is read and written in `checkpoints.model_dir`."""
