"""Kernel-enforced isolation for a student's kernel: Linux namespaces, an unprivileged uid, rlimits,
a seccomp filter and a Landlock allow-list, over the raw system calls (``ctypes``, standard library
only).

Why our own module: the ``landlock`` package on PyPI is a development release (1.0.0.dev5) that
knows Landlock ABI 1 only (no TCP rules, no signal scoping); bubblewrap and nsjail are programs
to install and drive, and neither scopes signals with Landlock. What a kernel needs is a few
system calls made in a fixed order (see :func:`enter_boundary`), each small enough to test alone.

The boundary is applied by ``sandbox_launcher.py`` in the kernel's own process before ipykernel is
imported. This file is copied next to that launcher, so it may import nothing of ``autograder``.

    >>> ruleset_attr_size(7), ruleset_attr_size(4), ruleset_attr_size(1)
    (24, 16, 8)
    >>> READ_ONLY & ACCESS_FS_WRITE_FILE
    0
"""
from __future__ import annotations

import ctypes
import ctypes.util
import enum
import errno
import os
import platform
import resource
import struct
import json
import sys
from dataclasses import asdict, dataclass, field, fields, replace

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # autograder/strenum.py's, again: this file may import nothing of autograder

    class StrEnum(str, enum.Enum):
        def __str__(self) -> str:
            return str.__str__(self)

        def __format__(self, format_spec: str) -> str:
            return str.__format__(self, format_spec)


class IsolationMode(StrEnum):
    """What the launcher builds around a kernel (:attr:`LauncherSettings.mode`)."""

    BOUNDARY = "boundary"  # Landlock, namespaces, seccomp, a uid of its own (or a user namespace)
    FENCE = "fence"  # where the boundary cannot be had: an audit hook, seccomp, a uid of its own


class Piece(StrEnum):
    """The words of an isolation status, what grades.csv's ``isolation`` column says: the pieces a
    kernel got joined by ``+``, then what it could not have in parentheses. The boundary's status
    begins with ``landlock-abi<N>`` (:func:`landlock_piece`), the fence's with ``fence``.

    >>> status_pieces("landlock-abi7+netns+pidns+uid+cgroup (no seccomp: ...)")[1:]
    ['netns', 'pidns', 'uid', 'cgroup']
    >>> Piece.CGROUP in status_pieces("landlock-abi7+seccomp+netns+pidns+uid+cgroup")
    True
    """

    LANDLOCK = "landlock"  # (written landlock-abi<N>)
    FENCE = "fence"
    SECCOMP = "seccomp"
    NETNS = "netns"
    PIDNS = "pidns"
    UID = "uid"  # a uid of its own (the grader is root)
    USERNS = "userns"  # a user namespace instead (the grader is not root)
    CGROUP = "cgroup"  # memory and processes capped for the kernel and its children together


def landlock_piece(abi: int) -> str:
    """The boundary's first piece: Landlock and its ABI (``landlock-abi7``)."""
    return f"{Piece.LANDLOCK}-abi{abi}"


def status_pieces(status: str) -> list[str]:
    """The pieces of an isolation status (what it says in parentheses left out)."""
    return status.split(" ")[0].split("+")

libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# -- Landlock (include/uapi/linux/landlock.h) -------------------------------------------------
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1

