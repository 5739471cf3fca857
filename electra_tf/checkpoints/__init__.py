"""Training checkpoints: electra_tf's own (`checkpointing`: managers and the
Keras callback), the original's name-based ones (`official`, `name_based`),
`reader` (open any checkpoint safely) and the `config.json` a model dir keeps
beside them (`model_dir`). Sits above `models` and `finetune`."""
