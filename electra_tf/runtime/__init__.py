"""Where and how a run computes: the distribution strategy and precision
policy (`distribution`), gradient accumulation (`accumulation`), and the
replica helpers that make N replicas match one device (`replicas`)."""
