import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import versions from './k8s-versions.json';

/**
 * Where the Kubernetes binaries of the emulator's clusters are: built by scripts/k8s-binaries.sh from the Go
 * module proxy into `$TPW_CACHE/k8s/<component>-<version>/` (TPW_CACHE defaults to ~/.cache/tpu-workbench),
 * never into the repository. The versions are k8s-versions.json's (beside this file), which the script reads too.
 */

export const K8S_VERSIONS: Readonly<typeof versions> = versions;

export interface K8sBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  jobset: string;
  /** The JobSet CRD as JobSet's own release ships it. */
  jobsetCrds: string;
  kueue: string;
  kueueCrds: string;
}

export function k8sCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.TPW_CACHE || path.join(os.homedir(), '.cache', 'tpu-workbench'), 'k8s');
}

/** The binaries, or undefined with what is missing. */
export function findK8sBinaries(env: NodeJS.ProcessEnv = process.env): { binaries: K8sBinaries } | { missing: string[] } {
  const dir = k8sCacheDir(env);
  const v = K8S_VERSIONS;
  const at = (component: string, version: string, file: string) => path.join(dir, `${component}-${version}`, file);
  const binaries: K8sBinaries = {
    etcd: at('etcd', v.etcd, 'etcd'),
    kubeApiserver: at('kube-apiserver', v.kubernetes, 'kube-apiserver'),
    kubeControllerManager: at('kube-controller-manager', v.kubernetes, 'kube-controller-manager'),
    kubeScheduler: at('kube-scheduler', v.kubernetes, 'kube-scheduler'),
    jobset: at('jobset', v.jobset, 'jobset-controller'),
    jobsetCrds: at('jobset', v.jobset, 'crds'),
    kueue: at('kueue', v.kueue, 'kueue'),
    kueueCrds: at('kueue', v.kueue, 'crds'),
  };
  const missing = Object.values(binaries).filter((p) => !fs.existsSync(p));
  return missing.length === 0 ? { binaries } : { missing };
}

/** The binaries, or an error that says how to build them. */
export function requireK8sBinaries(env: NodeJS.ProcessEnv = process.env): K8sBinaries {
  const found = findK8sBinaries(env);
  if ('binaries' in found) return found.binaries;
  throw new Error(
    `The emulator's Kubernetes binaries are not built (missing ${found.missing.map((m) => path.relative(k8sCacheDir(env), m)).join(', ')} in ${k8sCacheDir(env)}): ` +
      'run `bash scripts/k8s-binaries.sh` (it needs Go 1.25 or later; the first build takes 10 to 20 minutes).',
  );
}
