"""SkyPilot's own verdict on every task YAML of test/fixtures/task-yaml/corpus: does `sky.Task.from_yaml`
(its JSON-schema check plus the Resources and Task checks behind it) accept the file? And, for a file it accepts
that has relative local paths, where `sky launch` takes them from (`paths`): it is run from a scratch folder
that is not the YAML's, and the workdir and file_mounts sources it resolves (Task.expand_and_validate_workdir,
expand_and_validate_file_mounts, as sky.client.sdk.validate calls them) are stored relative to that folder.

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


def local_paths(path: Path) -> dict | None:
    """The relative workdir and file_mounts sources of an accepted task, as SkyPilot resolves them when run in a
    scratch folder (created there first, since SkyPilot checks they exist), relative to that folder."""
    import sky

    task = sky.Task.from_yaml(str(path))
    workdir = task.workdir if isinstance(task.workdir, str) else None
    sources = {dst: src for dst, src in (task.file_mounts or {}).items() if "://" not in src}
    relative = [p for p in [workdir, *sources.values()] if p and not p.startswith(("/", "~"))]
    if not relative:
        return None
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        cwd = os.path.realpath(scratch)
        for p in relative:
            os.makedirs(os.path.join(cwd, p), exist_ok=True)
        os.chdir(cwd)
        try:
            task.expand_and_validate_workdir()
            task.expand_and_validate_file_mounts()
        finally:
            os.chdir(here)
        out: dict = {}
        resolved = task.workdir
        if workdir and isinstance(resolved, str) and not workdir.startswith(("/", "~")):
            out["workdir"] = os.path.relpath(resolved, cwd)
        expanded = task.file_mounts or {}
        mounts = {dst: os.path.relpath(expanded[dst], cwd) for dst, src in sources.items()
                  if not src.startswith(("/", "~"))}
        if mounts:
            out["file_mounts"] = mounts
        return out


def verdicts() -> dict:
    import sky  # imported after HOME is set: SkyPilot reads ~/.sky at import

    out: dict[str, dict] = {}
    for path in sorted(CORPUS.glob("*.yaml")):
        try:
            sky.Task.from_yaml(str(path))
            out[path.name] = {"accepted": True}
        except Exception as e:  # SkyPilot raises ValueError, jsonschema errors and others: all mean "refused"
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            out[path.name] = {"accepted": False, "error": f"{type(e).__name__}: {first}"[:300]}
            continue
        paths = local_paths(path)
        if paths:
            out[path.name]["paths"] = paths
    return out


# Login names, as sky launch's generated cluster names carry them (common_utils.get_cleaned_username).
USERS = ["alice", "Bob.Smith", "1st_user-", "--x__y--", "ÉLodie", "root", "a" * 70, "user@example.com", "9",
         "Ada_Lovelace"]


def cleaned_users() -> dict[str, str]:
    from sky.utils import common_utils

    return {u: common_utils.get_cleaned_username(u) for u in USERS}


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
        "cleaned_usernames": cleaned_users(),
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
