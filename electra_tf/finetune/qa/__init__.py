"""Extractive question answering (SQuAD 1.1/2.0, MRQA): the tasks and their
character↔token featurisation, the span head (joint or independent start/end,
answerability) and the official metrics. The Keras task model over them is
`electra_tf.task_models.ElectraQuestionAnswerer`."""
