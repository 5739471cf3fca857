"""Where and how a run computes, decided in one place: the distribution
strategy and the mixed-precision policy (`distribution`), and the replica
helpers the losses and random draws use to match one device with N replicas
(`replicas`). Layers, models and runs import these; this room imports only
`configs`."""
