"""The trainer's own check of an override line, before hydra runs: every refusal in one line
naming the override and the fix (hydra's own messages span several lines, or end in a traceback).
The language server gives the same verdicts (test/lsp/override-corpus.test.ts)."""

from __future__ import annotations

import dataclasses
import difflib
import re
import sys
import typing

from .config import TrainConfig, config_keys, register_configs
from .schema import CONFIG_DIR


def _config_groups() -> dict[str, list[str]]:
    """The config groups of the trainer's config dir (`model`, `model/remat`, `dataset`, ...) and their options."""
    groups: dict[str, list[str]] = {}
    for f in sorted(CONFIG_DIR.rglob("*.yaml")):
        rel = f.parent.relative_to(CONFIG_DIR).as_posix()
        if rel != ".":
            groups.setdefault(rel, []).append(f.stem)
    return groups


def _open_dict_keys(cls: type = TrainConfig, prefix: str = "") -> list[str]:
    """Keys of the schema that hold a free-form dict (`model.sharding.parameters`): `+key.<new>=...` adds to them."""
    out = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        t = hints.get(f.name, f.type)
        key = f"{prefix}{f.name}"
        if typing.get_origin(t) is dict or t is dict:
            out.append(key)
        elif isinstance(t, type) and dataclasses.is_dataclass(t):
            out.extend(_open_dict_keys(t, key + "."))
    return out


def refuse_bad_overrides(argv: list[str]) -> None:
    """Exit 2 with the one line that says why the override line cannot run (check_overrides, then
    check_composition); return where it can."""
    problem = check_overrides(argv) or check_composition(argv)
    if problem:
        print(problem, file=sys.stderr, flush=True)
        raise SystemExit(2)


def check_overrides(argv: list[str]) -> str | None:
    """Refuse an override line before hydra runs, in one line naming the override and the fix.

    Hydra refuses most of these too, but with several lines (or a traceback, for `group=null`)
    and no suggestion of the key you meant; recipes are typed by hand.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    groups = _config_groups()
    known = set(config_keys())
    open_dicts = _open_dict_keys()
    for arg in argv:
        if arg.startswith("-") or ("=" not in arg and not arg.startswith("~")):
            continue
        try:
            o = parser.parse_override(arg)
        except Exception as e:  # hydra's parser raises several kinds
            detail = next((ln.strip() for ln in str(e).splitlines()[1:] if ln.strip() and "hydra.cc" not in ln), "")
            return (
                f"error: hydra cannot parse override '{arg}'{': ' + detail if detail else ''} "
                f"(quote values with special characters, as hydra's override grammar asks)"
            )
        key = o.key_or_group
        if key == "hydra" or key.startswith(("hydra.", "hydra/")):
            continue
        if key in groups:
            if o.value_type is not None and not o.is_delete() and o.value() is None:
                return (
                    f"error: override '{arg}': a config group cannot be null; write ~{key} to drop it, "
                    f"or pick one of: {', '.join(groups[key])}"
                )
            continue
        if key in known:
            continue
        parent = next((d for d in open_dicts if key.startswith(d + ".")), None)
        if parent is not None:
            if o.is_add() or o.is_force_add():
                continue
            new = key[len(parent) + 1 :]
            return f"error: override '{arg}': {parent} has no key '{new}' yet; write +{arg} to add it"
        hint = difflib.get_close_matches(key, sorted(known | set(groups)), n=1, cutoff=0.6)
        msg = f"error: unknown config key '{key}' in override '{arg}'"
        if hint:
            msg += f"; did you mean '{hint[0]}'?"
        return msg + " (python -m tpu_trainer.train --help lists the keys)"
    return None


def _one_line(e: BaseException) -> str:
    """An OmegaConf/hydra error as one line: its own lines and its cause's, without the object dumps."""
    noise = ("object_type=", "reference_type=", "full_key:", "Set the environment variable")
    parts: list[str] = []
    for err in (e, e.__cause__):
        for ln in str(err or "").splitlines():
            ln = ln.strip()
            if ln and not ln.startswith(noise):
                parts.append(ln)
    return "; ".join(dict.fromkeys(parts)) or type(e).__name__


def _interpolations(arg: str) -> list[str]:
    """The keys of the `${...}` in an override (`${model.nme}` -> model.nme), to match an error to it."""
    return [m.split(":")[-1].strip() for m in re.findall(r"\$\{([^}]*)\}", arg)]


def check_composition(argv: list[str]) -> str | None:
    """Compose and resolve the config as hydra's run will, and say in one line why it cannot be.

    Hydra reports these itself, but a broken `${...}` that reaches hydra.run.dir ends in a traceback and
    its other messages span several lines. Lines with hydra options (`-m`, `--cfg`, ...) are left to hydra.
    """
    if any(a.startswith("-") for a in argv):
        return None
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = compose("default", overrides=list(argv), return_hydra_config=True)
            HydraConfig.instance().set_config(cfg)
            OmegaConf.select(cfg, "hydra.run.dir")  # resolved before the job starts
            job = OmegaConf.masked_copy(cfg, [str(k) for k in cfg if k != "hydra"])
            OmegaConf.to_container(job, resolve=True, throw_on_missing=False)
    except OmegaConfBaseException as e:
        # Name the override that brought the failing value in, else the key it reached.
        key = getattr(e, "full_key", None) or ""
        culprit = next((a for a in argv if key and a.lstrip("+~").split("=", 1)[0] == key), None)
        culprit = culprit or next((a for a in argv if "${" in a and any(p in str(e) for p in _interpolations(a))), None)
        where = f"override '{culprit}'" if culprit else key
        return f"config error: {where + ': ' if where else ''}{_one_line(e)}"
    except (HydraException, ValueError) as e:
        return f"error: {_one_line(e)}"
    finally:
        GlobalHydra.instance().clear()
    return None
