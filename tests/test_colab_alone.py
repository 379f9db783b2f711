"""A student notebook with its answers filled in runs alone, as Colab has it: copied into an empty
folder, no repository around it, no PYTHONPATH; only the corpus files a student would download."""
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from bpe_labs import ROOT as REPO_ROOT
from bpe_labs.examples import load_cases, make_submission
from autograder.labs import all_labs

CORRECT = {case["lab"]: case for case in load_cases() if case.get("fill") == "solution"
           and not case.get("replace")}


@pytest.mark.parametrize("lab_id", list(all_labs()))
def test_filled_student_notebook_runs_alone(lab_id, tmp_path, monkeypatch):
    folder = tmp_path / "colab"
    folder.mkdir()
    downloads = tmp_path / "downloads"
    shutil.copytree(REPO_ROOT / "data" / "standins", downloads)
    shutil.copytree(REPO_ROOT / "data" / "documents", downloads / "documents")
    nb = make_submission(CORRECT[lab_id])
    nbformat.write(nb, folder / f"{lab_id}.ipynb")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("BPE_LABS_DATA", str(downloads))
    nb = nbformat.read(folder / f"{lab_id}.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    outputs = "".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                      for o in cell.outputs)
    assert "❌" not in outputs
    checks = [cell for cell in nb.cells if cell.metadata.get("nbgrader", {}).get("grade")]
    assert checks and all("✅" in "".join(o.get("text", "") for o in cell.outputs)
                          for cell in checks)


def test_corpus_prep_runs_alone_without_any_download(tmp_path, monkeypatch):
    """Opened alone in Colab, with no data folder and no
    network, corpus_prep uses the documents it carries."""
    folder = tmp_path / "colab"
    folder.mkdir()
    nb = make_submission(CORRECT["corpus_prep"])
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("BPE_LABS_DATA", str(tmp_path / "nothing-here"))
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    outputs = "".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                      for o in cell.outputs)
    assert "Loaded 10 documents from this notebook's own copy" in outputs
    assert "❌" not in outputs
