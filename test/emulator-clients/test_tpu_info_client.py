"""Google's tpu-info (PyPI, its client library tpu_info.metrics) against an emulated worker's libtpu metrics service.

Each emulated worker serves libtpu's RuntimeMetricService on its own address, port 8431, as libtpu does on a TPU VM's
loopback. tpu-info's own functions read every metric the run view's Chips tab and `tpw top` show, over its own gRPC
channel (grpcio, local credentials): the emulator speaks libtpu's protocol, not a look-alike. The values follow what
runs on the worker (a busy Python program makes its chips busy and fills their HBM; they go idle when it ends), and
once the chips are idle `tpw top --json` (the product's reader, through SSH) reads the same numbers tpu-info does.

The emulator runs in the foreground on loopback addresses of its own: port 8431 is per address, so no other test's
emulator may share them. The second octet is claimed as test/helpers/loopback.ts claims one for a TS test process
(a lock file naming our pid in the same folder), so the two kinds of tests never meet.
"""

from __future__ import annotations

import atexit
import json
import os
import pathlib
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from tpu_info import device, metrics

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = ROOT / "dist" / "cli.js"
EMULATOR = ROOT / "dist" / "emulator.js"

def _claim_octet() -> int:
    slots = pathlib.Path(tempfile.gettempdir()) / f"tpw-test-loopback-{os.getuid()}"
    slots.mkdir(mode=0o700, exist_ok=True)
    for i in range(231):
        octet = 20 + (os.getpid() + i) % 231
        try:
            with open(slots / str(octet), "x") as f:
                f.write(str(os.getpid()))
        except FileExistsError:
            continue
        atexit.register((slots / str(octet)).unlink, missing_ok=True)
        return octet
    raise RuntimeError(f"no free loopback octet in {slots}")

V5E = device.TpuChip.V5E
GIB = 2**30

# A recipe is one command line: the loop goes through exec, its newlines as \n escapes.
BUSY_RECIPE = (
    r"""python3 -c 'import time; held = bytearray(300 * 2**20); """
    r"""exec("while True:\n t = time.time()\n while time.time() - t < 0.2: pass")'"""
)


@dataclass
class Pod:
    home: pathlib.Path
    workspace: pathlib.Path
    env: dict[str, str]
    address_prefix: str

    def tpw(self, *args: str) -> str:
        argv = ["node", str(CLI), *args]
        out = subprocess.run(argv, cwd=self.workspace, env=self.env, capture_output=True, text=True, timeout=180)
        if out.returncode != 0:
            raise RuntimeError(f"tpw {' '.join(args)} failed ({out.returncode}): {out.stderr or out.stdout}")
        return out.stdout

    def addr(self, worker: int) -> str:
        return f"{self.address_prefix}.{worker + 1}:8431"


