"""Which accelerators this machine has, found without importing torch or a device runtime.

`device=auto` and the launcher must know whether there is a TPU before anything imports
torch_tpu: importing it starts the TPU runtime's discovery and costs seconds even where
there is no TPU, and a process that touches a TPU claims it from the ranks the launcher is
about to start. So the facts come from sysfs and /dev, as TorchTPU's own launcher finds
them: a TPU is a PCI function of Google's vendor id (0x1ae0) whose device id names a TPU
generation, counted only when its IOMMU group is open to us under /dev/vfio. A GPU is one
of NVIDIA's device nodes.

TORCH_TPU_TOPOLOGY for one host is the chip mesh of that many devices, by generation
(the shapes Cloud TPU VMs have; TPU7x adds a fourth dimension, its two devices per chip).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

GOOGLE_PCI_VENDOR = "0x1ae0"

# PCI device id -> TPU generation, as the TPU runtimes name them.
TPU_PCI_DEVICE_IDS = {
    "0x005e": "v4",
    "0x0062": "v5p",
    "0x0063": "v5e",
    "0x006f": "v6e",
    "0x0076": "tpu7x",
}

# Devices on one host -> its chip mesh ("x,y,z", TPU7x "x,y,z,cores"), per generation.
_CUBE = {1: "1,1,1", 2: "1,2,1", 4: "2,2,1", 8: "2,2,2"}
HOST_TOPOLOGY: dict[str, dict[int, str]] = {
    "v4": _CUBE,
    "v5p": _CUBE,
    "v5e": {1: "1,1,1", 4: "2,2,1", 8: "2,4,1"},
    "v6e": {1: "1,1,1", 4: "2,2,1", 8: "2,4,1"},
    "tpu7x": {2: "1,1,1,2", 4: "1,2,1,2", 8: "2,2,1,2"},
}

NVIDIA_DEVICE_NODES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg")


@dataclass(frozen=True)
class Tpus:
    count: int = 0  # devices this process may open (one rank each)
    generation: str | None = None

    def topology(self, devices: int | None = None) -> str | None:
        """TORCH_TPU_TOPOLOGY of `devices` (default: all) of this host's TPUs; None without a TPU."""
        if self.generation is None:
            return None
        return HOST_TOPOLOGY[self.generation].get(devices if devices is not None else self.count)


def local_tpus(pci_root: Path = Path("/sys/bus/pci/devices"), vfio_root: Path = Path("/dev/vfio")) -> Tpus:
    """The TPU devices of this host that a process can open."""
    count, generation = 0, None
    try:
        entries = list(pci_root.iterdir())
    except OSError:
        return Tpus()
    for dev in entries:
        try:
            if (dev / "vendor").read_text().strip() != GOOGLE_PCI_VENDOR:
                continue
            gen = TPU_PCI_DEVICE_IDS.get((dev / "device").read_text().strip())
            if gen is None:
                continue
            (vfio_root / (dev / "iommu_group").readlink().name).stat()
        except OSError:
            continue
        count += 1
        generation = generation or gen
    return Tpus(count, generation)


def has_nvidia_gpu() -> bool:
    return any(os.path.exists(node) for node in NVIDIA_DEVICE_NODES)
