"""What this machine's CPU offers the int8 kernels (read from /proc/cpuinfo; nothing is imported or probed).

ONNX Runtime picks its int8 matrix kernels by CPU feature at run time. Its u8s8 kernels (int8 weights) add
pairs of uint8 x int8 products in saturating 16-bit lanes (``vpmaddubsw``) unless the CPU has VNNI (or AMX):
on AVX2-only and on AVX-512 CPUs without VNNI, large activations meet large weights and the sum clips. Its
u8u8 kernels (uint8 weights with a zero point) widen to 16 bits first and are exact everywhere.
docs/precision.md has the measured effect; ``enzh quantize --int8-weights`` chooses the layout.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import dataclass

# Flags worth naming in a report about int8 speed or accuracy (the rest of /proc/cpuinfo's list is left out).
INT8_FLAGS = (
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx_vnni",
    "avx_vnni_int8",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_int8",
)
# Any of these makes ONNX Runtime's u8s8 kernels add products in 32 bits (vpdpbusd / AMX tiles): exact.
_EXACT_U8S8 = ("avx512_vnni", "avx_vnni", "amx_int8")


@dataclass(frozen=True)
class CpuFeatures:
    """The CPU's name and the :data:`INT8_FLAGS` it has (``flags`` is None where /proc/cpuinfo is missing)."""

    name: str
    flags: frozenset[str] | None

    @property
    def x86(self) -> bool:
        return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")

    @property
    def u8s8_saturates(self) -> bool | None:
        """Whether int8 weights (u8s8 kernels) can saturate here: True on x86 without VNNI/AMX, None if unknown."""
        if not self.x86 or self.flags is None:
            return None
        return not any(flag in self.flags for flag in _EXACT_U8S8)

    def summary(self) -> str:
        """One line for reports: the name, then the int8-relevant flags (or why they are unknown)."""
        if self.flags is None:
            return f"{self.name} (CPU flags unknown: no /proc/cpuinfo)"
        named = [flag for flag in INT8_FLAGS if flag in self.flags]
        return f"{self.name}; flags {' '.join(named) or 'none of ' + ', '.join(INT8_FLAGS)}"


@functools.cache
def cpu_features() -> CpuFeatures:
    """This machine's :class:`CpuFeatures` (read once)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())  # the first processor's lines
    except OSError:
        pass
    flags = fields.get("flags", fields.get("Features"))
    return CpuFeatures(
        name=fields.get("model name") or platform.processor() or platform.machine(),
        flags=None if flags is None else frozenset(flags.split()),
    )


__all__ = ["INT8_FLAGS", "CpuFeatures", "cpu_features"]
