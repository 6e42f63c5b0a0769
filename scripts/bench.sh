#!/usr/bin/env bash
# Runs the benchmarks in test/bench/ (each measures ours against a peer in the same run; see BENCHMARKS.md).
# Each prints a markdown table and writes its samples to test-artifacts/bench/<name>.json; the console output
# goes to test-artifacts/bench/<name>.log too.
#   bash scripts/bench.sh            every *.bench.ts
#   bash scripts/bench.sh fanout     only test/bench/fanout.bench.ts
#   bash scripts/bench.sh run-sync   fan-out to 1/4/16/64 sshd vs parallel-ssh, 5,000-file/200 MB sync to 16 hosts
#                                     vs rsync (needs pssh, rsync; ~30 min on 2 cores; BENCH_SYNC_* to shrink)
# Env: BENCH_REPS (fan-out repetitions, 15), BENCH_SYNC_REPS (sync repetitions, 7), BENCH_LOGIN_RC=1 (keep the
# login user's ~/.bashrc in sshd sessions), BENCH_VERBOSE=1 (every sample on stderr).
#   bash scripts/bench.sh lsp        the language server against yaml-language-server (BENCH_LSP_REPS 5,
#                                     BENCH_LSP_VALIDATIONS 500)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -f scripts/env.sh ]; then . scripts/env.sh; fi
mkdir -p test-artifacts/bench

if [ $# -gt 0 ]; then
  # A name with a test/bench/<name>_bench.py is a trainer bench (Python, the venv's python3 via env.sh):
  #   bash scripts/bench.sh cce ckpt     (not part of the default set: the full-size cce bench takes ~30 min on 2 cores)
  benches=(); for n in "$@"; do
    if [ -f "test/bench/${n}_bench.py" ]; then benches+=("test/bench/${n}_bench.py"); else benches+=("test/bench/$n.bench.ts"); fi
  done
else
  benches=(test/bench/*.bench.ts)
fi

echo "machine: $(nproc) CPUs, $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1), load $(cut -d' ' -f1-3 /proc/loadavg)"
failed=0
for b in "${benches[@]}"; do
  case "$b" in
    *_bench.py) name=$(basename "$b" _bench.py); cmd=(python3 "$b" --json "test-artifacts/bench/$name.json") ;;
    *) name=$(basename "$b" .bench.ts); cmd=(node --import tsx "$b") ;;
  esac
  echo "=== bench $name: ${cmd[*]}"
  started=$SECONDS
  if "${cmd[@]}" 2>&1 | tee "test-artifacts/bench/$name.log"; then
    echo "=== bench $name: ok ($((SECONDS - started))s)"
  else
    echo "=== bench $name: FAILED ($((SECONDS - started))s)"
    failed=1
  fi
done
exit $failed
