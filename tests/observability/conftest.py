"""The span tests read spans from the OpenTelemetry SDK: without it they are one "skipped"
line (a failure on CI: tests/_needs.py)."""

from __future__ import annotations

from tests._needs import Suite

NEEDS = Suite(
    __file__,
    ("opentelemetry.sdk",),
    "the otel extra and the SDK: pip install -e '.[dev,otel]' (make test)",
)
collect_ignore_glob = NEEDS.ignored
pytest_collect_file = NEEDS.collect_file
