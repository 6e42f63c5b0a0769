#!/usr/bin/env python3
"""Ours against xprof and xprof-rs on the real captures (test/fixtures/profiles/real) and on two >= 200 MB captures
made at run time by repeating a real one (repeated XSpace messages concatenate: N times the planes and events):
the TPU capture (xprof-rs fails on TPU captures) and a JAX GPU capture (where xprof-rs answers). On those, our op
table is checked against the single capture's: every op's count and self time N times.

    . scripts/env.sh && node scripts/build.mjs && python3 test/bench/profiles_real_bench.py [--reps 5] [--big-reps 3]

Each rep runs every command once, in turn (so load changes hit all of them alike), as its own process; wall
time and the process's peak RSS come from wait4 (what /usr/bin/time reports):
- ours, CLI: `bin/tpw profile FILE --json --top 0`, as a user runs it: the native `tpw profile` (dist/tpw-profile,
  the analysis built natively; profiles_native_bench.py compares it with its WebAssembly build and xprof-rs).
- ours, in the extension host: ProfileParser.analyze (the analysis built as WebAssembly, dist/profile.wasm) in a
  process that keeps it (profile-warm.ts, bundled with esbuild as the extension is): the first call, and the median
  of 5 more; no process start (the extension host is running already). And the first call after the parser was
  readied (what the run view does when it opens: the module compiled and the worker started), in a process of its
  own, with the readying's own time noted. And, in a third process, the run view's prefetch: the capture listed,
  analyzed in the background (CaptureAnalyses, on the worker thread), then opened: the click's wait (a lookup) and
  that plus a structured clone of the message the panel posts.
- xprof (PyPI xprof): `xspace_to_tool_data([FILE], 'hlo_stats', {'use_saved_result': False})` on a private copy
  (xprof caches per directory), Python's start and imports included.
- xprof-rs (PyPI xprof-rs): the server, cold: `xprof-rs --logdir DIR` started, one hlo_stats request, stopped
  (its README's "server, cold"); and its agent CLI `get_top_hlo_ops` / `get_overview` on the file.
Results go to stdout as a Markdown table and, with --json, every sample to a file.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

WARM = ""  # the bundled profile-warm.ts, built by main()
SKIP_XPROF_BIG = False  # --no-xprof-big
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL = os.path.join(ROOT, "test", "fixtures", "profiles", "real")
XPROF = (
    "import sys\n"
    "from xprof.convert import raw_to_tool_data as r\n"
    "d, _ = r.xspace_to_tool_data([sys.argv[1]], 'hlo_stats', {'use_saved_result': False})\n"
    "sys.exit(0 if d else 3)\n"
)


def measure(argv, env=None):
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    assert p.stdout is not None
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    return {
        "ms": (time.perf_counter() - t) * 1000,
        "mb": usage.ru_maxrss / 1024,
        "code": os.waitstatus_to_exitcode(status),
        "out": out.decode(errors="replace"),
    }


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def xprof_rs_server(capture, tmp, binary="xprof-rs", prefix=()):
    """Start the server on a log dir holding the capture, request hlo_stats once, stop it.

    `prefix` goes before the command (profiles_cores_bench.py pins it to N cores with taskset)."""
    run = os.path.join(tmp, "logs", "plugins", "profile", "run1")
    os.makedirs(run, exist_ok=True)
    target = os.path.join(run, "host.xplane.pb")
    if not os.path.exists(target):
        os.link(capture, target)
    port = free_port()
    t = time.perf_counter()
    argv = [*prefix, binary, "--logdir", os.path.join(tmp, "logs"), "--port", str(port)]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    body = b""
    try:
        deadline = time.time() + 30
        while True:
            try:
                url = f"http://127.0.0.1:{port}/data/plugin/profile/data?run=run1&tag=hlo_stats&host=host"
                body = urllib.request.urlopen(url, timeout=600).read()
                break
            except urllib.error.HTTPError as e:
                # An answer, but an error (xprof-rs: "An event metadata ID is out of range" on TPU captures).
                body = f"HTTP {e.code}: {e.read().decode(errors='replace')}".encode()
                break
            except (ConnectionError, urllib.error.URLError):
                if time.time() > deadline:
                    raise
                time.sleep(0.005)
    finally:
        ms = (time.perf_counter() - t) * 1000
        p.terminate()
        _, _, usage = os.wait4(p.pid, 0)
    ok = body.startswith(b"{")
    return {"ms": ms, "mb": usage.ru_maxrss / 1024, "code": 0 if ok else 1, "out": body[:200].decode(errors="replace")}


BIG_SOURCES = ("tpu-v6e-4-inference", "jax-te-fused-attn")


def big_capture(tmp, min_mb, source):
    """`source` written N times one after the other, N the least that makes min_mb MiB.

    Returns (path, N, source path)."""
    src = os.path.join(REAL, f"{source}.xplane.pb")
    with open(src, "rb") as f:
        data = f.read()
    n = -(-min_mb * 1024 * 1024 // len(data))
    path = os.path.join(tmp, f"{source}-x{n}.xplane.pb")
    with open(path, "wb") as f:
        f.writelines(data for _ in range(n))
    return path, n, src


def ops_of(capture):
    r = measure([os.path.join(ROOT, "bin", "tpw"), "profile", capture, "--json", "--top", "0"])
    if r["code"] != 0:
        sys.exit(f"tpw profile failed on {capture}: {r['out'][-500:]}")
    return json.loads(r["out"])["ops"]


def repeated_ops_check(big_ops, single, n):
    """Our op table of the repeated capture against the single one's: the same ops, each count and self time n times."""
    one = {(o["program"], o["name"]): o for o in ops_of(single)}
    big = {(o["program"], o["name"]): o for o in big_ops}
    if one.keys() != big.keys():
        return f"ops differ: {len(big)} ops against {len(one)}"
    for k, o in one.items():
        b = big[k]
        if b["count"] != o["count"] * n or abs(b["self_us"] - o["self_us"] * n) > 1e-6 * max(1.0, o["self_us"] * n):
            one_op = f"({o['count']}, {o['self_us']:.3f} µs)"
            return f"op {k[1]}: count {b['count']}, self {b['self_us']:.3f} µs against {n} × {one_op}"  # noqa: RUF001 (the multiplication sign is output text)
    return f"ok: {len(one)} ops, each count and self time × {n}"  # noqa: RUF001 (the multiplication sign is output text)


