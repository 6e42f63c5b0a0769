#!/usr/bin/env bash
# The main job, on the local emulator: set up, start the emulator, create an emulated 4-worker TPU slice
# (v5litepod-16, topology 4x4: a Compute Engine managed instance group of 4 VMs, the way Google's current docs
# make TPU VMs) named "demo" if there is none, and run recipes/tiny-llama.sh on every worker with logs
# streaming, ending with the per-worker summary. The emulator keeps running afterwards
# (`node dist/cli.js emulator stop` stops it; its VMs persist in ~/.tpw/emulator/state.json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
tpw() { node dist/cli.js "$@"; }
tpw emulator start
if ! tpw vm list --json | grep -q '"name": ".*/nodes/demo"'; then
  tpw vm create demo --type v5litepod-16 --control-plane compute
fi
tpw vm list
tpw run recipes/tiny-llama.sh --vm demo "$@"
