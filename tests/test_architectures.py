"""The boundary off x86-64: system call numbers and the seccomp filter per architecture.

From a red-team run: off x86-64 the seccomp filter raised and ``pivot_root`` used x86-64's number,
so an ARM64 grader (AWS Graviton, Linux on Apple silicon) always fell back to the fence, while the
documentation read as if only seccomp were skipped there. Now every number comes from a table per
architecture (x86-64 and aarch64), checked here against the kernel's own headers and libseccomp's
resolver, and the filter built for each is run, instruction by instruction, on the system calls it
must refuse and allow. The x86-64 filter also runs in the real kernel (test_isolation.py).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import re
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.kernel import isolation
from bpe_labs import ROOT as REPO_ROOT

ARCHITECTURES = ["x86_64", "aarch64"]
HEADERS = {"x86_64": [Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
                      Path("/usr/include/asm/unistd_64.h")],
           "aarch64": [Path("/usr/include/asm-generic/unistd.h")]}  # arm64 uses the generic table
NAMES = isolation.DENIED_SYSCALLS + isolation.USED_SYSCALLS


def header_numbers(machine: str) -> dict[str, int]:
    header = next((path for path in HEADERS[machine] if path.exists()), None)
    if header is None:
        pytest.skip(f"no kernel header with {machine}'s system call numbers here (linux-libc-dev)")
    found = {}
    for name, number in re.findall(r"^#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$", header.read_text(),
                                   re.M):
        found.setdefault(name, int(number))
    return found


@pytest.mark.parametrize("machine", ARCHITECTURES)
def test_every_number_is_the_kernel_headers_one(machine):
    table = isolation.syscall_table(machine)
    expected = header_numbers(machine)
    assert {name: table.numbers[name] for name in NAMES} == {name: expected[name] for name in NAMES}


@pytest.fixture(scope="module")
def libseccomp():
    name = ctypes.util.find_library("seccomp")
    if not name:
        pytest.skip("libseccomp is not installed here")
    library = ctypes.CDLL(name)
    library.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    library.seccomp_syscall_resolve_name_arch.restype = ctypes.c_int
    library.seccomp_arch_resolve_name.argtypes = [ctypes.c_char_p]
    library.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    return library


@pytest.mark.parametrize("machine", ARCHITECTURES)
def test_every_number_and_the_audit_arch_are_libseccomps(machine, libseccomp):
    table = isolation.syscall_table(machine)
    assert libseccomp.seccomp_arch_resolve_name(machine.encode()) == table.audit_arch
    resolved = {
        name: libseccomp.seccomp_syscall_resolve_name_arch(table.audit_arch, name.encode())
        for name in NAMES
    }
    assert resolved == {name: table.numbers[name] for name in NAMES}


# -- the filter, run instruction by instruction ---------------------------------------------------

SECCOMP_RET_ACTION = 0x7FFF0000


def run_filter(program: bytes, arch: int, nr: int, args: tuple = ()) -> tuple[str, int]:
    """What the classic-BPF seccomp ``program`` returns for one system call: ("allow", 0) or
    ("errno", number). Only the instructions a seccomp filter of ours uses exist here."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(list(args) + [0] * 6)[:6])
    instructions = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    for _ in range(len(instructions) + 1):
        code, jt, jf, k = instructions[pc]
        if code == 0x20:  # ld w abs
            accumulator = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code in (0x15, 0x35, 0x45):  # jeq, jge, jset
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[
                code
            ]
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # ret k
            if k & SECCOMP_RET_ACTION == isolation.SECCOMP_RET_ALLOW:
                return "allow", 0
            assert k & SECCOMP_RET_ACTION == isolation.SECCOMP_RET_ERRNO
            return "errno", k & 0xFFFF
        else:
            raise AssertionError(f"instruction {code:#x} at {pc}")
    raise AssertionError("the program does not end")


