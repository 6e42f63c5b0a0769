"""The metrics record's one schema (protocol/metrics-record.schema.json) and a check of records against it.

The extension checks every metrics.jsonl line against the same file (protocol/metrics-record.ts). jsonschema
is not installed in the trainer's venv, so this checks the keywords the schema uses, as JSON Schema defines
them, and refuses any other: a keyword added to the schema cannot be silently skipped here.
"""

import json
import math
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCHEMA_FILE = REPO / "protocol" / "metrics-record.schema.json"

RECORD_KEYWORDS = {"$schema", "$id", "title", "description", "type", "required", "additionalProperties", "properties"}
PROPERTY_KEYWORDS = {"description", "type", "enum", "minimum"}


def read_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` if this module can check every keyword in it; else ValueError naming the keyword."""
    unknown = set(schema) - RECORD_KEYWORDS
    if unknown:
        raise ValueError(f"metrics-record.schema.json: keywords {sorted(unknown)} are not checked by {__file__}")
    if schema.get("type") != "object" or schema.get("additionalProperties") is not True:
        raise ValueError("metrics-record.schema.json: the record must be an object that allows other properties")
    for name, prop in schema["properties"].items():
        unknown = set(prop) - PROPERTY_KEYWORDS
        if unknown:
            raise ValueError(
                f"metrics-record.schema.json: keywords {sorted(unknown)} of {name!r} are not checked by {__file__}"
            )
    return schema


def load_schema() -> dict[str, Any]:
    return read_schema(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def _is_type(value: Any, json_type: str) -> bool:
    if json_type == "null":
        return value is None
    if json_type == "boolean":
        return isinstance(value, bool)
    if json_type == "string":
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if json_type == "number":
        return True
    # JSON Schema: an integer is any number with a zero fractional part.
    return json_type == "integer" and (isinstance(value, int) or (math.isfinite(value) and value.is_integer()))


def problems(record: Any, schema: dict[str, Any]) -> list[str]:
    """Why `record` does not fit `schema`, one message per property at fault; empty when it fits."""
    if not isinstance(record, dict):
        return [f"not a JSON object but {type(record).__name__}"]
    out = [f"no {name!r}" for name in schema["required"] if name not in record]
    for name, prop in schema["properties"].items():
        if name not in record:
            continue
        value = record[name]
        types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
        if not any(_is_type(value, t) for t in types):
            out.append(f"{name!r} is {value!r}, expected {' or '.join(types)}")
        elif "enum" in prop and value not in prop["enum"]:
            out.append(f"{name!r} is {value!r}, expected one of {prop['enum']}")
        elif "minimum" in prop and isinstance(value, (int, float)) and value < prop["minimum"]:
            out.append(f"{name!r} is {value!r}, expected at least {prop['minimum']}")
    return out


def _not_json(token: str) -> Any:
    raise ValueError(f"{token} is not JSON (the extension's JSON.parse rejects the line)")


def read_jsonl_strict(path: Path) -> list[Any]:
    """metrics.jsonl parsed as the extension parses it: NaN and Infinity are not JSON."""
    return [json.loads(line, parse_constant=_not_json) for line in path.read_text(encoding="utf-8").splitlines()]
