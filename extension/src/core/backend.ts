import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { emulatorComputeClients, googleComputeClients } from './compute/client';
import { emulatorOsLogin, googleOsLogin, importKeyForOsLogin, publicKeyOf, type OsLoginAccess, type OsLoginUser } from './compute/os-login';
import { ComputeTpuProvider } from './compute/provider';
import { withComputeSlices } from './compute/slice-api';
import { journaled, recordChange } from './change-journal';
import { readEmulatorEndpoint } from './local-emulator';
import { adcTokenSource, gkeGoogleAuth, staticToken } from './gke/credentials';
import { emulatorGkeApi, googleGkeApi } from './gke/gke-api';
import { GkeProvider } from './gke/provider';
import { GcsReader } from './storage/gcs-reader';
import { isTpwError, TpwError } from './errors';
import { emulatorDir, tpwHome } from './paths';
import { extensionKeyPath } from './ssh/keys';
import type { SshTarget, WorkerTarget } from './ssh/types';
import type { TpuApi } from './tpu/api';
import { emulatorTpuApi } from './tpu/cloud';
import { cloudTpuApiForProject } from './tpu/credentials';
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
  /** How to reach Cloud TPU workers that are not directly reachable (bastion or IAP). */
  sshProxy?: SshProxyOptions;
  /** Things the user should be told that are not errors (e.g. "OS Login is enabled on …: your key was added …"). */
  onNotice?: (message: string) => void;
}

export interface SshProxyOptions {
  /** `user@host[:port]` of a bastion (OpenSSH's ProxyJump); logs in with the same key as the workers. */
  jump?: string;
  /** argv of a program that carries SSH on its stdio (OpenSSH's ProxyCommand); %h and %p are substituted. */
  command?: string[];
}

/** `user@host[:port]` → the jump target (the key is the workers'). */
export function parseJump(spec: string, privateKey: string | Buffer): SshTarget {
  const m = /^(?:([^@\s]+)@)?(\[[^\]]+\]|[^:\s]+)(?::(\d+))?$/.exec(spec.trim());
  if (!m) throw new TpwError('INVALID_ARGUMENT', `Bad SSH jump host "${spec}": use user@host or user@host:port.`);
  return { username: m[1] ?? os.userInfo().username, host: m[2].replace(/^\[|\]$/g, ''), port: m[3] ? Number(m[3]) : 22, privateKey };
}

export interface Backend {
  readonly kind: 'emulator' | 'cloud';
  /** Nodes of the Cloud TPU API and TPU slices of Compute Engine, as one set of nodes (core/compute/slice-api.ts). */
  readonly api: TpuApi;
  /** Compute Engine's TPU VMs and slices (creating them, and what only Compute Engine has). */
  readonly compute: ComputeTpuProvider;
  /** GKE clusters of the project and their Kubernetes APIs (nothing is loaded or asked until first used). */
  readonly gke: GkeProvider;
  readonly project: string;
  readonly zones: string[];
  /** SSH targets for every worker of a READY node, in worker order. */
  workersOf(node: TpuNode): Promise<WorkerTarget[]>;
  /**
   * Where OS Login governs a Compute Engine VM (its own or its project's `enable-oslogin`): imports `publicKey` into
   * the caller's OS Login profile and returns the account and username to log in as; undefined where it does not.
   */
  osLoginUser(node: TpuNode, publicKey: string): Promise<OsLoginUser | undefined>;
  close(): Promise<void>;
}

/**
 * The OS Login half of a backend: asks whether OS Login governs the VM (each time: a project can turn it on at any
 * moment), imports the key as `gcloud compute ssh` does, and tells the user once per VM, key and
 * place it was turned on. The import is made once per key for the backend's life (callers that ask at once share
 * it; a failed one is tried again next time): every terminal, run and forward asks for the workers, and the key
 * stays in the profile once imported.
 */