def warm_bundle(tmp):
    """profile-warm.ts bundled as scripts/build.mjs bundles the extension (esbuild, cjs, node20)."""
    out = os.path.join(tmp, "profile-warm.js")
    esbuild = os.path.join(ROOT, "node_modules", ".bin", "esbuild")
    entry = os.path.join(ROOT, "test", "bench", "profile-warm.ts")
    subprocess.run([esbuild, entry, "--bundle", "--platform=node", "--format=cjs", "--target=node20",
                    "--log-level=warning", f"--outfile={out}"], check=True)
    return out


COLS = ["ours-cli", "ours-host-first", "ours-host-warmed-up", "ours-host-warm", "ours-warm-up", "ours-prefetch",
        "ours-prefetched-open", "ours-prefetched-post", "xprof", "xprof-rs-server", "xprof-rs-top-hlo-ops",
        "xprof-rs-overview"]


def bench(capture, reps, tmp, repeated=None):
    """`repeated`: (N, source capture) when `capture` is a source written N times."""
    name = os.path.basename(capture)
    work = tempfile.mkdtemp(dir=tmp)
    rows: dict[str, list[dict]] = {k: [] for k in COLS}
    notes: dict[str, object] = {}
    for _ in range(reps):
        r = measure([os.path.join(ROOT, "bin", "tpw"), "profile", capture, "--json", "--top", "0"])
        if r["code"] != 0:
            sys.exit(f"tpw profile failed on {name}: {r['out'][-500:]}")
        rows["ours-cli"].append(r)
        ops = json.loads(r["out"])["ops"]
        notes["ours ops"] = len(ops)
        if repeated and "ops x N" not in notes:
            notes["ops x N"] = repeated_ops_check(ops, repeated[1], repeated[0])
        warm_env = dict(os.environ, TPW_PROFILE_WORKER=os.path.join(ROOT, "dist", "profile-worker.js"))
        r = measure(["node", WARM, capture, "5"], env=warm_env)
        w = json.loads(r["out"].strip().splitlines()[-1])
        rows["ours-host-first"].append({"ms": w["firstMs"], "mb": r["mb"], "code": 0})
        rows["ours-host-warm"].append({"ms": w["warmMedianMs"], "mb": r["mb"], "code": 0})
        r = measure(["node", WARM, capture, "0", "--warm-up"], env=warm_env)
        w = json.loads(r["out"].strip().splitlines()[-1])
        rows["ours-host-warmed-up"].append({"ms": w["firstMs"], "mb": r["mb"], "code": 0})
        rows["ours-warm-up"].append({"ms": w["warmUpMs"], "mb": r["mb"], "code": 0})
        r = measure(["node", WARM, capture, "0", "--prefetched"], env=warm_env)
        w = json.loads(r["out"].strip().splitlines()[-1])
        if w["analyses"] != 1 or not w["prefetched"]:
            sys.exit(f"prefetch of {name}: {w['analyses']} analyses, prefetched {w['prefetched']} (expected 1, true)")
        rows["ours-prefetch"].append({"ms": w["prefetchMs"], "mb": r["mb"], "code": 0})
        rows["ours-prefetched-open"].append({"ms": w["openMs"], "mb": r["mb"], "code": 0})
        rows["ours-prefetched-post"].append({"ms": w["postMs"], "mb": r["mb"], "code": 0})
        # xprof caches its op stats next to the capture: a fresh copy (a hard link) in a fresh directory each rep.
        if not (repeated and SKIP_XPROF_BIG):
            d = tempfile.mkdtemp(dir=work)
            copy = os.path.join(d, name)
            os.link(capture, copy)
            rows["xprof"].append(measure([sys.executable, "-c", XPROF, copy]))
            shutil.rmtree(d)
        rows["xprof-rs-server"].append(xprof_rs_server(capture, tempfile.mkdtemp(dir=work)))
        rows["xprof-rs-top-hlo-ops"].append(measure(["xprof-rs", "get_top_hlo_ops", capture]))
        rows["xprof-rs-overview"].append(measure(["xprof-rs", "get_overview", capture]))
    for k in ("xprof-rs-server", "xprof-rs-top-hlo-ops", "xprof-rs-overview", "xprof"):
        bad = [r for r in rows[k] if r["code"] != 0]
        if bad:
            notes[k] = "failed: " + " ".join(bad[0]["out"].split())[:160]
    shutil.rmtree(work)
    return name, os.path.getsize(capture), rows, notes


