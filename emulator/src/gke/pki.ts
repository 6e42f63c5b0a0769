import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';

/**
 * The certificates of one emulated cluster, made with the openssl CLI (Node can parse X.509 but not issue it):
 * a cluster CA, and certificates it signs for the API server, etcd, the webhook servers and the kubelet
 * stand-ins, plus the service-account signing key. Everything is kept in the cluster's 0700 folder, 0600, and
 * made once: a restarted emulator keeps the CA, so a kubeconfig written by `gcloud container clusters
 * get-credentials` stays valid.
 */

const run = promisify(execFile);

export interface CertPair {
  cert: string;
  key: string;
}

export interface CertRequest {
  /** File stem under the PKI folder: `<name>.crt`, `<name>.key`. */
  name: string;
  commonName: string;
  organization?: string;
  /** IP addresses and DNS names the certificate is valid for (servers). */
  ips?: string[];
  dns?: string[];
  usage: 'server' | 'client' | 'both';
}

export class ClusterPki {
  readonly dir: string;

  constructor(clusterDir: string) {
    this.dir = path.join(clusterDir, 'pki');
  }

  get ca(): CertPair {
    return { cert: path.join(this.dir, 'ca.crt'), key: path.join(this.dir, 'ca.key') };
  }

  caPem(): string {
    return fs.readFileSync(this.ca.cert, 'utf8');
  }

  /** The CA, made on first use (EC P-256, ten years: the emulator's clusters outlive no laptop). */
  async ensureCa(): Promise<CertPair> {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const ca = this.ca;
    if (fs.existsSync(ca.cert) && fs.existsSync(ca.key)) return ca;
    await newKey(ca.key);
    await openssl(['req', '-x509', '-new', '-key', ca.key, '-out', ca.cert, '-days', '3650', '-subj', '/CN=tpw-emulator-cluster-ca',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature']);
    return ca;
  }

  /**
   * A certificate signed by the CA, reissued when the request changes (e.g. a node pool's addresses), kept
   * otherwise.
   */
  async issue(req: CertRequest): Promise<CertPair> {
    const ca = await this.ensureCa();
    const pair = { cert: path.join(this.dir, `${req.name}.crt`), key: path.join(this.dir, `${req.name}.key`) };
    const stamp = path.join(this.dir, `${req.name}.req.json`);
    const wanted = JSON.stringify(req);
    if (fs.existsSync(pair.cert) && fs.existsSync(pair.key) && readOr(stamp) === wanted) return pair;
    await newKey(pair.key);
    const csr = `${pair.key}.csr`;
    const subject = `/CN=${req.commonName}${req.organization ? `/O=${req.organization}` : ''}`;
    await openssl(['req', '-new', '-key', pair.key, '-out', csr, '-subj', subject]);
    const ext = path.join(this.dir, `${req.name}.ext`);
    const san = [...(req.ips ?? []).map((ip) => `IP:${ip}`), ...(req.dns ?? []).map((d) => `DNS:${d}`)];
    const purposes = { server: 'serverAuth', client: 'clientAuth', both: 'serverAuth,clientAuth' }[req.usage];
    const lines = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', `extendedKeyUsage=${purposes}`];
    if (san.length > 0) lines.push(`subjectAltName=${san.join(',')}`);
    fs.writeFileSync(ext, `${lines.join('\n')}\n`, { mode: 0o600 });
    await openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', pair.cert, '-days', '3650', '-extfile', ext]);
    fs.rmSync(csr, { force: true });
    fs.rmSync(ext, { force: true });
    fs.chmodSync(pair.cert, 0o600);
    fs.writeFileSync(stamp, wanted, { mode: 0o600 });
    return pair;
  }

  /** The key the API server signs service-account tokens with (and its public half, which verifies them). */
  async serviceAccountKey(): Promise<{ key: string; pub: string }> {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const key = path.join(this.dir, 'sa.key');
    const pub = path.join(this.dir, 'sa.pub');
    if (!fs.existsSync(key) || !fs.existsSync(pub)) {
      await newKey(key);
      await openssl(['pkey', '-in', key, '-pubout', '-out', pub]);
    }
    return { key, pub };
  }
}

async function newKey(file: string): Promise<void> {
  fs.rmSync(file, { force: true });
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file]);
  fs.chmodSync(file, 0o600);
}

async function openssl(args: string[]): Promise<void> {
  try {
    // umask-independent: every file openssl writes here is chmod-ed after, and the folder is 0700.
    await run('openssl', args, { timeout: 30_000 });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: string };
    if (err.code === 'ENOENT') throw new Error('openssl is not installed: the emulator needs it to make its clusters\' certificates (apt-get install openssl).');
    throw new Error(`openssl ${args[0]} failed: ${(err.stderr ?? err.message).trim().split('\n')[0]}`);
  }
}

function readOr(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
