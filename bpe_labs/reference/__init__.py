"""Reference implementations the hidden tests compare student code against.

They run in the grader's own process, never in the student's kernel, and the
grading kernel is denied read access to this folder.
"""
