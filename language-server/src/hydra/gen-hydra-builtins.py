"""Writes hydra-builtins.json: the keys of hydra's own config (`hydra.run.dir`, `hydra.job.chdir`, ...) with their
types, and its config groups (`hydra/job_logging=disabled`, ...) with their options, read from the installed
hydra-core (the trainer's venv). The language server knows them without Python.

    . scripts/env.sh && python language-server/src/hydra/gen-hydra-builtins.py
"""

import json
import os
import sys
from pathlib import Path

import hydra
from hydra.conf import HydraConf
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.nodes import AnyNode, BooleanNode, EnumNode, FloatNode, IntegerNode, StringNode

OUT = Path(__file__).with_name("hydra-builtins.json")


def schema(node) -> dict:
    """JSON Schema for an OmegaConf node, as language-server/src/hydra/model.ts reads it."""
    out: dict = {}
    nullable = node._is_optional()
    if isinstance(node, DictConfig):
        structured = OmegaConf.get_type(node) not in (dict, None)
        out["type"] = ["object", "null"] if nullable else "object"
        if structured:
            out["additionalProperties"] = False
        has_keys = not node._is_missing() and not node._is_none()
        out["properties"] = {k: schema(node._get_node(k)) for k in node} if has_keys else {}
        return out
    if isinstance(node, ListConfig):
        out["type"] = ["array", "null"] if nullable else "array"
        return out
    kind = {IntegerNode: "integer", FloatNode: "number", BooleanNode: "boolean", StringNode: "string"}.get(type(node))
    if isinstance(node, EnumNode):
        out["type"] = "string"
        out["enum"] = [e.name for e in node.enum_type]
    elif kind:
        out["type"] = [kind, "null"] if nullable else kind
    elif not isinstance(node, AnyNode):
        out["type"] = []
    if not node._is_missing() and not node._is_interpolation():
        v = node._value()
        out["default"] = v.name if hasattr(v, "name") and not isinstance(v, (str, int, float, bool)) else v
    return out


def groups() -> dict:
    conf = Path(hydra.__file__).parent / "conf" / "hydra"
    out = {}
    for d in sorted(p for p in conf.iterdir() if p.is_dir()):
        out[f"hydra/{d.name}"] = sorted(f.stem for f in d.glob("*.yaml"))
    # Core plugins registered in code, not as files.
    out.setdefault("hydra/launcher", []).append("basic")
    out.setdefault("hydra/sweeper", []).append("basic")
    return out


def main() -> None:
    cfg = OmegaConf.structured(HydraConf)
    data = {
        "generatedBy": "language-server/src/hydra/gen-hydra-builtins.py",
        "hydraVersion": hydra.__version__,
        "hydra": schema(cfg),
        "groups": groups(),
        "resolvers": ["oc.env", "oc.create", "oc.deprecated", "oc.decode", "oc.select", "oc.dict.keys",
                      "oc.dict.values", "now", "hydra"],
    }
    OUT.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {os.path.relpath(OUT)} (hydra {hydra.__version__})", file=sys.stderr)


if __name__ == "__main__":
    main()
