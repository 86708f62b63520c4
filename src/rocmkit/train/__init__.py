"""Training: configs, models, data, precision, parallelism, checkpoints and the loop."""
