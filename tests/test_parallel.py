"""Parallel and distributed grading give exactly the scores of grading one notebook at a time."""
import shutil

import pytest

from bpe_labs import ROOT as REPO_ROOT
from autograder.batch.run import grade_folder


@pytest.fixture(scope="module")
def toy_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy-submissions")
    for path in (REPO_ROOT / "examples" / "submissions").glob("toy-*.ipynb"):
        shutil.copy(path, folder / path.name)
    return folder


def scores(results):
    return {
        r.student_id: (r.status, r.score, {p: v.score for p, v in r.parts.items()}) for r in results
    }


def test_workers_and_dask_cluster_give_the_sequential_scores(toy_folder, tmp_path):
    from distributed import LocalCluster
    from distributed.security import Security

    sequential = scores(grade_folder(toy_folder, tmp_path / "seq", workers=1, progress=False))
    assert len(sequential) == len(list(toy_folder.glob("*.ipynb"))) >= 6
    parallel = scores(grade_folder(toy_folder, tmp_path / "par", workers=2, progress=False))
    assert parallel == sequential
    security = Security.temporary()  # TLS with client certificates: the one way to a scheduler
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, protocol="tls://",
                      security=security) as cluster:
        distributed = scores(
            grade_folder(
                toy_folder,
                tmp_path / "dask",
                scheduler=cluster.scheduler_address,
                security=security,
                progress=False,
            )
        )
    assert distributed == sequential


def test_a_second_run_reuses_every_result(toy_folder, tmp_path):
    first = grade_folder(toy_folder, tmp_path / "out", workers=2, progress=False)
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "results").glob("*.json")}
    second = grade_folder(toy_folder, tmp_path / "out", workers=2, progress=False)
    assert scores(second) == scores(first)
    assert {
        p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "results").glob("*.json")
    } == stamps
