"""Mutation analysis of the labs (``make mutants``):
is each part's visible check as strong as its grade?

``python -m mutation [LAB ...]`` changes each part's solution in small ways (operators.py),
runs every mutant through the part's visible check and its hidden tests (runner.py), and
classifies it (analysis.py); the counts go into the labs' contract pages, docs/labs/<lab>.md.
"""
