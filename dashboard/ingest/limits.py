"""Bounds on what one submission may make us read, decompress and hold in memory."""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 50 * MiB  # the upload itself (413 above it)
    # Everything an archive may decompress to, members we skip included: a real
    # Sonobuoy tarball with a large resources/ dump stays well under this.
    max_uncompressed: int = 512 * MiB
    max_member_bytes: int = 256 * MiB  # one JUnit file or e2e.log held in memory
    max_members: int = 10_000
    # A zip member that inflates more than this many times its compressed size is a bomb
    # (JUnit XML compresses about 20x; zeros about 1000x).
    max_zip_ratio: int = 200
