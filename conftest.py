"""Every test and every solution notebook run under nbval see the same environment: the
course importable (hidden tests import the reference), the stand-in corpora, no display; and the
engine grades the BPE course (also in the grading processes and command lines the tests start,
whether or not the project is installed)."""
import os

from autograder.course import use
from bpe_labs.solutions import solution_environment

use("bpe_labs.course:COURSE")
os.environ.update(solution_environment())
