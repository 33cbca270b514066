"""What a reader of a benchmark report needs to know about the machine it ran on.

A round trip to a loopback Redis costs very different times depending on what an idle CPU
does while a process waits on a socket: on a KVM guest with guest halt polling (Linux's
``haltpoll`` idle driver, 200 µs by default) the CPU polls a little before it sleeps, so a
reply that comes soon wakes nothing; with halt polling off (``guest_halt_poll_ns=0``) every
wait sleeps the virtual CPU and every wake-up goes through the host. W5 pays that twice per
round trip, so its ratio to the in-memory round says as much about this setting as about
the code. The report names it.
"""

from __future__ import annotations

import os
from pathlib import Path

CPUIDLE_DRIVER = Path("/sys/devices/system/cpu/cpuidle/current_driver")
HALT_POLL_NS = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def describe() -> str:
    """One line: CPUs, the idle driver and, under ``haltpoll``, its polling time."""
    parts = [f"{os.cpu_count()} CPUs"]
    driver = _read(CPUIDLE_DRIVER)
    if driver is not None:
        parts.append(f"cpuidle driver {driver}")
    if driver == "haltpoll":
        poll = _read(HALT_POLL_NS)
        if poll == "0":
            parts.append(
                "guest_halt_poll_ns=0 (halt polling off: every wait on a socket sleeps the "
                "virtual CPU; each Redis round trip pays two wake-ups through the host)"
            )
        elif poll is not None:
            parts.append(f"guest_halt_poll_ns={poll}")
    return ", ".join(parts)
