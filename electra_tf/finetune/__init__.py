"""Fine-tuning: tasks, featurisation, heads, scorers and the run loop (the original's `finetune/` package)."""
