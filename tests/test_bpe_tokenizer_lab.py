"""Lab 7 (bpe_tokenizer) as a whole.

* Its contract table (docs/BPE_TOKENIZER.md, "Contract") names real code: for each rule a task states, the
  visible example is in the released notebook and the hidden test in that part's hidden tests.
* Its notebook, alone in a folder as in Colab, finds GPT-2's two files where a student keeps them and compares
  the student's Tokenizer with tiktoken's gpt2 encoding built from them, id for id. The files here are in
  GPT-2's format but made from merges the course trains on its own documents: GPT-2's are OpenAI's.
"""
import re
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.labs import get_lab
from bpe_labs import ROOT as REPO_ROOT
from bpe_labs.examples import make_submission
from bpe_labs.reference import bpe_tokenizer as ref

LAB = "bpe_tokenizer"
UNESCAPED_BAR = re.compile(r"(?<!\\)\|")
CODE_SPAN = re.compile(r"`([^`]+)`")


def contract_rows() -> list[tuple[str, str, str, str]]:
    """(part, rule, visible fragment, hidden fragment) of each row of the contract table."""
    text = (REPO_ROOT / "docs" / "BPE_TOKENIZER.md").read_text(encoding="utf-8")
    table = text.split("\n## Contract\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        if not line.startswith("| ") or line.startswith("| part "):
            continue
        part, rule, visible, hidden = [cell.strip() for cell in UNESCAPED_BAR.split(line.strip()[1:-1])]
        first = [CODE_SPAN.search(cell).group(1).replace("\\|", "|") for cell in (visible, hidden)]
        rows.append((part, rule, *first))
    return rows


ROWS = contract_rows()


def test_every_part_has_rules_in_the_contract_table():
    assert {part.part_id for part in get_lab(LAB).parts} == {row[0] for row in ROWS}
    assert len(ROWS) >= 30


@pytest.mark.parametrize("part_id, rule, visible, hidden", ROWS, ids=[f"{row[0]}: {row[1][:40]}" for row in ROWS])
def test_each_rule_has_its_visible_example_and_its_hidden_test(part_id, rule, visible, hidden):
    released = "\n".join(cell.source for cell in get_lab(LAB).release_notebook().cells if cell.cell_type == "code")
    part = next(part for part in get_lab(LAB).parts if part.part_id == part_id)
    assert visible in released, f"the visible example of {rule!r} is not in the released notebook"
    assert hidden in part.hidden_tests, f"the hidden test of {rule!r} is not in part {part_id}'s hidden tests"


def test_the_notebook_compares_with_tiktoken_on_gpt2_s_files_where_a_student_keeps_them(tmp_path, monkeypatch):
    documents = "".join(path.read_text(encoding="utf-8") for path in sorted((REPO_ROOT / "data" / "documents").glob("*.md")))
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
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    shown = "".join(output.get("text", "") for output in next(cell for cell in nb.cells if cell.get("id") == "gpt2_files").outputs)
    assert f"{len(vocab):,} tokens, {len(merges):,} merges" in shown
    assert shown.count("✅ same") == 4 and "❌" not in shown, shown
