#!/usr/bin/env python3
"""How long `tpw` takes to answer commands that do little, against node's own start (the floor for a node CLI).

    . scripts/env.sh && node scripts/build.mjs && python3 test/bench/cli_start_bench.py [--reps 9]

Each rep runs every command once, in turn, as its own process; wall time and peak RSS from wait4. Also measured:
loading dist/compute.js (@google-cloud/compute, bundled apart), which a command pays only when it makes its
first Compute Engine client.
"""
import argparse
import os
import statistics

from profiles_real_bench import ROOT, measure


def commands(root):
    tpw = os.path.join(root, "bin", "tpw")
    return {
        "node -e 0": ["node", "-e", "0"],
        "tpw --help": [tpw, "--help"],
        "tpw vm create --help": [tpw, "vm", "create", "--help"],
        "tpw flags explain xla_dump_to": [tpw, "flags", "explain", "xla_dump_to"],
        "load dist/compute.js": ["node", "-e", f"require({os.path.join(root, 'dist', 'compute.js')!r})"],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--root", default=ROOT,
                    help="the checkout whose bin/tpw and dist/ to measure (another one: an A/B)")
    args = ap.parse_args()
    cmds = commands(args.root)
    if not os.path.exists(os.path.join(args.root, "dist", "compute.js")):
        del cmds["load dist/compute.js"]
    rows: dict[str, list[dict]] = {k: [] for k in cmds}
    for _ in range(args.reps):
        for name, argv in cmds.items():
            r = measure(argv)
            if r["code"] != 0:
                raise SystemExit(f"{name} failed: {r['out'][-300:]}")
            rows[name].append(r)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| command | ms | MB |")
    print("|---|---|---|")
    for name, runs in rows.items():
        ms = statistics.median(r["ms"] for r in runs)
        mb = statistics.median(r["mb"] for r in runs)
        print(f"| {name} | {ms:,.0f} | {mb:,.0f} |")


if __name__ == "__main__":
    main()
