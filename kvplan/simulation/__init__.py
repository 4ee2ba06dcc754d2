"""Requests over time: the serving engines' schedulers ported (vLLM), a workload, and a roofline floor."""