ACCESS_FS_EXECUTE = 1 << 0
ACCESS_FS_WRITE_FILE = 1 << 1
ACCESS_FS_READ_FILE = 1 << 2
ACCESS_FS_READ_DIR = 1 << 3
ACCESS_FS_REMOVE_DIR = 1 << 4
ACCESS_FS_REMOVE_FILE = 1 << 5
ACCESS_FS_MAKE_CHAR = 1 << 6
ACCESS_FS_MAKE_DIR = 1 << 7
ACCESS_FS_MAKE_REG = 1 << 8
ACCESS_FS_MAKE_SOCK = 1 << 9
ACCESS_FS_MAKE_FIFO = 1 << 10
ACCESS_FS_MAKE_BLOCK = 1 << 11
ACCESS_FS_MAKE_SYM = 1 << 12
ACCESS_FS_REFER = 1 << 13  # ABI 2
ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3
ACCESS_FS_IOCTL_DEV = 1 << 15  # ABI 5
ACCESS_NET_BIND_TCP = 1 << 0  # ABI 4
ACCESS_NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FILE_ONLY_ACCESS = (
    ACCESS_FS_EXECUTE
    | ACCESS_FS_WRITE_FILE
    | ACCESS_FS_READ_FILE
    | ACCESS_FS_TRUNCATE
    | ACCESS_FS_IOCTL_DEV
)
READ_ONLY = ACCESS_FS_EXECUTE | ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR
# Everything in its own folder except device nodes.
READ_WRITE = ((1 << 16) - 1) & ~(ACCESS_FS_MAKE_CHAR | ACCESS_FS_MAKE_BLOCK | ACCESS_FS_IOCTL_DEV)
SOCKETS_ONLY = ACCESS_FS_READ_DIR | ACCESS_FS_MAKE_SOCK | ACCESS_FS_REMOVE_FILE


def _landlock_numbers() -> tuple[int, int, int] | None:
    table = syscall_table()
    if table is None:
        return None
    return tuple(
        table.numbers[name]
        for name in ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self")
    )


def landlock_abi() -> int:
    """The Landlock ABI this kernel offers; 0 when there is none (not Linux, too old, disabled)."""
    numbers = _landlock_numbers()
    if numbers is None:
        return 0
    abi = libc.syscall(
        numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION)
    )
    return max(int(abi), 0)


def handled_fs_access(abi: int) -> int:
    """Every filesystem right the ABI knows: what it does not list stays allowed."""
    handled = (1 << 13) - 1
    if abi >= 2:
        handled |= ACCESS_FS_REFER
    if abi >= 3:
        handled |= ACCESS_FS_TRUNCATE
    if abi >= 5:
        handled |= ACCESS_FS_IOCTL_DEV
    return handled


def ruleset_attr_size(abi: int) -> int:
    """``struct landlock_ruleset_attr`` grew a field at ABI 4 (net) and ABI 6 (scoped)."""
    return 24 if abi >= 6 else 16 if abi >= 4 else 8


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def restrict_filesystem_and_network(rules: list[tuple[str, int]], abi: int | None = None) -> int:
    """Landlock-restrict this process (and every process it starts) to ``rules``: (path, rights)
    pairs. No TCP bind or connect at all (ABI >= 4); no signals to, and no abstract Unix sockets of,
    processes outside this domain (ABI >= 6). Paths that do not exist are skipped. Returns the ABI.

    The caller must have set no_new_privs (or be privileged). Irreversible.
    """
    abi = landlock_abi() if abi is None else abi
    if abi < 1:
        raise OSError(errno.ENOSYS, "Landlock is not available")
    numbers = _landlock_numbers()
    if numbers is None:
        raise OSError(errno.ENOSYS, "no system call table for this machine")
    create, add_rule, restrict_self = numbers
    handled = handled_fs_access(abi)
    attr = struct.pack(
        "QQQ",
        handled,
        ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP if abi >= 4 else 0,
        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0,
    )[: ruleset_attr_size(abi)]
    buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _check(
        libc.syscall(create, buffer, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)),
        "landlock_create_ruleset",
    )
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    rights &= FILE_ONLY_ACCESS
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights & handled, fd), 12)
                _check(
                    libc.syscall(
                        add_rule,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                        rule,
                        ctypes.c_uint32(0),
                    ),
                    f"landlock_add_rule {path}",
                )
            finally:
                os.close(fd)
        _check(
            libc.syscall(restrict_self, ctypes.c_int(ruleset), ctypes.c_uint32(0)),
            "landlock_restrict_self",
        )
    finally:
        os.close(ruleset)
    return abi


