"""Build (or find in the cache) the qemu guest image with a real SCTP kernel.

The image is Debian's stock 6.1 kernel (SCTP, netfilter, ipvs and 9p as modules), a busybox
initramfs that mounts a 9p root, and a minimal debootstrap root filesystem with python3,
iproute2, iptables, ipvsadm, nftables, pysctp and the project's probe. The packed result
(vmlinuz, initrd.img, rootfs.tar.zst, manifest.json) lives in
``$SCTP_GUEST_CACHE/<key>/`` (default ``~/.cache/sctp-dashboard/guest``), keyed on the kernel
package version, the pysctp version and the content of every file copied into the image, so a
later run only unpacks and boots it.

The slow part (debootstrap, about 45 s) is cached separately as ``base-<base_key>.tar.zst``,
keyed without the project's files: editing the probe or a guest check only re-packs.

Usage: ``python -m lab.guest.build [--force] [--print-key]``. Needs root (debootstrap, device
nodes) and the packages ``lab/guest/install-host-deps.sh`` installs.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PYSCTP_VERSION = "0.7.3"
SUITE = "bookworm"
GUEST_PACKAGES = (
    "python3",
    "iproute2",
    "iptables",
    "ipset",
    "ipvsadm",
    "nftables",
    "kmod",
    "procps",
)
GUEST_PROJECT_DIR = "opt/sctp-dashboard"

# Files whose content defines the base root filesystem (changing them rebuilds it).
BASE_FILES = (HERE / "build.py", HERE / "initramfs-init", HERE / "guest-init.sh")


def project_files() -> dict[str, Path]:
    """Files copied into the guest under /opt/sctp-dashboard, by their path there.

    The guest gets empty package ``__init__`` files: the real ``workers/__init__.py`` imports
    Celery, which the guest does not have and the probe does not need.
    """
    files = {
        "kernel/probe.py": REPO / "kernel" / "probe.py",
        "kernel/battery/nodeparse.py": REPO / "kernel" / "battery" / "nodeparse.py",
    }
    for script in sorted((HERE / "checks").glob("*")):
        if script.is_file():
            files[f"lab/guest/checks/{script.name}"] = script
    return files


def cache_root() -> Path:
    default = Path.home() / ".cache" / "sctp-dashboard" / "guest"
    return Path(os.environ.get("SCTP_GUEST_CACHE") or default)


def _run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, text=True, **kwargs)


def _out(cmd: list[str]) -> str:
    return subprocess.run(cmd, check=True, text=True, capture_output=True).stdout


@dataclass(frozen=True)
class KernelPackage:
    name: str  # linux-image-6.1.0-NN-amd64
    version: str  # the Debian package version, e.g. 6.1.192-3


def kernel_package() -> KernelPackage:
    """The linux-image-6.1.*-amd64 package that linux-image-amd64 depends on right now."""

    def lookup() -> KernelPackage | None:
        try:
            deps = _out(["apt-cache", "depends", "linux-image-amd64"])
        except (OSError, subprocess.CalledProcessError):
            return None
        match = re.search(r"Depends:\s+(linux-image-6\.1\.\S+-amd64)\b", deps)
        if not match:
            return None
        show = _out(["apt-cache", "show", "--no-all-versions", match.group(1)])
        version = re.search(r"^Version:\s*(\S+)", show, re.M)
        return KernelPackage(match.group(1), version.group(1) if version else "unknown")

    found = lookup()
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        # A fresh CI machine may have empty apt lists.
        _run(["apt-get", "update", "-qq"])
        found = lookup()
    if found is None:
        raise RuntimeError("cannot find a linux-image-6.1.*-amd64 package with apt-cache")
    return found


class _Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...


def _hash_files(h: _Hasher, files: dict[str, Path]) -> None:
    for name in sorted(files):
        h.update(name.encode() + b"\0")
        path = files[name]
        h.update(path.read_bytes() if path.exists() else b"<missing>")
        h.update(b"\0")


def image_keys(kernel: KernelPackage) -> tuple[str, str]:
    """(base_key, key): the base root filesystem's key and the whole image's key."""
    base = hashlib.sha256()
    base.update(f"{kernel.name}={kernel.version}\0pysctp={PYSCTP_VERSION}\0{SUITE}\0".encode())
    base.update(",".join(GUEST_PACKAGES).encode())
    _hash_files(base, {p.name: p for p in BASE_FILES})
    base_key = base.hexdigest()[:16]
    full = hashlib.sha256(base_key.encode())
    _hash_files(full, project_files())
    return base_key, full.hexdigest()[:16]


def apt_mirror() -> str:
    """The Debian mirror this machine's apt is configured with (SCTP_GUEST_MIRROR wins)."""
    if os.environ.get("SCTP_GUEST_MIRROR"):
        return os.environ["SCTP_GUEST_MIRROR"]
    sources = sorted(Path("/etc/apt").glob("sources.list.d/*.sources"))
    for path in sources:
        text = path.read_text(errors="replace")
        for stanza in re.split(r"\n\s*\n", text):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
            if uris and suites and SUITE in suites.group(1).split():
                return uris.group(1)
    legacy = [
        Path("/etc/apt/sources.list"),
        *sorted(Path("/etc/apt").glob("sources.list.d/*.list")),
    ]
    for path in legacy:
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and parts[2] == SUITE:
                return next(p for p in parts[1:] if not p.startswith("["))
    return "http://deb.debian.org/debian"


