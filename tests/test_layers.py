"""The structure drawn from the imports (read with ``ast``, every import, those inside functions
included): no module imports itself back through others (0 circles), and none imports a module of a
layer above its own (0 imports that run back up). docs/LAYOUT.md names every module.

The layers, lowest first. A module belongs to the layer of the longest name below that is the
module or a package holding it; a package (``__init__``) with no entry of its own takes the layer
of what it holds. Every module must have a layer: a new module is placed here when it is made.
A layer may import its own modules and those of the layers before it.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("autograder", "bpe_labs")
SKIPPED = ("autograder/service/migrations",)  # alembic's scripts, run by alembic alone

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # what every layer may use: the engine's words as enums (StrEnum on Python 3.10 too)
    ("words", ("autograder.strenum",)),
    # what the engine and a course give each other: the course, its interface, its labs
    (
        "course",
        (
            "autograder.course",
            "autograder.course_interface",
            "autograder.verdicts",
            "autograder.labs",
        ),
    ),
    # a student's notebook in a fresh, limited, isolated kernel the grader calls into
    (
        "kernel",
        (
            "autograder.kernel.session",
            "autograder.kernel.process",
            "autograder.kernel.calls",
            "autograder.kernel.workspace",
            "autograder.kernel.zygote",
            "autograder.kernel.boundary",
            "autograder.kernel.isolation",
            "autograder.kernel.sandbox_launcher",
            "autograder.kernel.codec",
            "autograder.kernel.limits",
            "autograder.kernel.errors",
            "autograder.kernel.tempdirs",
            "autograder.kernel.shapes",
            "autograder.kernel.probe",
        ),
    ),  # (restructure.py's: the isolation probe)
    # one file's grading: intake, repair, the checks, the hidden tests, the row
    (
        "grading",
        (
            "autograder.grading.grade",
            "autograder.grading.check",
            "autograder.grading.stand_ins",
            "autograder.grading.repair",
            "autograder.grading.intake",
            "autograder.grading.settings",
            "autograder.grading.folder",
            "autograder.grading.identity",
            "autograder.grading.names",
            "autograder.grading.result",
            # the class list: grade --roster reads it as much as the LMS export does
            "autograder.grading.roster",
        ),
    ),
    # the student notebooks as released, with the Submit cell
    (
        "release",
        (
            "autograder.release.student_notebooks",
            "autograder.release.submit_cells",
            "autograder.release.submit_helper",
        ),
    ),
    # what is made of the rows: reports, the gradebook, formgrader's changes
    (
        "reports",
        (
            "autograder.reports.report",
            "autograder.reports.gradebook",
            "autograder.reports.formgrader",
            "autograder.reports.adjustments",
            "autograder.reports.background",
        ),
    ),
    # many files: the batch, its workers and their deadline, the OUT folder's ledger
    (
        "batch",
        (
            "autograder.batch.run",
            "autograder.batch.workers",
            "autograder.batch.deadline",
            "autograder.batch.ledger",
            "autograder.batch.resume",
            "autograder.batch.guard",
            # what other branches add to the batch: Dask's grading and TLS, a zip unpacked
            "autograder.batch.dask_grading",
            "autograder.batch.dask_options",
            "autograder.batch.dask_tls",
            "autograder.batch.unpack",
        ),
    ),
    ("lms", ("autograder.lms",)),
    ("service", ("autograder.service",)),
    # the commands: the command line, Gradescope's runner
    ("commands", ("autograder.cli", "autograder.__main__", "autograder.gradescope")),
    ("the course package", ("bpe_labs",)),
]


# Circles that other branches' edits keep for now, each with what breaks it. restructure.py (run by
# the lead once every branch is merged) breaks the kernel's circle (the isolation probe's code moves
# out of kernel_boundary into a module of its own, which builds its kernel from the kernel's parts)
# and empties this list; the service's (pages.py reading app.FEEDBACK_POLICY) is broken by the
# ``auth`` branch, which moves the policies into pages.py.
KNOWN_CIRCLES: list[list[str]] = []


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if any(relative.as_posix().startswith(skipped) for skipped in SKIPPED):
                continue
            parts = list(relative.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that the module ``name`` imports (not its own packages)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            targets.add(base)
            targets |= {f"{base}.{alias.name}" for alias in node.names}
    found = set()
    for target in targets:
        parts = target.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        module = ".".join(parts)
        if parts and module != name and not name.startswith(module + "."):
            found.add(module)
    return found


def layer_of(module: str) -> int | None:
    best, where = -1, None
    for index, (_, names) in enumerate(LAYERS):
        for entry in names:
            if (module == entry or module.startswith(entry + ".")) and len(entry) > best:
                best, where = len(entry), index
    if where is None:  # a package: the lowest layer of what it holds
        held = [index for index, (_, names) in enumerate(LAYERS)
                for entry in names if entry.startswith(module + ".")]
        where = min(held) if held else None
    return where


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    assert [name for name in modules() if layer_of(name) is None] == []


def test_no_import_circles():
    assert [circle for circle in circles(graph()) if circle not in KNOWN_CIRCLES] == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_runs_back_up():
    upward = []
    for name, targets in graph().items():
        mine = layer_of(name)
        for target in targets:
            theirs = layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                upward.append(f"{name} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]})")
    assert sorted(upward) == []


def test_the_engine_imports_nothing_of_the_course():
    assert [f"{name} imports {target}" for name, targets in graph().items()
            if name.startswith("autograder") for target in targets
            if target.startswith("bpe_labs")] == []


def test_the_course_imports_only_the_engine_s_front():
    """docs/ENGINE.md: what a course may import of the engine."""
    front = {"autograder.course_interface", "autograder.course", "autograder.labs",
             "autograder.release.student_notebooks", "autograder.cli"}
    used = {target for name, targets in graph().items() if name.startswith("bpe_labs")
            for target in targets if target.startswith("autograder")}
    assert used - front == set()


def test_docs_layout_names_every_module():
    layout = (ROOT / "docs" / "LAYOUT.md").read_text(encoding="utf-8")
    missing = [path.relative_to(ROOT).as_posix() for path in modules().values()
               if path.name != "__init__.py" and path.relative_to(ROOT).as_posix() not in layout]
    assert missing == []
