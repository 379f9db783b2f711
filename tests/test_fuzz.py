"""Whatever a student hands in, the grader survives it: every file gets exactly one row.

Generated and mutated notebooks (hypothesis) and hand-made extremes (50,000-deep nesting, a huge
string, invalid UTF-8, giant outputs, thousands of cells, wrong types everywhere) go through the
steps without a kernel many times, and through the whole batch (kernels, gradebook, reports) once.
"""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from adversarial import correct_notebook
from autograder.batch.run import grade_folder, plan, write_reports
from autograder.grading.grade import Settings
from autograder.grading.intake import read_submission
from autograder.kernel.session import Limits
from autograder.labs import get_lab
from autograder.grading.repair import repair
from autograder.grading.result import GradeResult

SETTINGS = Settings(limits=Limits(cell_seconds=3, call_seconds=2, notebook_seconds=60,
                                  memory_bytes=int(1.5 * 1024**3)), part_seconds=20)
STATUSES = {"graded", "empty_file", "invalid_json", "not_a_notebook", "unknown_lab",
            "file_too_large", "duplicate", "grader_error", "worker_lost"}


def correct_dict() -> dict:
    return json.loads(json.dumps(correct_notebook()))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=5), max_leaves=15)


def _paths(value, prefix=()):
    """Every place in a JSON document, as a path of keys and indices."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:40]):
            yield from _paths(item, prefix + (index,))


NEST = "@nested@"


@st.composite
def mutants(draw) -> bytes:
    """The correct submission with one to three things done to it, as bytes."""
    data = correct_dict()
    for _ in range(draw(st.integers(1, 3))):
        places = [path for path in _paths(data) if path]
        place = draw(st.sampled_from(places))
        parent = data
        for key in place[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "delete", "nest", "grow", "type"]))
        if action == "replace":
            parent[place[-1]] = draw(json_values)
        elif action == "delete" and isinstance(parent, dict):
            del parent[place[-1]]
        # written into the text below: too deep for Python's own json to build
        elif action == "nest":
            parent[place[-1]] = NEST
        elif action == "grow":
            parent[place[-1]] = "x" * draw(st.sampled_from([10, 10_000, 2_000_000]))
        elif action == "type":
            parent[place[-1]] = draw(st.sampled_from([None, 0, 1.5, [], {}, "", True]))
    depth = draw(st.sampled_from([100, 3000, 50_000]))
    raw = json.dumps(data).replace(json.dumps(NEST), "[" * depth + "]" * depth).encode()
    cut = draw(st.sampled_from([None, "truncate", "invalid-utf8"]))
    if cut == "truncate":
        raw = raw[: draw(st.integers(0, len(raw)))]
    elif cut == "invalid-utf8":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + b"\xff\xfe\xc3(" + raw[at:]
    return raw


def extremes() -> dict[str, bytes]:
    """Hand-made files that broke or nearly broke the grader."""
    nb = correct_dict()
    files = {}
    deep = copy.deepcopy(nb)
    deep["metadata"]["x"] = "@"
    files["deep-50000.ipynb"] = (
        json.dumps(deep).replace('"@"', "[" * 50_000 + "]" * 50_000).encode()
    )
    nested = copy.deepcopy(nb)
    nested["cells"][0]["metadata"]["x"] = "@"
    files["deep-900-in-cell.ipynb"] = (
        json.dumps(nested).replace('"@"', "[" * 900 + "]" * 900).encode()
    )
    huge = copy.deepcopy(nb)
    huge["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "ü" * 20_000_000})
    files["huge-string.ipynb"] = json.dumps(huge, ensure_ascii=False).encode()  # 40 MB
    outputs = copy.deepcopy(nb)
    code = next(cell for cell in outputs["cells"] if cell["cell_type"] == "code")
    code["outputs"] = [
        {"output_type": "stream", "name": "stdout", "text": "0123456789" * 3_000_000}
    ] * 3
    files["giant-outputs.ipynb"] = json.dumps(outputs).encode()
    many = copy.deepcopy(nb)
    many["cells"] += [{"cell_type": "markdown", "metadata": {}, "source": f"note {i}"}
                      for i in range(5000)]
    files["thousands-of-cells.ipynb"] = json.dumps(many).encode()
    wrong = copy.deepcopy(nb)
    wrong["cells"] = [
        42, "cell", None, {"cell_type": 7},
        {"cell_type": "code", "source": {"a": 1}, "outputs": "no"},
    ] + wrong["cells"]
    wrong["metadata"] = ["not", "a", "dict"]
    files["wrong-types.ipynb"] = json.dumps(wrong).encode()
    files["invalid-utf8.ipynb"] = json.dumps(nb).encode().replace(b"Betty", b"B\xffe\xc3(tty", 1)
    files["cells-not-a-list.ipynb"] = json.dumps({**nb, "cells": {"0": nb["cells"][0]}}).encode()
    files["...ipynb"] = json.dumps(nb).encode()  # a file name whose student id would be ".."
    files["correct.ipynb"] = json.dumps(nb).encode()
    return files


@settings(max_examples=int(os.environ.get("BPE_LABS_FUZZ_EXAMPLES", 60)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutants())
def test_every_step_without_a_kernel_survives_a_mutated_notebook(tmp_path_factory, raw):
    folder = tmp_path_factory.mktemp("mutant")
    (folder / "sub").mkdir()
    path = folder / "sub" / "ann_toy_bpe.ipynb"
    path.write_bytes(raw)
    jobs, rows, _ = plan(folder / "sub")
    assert len(jobs) + len(rows) == 1
    sub = read_submission(path, "ann")
    assert sub.status in {"ok", "empty_file", "invalid_json", "not_a_notebook", "unknown_lab"}
    integrity = repair(sub.notebook, get_lab(sub.lab_id)).integrity if sub.status == "ok" else []
    result = GradeResult("ann", str(path), lab=sub.lab_id, status=sub.status, message=sub.message,
                         integrity=list(integrity))
    write_reports([result], folder / "out")
    assert len(pd.read_csv(folder / "out" / "grades.csv")) == 1


@pytest.mark.parametrize("name", sorted(extremes()))
def test_every_step_without_a_kernel_survives_an_extreme_file(tmp_path, name):
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / name
    path.write_bytes(extremes()[name])
    jobs, rows, _ = plan(tmp_path / "sub")
    assert len(jobs) + len(rows) == 1
    sub = read_submission(path, "x")
    if sub.status == "ok":
        repair(sub.notebook, get_lab(sub.lab_id))


@settings(max_examples=1, deadline=None, phases=[Phase.generate],  # a batch is too slow to shrink
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(st.lists(mutants(), min_size=4, max_size=4))
def test_a_whole_batch_of_extremes_and_mutants_gives_one_row_per_file(tmp_path, generated):
    """Kernels, workers, gradebook and reports: each file its own row, the correct one in full."""
    folder = tmp_path / "sub"
    folder.mkdir(exist_ok=True)
    files = extremes()
    files.update({f"mutant-{i}.ipynb": raw for i, raw in enumerate(generated)})
    for name, raw in files.items():
        (folder / name).write_bytes(raw)
    results = grade_folder(folder, tmp_path / "out", SETTINGS, workers=2, progress=False)
    assert sorted(Path(r.file).name for r in results) == sorted(files)
    table = pd.read_csv(tmp_path / "out" / "grades.csv")
    assert sorted(Path(f).name for f in table["file"]) == sorted(files)
    assert set(table["status"]) <= STATUSES
    by_name = {Path(r.file).name: r for r in results}
    assert by_name["correct.ipynb"].score == get_lab("toy_bpe").max_score
    assert by_name["deep-50000.ipynb"].status == "not_a_notebook"
    assert (tmp_path / "out" / "class_report.md").exists()
    for result in results:
        assert (tmp_path / "out" / "feedback").resolve() in report_path(
            tmp_path / "out", result
        ).resolve().parents


def report_path(out, result):
    from autograder.reports import report

    return report.feedback_path(out, result)