def rules_excluding(roots: list[str], rights: int, excluded: list[str]) -> list[tuple[str, int]]:
    """Rules that grant ``rights`` beneath every root except beneath the ``excluded`` paths.

    Landlock only allows; to leave out, say, the grader's own package inside site-packages (where
    ``pip install .`` puts it), a root that contains an excluded path is granted its listing only
    (the import system lists site-packages) and each of its children is granted alone, recursively.

        >>> rules_excluding(["/usr"], READ_ONLY, ["/etc"])
        [('/usr', 13)]
    """
    excluded = [os.path.realpath(path) for path in excluded]
    rules: list[tuple[str, int]] = []

    def grant(path: str) -> None:
        real = os.path.realpath(path)
        if any(real == x for x in excluded):
            return
        if not any(x.startswith(real.rstrip("/") + "/") for x in excluded):
            rules.append((path, rights))
            return
        rules.append((path, ACCESS_FS_READ_DIR))
        try:
            children = sorted(os.listdir(path))
        except OSError:
            return
        for child in children:
            grant(os.path.join(path, child))

    for root in roots:
        grant(root)
    return rules


# -- system call numbers, per architecture ---------------------------------------------------------
# From the kernel's own tables: x86-64's arch/x86/entry/syscalls/syscall_64.tbl (<asm/unistd_64.h>),
# and for aarch64 the generic table, include/uapi/asm-generic/unistd.h. tests/test_architectures.py
# checks every number against those headers and against libseccomp's resolver where they exist.
# An architecture not listed here gets no boundary (pivot_root has no C library wrapper): the fence,
# with the reason in grades.csv.
@dataclass(frozen=True)
class SyscallTable:
    machine: str  # as os.uname().machine says it
    audit_arch: int  # seccomp_data.arch of this ABI (AUDIT_ARCH_* of <linux/audit.h>)
    numbers: dict  # name -> number
    x32: bool = False  # x86-64: numbers with bit 30 set are the x32 ABI's


# x86-64 system calls a student's kernel never needs and that widen what it can reach: other
# processes' memory, new namespaces or mounts, the kernel's keyring, BPF and perf, io_uring
# (which has its own path to sockets), file handles that bypass paths.
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "add_key",
    "request_key",
    "keyctl",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "name_to_handle_at",
    "open_by_handle_at",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "fsopen",
    "fsmount",
    "move_mount",
    "open_tree",
    "pidfd_getfd",
    "fsconfig",
    "fspick",
    "mount_setattr",
)
# Besides those: the calls the filter looks into or the boundary makes itself.
USED_SYSCALLS = (
    "setsid",
    "socket",
    "clone",
    "clone3",
    "landlock_create_ruleset",
    "landlock_add_rule",
    "landlock_restrict_self",
)

# Numbers that are the same on every architecture that uses the unified numbering (added since 5.1).
_UNIFIED = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
    "landlock_create_ruleset": 444,
    "landlock_add_rule": 445,
    "landlock_restrict_self": 446,
}
SYSCALL_TABLES = {
    "x86_64": SyscallTable(
        "x86_64",
        0xC000003E,
        {
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "unshare": 272,
            "setns": 308,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "name_to_handle_at": 303,
            "open_by_handle_at": 304,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "swapon": 167,
            "swapoff": 168,
            "reboot": 169,
            "acct": 163,
            "quotactl": 179,
            "socket": 41,
            "clone": 56,
            "setsid": 112,
            **_UNIFIED,
        },
        x32=True,
    ),
    "aarch64": SyscallTable(
        "aarch64",
        0xC00000B7,
        {
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "unshare": 97,
            "setns": 268,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "name_to_handle_at": 264,
            "open_by_handle_at": 265,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "swapon": 224,
            "swapoff": 225,
            "reboot": 142,
            "acct": 89,
            "quotactl": 60,
            "socket": 198,
            "clone": 220,
            "setsid": 157,
            **_UNIFIED,
        },
    ),
}
SYSCALL_TABLES["arm64"] = SYSCALL_TABLES["aarch64"]  # the same machine, as some systems name it


def syscall_table(machine: str | None = None) -> SyscallTable | None:
    """The table of the running architecture (or ``machine``); None where there is none."""
    return SYSCALL_TABLES.get(machine or platform.machine())


def syscall_number(name: str, machine: str | None = None) -> int:
    table = syscall_table(machine)
    if table is None:
        raise OSError(errno.ENOSYS, f"no system call table for {machine or platform.machine()}")
    return table.numbers[name]


