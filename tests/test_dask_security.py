"""Grading on a real Dask cluster: a `dask scheduler` and `dask worker` processes over TLS with
client certificates on loopback (autograder/batch/dask_tls.py), one module-wide cluster.

From a red-team run on an unauthenticated loopback scheduler: a notebook graded on a worker forced
into the fence started a Dask client through ctypes system(), ran code as root on every worker,
read the solutions, replaced the grading function (two untouched notebooks went from 0 to 11) and
could stop the scheduler; `nobody` could do the same without a notebook. Now a scheduler is TLS
with client certificates or refused, a fence worker takes no file unless --allow-fence, and each
attack below earns nothing and leaves every other row as it was.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import nbformat
import pytest

from adversarial import cell_of, correct_notebook, dump, with_wrong_tokenize
from autograder.batch.run import InsecureScheduler, dask_security, grade_folder
from autograder.cli import main
from autograder.batch.dask_tls import LocalTLSCluster, make_certificates
from autograder.kernel.boundary import full_boundary
from bpe_labs import ROOT as REPO_ROOT
from test_gradescope_guard import python_open_to_others

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="runuser and kernels of their own uid need root"
)
BROKEN_COURSE = "import sys\nraise ImportError('the course is not installed on this worker')\n"


@pytest.fixture(scope="module")
def open_python():
    """A Python every user can run (this machine's own lies in root's closed home): the second
    local user's, and the fence worker's, whose kernels then get a uid of their own."""
    venv = python_open_to_others()
    if venv is None:
        pytest.skip("no Python here that another user could run")
    yield venv / "bin" / "python"
    shutil.rmtree(venv, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, open_python):
    """Three workers: one with the boundary, one forced into the fence (with a Python open to other
    users: its kernels get a uid of their own), one that cannot import the course."""
    broken = tmp_path_factory.mktemp("broken-course")
    (broken / "bpe_labs").mkdir()
    (broken / "bpe_labs" / "__init__.py").write_text(BROKEN_COURSE)
    fence = {"AUTOGRADER_ISOLATION": "fence", "PYTHONPATH": str(REPO_ROOT)}
    with LocalTLSCluster(3, worker_env=[{}, fence, {"PYTHONPATH": str(broken)}],
                         worker_python=[None, str(open_python), None]) as running:
        yield running


def notebooks(folder: Path, extra: dict[str, bytes] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "amy_toy_bpe.ipynb").write_bytes(dump(correct_notebook()))
    (folder / "ben_toy_bpe.ipynb").write_bytes(b"")
    (folder / "cal_toy_bpe.ipynb").write_bytes(dump(with_wrong_tokenize(correct_notebook())))
    for name, data in (extra or {}).items():
        (folder / name).write_bytes(data)
    return folder


def rows_of(folder: Path, out: Path, cluster, **options) -> dict:
    return {row.student_id: row for row in grade_folder(
        folder, out, scheduler=cluster.address, security=cluster.security, progress=False,
        **options)}


def scheduler_alive(cluster) -> bool:
    from distributed import Client

    if cluster.scheduler.poll() is not None:
        return False
    with Client(cluster.address, security=cluster.security, timeout=10) as client:
        return len(client.scheduler_info()["workers"]) == 3


# -- 1, 2: no scheduler without TLS and a client certificate --------------------------------------
@pytest.mark.parametrize(
    "address",
    [
        "tcp://127.0.0.1:8786",
        "tcp://localhost:8786",
        "127.0.0.1:8786",
        "tcp://[::1]:8786",
        "tcp://192.0.2.10:8786",
    ],
)
def test_a_scheduler_without_tls_is_refused_even_on_this_machine(address):
    with pytest.raises(InsecureScheduler, match="dask-certs"):
        dask_security(address)


def test_the_grade_command_refuses_a_loopback_tcp_scheduler_in_one_line(tmp_path, capsys):
    folder = notebooks(tmp_path / "sub")
    code = main(["grade", str(folder), "--out", str(tmp_path / "out"), "--scheduler", "tcp://127.0.0.1:8786",
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "refusing the Dask scheduler tcp://127.0.0.1:8786" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists(), "nothing was started"


def test_dask_certs_makes_an_owner_only_folder(tmp_path, capsys):
    folder = tmp_path / "certs"
    assert main(["dask-certs", str(folder)]) == 0
    assert "--tls-dir" in capsys.readouterr().out
    assert folder.stat().st_mode & 0o777 == 0o700
    for path in folder.iterdir():
        assert path.stat().st_mode & 0o777 == 0o600, path
    assert {p.name for p in folder.iterdir()} >= {
        "ca.pem",
        "client.pem",
        "client-key.pem",
        "scheduler.pem",
        "scheduler-key.pem",
        "worker.pem",
        "worker-key.pem",
    }
    assert main(["dask-certs", str(folder)]) == 2  # never overwritten
    assert "already holds" in capsys.readouterr().err


# -- the cluster grades where it can, and says where it cannot (1, 3, 5) ---------------------------
@pytest.fixture(scope="module")
def clean(cluster, tmp_path_factory):
    """The three plain notebooks graded on the cluster (no --allow-fence), and what it said."""
    import contextlib
    import io

    folder = tmp_path_factory.mktemp("clean")
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        rows = rows_of(notebooks(folder / "sub"), folder / "out", cluster, worker_wait=60)
    return rows, said.getvalue()


def test_only_the_boundary_worker_grades_unless_the_fence_is_allowed(clean):
    rows, err = clean
    assert rows["amy"].status == "graded" and rows["amy"].score == 11.0
    assert rows["ben"].status == "empty_file"
    assert rows["cal"].status == "graded" and rows["cal"].score < 11.0
    assert all(full_boundary(row.isolation) for row in rows.values() if row.status == "graded"), \
        {s: r.isolation for s, r in rows.items()}
    # the fence worker and the worker without the course are out, each in one line
    assert "less than the boundary (fence+seccomp+uid" in err and "--allow-fence" in err, err
    assert "cannot be imported here" in err and "not installed on this worker" in err, err
    assert "worker_lost" not in {row.status for row in rows.values()}


# -- attacks from a notebook: connect, run code on a worker, read the solutions, stop the scheduler
ATTACK = '''
import ctypes, json, os, sys
_code = {code!r}
_libc = ctypes.CDLL(None)
_libc.system(("%s -c %s > /dev/null 2>&1"
              % (sys.executable, "'" + _code.replace("'", "'\\\\''") + "'")).encode())
'''

ATTACKER = textwrap.dedent('''
    import json, sys
    address, certs, solutions, mark = {address!r}, {certs!r}, {solutions!r}, {mark!r}
    said = {{}}

    def pwn():
        open(mark, "w").write("ran on a worker")
        return "ran"

    try:
        from distributed import Client
        from distributed.security import Security
    except Exception as error:
        said["import"] = repr(error)
    else:
        def stolen():
            return Security(tls_ca_file=certs + "/ca.pem", tls_client_cert=certs + "/client.pem",
                            tls_client_key=certs + "/client-key.pem", require_encryption=True)

        for name, where, security in [("tls without a certificate", address, None),
                                      ("plain tcp", address.replace("tls://", "tcp://"), None),
                                      ("a certificate of its own CA", address, Security.temporary),
                                      ("the grader's stolen certificate", address, stolen)]:
            try:
                client = Client(where, timeout=5, security=security() if security else None)
            except Exception as error:
                said[name] = type(error).__name__
                continue
            said[name] = "connected"
            said[name + ": run"] = str(client.run(pwn))
            client.shutdown()
    for path in [certs + "/client-key.pem", certs + "/worker-key.pem", solutions]:
        try:
            with open(path, "rb") as handle:
                said[path] = "read %d bytes" % len(handle.read())
        except Exception as error:
            said[path] = type(error).__name__
    print(json.dumps(said))
    try:  # what it got, where it may write (the fence's /tmp); the boundary's tmpfs is its own
        with open(mark + ".said", "w") as handle:
            handle.write(json.dumps(said))
    except OSError:
        pass
''')


def attacker_code(cluster, mark: Path) -> str:
    return ATTACKER.format(address=cluster.address, certs=str(cluster.certs.folder),
                           solutions=str(REPO_ROOT / "solutions" / "toy_bpe.ipynb"), mark=str(mark))


def attacking_notebook(code: str) -> bytes:
    nb = correct_notebook()
    answer = cell_of(nb, "initialize_solution")
    answer.source = ATTACK.format(code=code) + "\n" + answer.source
    return dump(nb)


@pytest.mark.parametrize("allow_fence", [False, True], ids=["boundary", "fence-allowed"])
def test_an_attacking_notebook_earns_nothing_and_changes_no_other_row(
    cluster, clean, tmp_path, allow_fence
):
    mark = Path("/tmp") / f"bpe-attack-{uuid.uuid4().hex}"
    attack = attacking_notebook(attacker_code(cluster, mark))
    extra = {f"eve{i}_toy_bpe.ipynb": attack for i in range(2)}  # on every worker that takes files
    rows = rows_of(
        notebooks(tmp_path / "sub", extra),
        tmp_path / "out",
        cluster,
        allow_fence=allow_fence,
        worker_wait=60,
    )
    assert not mark.exists(), "the attack ran code on a worker"
    said = Path(str(mark) + ".said")
    if said.exists():  # an attack the fence worker graded: it ran, and got nothing
        got = json.loads(said.read_text())
        said.unlink()
        print("the attack on the fence worker:", got)
        assert set(got) >= {
            "tls without a certificate",
            "plain tcp",
            "the grader's stolen certificate",
        }, got
        assert all(value != "connected" for value in got.values()), got
        keys = [path for path in got if path.endswith("-key.pem")]
        assert keys and all(got[path] == "PermissionError" for path in keys), got
        # The fence's known limit (--allow-fence, docs/GRADING.md): its kernel reads what any other
        # user may read, a course checkout left open to others included.
    assert scheduler_alive(cluster), "the attack stopped the scheduler"
    assert rows["amy"].score == 11.0 and rows["ben"].status == "empty_file"
    assert rows["cal"].score == clean[0]["cal"].score < 11.0, "a wrong notebook's score is its own"
    # a correct notebook and the attack: what the correct notebook earns, no more
    for i in range(2):
        assert rows[f"eve{i}"].status == "graded" and rows[f"eve{i}"].score <= 11.0
    isolations = {row.isolation.split(" ")[0] for row in rows.values() if row.status == "graded"}
    if allow_fence:  # both workers took files, and the fence's rows say so
        assert isolations == {"fence+seccomp+uid", clean[0]["amy"].isolation.split(" ")[0]}, (
            isolations
        )
    else:
        assert all(
            full_boundary(row.isolation) for row in rows.values() if row.status == "graded"
        ), isolations


@needs_root
def test_the_attacker_code_does_connect_with_the_key(cluster, tmp_path):
    """The same code, run as the grader (who holds the key), does reach the cluster: the attacks
    above fail because of the boundary, not because the code is broken."""
    mark = tmp_path / "mark"
    code = attacker_code(cluster, mark).replace("client.shutdown()", "client.close()")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert said["the grader's stolen certificate"] == "connected", said
    assert said["tls without a certificate"] != "connected" and said["plain tcp"] != "connected"
    assert said["a certificate of its own CA"] != "connected"
    assert mark.exists()
    mark.unlink()


@needs_root
def test_another_local_user_can_neither_connect_nor_read_the_keys(cluster, open_python, tmp_path):
    if shutil.which("runuser") is None:
        pytest.skip("no runuser here")
    mark = Path("/tmp") / f"bpe-nobody-{uuid.uuid4().hex}"
    run = subprocess.run(
        ["runuser", "-u", "nobody", "--", str(open_python), "-c", attacker_code(cluster, mark)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert "import" not in said, said
    assert all(value != "connected" for value in said.values()), said
    assert said[str(cluster.certs.folder) + "/client-key.pem"] == "PermissionError"
    assert said[str(cluster.certs.folder) + "/worker-key.pem"] == "PermissionError"
    assert not mark.exists()
    assert scheduler_alive(cluster)


# -- 5: a lost scheduler, and no worker ------------------------------------------------------------
def test_a_lost_scheduler_stops_the_batch_and_a_rerun_waits_for_workers_within_a_bound(
    tmp_path, capfd
):
    folder = notebooks(
        tmp_path / "sub", {f"s{i}_toy_bpe.ipynb": dump(correct_notebook()) for i in range(5)}
    )
    out = tmp_path / "out"
    certs = make_certificates(tmp_path / "certs")
    with LocalTLSCluster(1) as small:
        args = ["grade", str(folder), "--out", str(out), "--scheduler", small.address, "--tls-dir",
                str(small.certs.folder), "--quiet", "--worker-wait", "3"]
        import threading

        def kill_when_one_is_done():
            import time

            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and not list((out / "results").glob("*.json")):
                time.sleep(0.2)
            small.scheduler.kill()

        killer = threading.Thread(target=kill_when_one_is_done)
        killer.start()
        code = main(args)
        killer.join()
        err = capfd.readouterr().err
        assert code != 0 and "was lost" in err and "run the same command" in err, err
        assert "Traceback" not in err
        assert (
            not (out / "grades.csv").exists()
            or "worker_lost" not in (out / "grades.csv").read_text()
        )
        # a rerun against a scheduler with no worker: it says it waits, and for how long
        with LocalTLSCluster(0, certs=certs) as empty:
            args[args.index("--scheduler") + 1] = empty.address
            args[args.index("--tls-dir") + 1] = str(certs.folder)
            code = main(args)
        err = capfd.readouterr().err
        assert code == 2 and "waiting for Dask workers" in err and "up to 3 s" in err, err
        assert "no Dask worker that can grade joined" in err
    assert nbformat  # (the notebooks above are nbformat's)


def test_grade_local_cluster_is_one_command(tmp_path, capsys):
    """`grade --local-cluster`: a TLS scheduler and
    workers of its own, fresh certificates, ended."""
    import psutil

    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "amy_toy_bpe.ipynb").write_bytes(dump(correct_notebook()))
    def dask_processes() -> set[int]:  # this test's own: children of this process
        found = set()
        for child in psutil.Process().children(recursive=True):
            try:
                if {"-m", "dask"} <= set(child.cmdline()):
                    found.add(child.pid)
            except psutil.Error:
                continue
        return found

    before = dask_processes()
    assert (
        main(
            [
                "grade",
                str(folder),
                "--out",
                str(tmp_path / "out"),
                "--local-cluster",
                "--workers",
                "1",
                "--quiet",
            ]
        )
        == 0
    )
    grades = (tmp_path / "out" / "grades.csv").read_text()
    assert "amy" in grades and "landlock" in grades
    assert not dask_processes() - before, "the local cluster was ended"
