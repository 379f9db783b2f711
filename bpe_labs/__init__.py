"""BPE Labs: the course graded by the ``autograder`` engine. Five Jupyter labs (and a challenge)
teaching Byte-Pair Encoding tokenization, their reference implementations, stand-in corpora and the
build of the student notebooks. The course object the engine receives: ``bpe_labs.course.COURSE``.

Importing this package does nothing else: hidden tests import ``bpe_labs.reference`` in notebooks.
"""
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# The course's files (solutions/, notebooks/, data/, examples/): inside the package when it is
# installed from a wheel (``pip install .`` maps them into bpe_labs/files), beside it in a checkout.
ROOT = (
    PACKAGE_DIR / "files" if (PACKAGE_DIR / "files" / "solutions").is_dir() else PACKAGE_DIR.parent
)
