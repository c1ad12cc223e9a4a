"""Whether this machine has an NVIDIA GPU, asked of the kernel driver alone: no library is loaded,
so the rasterizer's and the encoder's choices can ask it cheaply and without a cycle."""
from __future__ import annotations

from pathlib import Path

_NVIDIA_PROC = Path("/proc/driver/nvidia/gpus")


def nvidia_gpu_present(gpu_index: int = 0) -> bool:
    """True when the NVIDIA kernel driver exposes GPU `gpu_index` (no library is loaded to ask)."""
    if Path(f"/dev/nvidia{gpu_index}").exists():
        return True
    try:
        return len(list(_NVIDIA_PROC.iterdir())) > gpu_index
    except OSError:
        return False
