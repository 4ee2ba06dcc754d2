"""`kvplan check`: a deployments file (deployments.py) evaluated entry by entry (evaluate.py)."""