# -- prctl, seccomp ---------------------------------------------------------------------------
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
AF_UNIX = 1


def _bpf(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program(machine: str | None = None, fence: bool = False) -> bytes:
    """A classic-BPF seccomp program for the running architecture (or ``machine``): ``socket()`` of
    any family but ``AF_UNIX`` fails with ``EAFNOSUPPORT``, ``clone()`` with a new-namespace flag
    and the :data:`DENIED_SYSCALLS` fail with ``EPERM``, ``clone3()`` and calls of another ABI
    (i386 ``int 0x80`` and x32 on x86-64, AArch32 on aarch64) fail with ``ENOSYS``, everything else
    is allowed. Raises OSError (ENOSYS) for an architecture without a table.

    ``fence``: also ``setsid()`` fails with ``EPERM``. The fence has no PID namespace to end a
    kernel's children with it: every process a fenced kernel starts stays in its session, which the
    grader ends as a whole (:func:`end_processes`)."""
    table = syscall_table(machine)
    if table is None:
        raise OSError(errno.ENOSYS, f"no seccomp filter for {machine or platform.machine()}")
    number = table.numbers
    ld_w_abs, jeq_k, jge_k, jset_k, ret_k = 0x20, 0x15, 0x35, 0x45, 0x06
    numbers = sorted(
        {number[name] for name in DENIED_SYSCALLS + (("setsid",) if fence else ())}
    )
    program = [
        _bpf(ld_w_abs, 0, 0, 4),  # seccomp_data.arch
        _bpf(jeq_k, 1, 0, table.audit_arch),
        _bpf(ret_k, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),
        _bpf(ld_w_abs, 0, 0, 0),  # seccomp_data.nr
    ]
    if table.x32:
        program += [
            _bpf(jge_k, 0, 1, 0x40000000),  # x32 system calls
            _bpf(ret_k, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),
        ]
    # socket: look at the family (args[0], low 32 bits).
    check_index = len(program) + 2
    program += [
        _bpf(jeq_k, 0, 3, number["socket"]),
        _bpf(ld_w_abs, 0, 0, 16),
        _bpf(jeq_k, 0, 0, AF_UNIX),  # -> allow (the last but one instruction): fixed below
        _bpf(ret_k, 0, 0, SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT),
    ]
    # clone: look at the flags (args[0], low 32 bits, on both architectures); clone3: ENOSYS.
    # Both blocks end in a return.
    program += [
        _bpf(jeq_k, 0, 4, number["clone"]),
        _bpf(ld_w_abs, 0, 0, 16),
        _bpf(jset_k, 0, 1, CLONE_NAMESPACE_FLAGS),
        _bpf(ret_k, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM),
        _bpf(ret_k, 0, 0, SECCOMP_RET_ALLOW),
        _bpf(jeq_k, 0, 1, number["clone3"]),
        _bpf(ret_k, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),
    ]
    for index, denied in enumerate(numbers):
        remaining = len(numbers) - index - 1
        program.append(_bpf(jeq_k, remaining + 1, 0, denied))  # -> the EPERM return below
    program += [
        _bpf(ret_k, 0, 0, SECCOMP_RET_ALLOW),
        _bpf(ret_k, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM),
    ]
    allow_index = len(program) - 2
    program[check_index] = _bpf(jeq_k, allow_index - check_index - 1, 0, AF_UNIX)
    return b"".join(program)


def install_seccomp_filter(fence: bool = False) -> None:
    """Install :func:`seccomp_program` on this process (inherited by its children). Raises OSError
    where the architecture has no table or the kernel refuses (no seccomp)."""
    program = seccomp_program(fence=fence)
    filters = ctypes.create_string_buffer(program, len(program))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program) // 8, ctypes.cast(filters, ctypes.c_void_p))
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


def set_no_new_privs() -> None:
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")


def die_with_parent(signal_number: int = 9) -> None:
    _check(libc.prctl(PR_SET_PDEATHSIG, signal_number, 0, 0, 0), "prctl(PDEATHSIG)")


