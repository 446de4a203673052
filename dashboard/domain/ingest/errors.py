"""The one exception ingestion raises; the API turns it into a JSON 4xx answer."""

from __future__ import annotations


class IngestError(Exception):
    """A submitted file we refuse. ``message`` is written for the uploader."""

    def __init__(
        self, message: str, status: int = 400, details: dict[str, object] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.details = details or {}  # named extras of the JSON answer (contract: 422)
        self.identity: object | None = None  # ingest.Identity of the refused file, if read

    def __repr__(self) -> str:
        return f"IngestError({self.status}, {self.message!r})"


UNSUPPORTED = (
    "unsupported file: expected an e2e JUnit XML, a Sonobuoy results tarball "
    "or a Hydrophone output (.tar.gz or .zip)"
)
