"""How long each solution notebook takes top to bottom on data the size of the real corpora.

The committed stand-ins are small (tests and nbval run on them); the real Africa Galore file has
about 230 paragraphs (31,000 words) and the Avalon page about 40,000 words, and the notebooks'
slow parts grow with them. This writes full-size stand-ins of every corpus (and the lab documents)
to a temporary folder, runs each solution notebook on them with nbclient, and prints the wall
time against the 30 s target, with the figures some notebooks measure themselves. A report: it
prints, it never fails on a time.

    .venv/bin/python benchmarks/bench_notebooks.py [LAB ...]
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from autograder.labs import all_labs  # noqa: E402
from bpe_labs.standins import write_all  # noqa: E402

TARGET_SECONDS = 30.0

# Figures a notebook prints about itself: (cell id, pattern, how to report the match).
SELF_REPORTED = {
    "ny_constitution": [
        ("page_vocab", r"reached (\d+) tokens in ([\d.]+) s", "build_vocab to {0} tokens: {1} s"),
        ("naive_timing", r"take about (\d+) s",
         "direct loop to 256 tokens, estimated from its first steps: about {0} s"),
    ],
}


def cell_output(notebook: nbformat.NotebookNode, cell_id: str) -> str:
    cell = next((cell for cell in notebook.cells if cell.get("id") == cell_id), None)
    return "" if cell is None else "".join(o.get("text", "") for o in cell.outputs
                                           if o.output_type == "stream")


def run(lab, data_dir: Path) -> tuple[float, nbformat.NotebookNode]:
    notebook = nbformat.read(lab.solution_path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(data_dir)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start, notebook


def main(lab_ids: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        data_dir = Path(folder)
        write_all(data_dir, full_size=True)
        shutil.copytree(REPO / "data" / "documents", data_dir / "documents")
        # The kernels inherit this environment: how they find the data and the reference code.
        os.environ.update(BPE_LABS_DATA=str(data_dir), MPLBACKEND="Agg",
                          PYTHONPATH=os.pathsep.join(filter(None,
                                                            [str(REPO),
                                                             os.environ.get("PYTHONPATH")])))
        print(f"{'lab':<18} {'seconds':>8}  target {TARGET_SECONDS:.0f} s")
        for lab in all_labs().values():
            if lab_ids and lab.lab_id not in lab_ids:
                continue
            seconds, executed = run(lab, data_dir)
            print(f"{lab.lab_id:<18} {seconds:8.1f}  "
                  f"{'within' if seconds < TARGET_SECONDS else 'OVER'}")
            for cell_id, pattern, template in SELF_REPORTED.get(lab.lab_id, []):
                found = re.search(pattern, cell_output(executed, cell_id))
                if found:
                    print(f"{'':<18} {template.format(*found.groups())}")


if __name__ == "__main__":
    main(sys.argv[1:])
