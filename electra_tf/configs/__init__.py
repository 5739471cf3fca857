"""Typed configs: the pre-training and fine-tuning hparams (`pretraining`,
`finetuning`), the encoder sizes (`bert_config`), what they share (`hparams`,
`runtime`) and the generated hparam reference (`reference`); built from
values (reading `--hparams` is `electra_tf.hparams_input`'s)."""
