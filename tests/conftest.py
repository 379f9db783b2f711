import pytest
from hypothesis import settings

from bpe_labs import ROOT as REPO_ROOT
from autograder.batch.run import grade_folder
from bpe_labs.examples import load_cases

# No per-example deadline: on a loaded 2-core CI machine one scheduling stall of a quarter second
# would fail an example that is correct (DeadlineExceeded, or "Flaky" when its replay is quick).
settings.register_profile("bpe-labs", deadline=None)
settings.load_profile("bpe-labs")


@pytest.fixture(scope="session")
def graded_examples(tmp_path_factory):
    """Every bundled example submission graded once through the real autograder (2 workers)."""
    out = tmp_path_factory.mktemp("graded-examples")
    results = grade_folder(REPO_ROOT / "examples" / "submissions", out, workers=2, progress=False)
    return out, {result.student_id: result for result in results}


@pytest.fixture(scope="session")
def example_cases():
    return {case["id"]: case for case in load_cases()}
