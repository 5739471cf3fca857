"""Fine-tuning pieces (the original's `finetune/` package): tasks, heads, scorers,
the multi-task model and the text preprocessor; the run loop is `training.finetuning_run`."""
