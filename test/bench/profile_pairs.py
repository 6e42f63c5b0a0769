#!/usr/bin/env python3
"""Times commands that parse the same profile, alternating them rep by rep: wall time and peak RSS of each
process (its own rusage from wait4, as /usr/bin/time's %M reads it).

Used by runview.bench.ts for "ours against xprof", and on its own where the TypeScript bench cannot run (a
machine with node and the prebuilt bundles but no node_modules):

    python3 test/bench/profile_pairs.py --reps 5 --json out.json \
        --cmd "ours=node drive.js profile-worker.js big.xplane.pb" \
        --cmd "xprof=python3 -c '...' big.xplane.pb"

Alternating keeps both under the same load on a shared machine; every rep is reported, with the medians and the
median of the per-rep ratios to the first command.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time


class CommandFailedError(Exception):
    pass


def run(argv):
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert p.stdout is not None  # stdout=PIPE
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall_ms = (time.perf_counter() - t) * 1000
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise CommandFailedError(f"{argv[0]} exited with {code}: {out.decode(errors='replace')[-2000:]}")
    # ru_maxrss is in KiB on Linux.
    return {"wallMs": round(wall_ms, 1), "maxRssMB": round(usage.ru_maxrss / 1024, 1),
            "out": out.decode(errors="replace")[-400:]}


def times(ratio):
    """A ratio as the report prints it: two decimals and a multiplication sign."""
    return f"{ratio:.2f}×"  # noqa: RUF001 -- output text: a multiplication sign, not a typo for x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cmd", action="append", required=True,
                    help="NAME=COMMAND (shell words); the first is the reference")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="write every sample here")
    args = ap.parse_args()
    cmds = []
    for c in args.cmd:
        name, sep, line = c.partition("=")
        if not sep or not name or not line.strip():
            sys.exit(f"--cmd {c!r}: expected NAME=COMMAND")
        cmds.append((name, shlex.split(line)))
    samples: dict[str, list[dict]] = {name: [] for name, _ in cmds}
    for rep in range(args.reps):
        for name, argv in list(cmds):
            try:
                s = run(argv)
            except CommandFailedError as e:
                # The reference failing ends the bench; a peer that fails is reported and left out.
                if name == cmds[0][0]:
                    sys.exit(f"{name} failed: {e}")
                print(f"{name} failed, left out: {e}", file=sys.stderr, flush=True)
                cmds.remove((name, argv))
                del samples[name]
                continue
            samples[name].append(s)
            print(f"rep {rep + 1} {name}: {s['wallMs']:.0f} ms, {s['maxRssMB']:.0f} MB", file=sys.stderr, flush=True)
    ref = cmds[0][0]
    names = [n for n, _ in cmds]
    print("| rep | " + " | ".join(f"{n} ms | {n} MB" for n in names)
          + "".join(f" | {n}/{ref} time | {n}/{ref} memory" for n in names[1:]) + " |")
    print("|---" * (1 + 2 * len(names) + 2 * (len(names) - 1)) + "|")
    for k in range(args.reps):
        cells = [f"{samples[n][k]['wallMs']:.0f} | {samples[n][k]['maxRssMB']:.0f}" for n in names]
        ratios = [f"{times(samples[n][k]['wallMs'] / samples[ref][k]['wallMs'])}"
                  f" | {times(samples[n][k]['maxRssMB'] / samples[ref][k]['maxRssMB'])}" for n in names[1:]]
        print(f"| {k + 1} | " + " | ".join(cells + ratios) + " |")
    med = {n: {key: statistics.median(s[key] for s in samples[n]) for key in ("wallMs", "maxRssMB")} for n in names}

    def rep_ratios(n, key):
        return [samples[n][k][key] / samples[ref][k][key] for k in range(args.reps)]

    per_rep = {n: {"time": statistics.median(rep_ratios(n, "wallMs")),
                   "memory": statistics.median(rep_ratios(n, "maxRssMB"))} for n in names[1:]}
    cells = [f"{med[n]['wallMs']:.0f} | {med[n]['maxRssMB']:.0f}" for n in names]
    ratios = [f"**{times(per_rep[n]['time'])}** | **{times(per_rep[n]['memory'])}**" for n in names[1:]]
    print("| median (ratios: of the per-rep ratios) | " + " | ".join(cells + ratios) + " |")
    for n in names[1:]:
        lo, hi = min(rep_ratios(n, "wallMs")), max(rep_ratios(n, "wallMs"))
        spread = f"{lo:.2f}–{times(hi)}"  # noqa: RUF001 -- output text: an en dash for the range
        print(f"\n{n}/{ref}: time {times(per_rep[n]['time'])} (reps {spread}), "
              f"memory {times(per_rep[n]['memory'])} (medians of the per-rep ratios)")
    if args.json:
        with open(args.json, "w") as f:
            commands = {n: " ".join(shlex.quote(a) for a in argv) for n, argv in cmds}
            json.dump({"reps": args.reps, "commands": commands, "samples": samples, "medians": med, "ratios": per_rep},
                      f, indent=2)


if __name__ == "__main__":
    main()
