import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fieldValue, type PodView } from './pod-env';

/**
 * A pod's filesystem on an emulated node. There are no images: a container sees this machine's files, as a VM
 * worker does (its /tmp included, where the emulator and its sandboxes may live), plus its volumes at their mount
 * paths, its own /run, an /etc/hosts naming the pods of its subdomain, and its own hostname. That view is made per container in a user + mount + UTS namespace
 * (`unshare`, no privileges needed): a tmpfs root holding bind mounts of this machine's top-level folders, the
 * volumes bound on top, then `chroot`. Nothing is mounted or created outside the namespace, so the machine's own
 * /dev/shm, /tmp and /etc/hosts are untouched.
 */

type KeyToPath = { key: string; path: string; mode?: number };
export interface VolumeSpec {
  name: string;
  emptyDir?: { medium?: string };
  hostPath?: { path: string };
  configMap?: { name: string; items?: KeyToPath[]; optional?: boolean };
  secret?: { secretName: string; items?: KeyToPath[]; optional?: boolean };
  downwardAPI?: { items?: { path: string; fieldRef?: { fieldPath: string } }[] };
  projected?: {
    sources?: {
      configMap?: { name: string; items?: KeyToPath[]; optional?: boolean };
      secret?: { name: string; items?: KeyToPath[]; optional?: boolean };
      downwardAPI?: { items?: { path: string; fieldRef?: { fieldPath: string } }[] };
      serviceAccountToken?: { path: string; audience?: string; expirationSeconds?: number };
    }[];
  };
  [other: string]: unknown;
}

/** Where a volume's data comes from: ConfigMaps' and Secrets' keys (values as bytes), service-account tokens. */
export interface VolumeSources {
  data(kind: 'Secret' | 'ConfigMap', name: string): Promise<Record<string, Buffer> | undefined>;
  token(audience: string | undefined, expirationSeconds: number | undefined): Promise<string>;
}

export class VolumeError extends Error {}

/** Makes each volume of the pod a folder under `podDir/volumes`; returns name → folder. */
export async function materializeVolumes(pod: PodView, volumes: VolumeSpec[], podDir: string, nodeRoot: string, src: VolumeSources): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const v of volumes) {
    const dir = path.join(podDir, 'volumes', v.name);
    if (v.hostPath) {
      // The node's own filesystem is its sandbox: a hostPath is a folder there, shared by the node's pods.
      const host = path.join(nodeRoot, path.resolve('/', v.hostPath.path));
      fs.mkdirSync(host, { recursive: true });
      out.set(v.name, host);
      continue;
    }
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    out.set(v.name, dir);
    if (v.emptyDir) continue;
    if (v.configMap) await writeKeys(dir, 'ConfigMap', v.configMap.name, v.configMap.items, v.configMap.optional, src);
    else if (v.secret) await writeKeys(dir, 'Secret', v.secret.secretName, v.secret.items, v.secret.optional, src);
    else if (v.downwardAPI) writeDownward(dir, pod, v.downwardAPI.items ?? []);
    else if (v.projected) {
      for (const s of v.projected.sources ?? []) {
        if (s.configMap) await writeKeys(dir, 'ConfigMap', s.configMap.name, s.configMap.items, s.configMap.optional, src);
        else if (s.secret) await writeKeys(dir, 'Secret', s.secret.name, s.secret.items, s.secret.optional, src);
        else if (s.downwardAPI) writeDownward(dir, pod, s.downwardAPI.items ?? []);
        else if (s.serviceAccountToken) writeFile(dir, s.serviceAccountToken.path, Buffer.from(await src.token(s.serviceAccountToken.audience, s.serviceAccountToken.expirationSeconds)));
      }
    } else {
      const kind = Object.keys(v).find((k) => k !== 'name') ?? 'unknown';
      throw new VolumeError(`volume "${v.name}" is of kind ${kind}, which the emulator's nodes do not provide (emptyDir, hostPath, configMap, secret, downwardAPI and projected do)`);
    }
  }
  return out;
}