@pytest.mark.parametrize("machine", ARCHITECTURES)
def test_the_filter_of_each_architecture_refuses_what_it_must_and_allows_the_rest(machine):
    table = isolation.syscall_table(machine)
    program = isolation.seccomp_program(machine)
    number = table.numbers
    run = lambda nr, *args, arch=table.audit_arch: run_filter(program, arch, nr, args)  # noqa: E731
    for name in isolation.DENIED_SYSCALLS:
        assert run(number[name]) == ("errno", errno.EPERM), name
    assert run(number["socket"], 2) == ("errno", errno.EAFNOSUPPORT)  # AF_INET
    assert run(number["socket"], 10) == ("errno", errno.EAFNOSUPPORT)  # AF_INET6
    assert run(number["socket"], 16) == ("errno", errno.EAFNOSUPPORT)  # AF_NETLINK
    assert run(number["socket"], 1) == ("allow", 0)  # AF_UNIX
    for flag in (isolation.CLONE_NEWUSER, isolation.CLONE_NEWNET, isolation.CLONE_NEWPID,
                 isolation.CLONE_NEWNS):
        assert run(number["clone"], flag | 17) == ("errno", errno.EPERM)
    assert run(number["clone"], 17) == ("allow", 0)  # fork()
    assert run(number["clone3"]) == ("errno", errno.ENOSYS)
    ordinary = {
        "x86_64": {"read": 0, "write": 1, "openat": 257, "mmap": 9, "futex": 202},
        "aarch64": {"read": 63, "write": 64, "openat": 56, "mmap": 222, "futex": 98},
    }[machine]
    assert {name: run(nr) for name, nr in ordinary.items()} == {name: ("allow", 0)
                                                                for name in ordinary}
    other = isolation.syscall_table("aarch64" if machine == "x86_64" else "x86_64").audit_arch
    # another ABI: i386 or AArch32 calls, the other table
    assert run(0, arch=other) == ("errno", errno.ENOSYS)
    assert run(0, arch=0x40000028) == ("errno", errno.ENOSYS)  # AUDIT_ARCH_ARM (32-bit compat)
    if machine == "x86_64":
        assert run(0x40000000 | 41, 2) == ("errno", errno.ENOSYS)  # x32's socket


@pytest.mark.skipif(os.uname().machine != "x86_64",
                    reason="checks the interpreter above against this x86-64 kernel")
def test_the_interpreter_agrees_with_the_real_kernel():
    """The same filter in the real kernel: what the
    interpreter says for a few calls is what happens."""
    code = textwrap.dedent("""
        import ctypes, os
        from autograder.kernel import isolation
        isolation.set_no_new_privs()
        isolation.install_seccomp_filter()
        libc = ctypes.CDLL(None, use_errno=True)
        for nr, args in ((41, (2, 1, 0)), (41, (1, 1, 0)), (101, (0, 0, 0)), (435, (0, 0, 0)), \
(39, (0, 0, 0))):
            result = libc.syscall(nr, *args)
            print(nr, args[0], "allow" if result >= 0 else ctypes.get_errno())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 0, done.stderr
    table = isolation.syscall_table("x86_64")
    program = isolation.seccomp_program("x86_64")
    for line in done.stdout.splitlines():
        nr, family, said = line.split()
        verdict = run_filter(program, table.audit_arch, int(nr), (int(family), 1, 0))
        assert said == ("allow" if verdict[0] == "allow" else str(verdict[1])), line


def test_an_architecture_without_a_table_gets_the_fence_and_the_row_says_why():
    """riscv64, say: no boundary (pivot_root has no C library wrapper), and grades.csv says why."""
    code = textwrap.dedent("""
        import platform
        platform.machine = lambda: "riscv64"
        from autograder.kernel import isolation
        from autograder.kernel.session import isolation_status
        assert isolation.syscall_table() is None
        try:
            isolation.seccomp_program()
        except OSError as error:
            print("filter:", error.strerror)
        print("status:", isolation_status())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 0, done.stderr
    assert "filter: no seccomp filter for riscv64" in done.stdout
    assert "status: fence (no system call table for riscv64" in done.stdout, done.stdout
