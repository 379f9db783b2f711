"""CS336's adapters (assignment 1's ``tests/adapters.py``, which CS336 leaves to each student),
pointed at lab 7's solution notebook: ``run_train_bpe`` is the notebook's ``train_bpe``,
``get_tokenizer`` its ``Tokenizer``. ``tests/test_cs336_tests.py`` copies this file beside CS336's
own test files, unchanged, in a temporary package, and runs them.

The notebook's definitions are taken from its code cells, in order: imports, functions, classes (the
``@add_to_class`` methods join the ``Tokenizer``) and UPPER_CASE constants; the checks with their
hidden tests, the demonstrations and Colab's installs are left out.
"""
from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

NOTEBOOK = "bpe_tokenizer.ipynb"
KEPT = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)


def solution_notebook() -> Path:
    """Lab 7's solution notebook: ``$BPE_LABS_NOTEBOOK``,
    else the course's ``solutions/`` folder."""
    if os.environ.get("BPE_LABS_NOTEBOOK"):
        return Path(os.environ["BPE_LABS_NOTEBOOK"])
    from bpe_labs import ROOT

    return ROOT / "solutions" / NOTEBOOK


def _definitions(source: str) -> list[ast.stmt]:
    """A cell's imports, functions, classes and UPPER_CASE
    constants (its magics made plain Python first)."""
    from IPython.core.inputtransformer2 import TransformerManager

    kept = []
    for statement in ast.parse(TransformerManager().transform_cell(source)).body:
        constant = isinstance(statement, ast.Assign) and all(
            isinstance(target, ast.Name) and target.id.isupper() for target in statement.targets)
        if isinstance(statement, KEPT) or constant:
            kept.append(statement)
    return kept


@functools.lru_cache(maxsize=None)
def notebook_namespace(path: str | None = None) -> dict:
    """The definitions of the notebook's code cells, run in
    order in one namespace (graded cells left out)."""
    import nbformat

    notebook = nbformat.read(path or solution_notebook(), as_version=4)
    namespace: dict = {"__name__": "lab7_solution"}
    for cell in notebook.cells:
        if cell.cell_type != "code" or cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        module = ast.Module(body=_definitions(cell.source), type_ignores=[])
        exec(compile(module, f"<{NOTEBOOK}: {cell.get('id', '?')}>", "exec"), namespace)
    return namespace


def run_train_bpe(input_path: str | os.PathLike, vocab_size: int, special_tokens: list[str],
                  **kwargs):
    """CS336's ``run_train_bpe``: the notebook's
    ``train_bpe(input_path, vocab_size, special_tokens)``."""
    return notebook_namespace()["train_bpe"](str(input_path), vocab_size, list(special_tokens))


def get_tokenizer(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]],
                  special_tokens: list[str] | None = None):
    """CS336's ``get_tokenizer``: the notebook's ``Tokenizer(vocab, merges, special_tokens)``."""
    return notebook_namespace()["Tokenizer"](vocab, merges, special_tokens)