def _wait(cond, timeout: float, what: str) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pod]:
    if not (CLI.exists() and EMULATOR.exists()):
        subprocess.run(["node", "scripts/build.mjs"], cwd=ROOT, check=True, timeout=600)
    home = tmp_path_factory.mktemp("tpw-home")
    workspace = tmp_path_factory.mktemp("ws")
    (workspace / "busy.sh").write_text(BUSY_RECIPE + "\n")
    address_prefix = f"127.{_claim_octet()}.62"
    options = {"addressPrefix": address_prefix, "opDelayMs": 20}
    env = {**os.environ, "TPW_HOME": str(home), "TPW_EMULATOR_OPTIONS": json.dumps(options)}
    with open(home / "emulator.out", "w") as log:
        proc = subprocess.Popen(["node", str(EMULATOR), "run"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait(lambda: (home / "emulator" / "endpoint.json").exists(), 60, "the emulator's endpoint file")
            p = Pod(home, workspace, env, address_prefix)
            p.tpw("vm", "create", "pod", "--type", "v5litepod-16")
            yield p
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def test_every_metric_of_the_chips_tab_as_tpu_info_reads_it(pod: Pod) -> None:
    # Before any program: every chip idle, nothing in HBM, but the totals of a v5e chip (tpu-info's 16 GiB).
    for w in range(4):
        usage = metrics.get_chip_usage(V5E, addr=pod.addr(w))
        assert [u.device_id for u in usage] == [0, 1, 2, 3]
        assert all(u.total_memory == 16 * GIB and u.memory_usage == 0 and u.duty_cycle_pct == 0 for u in usage)

    run_id = pod.tpw("run", "busy.sh", "--vm", "pod", "--detach").strip().split()[-1]
    try:
        def busy(w: int) -> bool:
            return all(u.duty_cycle_pct > 1 for u in metrics.get_chip_usage(V5E, addr=pod.addr(w)))

        _wait(lambda: all(busy(w) for w in range(4)), 90, "every worker's chips busy")
        for w in range(4):
            usage = metrics.get_chip_usage(V5E, addr=pod.addr(w))
            # One process drives the host's 4 chips: its ~300 MB resident are theirs, shared.
            assert all(60 * 2**20 < u.memory_usage < u.total_memory for u in usage), usage
            assert all(0 < u.duty_cycle_pct <= 100 for u in usage), usage
            bandwidth = metrics.get_runtime_hbm_utilization(pod.addr(w))
            assert [d for d, _ in bandwidth] == [0, 1, 2, 3] and all(0 < v <= 100 for _, v in bandwidth)
            idle = metrics.get_tensorcore_idle_duration(pod.addr(w))
            assert [d for d, _ in idle] == [0, 1, 2, 3] and all(v >= 0 for _, v in idle)
            queue = metrics.get_hlo_queue_size(V5E, addr=pod.addr(w))
            assert [q.device_id for q in queue] == [0, 1, 2, 3] and all(q.queue_size >= 0 for q in queue)
            timing = metrics.get_hlo_exec_timing(V5E, addr=pod.addr(w))
            assert [t.device_id for t in timing] == [0, 1, 2, 3]
            assert all(t.mean > 0 and 0 < t.p50 <= t.p90 <= t.p95 <= t.p999 for t in timing), timing
            cores = metrics.get_tpuz_info(addr=pod.addr(w))
            assert [(c.chip_id, c.core_type) for c in cores] == [(i, "TPU_CORE_TYPE_TENSOR_CORE") for i in range(4)]
    finally:
        pod.tpw("stop", run_id)

    # The program is gone: idle chips, nothing held, and the idle time counts up.
    def chips_idle(w: int) -> bool:
        return all(u.duty_cycle_pct == 0 and u.memory_usage == 0 for u in metrics.get_chip_usage(V5E, addr=pod.addr(w)))

    _wait(lambda: all(chips_idle(w) for w in range(4)), 60, "every chip idle")
    first = metrics.get_tensorcore_idle_duration(pod.addr(0))
    time.sleep(1.5)
    later = metrics.get_tensorcore_idle_duration(pod.addr(0))
    assert all(b > a for (_, a), (_, b) in zip(first, later, strict=True))

    # The product's own reader (`tpw top`, through each worker's SSH connection) reads what tpu-info reads.
    product = json.loads(pod.tpw("top", run_id, "--json"))
    assert [r["worker"] for r in product] == [0, 1, 2, 3] and all(r["state"] == "ok" for r in product)
    for r in product:
        addr = pod.addr(r["worker"])
        usage = metrics.get_chip_usage(V5E, addr=addr)
        timing = metrics.get_hlo_exec_timing(V5E, addr=addr)
        queue = metrics.get_hlo_queue_size(V5E, addr=addr)
        bandwidth = dict(metrics.get_runtime_hbm_utilization(addr))
        fields = ("chip", "dutyCyclePct", "hbmUsedBytes", "hbmTotalBytes", "hbmBandwidthPct", "queueSize", "execMeanUs",
                  "execP50Us", "execP90Us")
        ours = [tuple(c[f] for f in fields) for c in r["chips"]]
        theirs = [(u.device_id, u.duty_cycle_pct, u.memory_usage, u.total_memory, bandwidth[u.device_id], q.queue_size,
                   t.mean, t.p50, t.p90) for u, q, t in zip(usage, queue, timing, strict=True)]
        assert ours == theirs, f"w{r['worker']}"
