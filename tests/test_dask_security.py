"""Grading on a Dask cluster over TLS with client certificates; no unauthenticated remote scheduler."""
from __future__ import annotations

import pytest

from adversarial import correct_notebook, dump
from autograder.batch import InsecureScheduler, dask_security, grade_folder
from autograder.cli import main


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "amy_toy_bpe.ipynb").write_bytes(dump(correct_notebook()))
    (tmp_path / "sub" / "ben_toy_bpe.ipynb").write_bytes(b"")
    return tmp_path / "sub"


def test_grading_on_a_tls_cluster_that_requires_certificates(folder, tmp_path):
    from distributed import Client, LocalCluster
    from distributed.security import Security

    security = Security.temporary()  # a CA and a certificate of its own, for scheduler, workers and this client
    assert security.require_encryption
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, protocol="tls://", security=security,
                      dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://")
        results = {r.student_id: r for r in grade_folder(folder, tmp_path / "out", scheduler=address,
                                                             security=dask_security(address, security=security),
                                                             progress=False)}
        with pytest.raises(Exception):  # no certificate, no connection
            Client(address, timeout=5)
    assert results["amy"].status == "graded" and results["amy"].score == 11.0
    assert results["ben"].status == "empty_file"


@pytest.mark.parametrize("address", ["tcp://192.0.2.10:8786", "tcp://grader.example.edu:8786", "192.0.2.10:8786"])
def test_an_unauthenticated_remote_scheduler_is_refused(address):
    with pytest.raises(InsecureScheduler, match="--insecure"):
        dask_security(address)
    assert dask_security(address, insecure=True) is None


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "tcp://localhost:8786", "tcp://[::1]:8786"])
def test_a_scheduler_on_this_machine_needs_no_certificate(address):
    assert dask_security(address) is None


def test_certificates_need_a_tls_address():
    from distributed.security import Security

    with pytest.raises(InsecureScheduler, match="not tls://"):
        dask_security("tcp://192.0.2.10:8786", security=Security.temporary())


def test_the_grade_command_refuses_before_connecting(folder, tmp_path, capsys):
    assert main(["grade", str(folder), "--out", str(tmp_path / "out"), "--scheduler", "tcp://192.0.2.10:8786", "--quiet"]) == 2
    assert "refusing" in capsys.readouterr().err
    assert not (tmp_path / "out").exists(), "nothing was started"
