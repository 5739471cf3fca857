"""Sentence and sentence-pair classification and regression (GLUE): the
tasks (reading the original's TSV layout), the head and the scorers."""
