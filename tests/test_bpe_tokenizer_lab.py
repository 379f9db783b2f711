"""Lab 7 (bpe_tokenizer) as a whole: its notebook, alone in a folder as in Colab, finds GPT-2's two
files where a student keeps them and compares the student's Tokenizer with tiktoken's gpt2 encoding
built from them, id for id. The files here are in GPT-2's format but made from merges the course
trains on its own documents: GPT-2's are OpenAI's. (Its contract, every rule with its check, hidden
test and mistake: docs/labs/bpe_tokenizer.md, tried by tests/test_contracts.py.)
"""
import shutil

import nbformat
from nbclient import NotebookClient

from bpe_labs import ROOT as REPO_ROOT
from bpe_labs.examples import make_submission
from bpe_labs.reference import bpe_tokenizer as ref

LAB = "bpe_tokenizer"


def test_the_notebook_compares_with_tiktoken_on_gpt2_s_files_where_a_student_keeps_them(
    tmp_path, monkeypatch
):
    documents = "".join(path.read_text(encoding="utf-8")
                        for path in sorted((REPO_ROOT / "data" / "documents").glob("*.md")))
    _, merges = ref.train_bpe_on_text(documents, 256 + 1 + 800, ["<|endoftext|>"])
    vocab = ref.gpt2_layout(merges, ["<|endoftext|>"])
    downloads = tmp_path / "downloads"
    shutil.copytree(REPO_ROOT / "data" / "standins", downloads)
    ref.write_gpt2_files(vocab, merges, downloads / "gpt2")
    folder = tmp_path / "colab"
    folder.mkdir()
    nb = make_submission({"lab": LAB, "id": "gpt2-files", "fill": "solution", "spec": "-"})
    nbformat.write(nb, folder / f"{LAB}.ipynb")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("BPE_LABS_DATA", str(downloads))
    nb = nbformat.read(folder / f"{LAB}.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    shown = "".join(
        output.get("text", "")
        for output in next(cell for cell in nb.cells if cell.get("id") == "gpt2_files").outputs
    )
    assert f"{len(vocab):,} tokens, {len(merges):,} merges" in shown
    assert shown.count("✅ same") == 4 and "❌" not in shown, shown