function osLoginUsers(compute: ComputeTpuProvider, access: OsLoginAccess, project: string, onNotice?: (m: string) => void): Backend['osLoginUser'] {
  const told = new Set<string>();
  const imported = new Map<string, ReturnType<typeof importKeyForOsLogin>>();
  const importOnce = (publicKey: string): ReturnType<typeof importKeyForOsLogin> => {
    let pending = imported.get(publicKey);
    if (!pending) {
      pending = importKeyForOsLogin(access, project, publicKey);
      imported.set(publicKey, pending);
      pending.catch(() => imported.delete(publicKey));
    }
    return pending;
  };
  return async (node, publicKey) => {
    if (node.controlPlane !== 'compute') return undefined;
    const enabledOn = await compute.osLoginEnabledOn(project, node.metadata ?? {});
    if (!enabledOn) return undefined;
    const { account, username } = await importOnce(publicKey);
    const where = enabledOn === 'project' ? `project ${project}` : `VM ${shortName(node.name)}`;
    const note = `OS Login is enabled on ${where}: your key was added to your OS Login profile (${account}) as ${username}.`;
    const key = `${node.name} ${enabledOn} ${publicKey}`;
    if (!told.has(key)) onNotice?.(note);
    told.add(key);
    return { account, username, enabledOn };
  };
}

/**
 * Opens the backend the settings ask for. The emulator must already be running (`tpw emulator start`);
 * if it is not, this throws EMULATOR_NOT_RUNNING with the command that starts it.
 */
export async function openBackend(opts: BackendOptions): Promise<Backend> {
  const backend = opts.useEmulator ? await openEmulatorBackend(opts) : await openCloudBackend(opts);
  // Creates, deletes, starts and stops are noted for the TPU VMs view of every window (core/explorer/change-journal.ts).
  const home = opts.tpwHome ?? tpwHome();
  const note = (what: string) => recordChange(home, what);
  return { ...backend, api: journaled(backend.api, note), compute: journaled(backend.compute, note) };
}

async function openEmulatorBackend(opts: BackendOptions): Promise<Backend> {
  const dir = emulatorDir(opts.tpwHome ?? tpwHome());
  const endpoint = readEmulatorEndpoint(dir);
  if (!endpoint) {
    throw new TpwError('EMULATOR_NOT_RUNNING', 'The local TPU emulator is not running: start it with `tpw emulator start` (or "TPU: Start Local Emulator").');
  }
  const privateKey = fs.readFileSync(endpoint.clientKeyPath);
  const compute = new ComputeTpuProvider(emulatorComputeClients(endpoint, dir));
  const api = withComputeSlices(emulatorTpuApi(endpoint), compute);
  const osLogin = emulatorOsLogin(endpoint);
  const osLoginUser = osLoginUsers(compute, osLogin, endpoint.project, opts.onNotice);
  // The emulator's clusters take its endpoint token, as GKE takes a Google access token (emulator/GKE.md §3).
  const emulatorToken = staticToken(endpoint.token, "the local emulator's token");
  const gke = new GkeProvider(emulatorGkeApi(endpoint), emulatorToken, false, new GcsReader(emulatorToken, `http://${endpoint.host}:${endpoint.restPort}`));
  return {
    kind: 'emulator',
    api,
    compute,
    gke,
    project: endpoint.project,
    zones: opts.zones && opts.zones.length > 0 ? opts.zones.filter((z) => endpoint.zones.includes(z)) : endpoint.zones,
    workersOf: async (node) => {
      const hosts = workerAddresses(node);
      const login = await osLoginUser(node, publicKeyOf(privateKey, endpoint.clientKeyPath));
      return hosts.map((host, index) => ({ index, host, port: endpoint.sshPort, username: login?.username ?? endpoint.username, privateKey }));
    },
    osLoginUser,
    close: async () => {
      await Promise.allSettled([api.close(), osLogin.close(), gke.close()]);
    },
  };
}

