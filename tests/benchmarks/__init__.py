"""Timings of real clusters, measured by hand and printed as ``FIGURE`` lines; never asserted.

A test asserts what happens (a new controller, nothing acknowledged lost); how long it
takes depends on the machine, so it is measured here, with the steps the tests use:
``python -m tests.benchmarks.<module>``.
"""
