"""The labs of the course, discovered from its solution notebooks' metadata.

A lab is one nbgrader source notebook ``<course solutions>/<lab_id>.ipynb`` whose notebook metadata
says ``{<course metadata key>: {"lab": <lab_id>, "title": ..., "order": ...}}``. Everything the
grader needs to know about a lab (its parts, their points, the hidden tests) is read from there, so
the solution notebook stays the single source.
"""
from __future__ import annotations

import ast
import builtins
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.course import current

HIDDEN_TESTS = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS[ \t]*\n(.*?)^[ \t]*### END HIDDEN TESTS[ \t]*$", re.M | re.S
)


@dataclass(frozen=True)
class Upstream:
    """An answer function of an earlier part that a part's code may rely on, and its reference."""

    name: str
    part_id: str
    reference: str  # "module:function", run in the grader when the student's version fails


@dataclass(frozen=True)
class Part:
    """One graded part: a graded test cell of the solution notebook."""

    part_id: str
    points: float
    hidden_tests: str
    functions: tuple[str, ...] = ()  # the answer functions its hidden tests call
    upstream: tuple[Upstream, ...] = ()  # answer functions of earlier parts, with a reference


def free_names(source: str) -> list[str]:
    """Names a cell reads but never binds, builtins excluded, in order of first use.

    ``"x = f(y)\\nprint(x)" -> ["f", "y"]``
    """
    tree = ast.parse(source)
    bound, used = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                used.append(node.id)
            else:
                bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return list(
        dict.fromkeys(name for name in used if name not in bound and not hasattr(builtins, name))
    )


def answer_functions(cells) -> list[str]:
    """The functions the student writes: top-level ``def``s of the solution cells, in order."""
    names = []
    for cell in cells:
        if cell.cell_type == "code" and nbgrader_meta(cell).get("solution"):
            source = "\n".join(
                line for line in cell.source.splitlines() if not line.lstrip().startswith("%")
            )
            names += [
                node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)
            ]
    return names


@dataclass(frozen=True)
class Lab:
    lab_id: str
    title: str
    order: int
    solution_path: Path
    parts: tuple[Part, ...] = field(default_factory=tuple)

    @property
    def student_path(self) -> Path:
        return current().notebooks / f"{self.lab_id}.ipynb"

    @property
    def max_score(self) -> float:
        return sum(part.points for part in self.parts)

    def solution_notebook(self) -> nbformat.NotebookNode:
        return nbformat.read(self.solution_path, as_version=4)

    def release_notebook(self) -> nbformat.NotebookNode:
        return nbformat.read(self.student_path, as_version=4)


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def read_lab(path: Path) -> Lab:
    nb = nbformat.read(path, as_version=4)
    key = current().metadata_key
    meta = nb.metadata.get(key)
    if not meta or "lab" not in meta:
        raise ValueError(f"{path} has no {key!r} notebook metadata naming its lab")
    references = meta.get("references", {})
    # function -> earlier answer functions that could do its whole job (learn_bpe for
    # learn_bpe_fast): never stood in for while it is graded, or a student could blank one to have
    # the reference do
    # it.
    alternatives = meta.get("alternatives", {})
    answers = answer_functions(nb.cells)
    parts: list[Part] = []
    owner: dict[str, str] = {}
    for cell in nb.cells:
        info = nbgrader_meta(cell)
        if info.get("grade") and cell.cell_type == "code":
            match = HIDDEN_TESTS.search(cell.source)
            hidden = match.group(1) if match else ""
            functions = tuple(name for name in free_names(hidden) if name in answers)
            # Every answer function an earlier part tests may be a helper of this part's code.
            excluded = {name for function in functions for name in alternatives.get(function, ())}
            upstream = tuple(
                Upstream(name, owner[name], references[name])
                for name in answers
                if name in owner
                and name not in functions
                and name in references
                and name not in excluded
            )
            for name in functions:
                owner.setdefault(name, info["grade_id"])
            parts.append(
                Part(
                    info["grade_id"],
                    float(info.get("points", 0)),
                    hidden,
                    functions,
                    upstream,
                )
            )
    return Lab(
        meta["lab"], meta.get("title", meta["lab"]), int(meta.get("order", 99)), path, tuple(parts)
    )


def all_labs(solutions_dir: Path | None = None) -> dict[str, Lab]:
    """Every lab in ``solutions_dir`` (default: the course's solutions), in course order."""
    return _labs_in(Path(solutions_dir or current().solutions))


@functools.lru_cache(maxsize=None)
def _labs_in(solutions_dir: Path) -> dict[str, Lab]:
    labs = [read_lab(path) for path in sorted(solutions_dir.glob("*.ipynb"))]
    return {lab.lab_id: lab for lab in sorted(labs, key=lambda lab: (lab.order, lab.lab_id))}


def get_lab(lab_id: str) -> Lab:
    try:
        return all_labs()[lab_id]
    except KeyError:
        raise KeyError(f"no lab {lab_id!r}; known labs: {', '.join(all_labs())}") from None


@functools.lru_cache(maxsize=None)
def release_cells(lab_id: str) -> tuple:
    """The cells of the released student notebook, read once per process."""
    return tuple(get_lab(lab_id).release_notebook().cells)