async function openCloudBackend(opts: BackendOptions): Promise<Backend> {
  if (!opts.project) {
    throw new TpwError('INVALID_ARGUMENT', 'No GCP project is set: set "tpuWorkbench.project" (or pass --project), or use the local emulator.');
  }
  // Application Default Credentials, checked now: without them this throws UNAUTHENTICATED with the fix.
  const compute = new ComputeTpuProvider(googleComputeClients(opts.project));
  const api = withComputeSlices(await cloudTpuApiForProject(opts.project), compute);
  const osLogin = googleOsLogin();
  const osLoginUser = osLoginUsers(compute, osLogin, opts.project, opts.onNotice);
  // ADC for the GKE API, and for clusters gcloud wrote no kubeconfig context for (what gke-gcloud-auth-plugin hands out).
  const gkeAuth = gkeGoogleAuth(opts.project);
  const gke = new GkeProvider(googleGkeApi(gkeAuth), adcTokenSource(gkeAuth), true);
  // No zones set means every zone of the project that offers Cloud TPU (the API's locations).
  let zones = opts.zones ?? [];
  if (zones.length === 0) {
    try {
      zones = (await api.listZones(opts.project)).map((z) => z.locationId);
    } catch (e) {
      // A project that uses only Compute Engine (TPU7x and later) may not enable the Cloud TPU API at all; its zones
      // then come from the user, and both control planes are still asked in them (the Cloud TPU API's answer is skipped).
      if (isTpwError(e, 'API_DISABLED')) {
        throw new TpwError('API_DISABLED', `${e.message} A project that uses Compute Engine TPU VMs only (TPU7x and later) needs no Cloud TPU API: give its zones instead ("tpuWorkbench.zones", or --zone).`, { cause: e });
      }
      throw e;
    }
  }
  if (zones.length === 0) throw new TpwError('INVALID_ARGUMENT', `The Cloud TPU API lists no zones for project ${opts.project}: set "tpuWorkbench.zones" (or pass --zone).`);
  // gcloud's key for TPU VMs: `gcloud compute tpus tpu-vm ssh` creates it and puts it in the project's metadata.
  const keyPath = path.join(os.homedir(), '.ssh', 'google_compute_engine');
  return {
    kind: 'cloud',
    api,
    compute,
    project: opts.project,
    zones,
    workersOf: async (node) => {
      let privateKey: Buffer;
      // Our own key once "Add my key to this VM" made one; otherwise gcloud's.
      const ownKey = extensionKeyPath(opts.tpwHome ?? tpwHome());
      const keyFile = fs.existsSync(ownKey) ? ownKey : keyPath;
      try {
        privateKey = fs.readFileSync(keyFile);
      } catch {
        throw new TpwError('SSH_CONNECT', `No SSH key at ${keyPath} or ${ownKey}: run "Add My Key to This VM" (\`tpw vm add-key ${shortName(node.name)}\`), or \`gcloud compute tpus tpu-vm ssh ${shortName(node.name)}\` once.`);
      }
      workerAddresses(node); // a VM that is not READY says so before any OS Login call
      // Under OS Login the VM lets in only the profile's user with its imported keys: import ours, log in as that.
      const login = await osLoginUser(node, publicKeyOf(privateKey, keyFile));
      const username = login?.username ?? os.userInfo().username;
      const proxy = opts.sshProxy ?? {};
      const proxyJump = proxy.jump ? parseJump(proxy.jump, privateKey) : undefined;
      const proxyCommand = proxy.command && proxy.command.length > 0 ? proxy.command : undefined;
      // Behind a bastion or IAP the internal address is the one that works; otherwise the external one.
      const external = !proxyJump && !proxyCommand;
      return workerAddresses(node, external).map((host, index) => ({ index, host, port: 22, username, privateKey, proxyJump, proxyCommand }));
    },
    osLoginUser,
    gke,
    close: async () => {
      await Promise.allSettled([api.close(), osLogin.close(), gke.close()]);
    },
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