def image_dir(key: str) -> Path:
    return cache_root() / key


def find_image() -> Path | None:
    """The cached image for the current sources, or None when it must be built."""
    _, key = image_keys(kernel_package())
    path = image_dir(key)
    return path if (path / "manifest.json").exists() else None


# ---------------------------------------------------------------- building


def _download_kernel(kernel: KernelPackage, downloads: Path) -> Path:
    downloads.mkdir(parents=True, exist_ok=True)
    existing = sorted(downloads.glob(f"{kernel.name}_{kernel.version.replace(':', '%3a')}_*.deb"))
    if existing:
        return existing[0]
    _run(["apt-get", "download", "-q", f"{kernel.name}={kernel.version}"], cwd=downloads)
    found = sorted(downloads.glob(f"{kernel.name}_*.deb"))
    if not found:
        raise RuntimeError(f"apt-get download {kernel.name} left no .deb in {downloads}")
    return found[-1]


def _download_pysctp(downloads: Path) -> Path:
    existing = sorted(downloads.glob(f"pysctp-{PYSCTP_VERSION}-cp311-*.whl"))
    if existing:
        return existing[0]
    # The guest runs bookworm's python3.11: ask for that wheel whatever python runs this.
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"pysctp=={PYSCTP_VERSION}",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--abi",
            "cp311",
            "--platform",
            "manylinux_2_28_x86_64",
            "--platform",
            "manylinux2014_x86_64",
            "--platform",
            "manylinux1_x86_64",
            "-q",
            "-d",
            str(downloads),
        ]
    )
    return sorted(downloads.glob(f"pysctp-{PYSCTP_VERSION}-cp311-*.whl"))[0]


def _kernel_tree(deb: Path, work: Path) -> tuple[Path, str]:
    tree = work / "kernel"
    _run(["dpkg-deb", "-x", str(deb), str(tree)])
    versions = [p.name for p in (tree / "lib" / "modules").iterdir()]
    if len(versions) != 1:
        raise RuntimeError(f"expected one kernel version in {deb}, found {versions}")
    kver = versions[0]
    # The package ships no modules.dep; modprobe -d needs one.
    _run(["depmod", "-b", str(tree), kver])
    return tree, kver


MODULE_TREES = (
    "kernel/net",
    "kernel/lib",
    "kernel/crypto",
    "kernel/arch",
    "kernel/drivers/virtio",
    "kernel/fs/9p",
    "kernel/fs/netfs",
    "kernel/fs/fscache",
    "kernel/fs/overlayfs",
    "kernel/drivers/net/veth.ko",
    "kernel/drivers/net/virtio_net.ko",
    "kernel/drivers/net/net_failover.ko",
    "kernel/drivers/net/dummy.ko",
)


