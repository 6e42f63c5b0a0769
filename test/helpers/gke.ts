/**
 * An emulator with GKE clusters, for the tests of its Kubernetes side: Google's own GKE client
 * (`@google-cloud/container`, REST) on the emulator's REST server, a kubeconfig for its API server (endpoint and
 * CA from the GKE API, the emulator's token), the real kubectl with it, and waiting for what the controllers do.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { v1 as container } from '@google-cloud/container';
import type * as K8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { Emulator, type EmulatorOptions } from '../../emulator/src/emulator';
import { emulatorBearerAuth } from '../../extension/src/core/compute/client';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';

export const KUBECTL = process.env.TPW_KUBECTL || '/usr/bin/kubectl';

/** @kubernetes/client-node 1.x is an ES module; node >= 20.19 requires it from CommonJS, as the product does. */
export function k8sLib(): typeof K8s {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- an ES module required from CommonJS (above)
  return require('@kubernetes/client-node') as typeof K8s;
}

export interface GkeFixture {
  dir: string;
  emu: Emulator;
  ep: EmulatorEndpoint;
  gke: container.ClusterManagerClient;
  project: string;
  /** Stops the emulator and starts it again on the same folder (a new token, new clients). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startGkeEmulator(prefix: string, options: Omit<EmulatorOptions, 'dir'>): Promise<GkeFixture> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const start = async () => {
    const emu = new Emulator({ opDelayMs: 30, ...options, dir: path.join(dir, 'emulator') });
    const ep = await emu.start();
    // The client's own google-gax calls auth.fetch() and getRequestHeaders(): the emulator's token through both.
    const auth = emulatorBearerAuth(ep.token);
    const gke = new container.ClusterManagerClient({
      apiEndpoint: ep.host, port: ep.restPort, protocol: 'http', fallback: true,
      auth: auth as unknown as NonNullable<ConstructorParameters<typeof container.ClusterManagerClient>[0]>['auth'],
    });
    return { emu, ep, gke };
  };
  const f: GkeFixture = {
    dir, ...(await start()), project: '',
    async restart() {
      await f.gke.close();
      await f.emu.stop();
      Object.assign(f, await start());
    },
    async close() {
      await f.gke.close();
      await f.emu.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  f.project = f.ep.project;
  return f;
}

/** Polls a GKE operation until DONE; throws its error. */
export async function waitOperation(f: GkeFixture, location: string, op: { name?: string | null }, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [got] = await f.gke.getOperation({ name: `projects/${f.project}/locations/${location}/operations/${op.name}` });
    if (got.status === 'DONE' || got.status === 3) {
      if (got.error?.message) throw new Error(`operation ${op.name}: ${got.error.message}`);
      return;
    }
    if (Date.now() > deadline) throw new Error(`operation ${op.name} not done after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** A kubeconfig for the cluster as the product builds one: endpoint and CA from the GKE API, the emulator's token. */
export async function kubeconfigFor(f: GkeFixture, location: string, cluster: string, file: string): Promise<{ server: string; caPem: string }> {
  const [c] = await f.gke.getCluster({ name: `projects/${f.project}/locations/${location}/clusters/${cluster}` });
  const server = `https://${c.endpoint}`;
  const caData = c.masterAuth?.clusterCaCertificate ?? '';
  const cfg = {
    apiVersion: 'v1', kind: 'Config', 'current-context': cluster,
    clusters: [{ name: cluster, cluster: { server, 'certificate-authority-data': caData } }],
    users: [{ name: 'emulator', user: { token: f.ep.token } }],
    contexts: [{ name: cluster, context: { cluster, user: 'emulator' } }],
  };
  fs.writeFileSync(file, JSON.stringify(cfg), { mode: 0o600 });
  return { server, caPem: Buffer.from(caData, 'base64').toString('utf8') };
}

/** @kubernetes/client-node for the cluster, configured as the product configures it (server, CA, the token). */
export async function kubeClients(f: GkeFixture, location: string, cluster: string): Promise<{ kc: K8s.KubeConfig; core: K8s.CoreV1Api; custom: K8s.CustomObjectsApi; kubeconfig: string }> {
  const k8s = k8sLib();
  const kubeconfig = path.join(f.dir, `${cluster}.kubeconfig`);
  const { server, caPem } = await kubeconfigFor(f, location, cluster, kubeconfig);
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: cluster, server, caData: Buffer.from(caPem).toString('base64') }],
    users: [{ name: 'emulator', token: f.ep.token }],
    contexts: [{ name: cluster, cluster, user: 'emulator' }],
    currentContext: cluster,
  });
  return { kc, core: kc.makeApiClient(k8s.CoreV1Api), custom: kc.makeApiClient(k8s.CustomObjectsApi), kubeconfig };
}

export interface Ran {
  code: number | null;
  out: string;
  err: string;
}

/** Runs the real kubectl with `kubeconfig`; `input` goes to its stdin. */
export function kubectl(kubeconfig: string, args: string[], input?: string, env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(KUBECTL, [`--kubeconfig=${kubeconfig}`, ...args], { env: { PATH: process.env.PATH, HOME: os.tmpdir(), ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
    child.stdin.end(input ?? '');
  });
}

/** kubectl that must succeed; its stdout parsed as JSON when `-o json` is among the args. */
export async function kubectlOk(kubeconfig: string, args: string[], input?: string): Promise<string> {
  const r = await kubectl(kubeconfig, args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.err.trim()}`);
  return r.out;
}

/** Polls `probe` until it returns a value that is not undefined. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 180_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not so after ${timeoutMs / 1000} s${last ? ` (${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** A JobSet as xpk shapes one (a replicated job per slice, Indexed jobs of one pod per VM), small: `command` runs in each pod. */
export function jobSet(name: string, o: { slices: number; podsPerSlice: number; topology: string; accelerator: string; command: string; queue?: string; chips?: number }): Record<string, unknown> {
  return {
    apiVersion: 'jobset.x-k8s.io/v1alpha2',
    kind: 'JobSet',
    metadata: { name, labels: o.queue ? { 'kueue.x-k8s.io/queue-name': o.queue } : {}, annotations: { 'alpha.jobset.sigs.k8s.io/exclusive-topology': 'cloud.google.com/gke-nodepool' } },
    spec: {
      failurePolicy: { maxRestarts: 0 },
      replicatedJobs: [
        {
          name: 'slice',
          replicas: o.slices,
          template: {
            spec: {
              parallelism: o.podsPerSlice,
              completions: o.podsPerSlice,
              backoffLimit: 0,
              template: {
                spec: {
                  restartPolicy: 'Never',
                  terminationGracePeriodSeconds: 5,
                  nodeSelector: { 'cloud.google.com/gke-tpu-accelerator': o.accelerator, 'cloud.google.com/gke-tpu-topology': o.topology },
                  containers: [
                    {
                      name: 'main',
                      image: 'python:3.11',
                      command: ['bash', '-c', o.command],
                      resources: { limits: { 'google.com/tpu': String(o.chips ?? 4) } },
                    },
                  ],
                },
              },
            },
          },
        },
      ],
    },
  };
}
