import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fieldValue, type PodView } from './pod-env';

/**
 * A pod's filesystem on an emulated node. There are no images: a container sees this machine's files, as a VM
 * worker does, plus its volumes at their mount paths, its own /tmp and /run, an /etc/hosts naming the pods of
 * its subdomain, and its own hostname. That view is made per container in a user + mount + UTS namespace
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
 * a link to /run, and a service account's token is mounted under /var/run/secrets), except inside /run and /tmp,
 * which the container has of its own.
 */
export function containerPath(p: string): string {
  const parts = path.resolve('/', p).split('/').filter(Boolean);
  let at = '/';
  for (let i = 0; i < parts.length; i++) {
    if (at === '/run' || at === '/tmp' || at.startsWith('/run/') || at.startsWith('/tmp/')) return path.join(at, ...parts.slice(i));
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

/**
 * The script run inside the namespaces (written once into the emulator's folder). Arguments: root, mount
 * list file (source TAB target TAB ro|rw per line), hosts file, hostname, working dir, then the command.
 */
export const LAUNCHER_SCRIPT = `#!/bin/sh
# TPU Workbench emulator: makes a container's view of this machine in fresh namespaces, then runs its command.
set -eu
POD_PATH=$PATH
PATH=/usr/sbin:/usr/bin:/sbin:/bin
R=$1 MOUNTS=$2 HOSTS=$3 NAME=$4 WD=$5
shift 5
CHROOT=$(command -v chroot)
mount -t tmpfs -o mode=755 tpw-container-root "$R"
for e in /* /.[!.]*; do
  [ -e "$e" ] || [ -L "$e" ] || continue
  n=\${e#/}
  case $n in proc|sys|dev|run|tmp) continue ;; esac
  if [ -L "$e" ]; then ln -s "$(readlink "$e")" "$R/$n"
  elif [ -d "$e" ]; then mkdir "$R/$n"; mount --rbind "$e" "$R/$n"
  else touch "$R/$n"; mount --bind "$e" "$R/$n"; fi
done
mkdir "$R/proc" "$R/sys" "$R/dev" "$R/run" "$R/tmp"
mount --rbind /proc "$R/proc"; mount --rbind /sys "$R/sys"; mount --rbind /dev "$R/dev"
mount -t tmpfs -o mode=755 tpw-run "$R/run"
mount -t tmpfs -o mode=1777 tpw-tmp "$R/tmp"
mount --bind "$HOSTS" "$R/etc/hosts"
while IFS="$(printf '\\t')" read -r src dst mode; do
  [ -n "$src" ] || continue
  t="$R$dst"
  if [ ! -e "$t" ]; then
    top=\${dst#/}; top=/\${top%%/*}
    case $top in /run|/tmp) ;; *) if [ -e "$top" ]; then echo "emulator: cannot mount a volume at $dst: it does not exist on this machine and its folder $top is this machine's" >&2; exit 126; fi ;; esac
    if [ -d "$src" ]; then mkdir -p "$t"; else mkdir -p "$(dirname "$t")"; touch "$t"; fi
  fi
  mount --bind "$src" "$t"
  [ "$mode" = ro ] && mount -o remount,bind,ro "$t"
done < "$MOUNTS"
hostname "$NAME"
if [ ! -d "$R$WD" ]; then
  top=\${WD#/}; top=/\${top%%/*}
  if [ -e "$top" ] && [ "$top" != /tmp ] && [ "$top" != /run ]; then echo "emulator: workingDir $WD does not exist on this machine" >&2; exit 126; fi
  mkdir -p "$R$WD"
fi
PATH=$POD_PATH
exec "$CHROOT" "$R" /bin/sh -c 'cd "$0" && exec "$@"' "$WD" "$@"
`;
