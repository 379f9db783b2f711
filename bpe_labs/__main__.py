import sys

from bpe_labs.cli import main

sys.exit(main())
