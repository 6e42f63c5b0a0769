import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readEmulatorEndpoint } from './emulator/endpoint';
import { TpwError } from './errors';
import { emulatorDir, tpwHome } from './paths';
import type { WorkerTarget } from './ssh/types';
import type { TpuApi } from './tpu/api';
import { CloudTpuApi, emulatorTpuApi } from './tpu/cloud';
import { shortName, type TpuNode } from './tpu/models';

/**
 * Where VMs live: the local emulator or a Google Cloud project. Both are reached through the same
 * TpuApi implementation; only endpoints, credentials and SSH settings differ.
 */
export interface BackendOptions {
  /** Use the local emulator (the default when no GCP project is configured). */
  useEmulator: boolean;
  project?: string;
  zones?: string[];
  /** Overrides TPW_HOME (tests). */
  tpwHome?: string;
}

export interface Backend {
  readonly kind: 'emulator' | 'cloud';
  readonly api: TpuApi;
  readonly project: string;
  readonly zones: string[];
  /** SSH targets for every worker of a READY node, in worker order. */
  workersOf(node: TpuNode): Promise<WorkerTarget[]>;
  close(): Promise<void>;
}

/**
 * Opens the backend the settings ask for. The emulator must already be running (`tpw emulator start`);
 * if it is not, this throws EMULATOR_NOT_RUNNING with the command that starts it.
 */
export async function openBackend(opts: BackendOptions): Promise<Backend> {
  if (opts.useEmulator) return openEmulatorBackend(opts);
  return openCloudBackend(opts);
}

async function openEmulatorBackend(opts: BackendOptions): Promise<Backend> {
  const dir = emulatorDir(opts.tpwHome ?? tpwHome());
  const endpoint = readEmulatorEndpoint(dir);
  if (!endpoint) {
    throw new TpwError('EMULATOR_NOT_RUNNING', 'The local TPU emulator is not running: start it with `tpw emulator start` (or "TPU: Start Local Emulator").');
  }
  const privateKey = fs.readFileSync(endpoint.clientKeyPath);
  const api = emulatorTpuApi(endpoint);
  return {
    kind: 'emulator',
    api,
    project: endpoint.project,
    zones: opts.zones && opts.zones.length > 0 ? opts.zones.filter((z) => endpoint.zones.includes(z)) : endpoint.zones,
    workersOf: async (node) =>
      workerAddresses(node).map((host, index) => ({ index, host, port: endpoint.sshPort, username: endpoint.username, privateKey })),
    close: () => api.close(),
  };
}

async function openCloudBackend(opts: BackendOptions): Promise<Backend> {
  if (!opts.project) {
    throw new TpwError('INVALID_ARGUMENT', 'No GCP project is set: set "tpuWorkbench.project" (or pass --project), or use the local emulator.');
  }
  const zones = opts.zones ?? [];
  if (zones.length === 0) throw new TpwError('INVALID_ARGUMENT', `No zones are set for project ${opts.project}: set "tpuWorkbench.zones" (or pass --zone).`);
  const api = new CloudTpuApi({ kind: 'google' });
  // gcloud's key for TPU VMs: `gcloud compute tpus tpu-vm ssh` creates it and puts it in the project's metadata.
  const keyPath = path.join(os.homedir(), '.ssh', 'google_compute_engine');
  return {
    kind: 'cloud',
    api,
    project: opts.project,
    zones,
    workersOf: async (node) => {
      let privateKey: Buffer;
      try {
        privateKey = fs.readFileSync(keyPath);
      } catch {
        throw new TpwError('SSH_CONNECT', `No SSH key at ${keyPath}: run \`gcloud compute tpus tpu-vm ssh ${shortName(node.name)}\` once to create it.`);
      }
      const username = os.userInfo().username;
      return workerAddresses(node, true).map((host, index) => ({ index, host, port: 22, username, privateKey }));
    },
    close: () => api.close(),
  };
}

/** Worker hosts in worker order; Google VMs are reached on their external IP when they have one. */
function workerAddresses(node: TpuNode, preferExternal = false): string[] {
  if (node.state !== 'READY') {
    throw new TpwError('FAILED_PRECONDITION', `TPU VM "${shortName(node.name)}" is ${node.state}, not READY: start it first.`);
  }
  if (node.networkEndpoints.length === 0) throw new TpwError('FAILED_PRECONDITION', `TPU VM "${shortName(node.name)}" has no network endpoints yet.`);
  return node.networkEndpoints.map((e) => (preferExternal && e.accessConfig?.externalIp) || e.ipAddress);
}