async function writeKeys(dir: string, kind: 'Secret' | 'ConfigMap', name: string, items: KeyToPath[] | undefined, optional: boolean | undefined, src: VolumeSources): Promise<void> {
  const data = await src.data(kind, name);
  if (!data) {
    if (optional) return;
    throw new VolumeError(`${kind} "${name}" not found`);
  }
  const pairs = items ?? Object.keys(data).map((key) => ({ key, path: key }));
  for (const it of pairs) {
    const value = data[it.key];
    if (value === undefined) {
      if (optional) continue;
      throw new VolumeError(`${kind} "${name}" has no key "${it.key}"`);
    }
    writeFile(dir, it.path, value);
  }
}

function writeDownward(dir: string, pod: PodView, items: { path: string; fieldRef?: { fieldPath: string } }[]): void {
  for (const it of items) if (it.fieldRef) writeFile(dir, it.path, Buffer.from(fieldValue(pod, it.fieldRef.fieldPath)));
}

function writeFile(dir: string, rel: string, data: Buffer): void {
  const file = path.join(dir, path.normalize(rel));
  if (!file.startsWith(`${dir}${path.sep}`)) throw new VolumeError(`path "${rel}" leaves its volume`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, data, { mode: 0o644 });
}

export interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
}

export interface LaunchSpec {
  /** A folder of the pod's own (the container's root is made there, in its namespace). */
  rootDir: string;
  mounts: Mount[];
  hostsFile: string;
  hostname: string;
  workingDir: string;
  argv: string[];
}

let namespacesChecked: boolean | undefined;

/** Whether this machine lets an ordinary process make user + mount namespaces (most Linux kernels do). */
export function namespacesAvailable(): boolean {
  if (namespacesChecked === undefined) {
    try {
      execFileSync('unshare', ['--user', '--map-root-user', '--mount', '--uts', 'true'], { stdio: 'ignore', timeout: 10_000 });
      namespacesChecked = true;
    } catch {
      namespacesChecked = false;
    }
  }
  return namespacesChecked;
}

/**
 * Where `p` is in the container's view: symbolic links of this machine's folders followed (Debian's /var/run is
 * a link to /run, and a service account's token is mounted under /var/run/secrets), except inside /run, which the
 * container has of its own.
 */
export function containerPath(p: string): string {
  const parts = path.resolve('/', p).split('/').filter(Boolean);
  let at = '/';
  for (let i = 0; i < parts.length; i++) {
    if (at === '/run' || at.startsWith('/run/')) return path.join(at, ...parts.slice(i));
    const next = path.join(at, parts[i]);
    let link: string | undefined;
    try {
      link = fs.lstatSync(next).isSymbolicLink() ? fs.readlinkSync(next) : undefined;
    } catch {
      return path.join(at, ...parts.slice(i));
    }
    at = link === undefined ? next : containerPath(path.resolve(at, link));
  }
  return at;
}

/** The argv that runs `spec.argv` in the container's view of the machine. */
export function launchArgv(launcher: string, spec: LaunchSpec): string[] {
  const mountFile = path.join(spec.rootDir, '..', `${path.basename(spec.rootDir)}.mounts`);
  const lines = spec.mounts.map((m) => [m.source, containerPath(m.target), m.readOnly ? 'ro' : 'rw'].join('\t'));
  for (const m of spec.mounts) {
    if (/[\t\n]/.test(m.source + m.target)) throw new VolumeError(`mount path "${m.target}" holds a tab or a newline`);
  }
  fs.mkdirSync(spec.rootDir, { recursive: true });
  fs.writeFileSync(mountFile, lines.length ? `${lines.join('\n')}\n` : '');
  return ['unshare', '--user', '--map-root-user', '--mount', '--uts', '--propagation', 'private', '/bin/sh', launcher, spec.rootDir, mountFile, spec.hostsFile, spec.hostname, containerPath(spec.workingDir), ...spec.argv];
}

