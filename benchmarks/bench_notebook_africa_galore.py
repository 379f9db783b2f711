"""How long the Africa Galore solution notebook takes on data the size of the real corpus.

The committed stand-in has 20 paragraphs; the real file has about 230 (about 31,000 words),
and the notebook's slow parts (the naive learn loop, 200 weighted merges, the replay for the
plots) grow with it. This writes the full-size stand-in to a temporary folder, runs the
solution notebook top to bottom on it with nbclient, and prints the wall time. Target: under 30 s.

    .venv/bin/python benchmarks/bench_notebook_africa_galore.py
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "solutions" / "africa_galore.ipynb"
TARGET_SECONDS = 30.0

sys.path.insert(0, str(REPO))
from autograder.standins import africa_galore as standin  # noqa: E402


def run() -> float:
    """Execute the notebook on the full-size stand-in; return the wall time in seconds."""
    with tempfile.TemporaryDirectory() as folder:
        standin.write(Path(folder), full_size=True)
        # The kernel inherits this process's environment: that is how it finds the data and the repo.
        os.environ["BPE_LABS_DATA"] = folder
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        os.environ["MPLBACKEND"] = "Agg"
        notebook = nbformat.read(NOTEBOOK, as_version=4)
        client = NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": folder}})
        start = time.perf_counter()
        client.execute()
        return time.perf_counter() - start


if __name__ == "__main__":
    seconds = run()
    verdict = "within" if seconds < TARGET_SECONDS else "OVER"
    print(f"africa_galore notebook on the full-size stand-in: {seconds:.1f} s ({verdict} the {TARGET_SECONDS:.0f} s target)")
    sys.exit(0 if seconds < TARGET_SECONDS else 1)
