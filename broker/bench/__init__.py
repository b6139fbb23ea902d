"""Micro-benchmarks run by hand (``python -m broker.bench.<name>``); never imported by the broker."""
