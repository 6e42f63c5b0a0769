"""SPMD layout decisions, as pure functions (no torch_xla import).

The mesh has the axes of config.MESH_AXES. `ici_mesh` sizes the axes inside a
slice (chips joined by the inter-chip interconnect), `dcn_mesh` across slices
(data-centre network); each axis of the device mesh is their product, so
`ici_mesh.fsdp=64 dcn_mesh.fsdp=2` is an fsdp axis of 128 devices whose
neighbours share a slice. backends/xla.py turns these decisions into torch_xla
calls; keeping them here lets the tests check them on any machine.
"""

import math
import re
from collections.abc import Iterable
from typing import Any

from .config import MESH_AXES, ConfigError, MeshConfig, ShardingConfig

# A partition spec: one entry per tensor dimension, each None (replicated), an
# axis name, or a tuple of axis names (the dimension split over their product).
Spec = tuple[Any, ...]


def _sizes(mesh: MeshConfig) -> list[int]:
    return [getattr(mesh, a) for a in MESH_AXES]


def resolve_mesh(ici: MeshConfig, dcn: MeshConfig, num_devices: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(ici_shape, dcn_shape) with -1 resolved; raise ConfigError unless they cover num_devices exactly."""
    dcn_sizes = _sizes(dcn)
    if -1 in dcn_sizes:
        raise ConfigError("dcn_mesh axes must be explicit sizes (-1 is only for ici_mesh)")
    slices = math.prod(dcn_sizes)
    if num_devices % slices:
        raise ConfigError(f"dcn_mesh asks for {slices} slices but there are {num_devices} devices in all")
    per_slice = num_devices // slices
    ici_sizes = _sizes(ici)
    if -1 in ici_sizes:
        known = math.prod(n for n in ici_sizes if n != -1)
        if per_slice % known:
            raise ConfigError(
                f"ici_mesh: the fixed axes ({known} devices) do not divide the {per_slice} devices of a slice"
            )
        ici_sizes[ici_sizes.index(-1)] = per_slice // known
    if math.prod(ici_sizes) != per_slice:
        shown = " ".join(f"{a}={n}" for a, n in zip(MESH_AXES, ici_sizes, strict=True))
        raise ConfigError(
            f"ici_mesh ({shown}) has {math.prod(ici_sizes)} devices but each of the {slices} slice(s) has "
            f"{per_slice}; make the axis sizes multiply to {per_slice} (or set one to -1)"
        )
    return tuple(ici_sizes), tuple(dcn_sizes)


def device_mesh_shape(ici_shape: tuple[int, ...], dcn_shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(i * d for i, d in zip(ici_shape, dcn_shape, strict=True))


def _glob(pattern: str) -> re.Pattern:
    # `*` matches one dotted segment (a layer index), `**` any number of them.
    out = []
    for part in re.split(r"(\*\*|\*)", pattern):
        out.append(".*" if part == "**" else "[^.]+" if part == "*" else re.escape(part))
    return re.compile("".join(out) + r"\Z")


def _as_spec(raw: Any) -> Spec:
    return tuple(tuple(e) if isinstance(e, (list, tuple)) else e for e in raw)


def param_specs(named_shapes: Iterable[tuple[str, tuple[int, ...]]], rules: dict[str, Any]) -> dict[str, Spec | None]:
    """Parameter name -> partition spec (None: replicated). First matching rule wins.

    A rule whose spec length differs from the parameter's rank is a config error
    naming both, not a silent replication: a typo there would cost memory quietly.
    """
    compiled = [(p, _glob(p), _as_spec(spec)) for p, spec in rules.items()]
    out: dict[str, Spec | None] = {}
    for name, shape in named_shapes:
        out[name] = None
        for pattern, rx, spec in compiled:
            if rx.match(name):
                if len(spec) != len(shape):
                    raise ConfigError(
                        f"model.sharding.parameters[{pattern!r}] has {len(spec)} entries but parameter {name} "
                        f"has shape {list(shape)} ({len(shape)} dimensions)"
                    )
                out[name] = spec
                break
    return out


def unused_rules(specs: dict[str, Spec | None], rules: dict[str, Any], names: Iterable[str]) -> list[str]:
    """Patterns that matched no parameter (worth a log line: usually a renamed module)."""
    names = list(names)
    return [p for p in rules if not any(_glob(p).match(n) for n in names)]


def input_spec(sharding: ShardingConfig) -> Spec:
    return _as_spec(sharding.inputs)


def batch_split(spec: Spec, mesh_shape: tuple[int, ...]) -> int:
    """How many ways the batch dimension (entry 0 of an input spec) is split."""
    first = spec[0]
    axes = first if isinstance(first, tuple) else (first,) if first else ()
    return math.prod(mesh_shape[MESH_AXES.index(a)] for a in axes)
