"""Fine-tuning: tasks, featurisation, heads, scorers and the run loop (spec §12)."""