def _build_base_rootfs(kernel_tree: Path, kver: str, wheel: Path, rootfs: Path) -> None:
    mirror = apt_mirror()
    print(f"build: debootstrap {SUITE} from {mirror}", flush=True)
    _run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(GUEST_PACKAGES)}",
            SUITE,
            str(rootfs),
            mirror,
        ],
        stdout=subprocess.DEVNULL,
    )
    src = kernel_tree / "lib" / "modules" / kver
    dst = rootfs / "lib" / "modules" / kver
    for rel in MODULE_TREES:
        s, d = src / rel, dst / rel
        if not s.exists():
            continue
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():
            shutil.copytree(s, d, dirs_exist_ok=True)
        else:
            shutil.copy2(s, d)
    for meta in src.glob("modules.*"):
        if meta.name in ("modules.order",) or meta.name.startswith("modules.builtin"):
            shutil.copy2(meta, dst / meta.name)
    _run(["depmod", "-b", str(rootfs), kver])
    # pysctp's manylinux wheel bundles libsctp: unzipping it is a complete install.
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(rootfs / "usr" / "local" / "lib" / "python3.11" / "dist-packages")
    busybox = shutil.which("busybox") or "/bin/busybox"
    shutil.copy2(busybox, rootfs / "bin" / "busybox")
    shutil.copy2(HERE / "guest-init.sh", rootfs / "sbin" / "sctp-guest-init")
    os.chmod(rootfs / "sbin" / "sctp-guest-init", 0o755)
    (rootfs / "job").mkdir(exist_ok=True)
    (rootfs / "var" / "lib" / "iptables").mkdir(parents=True, exist_ok=True)
    # The image is shipped packed; drop what a test never reads.
    for junk in (
        "var/cache/apt",
        "var/lib/apt/lists",
        "usr/share/doc",
        "usr/share/man",
        "usr/share/info",
        "usr/share/locale",
        "var/cache/debconf/templates.dat-old",
    ):
        path = rootfs / junk
        if path.is_dir():
            shutil.rmtree(path)
            path.mkdir()
        elif path.exists():
            path.unlink()


def _pack(rootfs: Path, target: Path) -> None:
    tmp = target.with_name(f"{target.name}.{os.getpid()}.partial")  # one per builder
    with open(tmp, "wb") as out:
        tar = subprocess.Popen(
            ["tar", "-C", str(rootfs), "--numeric-owner", "-cf", "-", "."], stdout=subprocess.PIPE
        )
        _run(["zstd", "-3", "-T0", "-q", "-c"], stdin=tar.stdout, stdout=out)
        if tar.wait() != 0:
            raise RuntimeError(f"tar of {rootfs} failed")
    os.replace(tmp, target)  # atomic: a reader sees the whole archive or none


