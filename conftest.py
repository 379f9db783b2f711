"""Every test and every solution notebook run under nbval see the same environment: the
repository importable (hidden tests import the reference), the stand-in corpora, no display."""
import os

from autograder.solutions import solution_environment

os.environ.update(solution_environment())
