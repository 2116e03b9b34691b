"""The machine a run measures on, and the memory of this process (Linux /proc, with portable fallbacks)."""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

from enzh.runtime.cpu import INT8_FLAGS, cpu_features

MIB = 1024 * 1024
# The packages whose versions a report records next to enzh's (those installed).
VERSIONED = ("onnxruntime", "numpy", "torch", "transformers", "ctranslate2")


def _proc_status_kib(field_name: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_mib() -> float | None:
    kib = _proc_status_kib("VmRSS")
    return None if kib is None else kib / 1024


def peak_rss_mib() -> float:
    """Peak resident set size of this process (VmHWM; ru_maxrss where /proc is missing)."""
    kib = _proc_status_kib("VmHWM")
    if kib is not None:
        return kib / 1024
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MIB if sys.platform == "darwin" else peak / 1024


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux: write 5 to /proc/self/clear_refs); False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return True


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the platform has none)."""
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def versions() -> dict[str, str]:
    """enzh's version and those of :data:`VERSIONED` that are installed (each engine's package is imported)."""
    from enzh.export.versions import package_versions

    return package_versions(VERSIONED)


def _first_field(path: str, prefix: str) -> str | None:
    """The text after the ':' of the first line of ``path`` starting with ``prefix`` (None: none or no file)."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def describe_machine() -> dict[str, Any]:
    cpu = _first_field("/proc/cpuinfo", "model name") or platform.processor() or platform.machine()
    memory_kib = _first_field("/proc/meminfo", "MemTotal:")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    features = cpu_features()
    return {
        "cpu": cpu,
        # The int8-relevant flags (which ONNX Runtime and CTranslate2 kernels run; enzh.runtime.cpu).
        "cpu_flags": None if features.flags is None else [f for f in INT8_FLAGS if f in features.flags],
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "memory_bytes": None if memory_kib is None else int(memory_kib.split()[0]) * 1024,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": versions(),
        "load_average_start": load_average(),
    }
