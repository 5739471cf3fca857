"""Training checkpoints: electra_tf's own (`checkpointing`: the managers and
the Keras callback that pre-training and fine-tuning save and resume with),
the original's name-based ones (`official`: its variable names onto a
pretrainer; `name_based`: fine-tuning's name-based save and restore) and
`reader` (open any checkpoint, list and assign its tensors), and the
description a model dir keeps beside them (`model_dir`: its `config.json`,
written and read atomically). What a path is
and how to load any format is `sources`; foreign formats are `interop`;
conversion is `convert`. Sits above `models` and `finetune`."""
