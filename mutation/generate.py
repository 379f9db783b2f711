"""The mutants of one solution cell: each operator applied at each
place of its functions' code, one at a time, named by what it changes
(not by line number, so that a name survives edits elsewhere)."""
from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from mutmut.mutation.file_mutation import NEVER_MUTATE_FUNCTION_CALLS, deep_replace

from mutation.operators import OPERATORS, _is_docstring


@dataclass(frozen=True)
class Mutant:
    mutant_id: str  # a hash of cell, function, operator and the change
    cell: str  # the solution cell's grade_id
    function: str  # the top-level function (or class) the change is in
    operator: str
    line: int  # in the answer code (the solution cell without nbgrader's markers)
    before: str  # the changed lines, as they were
    after: str  # and as the mutant has them
    source: str  # the whole mutated answer code


class _Places(cst.CSTVisitor):
    """Every (node, function) a mutation may change: code inside a function's body, never its
    annotations, decorators, docstrings or default values (mutmut's rules)."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        self.places: list[tuple[cst.CSTNode, str, int]] = []
        self._functions: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Annotation, cst.Decorator)):
            return False
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value in NEVER_MUTATE_FUNCTION_CALLS
        ):
            return False
        if isinstance(node, cst.Param) and node.default is not None:
            return False
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self._functions.append(node.name.value)
            return True
        if isinstance(node, cst.SimpleStatementLine) and _is_docstring(node):
            return False
        if self._functions:
            self.places.append(
                (node, self._functions[0], self.get_metadata(PositionProvider, node).start.line)
            )
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, (cst.FunctionDef, cst.ClassDef)):
            self._functions.pop()


def _changed_lines(old: str, new: str) -> tuple[int, str, str]:
    """The first changed line (1-based) and the lines that differ, before and after."""
    a, b = old.splitlines(), new.splitlines()
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    return start + 1, "\n".join(a[start:end_a]), "\n".join(b[start:end_b])


def mutants_of(answer_code: str, cell: str) -> list[Mutant]:
    """Every mutant of a solution cell's answer code,
    in the order of its code, duplicates left out."""
    module = cst.parse_module(answer_code)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    places = _Places()
    wrapper.visit(places)
    mutants: list[Mutant] = []
    seen = {answer_code}
    names: dict[str, int] = {}
    for node, function, line in places.places:
        for node_type, operator, mutate in OPERATORS:
            if not isinstance(node, node_type):
                continue
            for mutated_node in mutate(node):
                source = deep_replace(module, node, mutated_node).code
                if source in seen:
                    continue
                seen.add(source)
                try:
                    ast.parse(source)
                except SyntaxError:
                    continue
                first, before, after = _changed_lines(answer_code, source)
                key = "\n".join([cell, function, operator, _squeeze(before), _squeeze(after)])
                # the same change twice in one function: numbered
                names[key] = names.get(key, 0) + 1
                digest = hashlib.sha1(f"{key}\n{names[key]}".encode()).hexdigest()[:10]
                mutants.append(
                    Mutant(digest, cell, function, operator, first or line, before, after, source)
                )
    return mutants


def _squeeze(lines: str) -> str:
    return "\n".join(line.strip() for line in lines.splitlines())
