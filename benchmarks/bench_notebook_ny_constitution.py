"""How long the NY Constitution solution notebook takes on a page the size of the real one.

The committed stand-in page has about 3,000 words; the real Avalon page is much longer, and
the notebook's slow parts (three steps of the direct loop, ``build_vocab`` to 256 tokens,
tokenizing the whole page) grow with it. This writes the full-size stand-in (about 40,000
words) to a temporary folder, runs the solution notebook top to bottom on it with nbclient,
and prints the wall time (target: under 30 s) together with the times the notebook itself
reports: ``build_vocab`` to 256 tokens, and its estimate for the direct loop.

    .venv/bin/python benchmarks/bench_notebook_ny_constitution.py
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "solutions" / "ny_constitution.ipynb"
TARGET_SECONDS = 30.0

sys.path.insert(0, str(REPO))
from autograder.standins import ny_constitution as standin  # noqa: E402


def cell_output(notebook: nbformat.NotebookNode, cell_id: str) -> str:
    """The printed output of one cell."""
    cell = next(cell for cell in notebook.cells if cell.get("id") == cell_id)
    return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


def run() -> tuple[float, nbformat.NotebookNode]:
    """Execute the notebook on the full-size stand-in; return the wall time and the executed notebook."""
    with tempfile.TemporaryDirectory() as folder:
        standin.write(Path(folder), full_size=True)
        # The kernel inherits this process's environment: that is how it finds the page and the repo.
        os.environ["BPE_LABS_DATA"] = folder
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        os.environ["MPLBACKEND"] = "Agg"
        notebook = nbformat.read(NOTEBOOK, as_version=4)
        client = NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": folder}})
        start = time.perf_counter()
        client.execute()
        return time.perf_counter() - start, notebook


if __name__ == "__main__":
    seconds, executed = run()
    chunks = cell_output(executed, "chunks").splitlines()[0]
    build = re.search(r"reached (\d+) tokens in ([\d.]+) s", cell_output(executed, "page_vocab"))
    naive = re.search(r"take about (\d+) s", cell_output(executed, "naive_timing"))
    print(f"full-size stand-in: {chunks}")
    print(f"build_vocab to {build.group(1)} tokens: {build.group(2)} s (the notebook's own timing)")
    print(f"direct loop to 256 tokens, estimated from its first three steps: about {naive.group(1)} s")
    verdict = "within" if seconds < TARGET_SECONDS else "OVER"
    print(f"ny_constitution notebook on the full-size stand-in: {seconds:.1f} s ({verdict} the {TARGET_SECONDS:.0f} s target)")
    sys.exit(0 if seconds < TARGET_SECONDS else 1)
