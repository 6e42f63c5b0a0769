"""What the real trainer does with a line of overrides: accept it, or refuse it and say why.

A corpus line is what a recipe writes after `python -m tpu_trainer.train`. The line goes through bash (quotes,
brace expansion, `${...}` expansion, syntax errors), then what the trainer's main() runs before hydra's (its
override check, and its check of the composed config), then hydra's composition of the trainer's config (the
same config dir and schema `tpu-train` uses; with `-m`, every job of the basic sweeper), then the trainer's
conversion to its dataclass (interpolations resolved once, as hydra's run does: an escaped `\\${...}` stays
literal), its shorthands and its validation. That is everything that runs before the first training step reads
the config.

    python test/trainer/override_verdicts.py            # rewrite test/fixtures/overrides/verdicts.json
    python test/trainer/override_verdicts.py 'seed=1,2'  # one line, printed
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "trainer"))
CORPUS = REPO / "test" / "fixtures" / "overrides" / "corpus.txt"
VERDICTS = REPO / "test" / "fixtures" / "overrides" / "verdicts.json"
GRAMMAR_CASES = REPO / "test" / "fixtures" / "overrides" / "grammar-cases.txt"
GRAMMAR = REPO / "test" / "fixtures" / "overrides" / "grammar.json"
COMMAND = "python test/trainer/override_verdicts.py"


def shell_words(line: str, cwd: str) -> tuple[list[str] | None, str]:
    """The argv bash gives the trainer for `python -m tpu_trainer.train <line>`, or None and bash's error."""
    script = 'printf "%s\\0" ' + line
    # A bare environment and an empty folder: `${x}` expands to nothing and globs match no file, as on a fresh VM.
    p = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "HOME": "/root"},
        capture_output=True,
        text=True,
    )
    if p.returncode != 0 or p.stderr.strip():
        return None, "shell: " + (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
    return p.stdout.split("\0")[:-1], ""


def verdict(line: str, cwd: str) -> tuple[bool, str]:
    """(accepted, the refusal as one line); hydra's config search path names this checkout, written `<repo>` so that
    the stored verdicts hold in any clone."""
    ok, message = _verdict(line, cwd)
    return ok, message.replace(str(REPO), "<repo>")


def _verdict(line: str, cwd: str) -> tuple[bool, str]:
    words, err = shell_words(line, cwd)
    if words is None:
        return False, err
    from hydra import compose, initialize_config_dir
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from tpu_trainer.config import ConfigError, from_omegaconf, register_configs, resolve_aliases, validate
    from tpu_trainer.overrides import check_composition, check_overrides

    multirun = any(w in ("-m", "--multirun") for w in words)
    overrides = [w for w in words if not w.startswith("-")]
    problem = check_overrides(words) or check_composition(words)
    if problem:
        return False, problem
    try:
        if multirun:
            parsed = OverridesParser.create().parse_overrides(overrides)
            jobs = [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]
        else:
            jobs = [overrides]
        register_configs()
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(REPO / "trainer" / "tpu_trainer" / "configs"), version_base="1.3"):
            for job in jobs:
                cfg = compose("default", overrides=list(job), return_hydra_config=True)
                from omegaconf import open_dict

                HydraConfig.instance().set_config(cfg)  # as hydra's run does: ${hydra:...} resolves
                with open_dict(cfg):
                    del cfg["hydra"]
                obj = from_omegaconf(cfg)
                resolve_aliases(obj)
                validate(obj)
    except ConfigError as e:
        return False, f"config error: {e}"
    except BaseException as e:  # every way the run ends before training is a refusal
        msg = str(e).strip().splitlines()
        # `${now:...}` in output_dir: the time of the run is no part of the verdict.
        first = re.sub(r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d", "<now>", msg[0]) if msg else ""
        return False, f"{type(e).__name__}: {first}"
    finally:
        GlobalHydra.instance().clear()
    return True, ""


def plain(v):
    """A parsed hydra value as JSON: primitives as they are, quoted strings as their text, sweeps tagged."""
    from hydra.core.override_parser.types import ChoiceSweep, Glob, IntervalSweep, QuotedString, RangeSweep

    if isinstance(v, QuotedString):
        return v.text
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return {"float": str(v)}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {"dict": {k: plain(x) for k, x in v.items()}}
    if isinstance(v, ChoiceSweep):
        return {"sweep": "choice"}
    if isinstance(v, (RangeSweep, IntervalSweep, Glob)):
        return {"sweep": type(v).__name__}
    return v


def grammar_rows() -> list[dict]:
    """hydra's own parse of each grammar case: accepted or not, the key, and the value."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    rows = []
    for text in GRAMMAR_CASES.read_text(encoding="utf-8").split("\n"):
        if not text or text.startswith("#"):
            continue
        try:
            o = parser.parse_override(text)
        except Exception:  # hydra's refusal is the datum
            rows.append({"override": text, "ok": False})
            continue
        row = {"override": text, "ok": True, "key": o.key_or_group, "type": o.type.name}
        if o.package is not None:
            row["package"] = o.package
        if o.value_type is not None:
            try:
                row["value"] = plain(o.value())
            except Exception:  # a function hydra refuses to evaluate
                row["ok"] = False
        rows.append(row)
    return rows


def corpus_lines() -> list[str]:
    return [ln for ln in CORPUS.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]


def main(argv: list[str]) -> None:
    with tempfile.TemporaryDirectory() as cwd:
        if argv:
            for line in argv:
                print(json.dumps({"line": line, **dict(zip(("ok", "message"), verdict(line, cwd), strict=True))}))
            return
        rows: list[dict[str, object]] = []
        accepted = 0
        for line in corpus_lines():
            ok, msg = verdict(line, cwd)
            rows.append({"line": line, "ok": ok, "message": msg})
            accepted += ok
    GRAMMAR.write_text(
        json.dumps({"command": COMMAND, "cases": grammar_rows()}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    VERDICTS.write_text(
        json.dumps({"command": COMMAND, "verdicts": rows}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"{len(rows)} lines, {accepted} accepted -> {VERDICTS.relative_to(REPO)}")


if __name__ == "__main__":
    os.environ.setdefault("HYDRA_FULL_ERROR", "0")
    main(sys.argv[1:])
