"""The trainer's cross-field rules and shorthands, written once as data.

`validate()` and `resolve_aliases()` in config.py run these, and `python -m tpu_trainer.schema` writes them
into config.schema.json (`x-rules`), where the language server reads and runs the same ones on every override
line (language-server/src/hydra/rules.ts). A new rule goes here, not as an `if` in validate(): that is what
keeps the editor and the trainer agreeing.

Each expression is a small subset of Python, parsed here with `ast` and by the server with its own parser:
dotted config keys (`model.hidden_size`), literals (ints, floats, 'strings', None, True, False, tuples),
`or` / `and` / `not` (with Python's operand-returning semantics), one comparison per operand (`==`, `!=`,
`<`, `<=`, `>`, `>=`, `in`, `not in`), `+ - * // %` and unary `-` (booleans count as 0/1), and the
functions in FUNCTIONS. A message is text with `{expression}` holes, filled with Python's str() of the value.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# Mesh axes, in mesh order (outermost first). A partition spec in a sharding rule
# names these (or null for a replicated dimension, or a list for several axes).
MESH_AXES = ("data", "fsdp", "tensor", "expert")


class ConfigError(ValueError):
    """A config value that type-checks but makes no sense (named by its full key)."""


def partition_spec_problem(where: str, spec: Any, axes: tuple[str, ...]) -> str | None:
    """Why `spec` is not a partition spec (one entry per dimension: an axis, None, or a list of axes), or None."""
    if not isinstance(spec, (list, tuple)):
        return f"{where} must be a list with one entry per tensor dimension, not {spec!r}"
    for entry in spec:
        for name in entry if isinstance(entry, (list, tuple)) else [entry]:
            if name is not None and name not in axes:
                return f"{where}: {name!r} is not a mesh axis (one of: {', '.join(axes)})"
    return None


def partition_specs_problem(where: str, specs: Mapping[str, Any], axes: tuple[str, ...]) -> str | None:
    """The first problem of a mapping of parameter globs to partition specs, each named `where[glob]`."""
    for pattern, spec in specs.items():
        problem = partition_spec_problem(f"{where}[{pattern!r}]", spec, axes)
        if problem:
            return problem
    return None


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "partition_spec_problem": partition_spec_problem,
    "partition_specs_problem": partition_specs_problem,
}


@dataclass(frozen=True)
class Check:
    """`check` must hold of the config (after the aliases); else ConfigError(message)."""

    check: str
    message: str


@dataclass(frozen=True)
class Alias:
    """A shorthand: when `when` holds, each key is set to its expression's value, in order."""

    when: str
    set: tuple[tuple[str, str], ...]
    note: str


def _mesh_checks() -> list[Check]:
    out = []
    for mesh in ("ici_mesh", "dcn_mesh"):
        minus_ones = " + ".join(f"({mesh}.{a} == -1)" for a in MESH_AXES)
        out.append(Check(f"{minus_ones} <= 1", f"{mesh}: at most one axis may be -1 (all remaining devices)"))
        out.extend(
            Check(f"{mesh}.{a} != 0 and {mesh}.{a} >= -1", f"{mesh}.{a}={{{mesh}.{a}}} must be a positive size or -1")
            for a in MESH_AXES
        )
    return out


ALIASES: tuple[Alias, ...] = (
    # torchprime's recipes set only dataset_config_name and mean WikiText from the hub.
    Alias(
        when="dataset_config_name and data.name == 'bundled'",
        set=(("dataset_name", "dataset_name or 'wikitext'"), ("data.name", "'hf'")),
        note="dataset_config_name={dataset_config_name}: data.name=hf dataset_name={dataset_name}",
    ),
    Alias(
        when="task.name == 'benchmark'",
        set=(("data.name", "'synthetic'"), ("checkpoint.enabled", "False")),
        note="task=benchmark: synthetic tokens, no checkpoints",
    ),
)

