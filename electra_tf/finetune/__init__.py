"""Fine-tuning pieces (the original's `finetune/` package): tasks and their
featurisation, heads, scorers, the multi-task `FinetuningModel` and the text
preprocessor. The run loop is `training.finetuning_run`; the Keras task
models are `task_models`."""
