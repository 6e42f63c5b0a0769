"""JSON Schema of the trainer config, for the TPU Workbench language server.

    python -m tpu_trainer.schema                          # print to stdout
    python -m tpu_trainer.schema trainer/config.schema.json
    python -m tpu_trainer.schema --check trainer/config.schema.json   # exit 1 if stale

Built from the dataclasses in config.py (types, defaults, `help` as description,
`enum`, `minimum`) plus the hydra tree in configs/: the config groups, their
options and each option's values go under the `x-hydra` extension key, so an
editor can complete `model=` and show what a preset sets, with what hydra needs to
compose them (the primary config's defaults list, each option's package and
defaults list); the trainer's cross-field rules (rules.py) go under `x-rules`, so
the editor runs the checks the trainer runs. The output is deterministic (a test
compares it with the checked-in copy).
"""

import dataclasses
import json
import sys
import typing
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from .config import TrainConfig, config_keys
from .rules import export as export_rules

CONFIG_DIR = Path(__file__).parent / "configs"
CONFIG_NAME = "default.yaml"
SCHEMA_URL = "https://json-schema.org/draft/2020-12/schema"

_SCALARS = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _type_schema(tp: Any) -> dict[str, Any]:
    args = typing.get_args(tp)
    if typing.get_origin(tp) is typing.Union and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return {"type": [_SCALARS[inner], "null"]}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    origin = typing.get_origin(tp)
    if origin is dict:
        # Sharding rules: glob -> partition spec (a list of axis names, nulls or lists of axes).
        return {"type": "object", "additionalProperties": {"type": "array"}}
    if origin is list:
        (item,) = args
        return {"type": "array", "items": _type_schema(item) if item in _SCALARS else {}}
    raise TypeError(f"no JSON Schema mapping for {tp!r}")


def dataclass_schema(cls: type, instance: Any = None) -> dict[str, Any]:
    props: dict[str, Any] = {}
    hints = typing.get_type_hints(cls)
    instance = cls() if instance is None else instance
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            # The parent's default for this field (ici_mesh is MeshConfig(fsdp=-1)), not the class's.
            node = dataclass_schema(tp, getattr(instance, f.name))
        else:
            node = _type_schema(tp)
            node["default"] = getattr(instance, f.name)
        if f.metadata.get("help"):
            node["description"] = f.metadata["help"]
        for key in ("enum", "minimum"):
            if key in f.metadata:
                node[key] = f.metadata[key]
        props[f.name] = node
    return {"type": "object", "additionalProperties": False, "properties": props}


def _load_mapping(path: Path) -> dict[str, Any]:
    """A hydra YAML file as a plain dict (every file of the config tree is a mapping)."""
    body = OmegaConf.to_container(OmegaConf.load(path))
    if not isinstance(body, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return {str(k): v for k, v in body.items()}


def _package_of(path: Path, group: str) -> str:
    """Where an option's keys land: its `# @package` header, else hydra's default (the group, dotted)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# @package"):
            return line.split(None, 2)[2].strip()
        if line.strip() and not line.startswith("#"):
            break
    return group.replace("/", ".")


def _defaults_list(path: Path) -> list[Any]:
    """A config file's `defaults:` list as written (`{group: option}` entries and names like `_self_`)."""
    items = _load_mapping(path).get("defaults", []) or []
    return [item if isinstance(item, str) else {str(k): v for k, v in item.items()} for item in items]


def _defaults_of(path: Path, group_prefix: str = "") -> dict[str, str]:
    """Group -> option chosen by a config file's `defaults:` list (relative groups made absolute)."""
    chosen = {}
    for item in _defaults_list(path):
        if isinstance(item, dict):
            for group, option in item.items():
                if not group.startswith("override "):
                    chosen[group_prefix + group] = option
    return chosen


def hydra_groups(config_dir: Path = CONFIG_DIR) -> dict[str, Any]:
    """Config groups (sub-directories of configs/, nested ones as `model/remat`), their options
    and the default selected by default.yaml or, for a nested group, by the parent's default option;
    with each option's package (`packages`) and, where it has one, its defaults list (`defaults_lists`)."""
    defaults = _defaults_of(config_dir / CONFIG_NAME)
    groups: dict[str, Any] = {}
    for group_dir in sorted(p for p in config_dir.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        name = group_dir.relative_to(config_dir).as_posix()
        options, packages, lists = {}, {}, {}
        for yml in sorted(group_dir.glob("*.yaml")):
            body = _load_mapping(yml)
            body.pop("defaults", None)
            options[yml.stem] = body
            packages[yml.stem] = _package_of(yml, name)
            if _defaults_list(yml):
                lists[yml.stem] = _defaults_list(yml)
        groups[name] = {"default": defaults.get(name), "options": options, "packages": packages}
        if lists:
            groups[name]["defaults_lists"] = lists
    # A nested group's default comes from the parent group's default option (model/tiny-llama.yaml
    # says `- remat: none`).
    for name, group in groups.items():
        parent, _, child = name.rpartition("/")
        if parent and group["default"] is None and groups.get(parent, {}).get("default"):
            parent_file = config_dir / parent / f"{groups[parent]['default']}.yaml"
            group["default"] = _defaults_of(parent_file).get(child)
    return groups


def build_schema() -> dict[str, Any]:
    schema = {
        "$schema": SCHEMA_URL,
        "title": "tpu_trainer configuration",
        "description": "Keys accepted by `python -m tpu_trainer.train key=value ...`. "
        "Generated by `python -m tpu_trainer.schema`; do not edit by hand.",
        **dataclass_schema(TrainConfig),
    }
    # Top-level values that default.yaml sets over the dataclass defaults (e.g. the
    # timestamped output_dir) are the defaults a user actually gets.
    root = _load_mapping(CONFIG_DIR / CONFIG_NAME)
    for key, value in root.items():
        if key in schema["properties"] and not isinstance(value, dict):
            schema["properties"][key]["default"] = value
    own = {k: v for k, v in root.items() if k not in ("defaults", "hydra")}
    schema["x-hydra"] = {
        "config_name": "default",
        "defaults": _defaults_list(CONFIG_DIR / CONFIG_NAME),
        "self": own,
        "groups": hydra_groups(),
    }
    schema["x-rules"] = export_rules(set(config_keys()))
    return schema


def render() -> str:
    return json.dumps(build_schema(), indent=2) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    text = render()
    if not paths:
        sys.stdout.write(text)
        return 0
    path = Path(paths[0])
    if check:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            print(f"{path} is stale: run python -m tpu_trainer.schema {path}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


def cli() -> None:
    raise SystemExit(main(sys.argv[1:]))


if __name__ == "__main__":
    cli()
