"""Extractive question answering (SQuAD 1.1/2.0, MRQA): the tasks and their
featurisation, the span head and the official metrics."""
