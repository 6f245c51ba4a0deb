"""Training MaskablePPO agents on block_env: typed YAML configs, self-play against frozen
snapshots mixed with scripted baselines, periodic arena evaluation, checkpoints."""