# -- namespaces and mounts ----------------------------------------------------------------------
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWTIME = 0x00000080
# Every new-namespace flag of clone: the seccomp filter refuses a clone with any of them.
CLONE_NAMESPACE_FLAGS = (
    CLONE_NEWNS
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWUSER
    | CLONE_NEWPID
    | CLONE_NEWNET
    | CLONE_NEWCGROUP
    | CLONE_NEWTIME
)
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18


def unshare(flags: int) -> None:
    _check(libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    enc = lambda text: None if text is None else os.fsencode(text)  # noqa: E731
    _check(
        libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        f"mount {target}",
    )


def enter_namespaces(as_root: bool) -> None:
    """New mount, PID, network, IPC and UTS namespaces for the children of this process (the PID
    namespace) and for itself (the others). Without root, a user namespace comes first, mapping
    the current uid and gid to themselves."""
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if as_root:
        unshare(flags)
        return
    uid, gid = os.getuid(), os.getgid()
    unshare(flags | CLONE_NEWUSER)
    with open("/proc/self/setgroups", "w") as handle:
        handle.write("deny")
    with open("/proc/self/uid_map", "w") as handle:
        handle.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"{gid} {gid} 1")


def make_mounts_private() -> None:
    """Nothing mounted from here on is seen outside this mount namespace (and nothing outside
    in)."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)


def mount_private_tmpfs(path: str, size_bytes: int, uid: int | None, gid: int | None) -> None:
    options = f"size={max(size_bytes, 1 << 20)},mode=0700" + (
        f",uid={uid},gid={gid}" if uid is not None else ""
    )
    os.makedirs(path, exist_ok=True)
    mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, options)


MS_RDONLY, MS_REMOUNT, MNT_DETACH = 1, 32, 2
# statvfs flags that a read-only remount of a bind mount must keep (the kernel refuses to clear
# flags locked by a more privileged namespace); they have the same values as the MS_ flags.
KEPT_MOUNT_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC | 1024 | 2048 | 4096


def bind(source: str, target: str, read_only: bool) -> None:
    """Bind ``source`` (a folder or a file) at ``target``, read-only if asked."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            open(target, "a").close()
    mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        kept = os.statvfs(source).f_flag & KEPT_MOUNT_FLAGS
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | kept)


