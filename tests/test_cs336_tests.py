"""Stanford CS336's own tokenizer tests (assignment 1's ``test_tokenizer.py`` and
``test_train_bpe.py``, MIT), run unchanged on lab 7's solution notebook: the claim that the lab
follows "CS336's contract", checked.

CS336's files are read from ``../shared/cs336-assignment1`` (read-only, beside the checkout; or
``$CS336_ASSIGNMENT1``) and copied at test time into a temporary package, with the project's adapter
(``tests/cs336_adapter/``: ``run_train_bpe`` and ``get_tokenizer`` taken from the notebook,
tiktoken's ``gpt2`` without the download). Nothing of CS336's is kept in the project. One fixture is
not in the published snapshot, ``tinystories_sample_5M.txt`` (the two memory tests read it): its
stand-in here is CS336's ``tinystories_sample.txt`` repeated to 1.1 MB, more than the 1 MB the test
allows ``encode_iterable``, so a tokenizer that reads it whole still fails.

``test_train_bpe_speed`` has CS336's wall-clock limit, 1.5 s; the lab's solution takes about a tenth
of it (``benchmarks/bench_train_bpe.py``), so the test passes with both cores busy. Beyond that a
wall-clock limit measures the machine's load, not the code (at a load of 30 on 2 cores it took 2.6
s): the run of CS336's files gets a higher CPU priority where the system allows it (as root, in CI),
so that it measures the code.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from bpe_labs import ROOT

SHARED = Path(os.environ.get("CS336_ASSIGNMENT1") or ROOT.parent / "shared" / "cs336-assignment1")
TEST_FILES = ("test_tokenizer.py", "test_train_bpe.py")
ADAPTER = Path(__file__).parent / "cs336_adapter"
MISSING_FIXTURE = "tinystories_sample_5M.txt"
STAND_IN_BYTES = 1_100_000
# CS336 marks test_encode_memory_usage xfail: encode (not encode_iterable) is not expected to fit in
# 1 MB.
EXPECTED_TO_FAIL = {"test_encode_memory_usage"}
EXPECTED_COUNT = 25  # 24 to pass, 1 expected to fail


def cs336_package(folder: Path) -> Path:
    """CS336's two test files, their ``common.py`` and fixtures
    (linked), and the project's adapter, as one package."""
    package = folder / "cs336_tests"
    fixtures = package / "fixtures"
    fixtures.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in (*TEST_FILES, "common.py"):
        shutil.copyfile(SHARED / "tests" / name, package / name)
    for fixture in (SHARED / "tests" / "fixtures").iterdir():
        (fixtures / fixture.name).symlink_to(fixture)
    story = (SHARED / "tests" / "fixtures" / "tinystories_sample.txt").read_text(encoding="utf-8")
    (fixtures / MISSING_FIXTURE).write_text(
        story * (STAND_IN_BYTES // len(story.encode("utf-8")) + 1), encoding="utf-8"
    )
    for name in ("adapters.py", "conftest.py"):
        shutil.copyfile(ADAPTER / name, package / name)
    return package


def _higher_priority() -> None:
    """In the child: a CPU priority above the other
    processes' (nice -10) where allowed; else as it is."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    except OSError:
        pass


def outcomes(junit_xml: Path) -> dict[str, str]:
    """Each test's outcome in a JUnit report: passed, failed, error, skipped or xfailed."""
    found = {}
    for case in ElementTree.parse(junit_xml).iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
        found[case.get("name")] = outcome
    return found


@pytest.mark.skipif(not all((SHARED / "tests" / name).is_file() for name in TEST_FILES),
                    reason=f"CS336's tests are not at {SHARED}: they are read from "
                    "../shared/cs336-assignment1 "
                           "(or $CS336_ASSIGNMENT1), never kept in the project")
def test_cs336s_own_tokenizer_tests_pass_on_lab_7s_solution(tmp_path):
    package = cs336_package(tmp_path)
    report = tmp_path / "report.xml"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q",
         "--rootdir", str(tmp_path), f"--junitxml={report}", str(package)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, preexec_fn=_higher_priority,
        env={**os.environ, "BPE_LABS_NOTEBOOK": str(ROOT / "solutions" / "bpe_tokenizer.ipynb")},
    )
    found = outcomes(report)
    wrong = {name: outcome for name, outcome in found.items()
             if outcome != ("xfailed" if name in EXPECTED_TO_FAIL else "passed")}
    assert len(found) == EXPECTED_COUNT and not wrong, (
        f"{wrong or found}\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
    )
