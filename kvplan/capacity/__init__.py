"""Capacity: hardware, weights, placement and solvers per runtime (one protocol), budgets, deployments."""