def build_root(
    new_root: str, read_only: list[str], read_write: list[str], devices: list[str]
) -> None:
    """A root file system for the kernel, on a tmpfs at ``new_root``: only the given paths, each at
    its own path, bound read-only (``read_only``, ``devices``) or read-write (``read_write``).
    Symbolic links among ``read_only`` (``/lib -> usr/lib``) are copied as links. Everything else,
    and so every Unix socket on the machine, does not exist there."""
    mount("tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    done: list[str] = []
    # A symbolic link (a venv that is a link, /lib -> usr/lib) is copied as a link and its target
    # bound too, so that the same paths resolve inside as outside.
    paths = set(read_only) | {os.path.realpath(path) for path in read_only if os.path.lexists(path)}
    for path in sorted(paths, key=len):
        if not os.path.lexists(path) or any(
            path == d or path.startswith(d.rstrip("/") + "/") for d in done
        ):
            continue
        target = new_root + path
        if os.path.islink(path):
            if not os.path.lexists(target):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.symlink(os.readlink(path), target)
            continue
        bind(path, target, read_only=True)
        done.append(path)
    for path in read_write:
        bind(path, new_root + path, read_only=False)
    for device in devices:
        if os.path.exists(device):
            target = new_root + device
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()
            mount(device, target, None, MS_BIND)
    os.makedirs(new_root + "/proc", exist_ok=True)
    os.makedirs(new_root + "/tmp", mode=0o755, exist_ok=True)
    os.makedirs(new_root + "/.old-root", exist_ok=True)


def pivot_into(new_root: str) -> None:
    """Make ``new_root`` this mount namespace's root and let go of the old one entirely."""
    _check(
        libc.syscall(
            syscall_number("pivot_root"),
            os.fsencode(new_root),
            os.fsencode(new_root + "/.old-root"),
        ),
        "pivot_root",
    )
    os.chdir("/")
    _check(libc.umount2(b"/.old-root", MNT_DETACH), "umount old root")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


# -- control groups: limits for a kernel and every process it starts, together ------------------
CGROUP_ROOT = "/sys/fs/cgroup"


def _own_cgroups() -> dict[str, str]:
    """Controller -> this process's cgroup path (``""`` is cgroup v2's unified hierarchy)."""
    found = {}
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(","):
                found[controller] = path
    return found


def create_kernel_cgroups(name: str, memory_bytes: int, processes: int) -> list[str]:
    """New cgroups, children of this process's own, that cap the memory, the number of processes and
    the CPU (one core) of a kernel and all its children together (rlimits count per process: 255
    children of 4 GiB each would be 1 TiB). cgroup v2 where its controllers are delegated here, else
    v1's memory and pids hierarchies. Returns their folders; ``[]`` where none can be made (not
    root, no delegation)."""
    own = _own_cgroups()
    made: list[str] = []
    try:
        v2_base = CGROUP_ROOT + own.get("", "/")
        if os.path.exists(CGROUP_ROOT + "/cgroup.controllers") and {"memory", "pids"} <= set(
                open(os.path.join(v2_base, "cgroup.subtree_control")).read().split()):
            folder = os.path.join(v2_base, name)
            os.mkdir(folder)
            made.append(folder)
            _write(folder, "memory.max", memory_bytes)
            _write(folder, "memory.swap.max", 0, required=False)
            _write(folder, "pids.max", processes)
            # one core, however many children
            _write(folder, "cpu.max", "100000 100000", required=False)
            return made
        for controller, settings in (
            (
                "memory",
                [
                    ("memory.limit_in_bytes", memory_bytes),
                    ("memory.memsw.limit_in_bytes", memory_bytes),
                ],
            ),
            ("pids", [("pids.max", processes)]),
            ("cpu", [("cpu.cfs_period_us", 100000), ("cpu.cfs_quota_us", 100000)]),
        ):
            if controller == "cpu" and controller not in own:
                continue  # one core, however many children: where the controller exists
            folder = os.path.join(CGROUP_ROOT, controller + own[controller], name)
            os.mkdir(folder)
            made.append(folder)
            for index, (setting, value) in enumerate(settings):
                _write(folder, setting, value, required=index == 0)
        return made
    except (OSError, KeyError):
        remove_cgroups(made)
        return []


def kernel_cgroup_folders(prefix: str = "bpe-") -> list[str]:
    """The cgroups named ``prefix...`` beside the ones :func:`create_kernel_cgroups` makes here (for
    a sweep of those whose owner is gone)."""
    try:
        own = _own_cgroups()
    except OSError:
        return []
    bases = [CGROUP_ROOT + own[""]] if "" in own else []
    bases += [
        os.path.join(CGROUP_ROOT, controller + own[controller])
        for controller in ("memory", "pids", "cpu")
        if controller in own
    ]
    found = []
    for base in bases:
        try:
            found += [
                entry.path
                for entry in os.scandir(base)
                if entry.name.startswith(prefix) and entry.is_dir()
            ]
        except OSError:
            continue
    return found


def _write(folder: str, setting: str, value: int | str, required: bool = True) -> None:
    try:
        with open(os.path.join(folder, setting), "w") as handle:
            handle.write(str(value))
    except OSError:
        if required:
            raise


def join_cgroups(folders: list[str]) -> None:
    """Move this process (and so everything it will start) into ``folders``."""
    for folder in folders:
        with open(os.path.join(folder, "cgroup.procs"), "w") as handle:
            handle.write(str(os.getpid()))


def remove_cgroups(folders: list[str], wait_seconds: float = 5.0) -> None:
    """Remove the folders once their processes are gone (a killed kernel takes a moment to exit)."""
    import time

    deadline = time.monotonic() + wait_seconds
    for folder in folders:
        while True:
            try:
                os.rmdir(folder)
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)


