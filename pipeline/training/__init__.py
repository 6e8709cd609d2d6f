"""Training the network on (s, pi, z) shards: Lightning module, data, MLflow."""
