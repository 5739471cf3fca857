"""The runs: pre-training (`pretraining_run`) and fine-tuning
(`finetuning_run`, the original's `run_finetuning.py` loop) with their
callbacks (ETA logging, TensorBoard summaries). The `python -m` entry points
`run_pretraining` and `run_finetuning` are thin CLIs over these."""
