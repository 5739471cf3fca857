"""Pre-training TFRecords read back: the input pipeline (`pretraining_dataset`,
the original's `pretrain/pretrain_data.py`) and the start-up check of the
record files (`record_check`). Writing records lives in `tfrecords_tools/`."""