/** Writes the launcher into `dir` (once per start: it is the emulator's, not the user's) and returns its path. */
export function writeLauncher(dir: string): string {
  const file = path.join(dir, 'container-launcher.sh');
  fs.writeFileSync(file, LAUNCHER_SCRIPT, { mode: 0o700 });
  return file;
}

/**
 * The script run inside the namespaces. Arguments: root, mount list file (source TAB target TAB ro|rw per line,
 * targets already resolved by containerPath), hosts file, hostname, working dir, then the command. The root is a
 * tmpfs holding this machine's top-level entries, bound; /run is fresh. A mount point or working dir
 * that does not exist is made in the container's own tree; where that tree is a folder of this machine, that
 * folder is first shadowed (a tmpfs holding its entries, bound), so nothing is ever created on the machine.
 */
const LAUNCHER_SCRIPT = `#!/bin/sh
# TPU Workbench emulator: makes a container's view of this machine in fresh namespaces, then runs its command.
set -eu
POD_PATH=$PATH
PATH=/usr/sbin:/usr/bin:/sbin:/bin
R=$1 MOUNTS=$2 HOSTS=$3 NAME=$4 WD=$5
shift 5
CHROOT=$(command -v chroot)
OWN=" / /run "
REAL=" "
bind_entries() {
  p=\${1%/}
  for e in "$p"/* "$p"/.[!.]*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    if [ -z "$p" ]; then case \${e#/} in proc|sys|dev|run) continue ;; esac; fi
    if [ -L "$e" ]; then ln -s "$(readlink "$e")" "$R$e"
    elif [ -d "$e" ]; then mkdir "$R$e"; mount --rbind "$e" "$R$e"; REAL="$REAL$e "
    else touch "$R$e"; mount --bind "$e" "$R$e"; fi
  done
}
holder() {
  best= kind=own
  for x in $OWN; do case "$1/" in "\${x%/}/"*) if [ \${#x} -gt \${#best} ]; then best=$x kind=own; fi ;; esac; done
  for x in $REAL; do case "$1/" in "$x/"*) if [ \${#x} -gt \${#best} ]; then best=$x kind=real; fi ;; esac; done
  echo "$kind"
}
make_path() {
  [ -e "$R$1" ] && return 0
  a=$1
  while [ ! -e "$R$a" ]; do a=$(dirname "$a"); done
  if [ "$(holder "$a")" = real ]; then
    mount -t tmpfs -o mode=755 tpw-shadow "$R$a"
    bind_entries "$a"
    OWN="$OWN$a "
  fi
  if [ "$2" = dir ]; then mkdir -p "$R$1"; else mkdir -p "$R$(dirname "$1")"; touch "$R$1"; fi
}
mount -t tmpfs -o mode=755 tpw-container-root "$R"
bind_entries /
mkdir "$R/proc" "$R/sys" "$R/dev" "$R/run"
mount --rbind /proc "$R/proc"; mount --rbind /sys "$R/sys"; mount --rbind /dev "$R/dev"
mount -t tmpfs -o mode=755 tpw-run "$R/run"
TAB=$(printf '\\t')
while IFS="$TAB" read -r src dst mode; do
  [ -n "$src" ] || continue
  if [ -d "$src" ]; then make_path "$dst" dir; else make_path "$dst" file; fi
  mount --bind "$src" "$R$dst"
  if [ "$mode" = ro ]; then mount -o remount,bind,ro "$R$dst"; fi
  OWN="$OWN$dst "
done < "$MOUNTS"
make_path /etc/hosts file
mount --bind "$HOSTS" "$R/etc/hosts"
hostname "$NAME"
make_path "$WD" dir
PATH=$POD_PATH
exec "$CHROOT" "$R" /bin/sh -c 'cd "$0" && exec "$@"' "$WD" "$@"
`;
