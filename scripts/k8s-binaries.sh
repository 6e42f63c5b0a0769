#!/usr/bin/env bash
# Builds the Kubernetes control plane the emulator's GKE clusters run, from the Go module proxy, into a cache
# outside the repository, once per version:
#   $TPW_CACHE/k8s/kube-apiserver-<v>/, kube-controller-manager-<v>/, kube-scheduler-<v>/  (k8s.io/kubernetes)
#   $TPW_CACHE/k8s/etcd-<v>/                                    (go.etcd.io/etcd/server/v3)
#   $TPW_CACHE/k8s/jobset-<v>/  the JobSet controller                     (sigs.k8s.io/jobset)
#   $TPW_CACHE/k8s/kueue-<v>/   Kueue's controller manager                 (sigs.k8s.io/kueue)
# The last two with their project's LICENSE, CRDs (crds/) and release manifest (manifests.yaml: config/default
# rendered by kustomize, as each project's release does), from which the emulator installs the CRDs, webhook
# configurations and RBAC.
# The versions are emulator/src/gke/k8s-versions.json's (xpk 1.16.0 pins JobSet v0.10.1 and Kueue v0.17.1).
# Nothing upstream is kept in the repository: each build is a throw-away wrapper module (its go.mod written
# here) that requires the upstream module at that version; Go fetches the sources through GOPROXY.
#
#   bash scripts/k8s-binaries.sh            # build what is missing; prints the cache folder
#   bash scripts/k8s-binaries.sh --check    # exit 1 (and say what) when something is missing; builds nothing
#
# Needs Go >= 1.25 (kueue's go.mod). The build is niced and runs 2 compile jobs: the machine is shared.
# Cold, on a shared 2-core machine at load 16-24 (2026-11-28): etcd 224 s, JobSet 967 s, Kueue 2148 s,
# kube-apiserver 2462 s (with k8s.io/kubernetes' module downloads), kube-controller-manager 722 s, kube-scheduler
# 75 s: 110 min in all, 29 CPU-minutes (so about 15 min on an idle 2-core machine); 1.7 GB of module cache and 6.4 GB
# of Go build cache under ~/go and ~/.cache/go-build. Warm (all in the cache): 0.07 s.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${TPW_CACHE:-$HOME/.cache/tpu-workbench}/k8s"
VERSIONS="$ROOT/emulator/src/gke/k8s-versions.json"
say() { echo "k8s-binaries: $*" >&2; }

version() { sed -n "s/^ *\"$1\": *\"\\(v[^\"]*\\)\".*/\\1/p" "$VERSIONS"; }
K8S=$(version kubernetes); ETCD=$(version etcd); JOBSET=$(version jobset); KUEUE=$(version kueue)
for v in "$K8S" "$ETCD" "$JOBSET" "$KUEUE"; do [ -n "$v" ] || { say "$VERSIONS lacks a version"; exit 2; }; done

# component folder → the file that proves it complete
targets=(
  "kube-apiserver-$K8S/kube-apiserver" "kube-controller-manager-$K8S/kube-controller-manager"
  "kube-scheduler-$K8S/kube-scheduler" "etcd-$ETCD/etcd" "jobset-$JOBSET/manifests.yaml"
  "kueue-$KUEUE/manifests.yaml"
)
missing=()
for t in "${targets[@]}"; do [ -s "$CACHE/$t" ] || missing+=("$t"); done
if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] && { echo "$CACHE"; exit 0; }
  say "missing in $CACHE: ${missing[*]} (run: bash scripts/k8s-binaries.sh)"; exit 1
