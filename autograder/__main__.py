import sys

from autograder.cli import exit_quickly, main

sys.exit(exit_quickly(main()))
