import sys

from bpe_labs.cli import script

sys.exit(script())
