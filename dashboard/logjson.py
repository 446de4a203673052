"""One JSON object per log line (LOG_FORMAT=json), for log collectors in Kubernetes.

Keys: `time` (UTC, ISO 8601), `level`, `logger`, `message`, `process`, `thread`, `exc_info`
when an exception is logged, and any `extra={...}` fields the call passed.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

# Attributes every LogRecord has: the rest came from `extra=`.
_STANDARD = set(vars(logging.LogRecord("x", logging.INFO, "x", 0, "", (), None))) | {
    "message",
    "asctime",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
            "thread": record.threadName,
        }
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = (
                    value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
                )
        return json.dumps(entry, ensure_ascii=False)