# -- the end of a kernel: every process it started, however it tried to leave ---------------------
def _proc_stat_fields(pid: str) -> list[bytes] | None:
    """``/proc/PID/stat`` after the command name: state, ppid, pgrp, session, ..."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()  # the name may hold spaces and parentheses


def _real_uid(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def processes_where(session: int | None = None, uid: int | None = None) -> list[int]:
    """The living processes (Linux: ``/proc``; zombies left out) of session ``session`` or with
    real uid ``uid``."""
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        after = _proc_stat_fields(entry)
        if after and after[0] in (b"Z", b"X"):
            continue  # killed already: a zombie runs nothing, whenever init reaps it
        if session is not None:
            if after is not None and len(after) > 3 and int(after[3]) == session:
                found.append(int(entry))
                continue
        if uid is not None and _real_uid(entry) == uid:
            found.append(int(entry))
    return found


def end_processes(session: int | None = None, uid: int | None = None, rounds: int = 20) -> int:
    """SIGKILL every process of session ``session`` (a kernel's: its launcher leads one) and, as
    root, every process under the kernel's own ``uid`` (what it started in a session of its own),
    round after round until none is left; returns how many were killed. Each process is named one
    by one (never ``kill(-1)``): a session id is never reused while one of its processes lives,
    and a kernel's uid is its alone. Nothing is done for session <= 1 or uid 0."""
    import time

    if session is not None and session <= 1:
        session = None
    if uid is not None and (uid == 0 or os.geteuid() != 0):
        uid = None
    killed = 0
    if session is None and uid is None:
        return killed
    for _ in range(rounds):
        members = processes_where(session, uid)
        if not members:
            break
        for pid in members:
            try:
                os.kill(pid, 9)
                killed += 1
            except OSError:
                pass
        time.sleep(0.02)
    return killed


# -- users and limits -----------------------------------------------------------------------------
def drop_to_user(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def set_limits(limits: dict[str, int]) -> None:
    """``{"RLIMIT_NPROC": 256, ...}``: soft and hard limit alike, so the kernel cannot raise
    them."""
    for name, value in limits.items():
        number = getattr(resource, name)
        resource.setrlimit(number, (value, value))


@dataclass(frozen=True)
class LauncherSettings:
    """What ``sandbox_launcher.py`` builds a kernel's boundary (or fence) from: made by the grader
    (``workspace.Workspace.environment``), sent in the kernel's environment as JSON
    (:meth:`encode`), read back by the launcher (:meth:`decode`, the one reader).

    >>> fence = LauncherSettings(IsolationMode.FENCE, 1 << 30, denied=["/course"],
    ...                          allowed=["/work"])
    >>> LauncherSettings.decode(fence.encode()) == fence
    True
    >>> boundary = fence.with_boundary(workdir="/work", rlimits={"RLIMIT_CORE": 0})
    >>> LauncherSettings.decode(boundary.encode()).rlimits
    {'RLIMIT_CORE': 0}
    """

    VARIABLE = "AUTOGRADER_SANDBOX"  # the environment variable that carries them

    mode: IsolationMode
    memory_bytes: int
    denied: list[str] = field(default_factory=list)  # folders a kernel must never read
    allowed: list[str] = field(default_factory=list)  # the fence's allow-list
    uid: int | None = None  # the kernel's own uid and gid (root only)
    gid: int | None = None
    probe: bool = False  # exit once the fence is in place (never set by the grader today)
    # boundary mode only:
    workdir: str = ""
    sockets_dir: str = ""
    connection_file: str = ""
    disk_bytes: int = 0
    root_dir: str = ""
    cgroups: list[str] = field(default_factory=list)
    # name in the work folder -> folder it shows
    links: dict[str, str] = field(default_factory=dict)
    read_only: list[str] = field(default_factory=list)
    rlimits: dict[str, int] = field(default_factory=dict)

    def with_boundary(self, **settings) -> "LauncherSettings":
        """These settings in boundary mode, with the boundary's own settings."""
        return replace(self, mode=IsolationMode.BOUNDARY, **settings)

    def encode(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def decode(cls, text: str) -> "LauncherSettings":
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"launcher settings: unknown field(s) {', '.join(unknown)}")
        return cls(**{**data, "mode": IsolationMode(data.get("mode"))})