def med(samples, key):
    return statistics.median(s[key] for s in samples) if samples else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--big-reps", type=int, default=3)
    ap.add_argument("--big-mb", type=int, default=200)
    ap.add_argument("--only", help="substring of the capture names to run")
    ap.add_argument("--json", help="write every sample here")
    ap.add_argument("--no-xprof-big", action="store_true",
                    help="leave xprof (the Python one, ~50 s a run on the big GPU capture) out on the big captures")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tpw-profbench-")
    global WARM, SKIP_XPROF_BIG
    SKIP_XPROF_BIG = args.no_xprof_big
    try:
        WARM = warm_bundle(tmp)
        captures = sorted(os.path.join(REAL, f) for f in os.listdir(REAL) if f.endswith(".xplane.pb"))
        runs: list[tuple[str, int, tuple[int, str] | None]] = [(c, args.reps, None) for c in captures]
        if args.big_reps > 0:
            for source in BIG_SOURCES:
                if args.only and args.only not in f"{source}-x":
                    continue
                path, n, src = big_capture(tmp, args.big_mb, source)
                runs.append((path, args.big_reps, (n, src)))
        if args.only:
            runs = [r for r in runs if args.only in os.path.basename(r[0])]
        results = []
        cols = COLS
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        print("| capture | MB | " + " | ".join(f"{c} ms / MB" for c in cols) + " | notes |")
        print("|---|---|" + "---|" * len(cols) + "---|")
        for capture, reps, repeated in runs:
            name, size, rows, notes = bench(capture, reps, tmp, repeated)
            results.append({"capture": name, "bytes": size, "reps": reps, "samples": rows, "notes": notes})
            digits = {c: 1 if c.startswith("ours-prefetched") else 0 for c in cols}
            cells = [f"{med(rows[c], 'ms'):,.{digits[c]}f} / {med(rows[c], 'mb'):,.0f}" for c in cols]
            noted = "; ".join(f"{k}: {v}" for k, v in notes.items())
            print(f"| {name} | {size / 1e6:.2f} | " + " | ".join(cells) + f" | {noted} |", flush=True)
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