_SPECS = repr(MESH_AXES)

CHECKS: tuple[Check, ...] = (
    Check(
        "model.hidden_size % model.num_attention_heads == 0",
        "model.hidden_size={model.hidden_size} is not divisible by "
        "model.num_attention_heads={model.num_attention_heads}",
    ),
    Check(
        "model.hidden_size // model.num_attention_heads % 2 == 0",
        "model.hidden_size / model.num_attention_heads must be even (RoPE rotates pairs)",
    ),
    Check(
        "model.num_attention_heads % model.num_key_value_heads == 0",
        "model.num_key_value_heads={model.num_key_value_heads} must divide "
        "model.num_attention_heads={model.num_attention_heads}",
    ),
    Check(
        "not model.num_local_experts or model.num_experts_per_tok <= model.num_local_experts",
        "model.num_experts_per_tok must not exceed model.num_local_experts",
    ),
    Check(
        "block_size <= model.max_position_embeddings",
        "block_size={block_size} exceeds model.max_position_embeddings={model.max_position_embeddings}",
    ),
    Check(
        "loss.name != 'label_smoothing' or loss.label_smoothing > 0",
        "loss.name=label_smoothing needs loss.label_smoothing > 0 (the loss=label_smoothing preset sets 0.1)",
    ),
    Check(
        "loss.name != 'z_loss' or loss.z_loss > 0",
        "loss.name=z_loss needs loss.z_loss > 0 (the loss=z_loss preset sets 1e-4)",
    ),
    Check("scheduler.decay_ratio <= 1", "scheduler.decay_ratio must be at most 1"),
    Check("data.name != 'file' or data.path", "data.path must be set when data.name=file"),
    Check(
        "data.name != 'hf' or dataset_name",
        "dataset_name must be set when data.name=hf (e.g. dataset_name=wikitext)",
    ),
    Check(
        "not (data.tokenizer == 'byte' and data.name in ('bundled', 'file', 'hf') and model.vocab_size < 256)",
        "model.vocab_size={model.vocab_size} is too small for byte tokens (data.tokenizer=byte)",
    ),
    *_mesh_checks(),
    Check(
        "model.rope_scaling.rope_type != 'llama3' or "
        "model.rope_scaling.high_freq_factor > model.rope_scaling.low_freq_factor",
        "model.rope_scaling.high_freq_factor must exceed model.rope_scaling.low_freq_factor",
    ),
    Check("not model.remat.scan_layers or model.num_hidden_layers >= 1",
          "model.remat.scan_layers needs at least one layer"),
    Check(
        f"not partition_specs_problem('model.sharding.parameters', model.sharding.parameters, {_SPECS})",
        f"{{partition_specs_problem('model.sharding.parameters', model.sharding.parameters, {_SPECS})}}",
    ),
    Check(
        f"not partition_spec_problem('model.sharding.inputs', model.sharding.inputs, {_SPECS})",
        f"{{partition_spec_problem('model.sharding.inputs', model.sharding.inputs, {_SPECS})}}",
    ),
)


_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_ARITH: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def parse(expr: str) -> ast.expr:
    """The expression's tree; ValueError for anything outside the subset (so both sides can run every rule)."""
    tree = ast.parse(expr, mode="eval").body
    for node in ast.walk(tree):
        ok = isinstance(
            node,
            (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.BinOp, ast.Compare, ast.Name,
             ast.Attribute, ast.Constant, ast.Tuple, ast.Call, ast.Load, *_COMPARE, *_ARITH),
        )
        if not ok:
            raise ValueError(f"{expr!r}: {type(node).__name__} is outside the rules' expression language")
        if isinstance(node, ast.Compare) and len(node.ops) != 1:
            raise ValueError(f"{expr!r}: one comparison at a time (no chains)")
        if isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS
                                           or node.keywords):
            raise ValueError(f"{expr!r}: only the functions {sorted(FUNCTIONS)}, with positional arguments")
        if isinstance(node, ast.Attribute) and _dotted(node) is None:
            raise ValueError(f"{expr!r}: attributes only of config keys")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, type(None))):
            raise ValueError(f"{expr!r}: {node.value!r} is not a literal of the language")
    return tree


