import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { KubeObject } from './kube-client';
import { TPU_RESOURCE } from './tpu-shapes';

/**
 * GKE's TPU webhook, as a real mutating admission webhook the cluster's API server calls over TLS. GKE documents
 * that it gives TPU_WORKER_ID and TPU_WORKER_HOSTNAMES to the pods of a Job that is Indexed, has a subdomain and
 * a parallelism above 1, and requests google.com/tpu (what a JobSet's slice is); for a JobSet of several slices
 * it gives the MEGASCALE_* variables too (xpk's TPU manifests set none of them and rely on it). It writes them
 * into the Job's pod template, so `kubectl get job -o yaml` shows them as on GKE. A variable the manifest sets
 * already is left as it is.
 */

export const TPU_WEBHOOK_PATH = '/mutate-batch-v1-job-tpu';
export const MEGASCALE_PORT = '8080';

type EnvVar = { name: string; value?: string; valueFrom?: unknown };
type Container = { name: string; env?: EnvVar[]; resources?: { limits?: Record<string, unknown>; requests?: Record<string, unknown> } };
interface JobLike {
  metadata: { name?: string; labels?: Record<string, string> };
  spec?: { completionMode?: string; parallelism?: number; template?: { spec?: { subdomain?: string; containers?: Container[] } } };
}

const JOBSET = 'jobset.sigs.k8s.io';

/** The env each TPU container of the Job should gain (by container index), or nothing. */
export function tpuJobEnv(job: JobLike): Map<number, EnvVar[]> {
  const out = new Map<number, EnvVar[]>();
  const spec = job.spec;
  const pod = spec?.template?.spec;
  const containers = pod?.containers ?? [];
  const wantsTpu = (c: Container) => TPU_RESOURCE in (c.resources?.limits ?? {}) || TPU_RESOURCE in (c.resources?.requests ?? {});
  const multiHost = spec?.completionMode === 'Indexed' && !!pod?.subdomain && (spec.parallelism ?? 1) > 1;
  const labels = job.metadata.labels ?? {};
  const slices = Number(labels[`${JOBSET}/replicatedjob-replicas`] ?? '1');
  const jobName = job.metadata.name ?? '';
  for (const [i, c] of containers.entries()) {
    if (!wantsTpu(c)) continue;
    const add: EnvVar[] = [];
    if (multiHost && pod?.subdomain) {
      const hosts = Array.from({ length: spec?.parallelism ?? 1 }, (_, k) => `${jobName}-${k}.${pod.subdomain}`);
      add.push(
        { name: 'TPU_WORKER_ID', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
        { name: 'TPU_WORKER_HOSTNAMES', value: hosts.join(',') },
      );
    }
    const jobset = labels[`${JOBSET}/jobset-name`];
    const rjob = labels[`${JOBSET}/replicatedjob-name`];
    if (jobset && rjob && slices > 1) {
      add.push(
        { name: 'MEGASCALE_COORDINATOR_ADDRESS', value: `${jobset}-${rjob}-0-0.${pod?.subdomain ?? jobset}` },
        { name: 'MEGASCALE_NUM_SLICES', value: String(slices) },
        { name: 'MEGASCALE_SLICE_ID', value: labels[`${JOBSET}/job-index`] ?? '0' },
        { name: 'MEGASCALE_PORT', value: MEGASCALE_PORT },
      );
    }
    const have = new Set((c.env ?? []).map((e) => e.name));
    const fresh = add.filter((e) => !have.has(e.name));
    if (fresh.length > 0) out.set(i, fresh);
  }
  return out;
}

interface AdmissionReview {
  apiVersion: string;
  kind: string;
  request?: { uid: string; object?: JobLike };
}

/** The AdmissionReview answer: allowed, with a JSON patch adding the env. */
export function reviewJob(review: AdmissionReview): unknown {
  const uid = review.request?.uid ?? '';
  const job = review.request?.object;
  const response: Record<string, unknown> = { uid, allowed: true };
  if (job) {
    const add = tpuJobEnv(job);
    const ops = [...add.entries()].map(([i, env]) => {
      const c = job.spec?.template?.spec?.containers?.[i];
      return { op: c?.env ? 'replace' : 'add', path: `/spec/template/spec/containers/${i}/env`, value: [...(c?.env ?? []), ...env] };
    });
    if (ops.length > 0) {
      response.patchType = 'JSONPatch';
      response.patch = Buffer.from(JSON.stringify(ops)).toString('base64');
    }
  }
  return { apiVersion: review.apiVersion, kind: review.kind, response };
}

/** The webhook's HTTPS server, on loopback, with a certificate of the cluster CA; only the API server calls it. */
export class TpuWebhookServer {
  private readonly server: https.Server;

  constructor(cert: { cert: string; key: string }) {
    this.server = https.createServer(
      // The API server calls webhooks without a client certificate; the port holds nothing secret (it only
      // computes a patch from the Job it is sent), so it answers any AdmissionReview.
      { cert: fs.readFileSync(cert.cert), key: fs.readFileSync(cert.key) },
      (req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          if (req.method !== 'POST' || req.url?.split('?')[0] !== TPU_WEBHOOK_PATH) {
            res.writeHead(404).end();
            return;
          }
          try {
            const body = JSON.stringify(reviewJob(JSON.parse(Buffer.concat(chunks).toString('utf8')) as AdmissionReview));
            res.writeHead(200, { 'content-type': 'application/json' }).end(body);
          } catch (e) {
            res.writeHead(400, { 'content-type': 'text/plain' }).end((e as Error).message);
          }
        });
      },
    );
  }

  listen(host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, host, () => resolve((this.server.address() as AddressInfo).port));
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/** Its registration: Jobs created in any namespace but the system ones. */
export function tpuWebhookConfiguration(host: string, port: number, caBundle: string): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'gke-tpu-env' },
    webhooks: [
      {
        name: 'tpu-env.gke.io',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Fail',
        clientConfig: { url: `https://${host}:${port}${TPU_WEBHOOK_PATH}`, caBundle },
        rules: [{ apiGroups: ['batch'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['jobs'] }],
        namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] }] },
      },
    ],
  };
}
