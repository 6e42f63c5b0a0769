#!/usr/bin/env bash
# Installs code-server (VS Code packaged as an npm package) for the end-to-end tests.
#
# Why code-server and not @vscode/test-electron: the test machines can reach package registries
# only, and code-server 4.100.3 (= VS Code 1.100, our engines floor) is on the npm registry and
# runs on Node 20. The install is cached: DEST/.installed-VERSION marks a finished install, so a
# second call returns at once.
#
# Usage: scripts/install-code-server.sh [DEST]
#   DEST defaults to $HOME/.cache/tpu-workbench/code-server; CODE_SERVER_VERSION overrides 4.100.3.
# Afterwards: node DEST/out/node/entry.js --auth none --bind-addr 127.0.0.1:PORT ...
set -euo pipefail

DEST=${1:-${HOME}/.cache/tpu-workbench/code-server}
VERSION=${CODE_SERVER_VERSION:-4.100.3}
STAMP="$DEST/.installed-$VERSION"

if [ -f "$STAMP" ]; then
  echo "code-server $VERSION already installed in $DEST"
  exit 0
fi

log() { printf '[install-code-server] %s\n' "$*"; }

# VS Code's native modules (node-pty, kerberos, native-keymap, @vscode/spdlog...) have no
# prebuilt binaries for this Node on npm, so they compile here and need these headers/tools.
# ripgrep comes from the distribution because @vscode/ripgrep's post-install downloads from GitHub.
packages=(g++ make python3 pkg-config libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev ripgrep)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing system packages (need root to install): ${missing[*]}" >&2
    exit 1
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Install into a staging directory and rename at the end, so an interrupted install never leaves
# a half-built DEST that looks usable.
parent=$(dirname "$DEST")
mkdir -p "$parent"
stage=$(mktemp -d "$parent/.code-server-stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT

log "fetching code-server@$VERSION from the npm registry"
(cd "$stage" && npm pack "code-server@$VERSION" --silent >/dev/null)
mkdir -p "$stage/pkg"
tar xzf "$stage"/code-server-*.tgz -C "$stage/pkg" --strip-components=1
rm -f "$stage"/code-server-*.tgz

# node-pty's install step runs `npx node-gyp`; let npx proceed without a prompt, and build
# against the local Node headers instead of downloading them.
export npm_config_yes=true
if [ -f /usr/include/node/node.h ]; then export npm_config_nodedir=/usr; fi

log "installing code-server's dependencies"
cd "$stage/pkg"
npm install --omit=dev --ignore-scripts --no-audit --no-fund --silent

log "installing VS Code's dependencies"
cd "$stage/pkg/lib/vscode"
npm install --omit=dev --ignore-scripts --no-audit --no-fund --silent
mkdir -p node_modules/@vscode/ripgrep/bin
ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
log "building native modules"
npm rebuild --silent
# The packaged product expects node_modules.asar; an unpacked tree works behind a symlink.
rm -rf node_modules.asar && ln -s node_modules node_modules.asar
(cd bin/remote-cli && ln -sf code-linux.sh code-server)
(cd bin/helpers && ln -sf browser-linux.sh browser.sh)
# argon2 is used only for password auth; the tests run with --auth none, so a failure is fine.
(cd "$stage/pkg" && npm rebuild argon2 --silent) || log "argon2 rebuild failed (only needed for password auth)"

touch "$stage/pkg/.installed-$VERSION"
rm -rf "$DEST"
mv "$stage/pkg" "$DEST"
log "code-server $VERSION installed in $DEST"