def keys_of(expr: str) -> list[str]:
    """The config keys an expression reads (function names excluded)."""
    tree = parse(expr)
    inner = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    inner |= {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    out: list[str] = []
    for node in ast.walk(tree):
        key = _dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in inner else None
        if key and key not in out:
            out.append(key)
    return out


def _get(cfg: Any, key: str) -> Any:
    obj = cfg
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def _set(cfg: Any, key: str, value: Any) -> None:
    *parents, last = key.split(".")
    obj = cfg
    for part in parents:
        obj = getattr(obj, part)
    setattr(obj, last, value)


def evaluate(expr: str, cfg: Any) -> Any:
    """The expression's value on a config (a TrainConfig, or any object with the keys as attributes)."""

    def ev(node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple):
            return tuple(ev(e) for e in node.elts)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return _get(cfg, _dotted(node) or "")
        if isinstance(node, ast.BoolOp):
            value = ev(node.values[0])
            for operand in node.values[1:]:
                if (not value) if isinstance(node.op, ast.And) else bool(value):
                    return value
                value = ev(operand)
            return value
        if isinstance(node, ast.UnaryOp):
            return (not ev(node.operand)) if isinstance(node.op, ast.Not) else -ev(node.operand)
        if isinstance(node, ast.BinOp):
            return _ARITH[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Compare):
            return _COMPARE[type(node.ops[0])](ev(node.left), ev(node.comparators[0]))
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            return FUNCTIONS[node.func.id](*(ev(a) for a in node.args))
        raise ValueError(f"{expr!r}: cannot evaluate {type(node).__name__}")

    return ev(parse(expr))


def fill(template: str, cfg: Any) -> str:
    """A message with each `{expression}` replaced by str() of its value."""
    out, i, start, depth = [], 0, 0, 0
    for j, c in enumerate(template):
        if c == "{":
            if depth == 0:
                out.append(template[i:j])
                start = j + 1
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                out.append(str(evaluate(template[start:j], cfg)))
                i = j + 1
    out.append(template[i:])
    return "".join(out)


def apply_aliases(cfg: Any) -> list[str]:
    """Apply ALIASES to the config in place; the log lines saying what was inferred."""
    notes = []
    for alias in ALIASES:
        if evaluate(alias.when, cfg):
            for key, expr in alias.set:
                _set(cfg, key, evaluate(expr, cfg))
            notes.append(fill(alias.note, cfg))
    return notes


def run_checks(cfg: Any) -> None:
    """Raise ConfigError with the message of the first check that does not hold."""
    for rule in CHECKS:
        if not evaluate(rule.check, cfg):
            raise ConfigError(fill(rule.message, cfg))


def export(known_keys: set[str]) -> dict[str, Any]:
    """The rules as the schema's `x-rules`; ValueError when a rule reads a key the config does not have."""
    for text in [c.check for c in CHECKS] + [a.when for a in ALIASES] + [e for a in ALIASES for _, e in a.set]:
        unknown = [k for k in keys_of(text) if k not in known_keys]
        if unknown:
            raise ValueError(f"rule {text!r} reads {unknown}, which the config does not have")
    return {
        "description": "Cross-field checks and shorthands of the trainer (tpu_trainer/rules.py): the aliases run "
        "first, in order, then every check must hold. Expressions are the Python subset rules.py describes.",
        "functions": sorted(FUNCTIONS),
        "aliases": [{"when": a.when, "set": [list(s) for s in a.set], "note": a.note} for a in ALIASES],
        "checks": [dataclasses.asdict(c) for c in CHECKS],
    }