def unpack(archive: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    zstd = subprocess.Popen(["zstd", "-d", "-q", "-c", str(archive)], stdout=subprocess.PIPE)
    root = os.geteuid() == 0
    flags = ["--numeric-owner", "--same-owner"] if root else ["--no-same-owner"]
    _run(
        ["tar", "-C", str(target), *flags, "-xf", "-"],
        stdin=zstd.stdout,
        stderr=None if root else subprocess.DEVNULL,
    )
    zstd.wait()


def _add_project(rootfs: Path) -> None:
    base = rootfs / GUEST_PROJECT_DIR
    if base.exists():
        shutil.rmtree(base)
    for rel, src in project_files().items():
        if not src.exists():
            raise RuntimeError(f"{src} is missing: it goes into the guest image")
        dst = base / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    for pkg in ("kernel", "kernel/battery"):
        (base / pkg / "__init__.py").write_text(
            '"""Guest copy: only the probe and node parsers."""\n'
        )
    # The guest's root is read-only: compile now, with the guest's own python3.
    _run(
        ["chroot", str(rootfs), "python3", "-m", "compileall", "-q", f"/{GUEST_PROJECT_DIR}"],
        stdout=subprocess.DEVNULL,
    )


def _initramfs(kernel_tree: Path, kver: str, work: Path, target: Path) -> None:
    initrd = work / "initramfs"
    for sub in ("bin", "dev", "proc", "sys", "newroot", "modules"):
        (initrd / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy2(shutil.which("busybox") or "/bin/busybox", initrd / "bin" / "busybox")
    shutil.copy2(HERE / "initramfs-init", initrd / "init")
    os.chmod(initrd / "init", 0o755)
    # One module per call: modprobe reads further arguments as module parameters.
    deps = "".join(
        _out(["modprobe", "-d", str(kernel_tree), "-S", kver, "--show-depends", name])
        for name in ("virtio_pci", "9pnet_virtio", "9p")
    )
    order: list[str] = []
    for line in deps.splitlines():
        parts = line.split()
        if parts and parts[0] == "insmod":
            module = Path(parts[1])
            if module.name not in order:
                shutil.copy2(module, initrd / "modules" / module.name)
                order.append(module.name)
    (initrd / "modules" / "order").write_text("\n".join(order) + "\n")
    with open(target, "wb") as out:
        find = subprocess.Popen(["find", ".", "-print0"], cwd=initrd, stdout=subprocess.PIPE)
        cpio = subprocess.Popen(
            ["cpio", "--null", "-o", "-H", "newc", "--quiet"],
            cwd=initrd,
            stdin=find.stdout,
            stdout=subprocess.PIPE,
        )
        _run(["gzip", "-6", "-c"], stdin=cpio.stdout, stdout=out)
        if find.wait() != 0 or cpio.wait() != 0:
            raise RuntimeError("packing the initramfs failed")


def _prune(keep: set[str]) -> None:
    """Keep the two newest images and bases (plus the ones just made); drop the rest."""
    root = cache_root()
    images = sorted(
        (p for p in root.iterdir() if p.is_dir() and (p / "manifest.json").exists()),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in images[2:]:
        if old.name not in keep:
            shutil.rmtree(old, ignore_errors=True)
    bases = sorted(root.glob("base-*.tar.zst"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in bases[2:]:
        if old.name not in keep:
            old.unlink(missing_ok=True)


def build(force: bool = False, log: bool = True) -> Path:
    """Return the image directory for the current sources, building it when needed."""
    started = time.monotonic()
    kernel = kernel_package()
    base_key, key = image_keys(kernel)
    target = image_dir(key)
    if (target / "manifest.json").exists() and not force:
        return target
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    # The cache is shared by every checkout and test run on the machine: one builder at a time,
    # and whoever waited finds the image the other one built.
    with open(root / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "manifest.json").exists() and not force:
            return target
        return _build_locked(kernel, base_key, key, target, root, started, force, log)


def _build_locked(
    kernel: KernelPackage,
    base_key: str,
    key: str,
    target: Path,
    root: Path,
    started: float,
    force: bool,
    log: bool,
) -> Path:
    downloads = root / "downloads"
    with tempfile.TemporaryDirectory(prefix="build-", dir=root) as tmp:
        work = Path(tmp)
        out = work / "image"
        out.mkdir()
        deb = _download_kernel(kernel, downloads)
        kernel_tree, kver = _kernel_tree(deb, work)
        shutil.copy2(kernel_tree / "boot" / f"vmlinuz-{kver}", out / "vmlinuz")
        _initramfs(kernel_tree, kver, work, out / "initrd.img")
        base = root / f"base-{base_key}.tar.zst"
        rootfs = work / "rootfs"
        base_built = False
        if base.exists() and not force:
            if log:
                print(f"build: reusing base root filesystem {base.name}", flush=True)
            unpack(base, rootfs)
        else:
            wheel = _download_pysctp(downloads)
            _build_base_rootfs(kernel_tree, kver, wheel, rootfs)
            _pack(rootfs, base)
            base_built = True
        _add_project(rootfs)
        rootfs_bytes = int(_out(["du", "-sb", str(rootfs)]).split()[0])
        _pack(rootfs, out / "rootfs.tar.zst")
        packed_bytes = sum(p.stat().st_size for p in out.iterdir())
        manifest = {
            "key": key,
            "base_key": base_key,
            "kernel_package": kernel.name,
            "kernel_package_version": kernel.version,
            "kernel_release": kver,
            "pysctp": PYSCTP_VERSION,
            "suite": SUITE,
            "mirror": apt_mirror(),
            "base_built": base_built,
            "build_seconds": round(time.monotonic() - started, 1),
            "rootfs_bytes": rootfs_bytes,
            "packed_bytes": packed_bytes,
        }
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)
    _prune({key, f"base-{base_key}.tar.zst"})
    if log:
        print(
            f"build: image {target} in {manifest['build_seconds']} s, "
            f"packed {packed_bytes / 1e6:.1f} MB "
            f"(root filesystem {rootfs_bytes / 1e6:.0f} MB)",
            flush=True,
        )
    return target


def missing_build_tools() -> list[str]:
    tools = ("debootstrap", "dpkg-deb", "apt-get", "depmod", "modprobe", "cpio", "zstd", "busybox")
    return [t for t in tools if shutil.which(t) is None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when cached")
    parser.add_argument("--print-key", action="store_true", help="print the image key and exit")
    args = parser.parse_args(argv)
    kernel = kernel_package()
    if args.print_key:
        print(image_keys(kernel)[1])
        return 0
    missing = missing_build_tools()
    if missing:
        print(
            f"build: missing tools {missing}; run lab/guest/install-host-deps.sh", file=sys.stderr
        )
        return 2
    print(build(force=args.force))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
