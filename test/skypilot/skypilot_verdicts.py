"""SkyPilot's own verdict on every task YAML of test/fixtures/task-yaml/corpus: does `sky.Task.from_yaml`
(its JSON-schema check plus the Resources and Task checks behind it) accept the file?

    python test/skypilot/skypilot_verdicts.py            # prints the verdicts as JSON
    python test/skypilot/skypilot_verdicts.py --write    # rewrites test/fixtures/task-yaml/skypilot-verdicts.json

Run it with the SkyPilot venv's interpreter (scripts/python-env.sh makes it: <venv>-skypilot). Nothing here
reaches a cloud: HOME points at a scratch folder, so SkyPilot finds no credentials and no config of the caller.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "test" / "fixtures" / "task-yaml" / "corpus"
OUT = ROOT / "test" / "fixtures" / "task-yaml" / "skypilot-verdicts.json"


def verdicts() -> dict:
    import sky  # imported after HOME is set: SkyPilot reads ~/.sky at import

    out: dict[str, dict[str, bool | str]] = {}
    for path in sorted(CORPUS.glob("*.yaml")):
        try:
            sky.Task.from_yaml(str(path))
            out[path.name] = {"accepted": True}
        except Exception as e:  # SkyPilot raises ValueError, jsonschema errors and others: all mean "refused"
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            out[path.name] = {"accepted": False, "error": f"{type(e).__name__}: {first}"[:300]}
    return out


def main() -> None:
    # SkyPilot's logger writes notes ("Missing runtime_version…") to fd 1: send them to stderr, keep stdout for
    # the JSON.
    json_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    scratch = tempfile.mkdtemp(prefix="sky-home-")
    os.environ["HOME"] = scratch
    import sky

    result = {
        "source": f"skypilot {sky.__version__} (PyPI), sky.Task.from_yaml on each file",
        "command": "$TPW_VENV-skypilot/bin/python test/skypilot/skypilot_verdicts.py --write",
        "verdicts": verdicts(),
    }
    text = json.dumps(result, indent=2, sort_keys=False) + "\n"
    if "--write" in sys.argv:
        OUT.write_text(text)
        print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    else:
        json_out.write(text)
        json_out.flush()


if __name__ == "__main__":
    main()
