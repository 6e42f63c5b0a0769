"""What the trainer expects of a TPU VM's runtime, checked before torch_xla starts the TPU.

A TPU VM's runtime tells each host its accelerator in TPU_ACCELERATOR_TYPE: `v6e-8`,
`v5litepod-16`, `v5p-128` and, on TPU7x (Ironwood, Compute Engine machine type
tpu7x-standard-4t), `tpu7x-8`, which counts TensorCores: a TPU7x VM has 4 chips of
2 TensorCores each, which torch_xla shows as 8 devices. torch_xla must know the chip:
its torch_xla/_internal/tpu.py lists the TPU PCI device ids it drives (TPU7x is 0x0076,
listed in the 2.9.0 release) and parses `tpu7x-N` as generation 7. An older torch_xla
on a TPU7x VM finds no TPU and fails far from the cause, so the trainer says so first.

Multislice (several slices in one run) adds MEGASCALE_NUM_SLICES, MEGASCALE_SLICE_ID,
MEGASCALE_COORDINATOR_ADDRESS and MEGASCALE_PORT on every host (distributed.py reads them).

Pure functions of the environment and of what the installed torch_xla knows, so the
tests check them on any machine.
"""

import re
from collections.abc import Iterable, Mapping

TPU7X_PCI_DEVICE_ID = "0x0076"  # torch_xla/_internal/tpu.py: "TPU 7x"


def generation(accelerator_type: str) -> str | None:
    """'tpu7x-8' -> 'tpu7x', 'v6e-8' -> 'v6e', 'v5litepod-16' -> 'v5litepod'; None when it is no TPU type."""
    m = re.match(r"^((?:v|tpu)\d[a-z]*)-\d+$", accelerator_type.strip().lower())
    return m.group(1) if m else None


def is_tpu7x(env: Mapping[str, str]) -> bool:
    return generation(env.get("TPU_ACCELERATOR_TYPE", "")) in ("tpu7x", "v7x")


def check(env: Mapping[str, str], torch_xla_version: str, known_pci_ids: Iterable[str]) -> list[str]:
    """Problems with this host's TPU runtime that would stop a run, as sentences; [] when none."""
    problems = []
    accel = env.get("TPU_ACCELERATOR_TYPE", "").strip()
    if is_tpu7x(env) and TPU7X_PCI_DEVICE_ID not in set(known_pci_ids):
        problems.append(
            f"this VM is a TPU7x (TPU_ACCELERATOR_TYPE={accel}) but the installed torch_xla {torch_xla_version} "
            f"does not know TPU7x chips (PCI device id {TPU7X_PCI_DEVICE_ID}); install a torch_xla that does "
            f"(2.9.0 does) with its matching libtpu"
        )
    return problems
