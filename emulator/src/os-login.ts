import * as crypto from 'node:crypto';
import { utils } from 'ssh2';
import { EMULATOR_ACCOUNT } from '../../protocol/node/emulator-endpoint';
import { ApiError } from './types';

/**
 * The emulator's OS Login (oslogin.googleapis.com v1), at Google's paths on the emulator's one server, for the
 * one account its bearer token stands for (EMULATOR_ACCOUNT). What `@google-cloud/os-login` (REST) and Python's
 * google-cloud-os-login send:
 *   GET    /v1/users/{email}/loginProfile?projectId=p
 *   POST   /v1/users/{email}:importSshPublicKey?projectId=p      body: the SshPublicKey { key, expirationTimeUsec }
 *   GET    /v1/users/{email}/sshPublicKeys/{fingerprint}        DELETE the same path
 * A user's POSIX username is derived from the email as Google does for user accounts (every character that is not
 * a letter or digit becomes "_": alice@example.com → alice_example_com). Keys past their expiration are dropped.
 * Errors are Google's usual {error:{code,message,status}}.
 */

/** Whom the emulator's bearer token authenticates (its fixed caller identity for OS Login, and only that) is part of the endpoint file's contract. */
export { EMULATOR_ACCOUNT } from '../../protocol/node/emulator-endpoint';
/** The uid OS Login gives the emulator's account (Google hands out large per-account uids). */
const EMULATOR_UID = '1234567890';

export interface OsLoginKeyJson {
  key: string;
  expirationTimeUsec?: string;
  fingerprint: string;
  name: string;
}

/** OS Login's view of its users: their imported keys, by account. Saved with the Compute state. */
export class OsLoginState {
  private readonly keys = new Map<string, Map<string, OsLoginKeyJson>>();

  constructor(saved?: unknown) {
    const s = saved && typeof saved === 'object' ? (saved as Record<string, OsLoginKeyJson[]>) : {};
    for (const [account, list] of Object.entries(s)) {
      if (Array.isArray(list)) this.keys.set(account, new Map(list.map((k) => [k.fingerprint, k])));
    }
  }

  toJSON(): Record<string, OsLoginKeyJson[]> {
    return Object.fromEntries([...this.keys].map(([a, m]) => [a, [...m.values()]]));
  }

  /** The POSIX username OS Login gives `account` (a user account: its email, non-alphanumerics as "_", at most 32). */
  static usernameOf(account: string): string {
    return account.replace(/[^A-Za-z0-9]/g, '_').slice(0, 32);
  }

  loginProfile(account: string, projectId: string | null): Record<string, unknown> {
    const username = OsLoginState.usernameOf(account);
    const keys = this.liveKeys(account);
    return {
      name: account,
      posixAccounts: [
        {
          primary: true, username, uid: EMULATOR_UID, gid: EMULATOR_UID, homeDirectory: `/home/${username}`, shell: '/bin/bash',
          gecos: '', systemId: '', accountId: projectId ?? '', operatingSystemType: 'LINUX',
          name: `users/${account}/projects/${projectId ?? ''}`,
        },
      ],
      sshPublicKeys: Object.fromEntries(keys.map((k) => [k.fingerprint, k])),
    };
  }

  importKey(account: string, projectId: string | null, body: Record<string, unknown>): Record<string, unknown> {
    const key = typeof body.key === 'string' ? body.key.trim() : '';
    if (!key) throw new ApiError('INVALID_ARGUMENT', 'Invalid value for field \'ssh_public_key.key\': the key is empty.');
    const parsed = utils.parseKey(key);
    if (parsed instanceof Error || parsed.isPrivateKey()) throw new ApiError('INVALID_ARGUMENT', `Invalid SSH public key: ${parsed instanceof Error ? parsed.message : 'a private key was given'}.`);
    const fingerprint = crypto.createHash('sha256').update(parsed.getPublicSSH()).digest('hex');
    const expiry = body.expirationTimeUsec === undefined ? undefined : String(body.expirationTimeUsec);
    if (expiry !== undefined && !/^\d+$/.test(expiry)) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'ssh_public_key.expiration_time_usec': '${expiry}'.`);
    const mine = this.keys.get(account) ?? new Map<string, OsLoginKeyJson>();
    mine.set(fingerprint, { key, ...(expiry && expiry !== '0' ? { expirationTimeUsec: expiry } : {}), fingerprint, name: `users/${account}/sshPublicKeys/${fingerprint}` });
    this.keys.set(account, mine);
    return { loginProfile: this.loginProfile(account, projectId) };
  }

  getKey(account: string, fingerprint: string): OsLoginKeyJson {
    const k = this.liveKeys(account).find((x) => x.fingerprint === fingerprint);
    if (!k) throw new ApiError('NOT_FOUND', `Requested entity was not found: users/${account}/sshPublicKeys/${fingerprint}.`);
    return k;
  }

  deleteKey(account: string, fingerprint: string): Record<string, never> {
    this.getKey(account, fingerprint);
    this.keys.get(account)?.delete(fingerprint);
    return {};
  }

  /** Keys that have not expired (expirationTimeUsec is microseconds since the epoch). */
  liveKeys(account: string): OsLoginKeyJson[] {
    const nowUsec = BigInt(Date.now()) * 1000n;
    return [...(this.keys.get(account)?.values() ?? [])].filter((k) => !k.expirationTimeUsec || BigInt(k.expirationTimeUsec) > nowUsec);
  }
}

export interface OsLoginRoute {
  verb: string;
  re: RegExp;
  rpc: string;
  handle: (m: string[], ctx: { query: URLSearchParams; body: Record<string, unknown> }) => unknown;
}

export function osLoginRoutes(opts: { osLogin: OsLoginState; project: string; save: () => void }): OsLoginRoute[] {
  const st = opts.osLogin;
  const caller = (user: string): string => {
    if (user !== EMULATOR_ACCOUNT) {
      throw new ApiError('PERMISSION_DENIED', `The caller does not have permission: the local emulator's credentials are those of ${EMULATOR_ACCOUNT}, not "${user}".`);
    }
    return user;
  };
  const project = (q: URLSearchParams): string | null => {
    const p = q.get('projectId');
    if (p !== null && p !== opts.project) throw new ApiError('PERMISSION_DENIED', `Permission denied on project ${p}: the local emulator serves only project "${opts.project}".`);
    return p;
  };
  const USER = '^/v1/users/([^/:]+)';
  return [
    { verb: 'GET', re: new RegExp(`${USER}/loginProfile$`), rpc: 'GetLoginProfile', handle: (m, c) => st.loginProfile(caller(m[0]), project(c.query)) },
    {
      verb: 'POST', re: new RegExp(`${USER}:importSshPublicKey$`), rpc: 'ImportSshPublicKey',
      handle: (m, c) => {
        const out = st.importKey(caller(m[0]), project(c.query), c.body);
        opts.save();
        return out;
      },
    },
    { verb: 'GET', re: new RegExp(`${USER}/sshPublicKeys/([^/]+)$`), rpc: 'GetSshPublicKey', handle: (m) => st.getKey(caller(m[0]), m[1]) },
    {
      verb: 'DELETE', re: new RegExp(`${USER}/sshPublicKeys/([^/]+)$`), rpc: 'DeleteSshPublicKey',
      handle: (m) => {
        const out = st.deleteKey(caller(m[0]), m[1]);
        opts.save();
        return out;
      },
    },
  ];
}
