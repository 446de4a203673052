"""Boot the cached kernel-SCTP guest in qemu, run one shell script in it, return its results.

    from lab.guest.harness import run_in_guest
    result = run_in_guest("python3 -m kernel.probe check --json > out/check.json")
    result.exit_code, result.stdout, result.files["check.json"]

Each call is one boot (about 14 s under TCG): batch many checks into one script. The script
runs as root in /job with the project's probe in /opt/sctp-dashboard (on PYTHONPATH); files
it writes under ``out/`` come back in ``GuestResult.files``. The guest's root filesystem is a
read-only 9p share of the unpacked image; /tmp, /run, /var/tmp, /var/log and /root are tmpfs.

qemu never outlives ``timeout``: it is killed and the result says ``timed_out``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab.guest import build as image

QEMU = "qemu-system-x86_64"


@dataclass
class GuestResult:
    exit_code: int | None  # None when the script never finished (timeout, boot failure)
    stdout: str
    files: dict[str, str] = field(default_factory=dict)  # out/<name> -> text
    stderr: str = ""
    console: str = ""  # the serial console (kernel and init messages)
    timed_out: bool = False
    seconds: float = 0.0
    accel: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def qemu_available() -> tuple[bool, str]:
    """(True, "") when this host can boot the guest, else (False, why not)."""
    if shutil.which(QEMU) is None:
        return False, f"{QEMU} is not installed (run lab/guest/install-host-deps.sh)"
    try:
        if image.find_image() is not None:
            return True, ""
    except (RuntimeError, OSError) as exc:
        return False, f"cannot tell which guest kernel to use: {exc}"
    missing = image.missing_build_tools()
    if missing:
        return False, (
            f"no cached guest image and cannot build one: missing {', '.join(missing)} "
            "(run lab/guest/install-host-deps.sh)"
        )
    if os.geteuid() != 0:
        return False, "no cached guest image, and building one (debootstrap) needs root"
    return True, ""


def kvm_usable() -> tuple[bool, str]:
    """Real KVM, not a paravirtual one that only runs specially built guests.

    ``kvm_pvm`` exposes /dev/kvm too, but qemu aborts (``failed to set MSR 0x10a``) or the
    stock kernel hangs in its decompressor there. SCTP_GUEST_ACCEL=tcg|kvm overrides.
    """
    forced = os.environ.get("SCTP_GUEST_ACCEL", "").lower()
    if forced in ("tcg", "kvm"):
        return forced == "kvm", f"SCTP_GUEST_ACCEL={forced}"
    if not os.path.exists("/dev/kvm"):
        return False, "no /dev/kvm"
    if os.path.exists("/sys/module/kvm_pvm"):
        return False, "/dev/kvm is kvm_pvm (paravirtual), which cannot run a stock kernel"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm is not accessible"
    return True, "/dev/kvm"


def _unpacked_rootfs(image_dir: Path) -> Path:
    """The image's root filesystem, unpacked once next to its archive and reused by boots."""
    rootfs = image_dir / "rootfs"
    marker = image_dir / "rootfs.unpacked"
    with open(image_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            if rootfs.exists():
                shutil.rmtree(rootfs)
            partial = image_dir / "rootfs.partial"
            if partial.exists():
                shutil.rmtree(partial)
            image.unpack(image_dir / "rootfs.tar.zst", partial)
            partial.rename(rootfs)
            marker.write_text("ok\n")
    return rootfs


class Guest:
    """One guest image, ready to boot as many times as needed."""

    def __init__(self, build: bool = True, memory_mb: int = 1024, cpus: int = 2) -> None:
        self.memory_mb = memory_mb
        self.cpus = cpus
        started = time.monotonic()
        found = image.find_image()
        if found is None:
            if not build:
                raise RuntimeError("no cached guest image; run python -m lab.guest.build")
            found = image.build()
        self.image_dir = found
        self.manifest = json.loads((found / "manifest.json").read_text())
        self.rootfs = _unpacked_rootfs(found)
        self.prepare_seconds = round(time.monotonic() - started, 1)
        self.kvm, self.accel_reason = kvm_usable()

    def qemu_command(self, job: Path, network: bool = False) -> list[str]:
        """qemu's command line; ``network`` adds a virtio NIC on qemu's user-mode network.

        There the guest is 10.0.2.15/24 and 10.0.2.2 is the host's loopback (what a guest
        connects to at 10.0.2.2:PORT, qemu connects to at 127.0.0.1:PORT); the guest gets no
        default route, so nothing else is reachable.
        """
        nic = ["-nic", "user,model=virtio-net-pci"] if network else ["-nic", "none"]
        security = "passthrough" if os.geteuid() == 0 else "none"
        accel = (
            ["-enable-kvm", "-cpu", "host"]
            if self.kvm
            else ["-accel", "tcg,thread=multi", "-cpu", "max"]
        )
        return [
            QEMU,
            *accel,
            "-m",
            str(self.memory_mb),
            "-smp",
            str(self.cpus),
            "-nographic",
            "-no-reboot",
            *nic,
            "-serial",
            "mon:stdio",
            "-kernel",
            str(self.image_dir / "vmlinuz"),
            "-initrd",
            str(self.image_dir / "initrd.img"),
            "-append",
            "console=ttyS0 quiet panic=-1",
            "-virtfs",
            f"local,path={self.rootfs},mount_tag=root,security_model={security},readonly=on",
            "-virtfs",
            f"local,path={job},mount_tag=job,security_model={security}",
        ]

    def run(
        self,
        script: str,
        timeout: float = 240.0,
        network: bool = False,
        inputs: dict[str, Path] | None = None,
    ) -> GuestResult:
        """Boot, run ``script`` with sh in the guest, power off; never longer than ``timeout``.

        ``inputs`` are copied into /job (by their name there) before the boot; ``network``: see
        ``qemu_command``.
        """
        job = Path(tempfile.mkdtemp(prefix="sctp-guest-job-"))
        try:
            (job / "out").mkdir()
            for name, src in (inputs or {}).items():
                dst = job / name
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
            (job / "run.sh").write_text(
                # python3 -S skips site.py, which costs ~1.5 s per start under TCG (it stats
                # every sys.path entry over 9p); PYTHONPATH brings back what it would add.
                "export PYTHONPATH=/opt/sctp-dashboard:/usr/local/lib/python3.11/dist-packages\n"
                "PROBE='python3 -S -m kernel.probe'\n"
                "cd /job\n" + script + "\n"
            )
            started = time.monotonic()
            console_path = job.parent / f"{job.name}.console"
            with open(console_path, "wb") as console:
                proc = subprocess.Popen(
                    self.qemu_command(job, network=network),
                    stdin=subprocess.DEVNULL,
                    stdout=console,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
                timed_out = False
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    proc.kill()
                    proc.wait()
            seconds = round(time.monotonic() - started, 1)
            console_text = console_path.read_text(errors="replace")
            console_path.unlink(missing_ok=True)
            code_text = _read(job / "exit_code").strip()
            files = {
                str(p.relative_to(job / "out")): p.read_text(errors="replace")
                for p in sorted((job / "out").rglob("*"))
                if p.is_file()
            }
            return GuestResult(
                exit_code=int(code_text) if code_text.lstrip("-").isdigit() else None,
                stdout=_read(job / "stdout"),
                stderr=_read(job / "stderr"),
                files=files,
                console=console_text,
                timed_out=timed_out,
                seconds=seconds,
                accel="kvm" if self.kvm else "tcg",
            )
        finally:
            shutil.rmtree(job, ignore_errors=True)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


_default: Guest | None = None


def run_in_guest(script: str, timeout: float = 240.0) -> GuestResult:
    """Run ``script`` in a fresh boot of the (cached, built on first use) guest image."""
    global _default
    if _default is None:
        _default = Guest()
    return _default.run(script, timeout=timeout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a shell script in the kernel-SCTP guest")
    parser.add_argument("script", help="shell text, or @FILE to read it from a file")
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--console", action="store_true", help="print the serial console too")
    args = parser.parse_args(argv)
    ok, reason = qemu_available()
    if not ok:
        print(f"guest: {reason}", file=sys.stderr)
        return 2
    script = Path(args.script[1:]).read_text() if args.script.startswith("@") else args.script
    result = run_in_guest(script, timeout=args.timeout)
    if args.console:
        sys.stderr.write(result.console)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    for name, text in result.files.items():
        print(f"--- out/{name} ({len(text)} chars)", file=sys.stderr)
    print(
        f"guest: exit {result.exit_code} in {result.seconds} s ({result.accel})"
        + (" TIMED OUT" if result.timed_out else ""),
        file=sys.stderr,
    )
    return result.exit_code if result.exit_code is not None else 3


if __name__ == "__main__":
    raise SystemExit(main())
