"""The seccomp filter (sandbox/_seccomp.py): the program itself, and what it refuses inside."""

from __future__ import annotations

import errno
import platform
import struct
import textwrap
from pathlib import Path

import pytest

from patchwarden.sandbox import LaunchSpec, SandboxConfig, SandboxError, launch, python_runtime
from patchwarden.sandbox._seccomp import (
    ARCHES,
    REFUSED_SYSCALLS,
    SECCOMP_RET_ALLOW,
    SECCOMP_RET_ERRNO,
    seccomp_program,
)


def _decode(program: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]


def _run(program: bytes, arch: int, nr: int) -> int:
    """A tiny classic-BPF interpreter for the instructions the filter uses."""
    insns, pc, acc = _decode(program), 0, 0
    data = {0: nr, 4: arch}
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            acc = data[k]
            pc += 1
        elif code in (0x15, 0x35):
            taken = acc == k if code == 0x15 else acc >= k
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_the_program_refuses_exactly_the_listed_calls(machine: str) -> None:
    arch = ARCHES[machine]
    program = seccomp_program(machine)
    deny = SECCOMP_RET_ERRNO | errno.EPERM
    for name in REFUSED_SYSCALLS:
        assert _run(program, arch.audit_arch, arch.refused[name]) == deny, name
    for allowed in (0, 1, 39, 59, 231, 435):  # read, write, getpid, execve, exit_group...
        if allowed not in arch.refused.values():
            assert _run(program, arch.audit_arch, allowed) == SECCOMP_RET_ALLOW
    # Another ABI (i386 int 0x80) cannot sneak the same calls in under other numbers.
    assert _run(program, 0x40000003, 26) == deny
    if arch.x32_bit:
        assert _run(program, arch.audit_arch, 0x40000000 | 101) == deny


def test_an_unknown_architecture_is_refused_not_skipped() -> None:
    with pytest.raises(SandboxError, match="no seccomp filter for the sparc architecture"):
        seccomp_program("sparc")


PROBE = textwrap.dedent(
    """
    import ctypes, os, signal, time
    libc = ctypes.CDLL(None, use_errno=True)
    numbers = {numbers}
    PIDFD_OPEN = {pidfd_open}
    child = os.fork()
    if child == 0:  # a process of the same uid, dumpable: nothing but the filter protects it
        time.sleep(60)
        os._exit(0)
    buf = ctypes.create_string_buffer(8)
    class Iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    local = Iovec(ctypes.addressof(buf), 8)
    remote = Iovec(ctypes.addressof(buf), 8)
    pidfd = libc.syscall(PIDFD_OPEN, child, 0)
    print("pidfd_open", int(pidfd >= 0), 0)
    vec = (ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    calls = {{
        "ptrace": (numbers["ptrace"], 16, child, 0, 0),  # PTRACE_ATTACH
        "process_vm_readv": (numbers["process_vm_readv"], child, *vec),
        "process_vm_writev": (numbers["process_vm_writev"], child, *vec),
        "pidfd_getfd": (numbers["pidfd_getfd"], pidfd, 0, 0),
    }}
    for name, args in calls.items():
        result = libc.syscall(*args)
        print(name, result, ctypes.get_errno() if result == -1 else 0)
    os.kill(child, signal.SIGKILL)
    """
)


def _probe(tmp_path: Path, machine: str) -> Path:
    tmp_path.chmod(0o755)
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE.format(numbers=ARCHES[machine].refused, pidfd_open=434))
    probe.chmod(0o644)
    return probe


@pytest.mark.bwrap
def test_inside_the_sandbox_the_calls_fail_with_eperm(tmp_path: Path) -> None:
    machine = platform.machine()
    if machine not in ARCHES:
        pytest.skip(f"no seccomp table for {machine}")
    _probe(tmp_path, machine)
    config = SandboxConfig()
    result = launch(
        LaunchSpec(argv=[python_runtime(config).executable, "probe.py"], tree=tmp_path), config
    )
    assert result.exit_code == 0, result.stderr
    seen = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()}
    # The probe itself works (it found its child); every refused call fails with EPERM.
    assert seen == {
        "pidfd_open": ["1", "0"],
        **{name: ["-1", str(errno.EPERM)] for name in REFUSED_SYSCALLS},
    }
