"""Metrics: numbers computed from a linked trace. They know the model, never rules or reports."""
