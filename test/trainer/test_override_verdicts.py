"""The trainer's side of issue 16's differential test, and its one-line refusals.

verdicts.json holds what the real trainer does with every line of test/fixtures/overrides/corpus.txt (the
language server's test reads it without Python); these tests recompute a sample live so it cannot drift, and
check that the refusals the override check now makes are single lines naming the override and the fix.
"""

import json
import tempfile

import pytest

from _trainer_helpers import run_trainer
from override_verdicts import VERDICTS, corpus_lines, verdict
from tpu_trainer.overrides import check_overrides

STORED = json.loads(VERDICTS.read_text(encoding="utf-8"))


def test_stored_verdicts_match_the_corpus():
    assert [r["line"] for r in STORED["verdicts"]] == corpus_lines(), f"regenerate: {STORED['command']}"


# Every 7th line and every trainer-side fix of issue 16: enough to catch a trainer change the file missed.
SAMPLE = [r for i, r in enumerate(STORED["verdicts"]) if i % 7 == 0] + [
    r for r in STORED["verdicts"] if r["line"].startswith(("dataset=", "+model.sharding", "model=null"))
]


@pytest.mark.parametrize("row", SAMPLE, ids=[r["line"] for r in SAMPLE])
def test_stored_verdict_is_what_the_trainer_does_now(row):
    with tempfile.TemporaryDirectory() as cwd:
        ok, message = verdict(row["line"], cwd)
    assert (ok, message) == (row["ok"], row["message"]), f"regenerate: {STORED['command']}"


@pytest.mark.parametrize(
    "argv",
    [
        ["dataset=wikitext"],
        ["dataset=synthetic", "model/remat=none"],
        ["+model.sharding.parameters.embed_tokens.weight=[fsdp,null]"],
        ["++model.sharding.parameters.x=[fsdp]"],
        ["hydra/job_logging=disabled", "hydra.run.dir=/tmp/x"],
        ["-m", "seed=1,2"],
    ],
)
def test_check_accepts_what_the_help_offers(argv):
    assert check_overrides(argv) is None


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["model=null"], "a config group cannot be null; write ~model to drop it, or pick one of: "),
        (["model.sharding.parameters.x=[fsdp]"], "write +model.sharding.parameters.x=[fsdp] to add it"),
        (["seed=foo(1)"], "hydra cannot parse override 'seed=foo(1)'"),
        (["batch_size=8"], "did you mean 'global_batch_size'?"),
    ],
)
def test_check_refuses_in_one_line(argv, expected):
    msg = check_overrides(argv)
    assert msg is not None and expected in msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["model=null"], "error: override 'model=null': a config group cannot be null"),
        (
            ["output_dir=${model.nme}"],
            "config error: override 'output_dir=${model.nme}': Interpolation key 'model.nme' not found",
        ),
        (["+seed=3"], "error: Could not append to config. An item is already at 'seed'.; Either remove + prefix"),
    ],
)
def test_the_real_entry_point_refuses_in_one_line(sub_env, args, expected):
    """`python -m tpu_trainer.train`: exit 2 and one stderr line, where these ended in a Python traceback."""
    p = run_trainer([*args, "max_steps=1", "device=cpu"], sub_env, timeout=180)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in p.stderr
    assert len(lines) == 1 and expected in lines[0], p.stderr


@pytest.mark.parametrize(
    ("override", "runs"),
    [("model.name=\\${nothing.here}", True), ("block_size=\\${model.hidden_size}", False)],
)
def test_an_escaped_interpolation_is_resolved_once_as_the_real_trainer_does(sub_env, tmp_path, override, runs):
    """hydra's run resolves the config once: `\\${x}` ends as the text `${x}` (a name may hold it, an int may not)."""
    p = run_trainer([override, "max_steps=1", "device=cpu", "checkpoint.enabled=false", f"output_dir={tmp_path}"],
                    sub_env, timeout=240)
    assert (p.returncode == 0) == runs, p.stderr[-2000:]
    with tempfile.TemporaryDirectory() as cwd:
        ok, message = verdict(f"'{override}'", cwd)
    assert ok == runs, message
