import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { GoogleAuth } from 'google-auth-library';
import { parse } from 'yaml';
import { TpwError } from '../errors';
import { ADC_HINT } from '../tpu/cloud';
import type { ClusterId } from './models';

/**
 * Credentials for a cluster's Kubernetes API, as gcloud gives them:
 * - the kubeconfig `gcloud container clusters get-credentials` writes (context `gke_<project>_<location>_<cluster>`,
 *   user `exec: gke-gcloud-auth-plugin`): the plugin is run and its ExecCredential's token used;
 * - otherwise an access token from Application Default Credentials (what that plugin itself hands out);
 * - on the emulator, its endpoint token (GKE.md §3).
 * Every token is asked for again before it expires (REFRESH_MARGIN_MS ahead), never at the first 401.
 */

export interface TokenSource {
  /** Where the token comes from, for messages ("Application Default Credentials", "gke-gcloud-auth-plugin …"). */
  readonly describe: string;
  token(): Promise<string>;
}

/** A token is fetched again this long before the expiry its issuer gave. */
export const REFRESH_MARGIN_MS = 5 * 60_000;

export function staticToken(token: string, describe: string): TokenSource {
  return { describe, token: async () => token };
}

/**
 * Application Default Credentials for the GKE API and the clusters' Kubernetes APIs, in `project`. The project is
 * given because google-auth-library otherwise looks it up before its first token, running `gcloud config
 * config-helper` where gcloud is installed (4.5 s here) for a project tpw already knows.
 */
export function gkeGoogleAuth(project: string): GoogleAuth {
  return new GoogleAuth({ scopes: ['https://www.googleapis.com/auth/cloud-platform'], projectId: project });
}

/** google-auth-library refreshes its access token ahead of expiry itself (eagerRefreshThresholdMillis, 5 min). */
export function adcTokenSource(auth: { getAccessToken(): Promise<string | null | undefined> }): TokenSource {
  return {
    describe: 'Application Default Credentials',
    token: async () => {
      let token: string | null | undefined;
      try {
        token = await auth.getAccessToken();
      } catch (e) {
        throw new TpwError('UNAUTHENTICATED', `Application Default Credentials gave no access token for GKE: ${ADC_HINT}.`, { cause: e });
      }
      if (!token) throw new TpwError('UNAUTHENTICATED', `Application Default Credentials gave no access token for GKE: ${ADC_HINT}.`);
      return token;
    },
  };
}

export interface ExecPlugin {
  command: string;
  args?: string[];
  env?: Array<{ name: string; value: string }>;
}

/**
 * A kubeconfig `exec` credential plugin (client.authentication.k8s.io ExecCredential), e.g. gke-gcloud-auth-plugin:
 * run once, its token kept until REFRESH_MARGIN_MS before `status.expirationTimestamp`. Concurrent callers share
 * one run. `now` is for tests.
 */
export function execTokenSource(plugin: ExecPlugin, now: () => number = Date.now): TokenSource {
  let cached: { token: string; expiresAt: number } | undefined;
  let pending: Promise<string> | undefined;
  const describe = `the kubeconfig's credential plugin ${path.basename(plugin.command)}`;
  const run = async (): Promise<string> => {
    const env = { ...process.env, ...Object.fromEntries((plugin.env ?? []).map((e) => [e.name, e.value])) };
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(plugin.command, plugin.args ?? [], { env, timeout: 60_000, maxBuffer: 1 << 20 }, (err, out, errText) => {
        if (err) {
          const why = (errText || err.message).trim().split('\n').pop();
          reject(new TpwError('UNAUTHENTICATED', `${describe} failed (${why}): run \`gcloud auth login\`, then retry.`, { cause: err }));
        } else resolve(out);
      });
    });
    let cred: { status?: { token?: string; expirationTimestamp?: string } };
    try {
      cred = JSON.parse(stdout);
    } catch {
      throw new TpwError('UNAUTHENTICATED', `${describe} did not print an ExecCredential (JSON).`);
    }
    const token = cred.status?.token;
    if (!token) throw new TpwError('UNAUTHENTICATED', `${describe} gave no token: run \`gcloud auth login\`, then retry.`);
    const expiry = cred.status?.expirationTimestamp ? Date.parse(cred.status.expirationTimestamp) : NaN;
    cached = { token, expiresAt: Number.isFinite(expiry) ? expiry : now() + 30 * 60_000 };
    return token;
  };
  return {
    describe,
    token: async () => {
      if (cached && now() < cached.expiresAt - REFRESH_MARGIN_MS) return cached.token;
      pending ??= run().finally(() => (pending = undefined));
      return pending;
    },
  };
}

/** gcloud's name for a cluster's kubeconfig context. */
export function gcloudContextName(id: ClusterId): string {
  return `gke_${id.project}_${id.location}_${id.cluster}`;
}

export interface KubeconfigCluster {
  context: string;
  server: string;
  /** PEM, when the kubeconfig has one. */
  caPem?: string;
  tokens: TokenSource;
}

/** The kubeconfig files kubectl reads: $KUBECONFIG (':'-separated), else ~/.kube/config. */
export function kubeconfigFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  if (env.KUBECONFIG) return env.KUBECONFIG.split(path.delimiter).filter(Boolean);
  return [path.join(env.HOME || os.homedir(), '.kube', 'config')];
}

interface KubeconfigDoc {
  clusters?: Array<{ name: string; cluster?: { server?: string; 'certificate-authority-data'?: string; 'certificate-authority'?: string } }>;
  contexts?: Array<{ name: string; context?: { cluster?: string; user?: string } }>;
  users?: Array<{ name: string; user?: { token?: string; exec?: ExecPlugin } }>;
}

/**
 * The cluster's context as gcloud wrote it into a kubeconfig, or undefined when there is none (then ADC is used).
 * Only the two kinds of user gcloud writes are taken: an exec plugin, or a token.
 */
export function kubeconfigClusterFor(id: ClusterId, files: string[] = kubeconfigFiles()): KubeconfigCluster | undefined {
  const want = gcloudContextName(id);
  for (const file of files) {
    let doc: KubeconfigDoc;
    try {
      doc = (parse(fs.readFileSync(file, 'utf8')) ?? {}) as KubeconfigDoc;
    } catch {
      continue; // absent or unreadable: kubectl would skip it too
    }
    const ctx = doc.contexts?.find((c) => c.name === want)?.context;
    if (!ctx) continue;
    const cluster = doc.clusters?.find((c) => c.name === ctx.cluster)?.cluster;
    const user = doc.users?.find((u) => u.name === ctx.user)?.user;
    if (!cluster?.server || !user) continue;
    let caPem: string | undefined;
    if (cluster['certificate-authority-data']) caPem = Buffer.from(cluster['certificate-authority-data'], 'base64').toString('utf8');
    else if (cluster['certificate-authority']) caPem = fs.readFileSync(path.resolve(path.dirname(file), cluster['certificate-authority']), 'utf8');
    const tokens = user.exec?.command ? execTokenSource(user.exec) : user.token ? staticToken(user.token, `the kubeconfig's token for ${want}`) : undefined;
    if (!tokens) continue;
    return { context: want, server: cluster.server, ...(caPem ? { caPem } : {}), tokens };
  }
  return undefined;
}
