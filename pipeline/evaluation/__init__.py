"""Evaluation: games between players, match statistics and the gating stage."""
