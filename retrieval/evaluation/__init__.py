"""Evaluation: dataset readers, metrics, and the runner behind `retrieval eval`."""
