"""Corpus → TFRecord builders (text files, OpenWebText, TFDS) and the vocab learner."""