fi
[ ${#missing[@]} -eq 0 ] && { echo "$CACHE"; exit 0; }

command -v go >/dev/null 2>&1 || { say "Go is not installed (https://go.dev/dl, 1.25 or later): it builds the emulator's Kubernetes binaries"; exit 1; }
mkdir -p "$CACHE"
# Two callers at once (two test runs, two checkouts) build once: the second waits, then finds it done.
exec 9>"$CACHE/.lock"
flock 9

export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod GOMAXPROCS=${GOMAXPROCS:-2}
JOBS=${TPW_GO_JOBS:-2}

# wrapper <dir> <module> <version> [replace lines]: a module whose only requirement is the upstream one.
wrapper() {
  local dir=$1 mod=$2 ver=$3
  rm -rf "$dir"; mkdir -p "$dir"
  printf 'module tpw.invalid/k8s-build\n\ngo 1.25\n\nrequire %s %s\n' "$mod" "$ver" >"$dir/go.mod"
  [ -n "${4:-}" ] && printf '\n%s\n' "$4" >>"$dir/go.mod"
  return 0
}
# build <dir> <out> <package> <version> [ldflags]: `go get` at that version (a bare `go get` would upgrade it to
# the newest) fills go.sum, then the build.
build() {
  local dir=$1 out=$2 pkg=$3 ver=$4 ld=${5:-}
  (cd "$dir" && nice -n 10 go get "$pkg@$ver" && nice -n 10 go build -p "$JOBS" -trimpath -ldflags "-s -w $ld" -o "$out" "$pkg")
}
# install <component folder> <built files...>: atomically, so an interrupted build leaves nothing half-made.
install_dir() {
  local name=$1; shift
  rm -rf "$CACHE/$name.tmp"; mkdir -p "$CACHE/$name.tmp"
  cp -r "$@" "$CACHE/$name.tmp/"
  rm -rf "${CACHE:?}/$name"; mv "$CACHE/$name.tmp" "$CACHE/$name"
}
timed() { local s=$SECONDS; "$@"; say "$* took $((SECONDS - s)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"; }
work=$(mktemp -d "$CACHE/.build-XXXXXX")
trap 'rm -rf "$work"' EXIT

build_etcd() {
  wrapper "$work/etcd" go.etcd.io/etcd/server/v3 "$ETCD"
  build "$work/etcd" "$work/etcd/etcd" go.etcd.io/etcd/server/v3 "$ETCD"
  install_dir "etcd-$ETCD" "$work/etcd/etcd"
}

build_kubernetes() {
  # k8s.io/kubernetes requires its staging modules at v0.0.0 with replaces into its own tree, which a module
  # download lacks: point each at its published v0.<minor>.<patch>.
  local staging="v0.${K8S#v1.}" mod replaces pkgver
  mod=$(cd "$work" && GOFLAGS= go mod download -json "k8s.io/kubernetes@$K8S" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  replaces=$(sed -n 's/^\t\(k8s\.io\/[a-z0-9-]*\) v0\.0\.0$/\1/p' "$mod" | sort -u | sed "s|.*|replace & => & $staging|")
  wrapper "$work/k8s" k8s.io/kubernetes "$K8S" "$replaces"
  local minor=${K8S#v1.}; minor=${minor%%.*}
  pkgver="-X k8s.io/component-base/version.gitVersion=$K8S -X k8s.io/component-base/version.gitMajor=1
    -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean
    -X k8s.io/client-go/pkg/version.gitVersion=$K8S -X k8s.io/client-go/pkg/version.gitMajor=1
    -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  pkgver=$(echo $pkgver)
  for bin in kube-apiserver kube-controller-manager kube-scheduler; do
    [ -x "$CACHE/$bin-$K8S/$bin" ] && continue
    timed build "$work/k8s" "$work/k8s/$bin" "k8s.io/kubernetes/cmd/$bin" "$K8S" "$pkgver"
    install_dir "$bin-$K8S" "$work/k8s/$bin"
  done
}

# kustomize: kubectl's own, else kustomize built from the module proxy.
kustomize() {
  if command -v kubectl >/dev/null 2>&1; then kubectl kustomize "$1"; return; fi
  (cd "$work" && GOFLAGS= go run sigs.k8s.io/kustomize/kustomize/v5@v5.5.0 build "$1")
}
# The controller and the YAML it ships (CRDs, release manifest, LICENSE) come from the same module download.
build_sigs() {
  local name=$1 ver=$2 pkg=$3 exe=$4 src
  wrapper "$work/$name" "sigs.k8s.io/$name" "$ver"
  build "$work/$name" "$work/$name/$exe" "$pkg" "$ver"
  src=$(cd "$work/$name" && go list -m -f '{{.Dir}}' "sigs.k8s.io/$name")
  mkdir -p "$work/$name/crds"
  cp "$src"/config/components/crd/bases/*.yaml "$work/$name/crds/"
  cp "$src/LICENSE" "$work/$name/LICENSE"
  # kustomize writes beside its input: render a writable copy of the module's config/.
  cp -r "$src/config" "$work/$name/config" && chmod -R u+w "$work/$name/config"
  kustomize "$work/$name/config/default" >"$work/$name/manifests.yaml"
  install_dir "$name-$ver" "$work/$name/$exe" "$work/$name/crds" "$work/$name/LICENSE" "$work/$name/manifests.yaml"
}

[ -x "$CACHE/etcd-$ETCD/etcd" ] || timed build_etcd
[ -s "$CACHE/jobset-$JOBSET/manifests.yaml" ] || timed build_sigs jobset "$JOBSET" sigs.k8s.io/jobset jobset-controller
[ -s "$CACHE/kueue-$KUEUE/manifests.yaml" ] || timed build_sigs kueue "$KUEUE" sigs.k8s.io/kueue/cmd/kueue kueue
build_kubernetes
echo "$CACHE"
