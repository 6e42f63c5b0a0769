import { OsLoginServiceClient } from '@google-cloud/os-login';
import { utils } from 'ssh2';
import type { EmulatorEndpoint } from '../local-emulator';
import { TpwError } from '../errors';
import { activationUrl, ADC_HINT } from '../tpu/cloud';
import { emulatorBearerAuth } from './client';

export { osLoginEnabledOn } from './os-login-policy';

/**
 * OS Login for Compute Engine TPU VMs. Where a project (or one VM) enforces it, Compute Engine's guest environment
 * ignores metadata `ssh-keys` and lets in only the POSIX account of the caller's OS Login profile, with the keys
 * imported into that profile. So, as `gcloud compute ssh` does, the key is imported through the OS Login API v1
 * (users.importSshPublicKey for the caller's account, with the project) and SSH logs in as the profile's username.
 * The same `@google-cloud/os-login` client (REST) serves Google and the local emulator.
 */

type ClientOptions = NonNullable<ConstructorParameters<typeof OsLoginServiceClient>[0]>;

export interface OsLoginAccess {
  readonly emulator: boolean;
  readonly client: OsLoginServiceClient;
  /** The account the credentials stand for (OS Login's `users/{account}`). */
  account(): Promise<string>;
  close(): Promise<void>;
}

/** A VM that OS Login governs, and the account and username to reach it with. */
export interface OsLoginUser {
  account: string;
  username: string;
  /** Where it was turned on: the VM's own metadata or the project's common metadata. */
  enabledOn: 'instance' | 'project';
}

/** OS Login at Google, with Application Default Credentials. The account is the credentials' email. */
export function googleOsLogin(): OsLoginAccess {
  const client = new OsLoginServiceClient({ fallback: true });
  return {
    emulator: false,
    client,
    account: async () => {
      const creds = await client.auth.getCredentials();
      if (creds.client_email) return creds.client_email;
      // A user's ADC (gcloud auth application-default login) carries no email; its token's info does (the email scope).
      const token = await client.auth.getAccessToken();
      const res = await fetch(`https://oauth2.googleapis.com/tokeninfo?access_token=${encodeURIComponent(token ?? '')}`);
      const info = (await res.json().catch(() => ({}))) as { email?: string };
      if (!info.email) throw new TpwError('UNAUTHENTICATED', `Cannot tell which Google account your credentials are, which OS Login needs: ${ADC_HINT}.`);
      return info.email;
    },
    close: () => client.close(),
  };
}

/**
 * OS Login of the local emulator: the bearer token goes through `auth.getRequestHeaders()` and `auth.fetch()` as
 * for the Compute client (compute/client.ts). The emulator's token stands for one fixed account, which its
 * endpoint file names.
 */
export function emulatorOsLogin(endpoint: Pick<EmulatorEndpoint, 'host' | 'restPort' | 'token' | 'account'>): OsLoginAccess {
  const auth = emulatorBearerAuth(endpoint.token);
  const client = new OsLoginServiceClient({
    fallback: true,
    apiEndpoint: endpoint.host,
    port: endpoint.restPort,
    protocol: 'http',
    auth: auth as unknown as ClientOptions['auth'],
  } as ClientOptions);
  return {
    emulator: true,
    client,
    account: async () => {
      if (!endpoint.account) throw new TpwError('EMULATOR_NOT_RUNNING', 'The running local emulator predates OS Login: restart it (`tpw emulator stop`, then `tpw emulator start`).');
      return endpoint.account;
    },
    close: () => client.close(),
  };
}

/** `ssh-ed25519 AAAA…` for a private key (OpenSSH or PEM text); a clear error for one that cannot be read. */
export function publicKeyOf(privateKey: string | Buffer, where: string): string {
  const parsed = utils.parseKey(privateKey);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (key instanceof Error) throw new TpwError('SSH_CONNECT', `The SSH key ${where} cannot be read (${key.message}); OS Login needs its public half.`);
  return `${key.type} ${key.getPublicSSH().toString('base64')}`;
}

/**
 * Imports `publicKey` into the caller's OS Login profile for `project` and returns the profile's primary POSIX
 * username (Compute Engine's VMs under OS Login accept exactly that user with exactly those keys).
 */
export async function importKeyForOsLogin(access: OsLoginAccess, project: string, publicKey: string): Promise<{ account: string; username: string }> {
  const account = await access.account();
  const parent = `users/${account}`;
  try {
    const [imported] = await access.client.importSshPublicKey({ parent, projectId: project, sshPublicKey: { key: publicKey.trim() } });
    const profile = imported.loginProfile ?? (await access.client.getLoginProfile({ name: parent, projectId: project }))[0];
    const posix = profile.posixAccounts ?? [];
    const username = (posix.find((a) => a.primary) ?? posix[0])?.username;
    if (!username) throw new TpwError('PERMISSION_DENIED', `OS Login has no POSIX account for ${account} in project ${project}: ask for roles/compute.osLogin (or osAdminLogin) on the project.`);
    return { account, username };
  } catch (e) {
    throw osLoginError(e, account, project, access.emulator);
  }
}

function osLoginError(e: unknown, account: string, project: string, emulator: boolean): TpwError {
  if (e instanceof TpwError) return e;
  const err = (e ?? {}) as { code?: unknown; message?: unknown; reason?: unknown };
  const detail = String(err.message ?? e).replace(/^\d+ [A-Z_]+: /, '');
  const fail = (code: TpwError['code'], msg: string) => new TpwError(code, msg, { cause: e });
  if (err.code === 7 && (err.reason === 'SERVICE_DISABLED' || /has not been used in project|is disabled/i.test(detail))) {
    return fail('API_DISABLED', `The OS Login API is not enabled, and project ${project} enforces OS Login: enable oslogin.googleapis.com at ${activationUrl('oslogin.googleapis.com', project)}, then retry.`);
  }
  if (err.code === 7) return fail('PERMISSION_DENIED', `OS Login refused to add your SSH key for ${account} in project ${project}: ${detail}${emulator ? '' : ' (you need roles/compute.osLogin or roles/compute.osAdminLogin on the project)'}`);
  if (err.code === 16) return fail('UNAUTHENTICATED', `Not authenticated to OS Login as ${account}: ${detail}${emulator ? '' : ` (${ADC_HINT})`}`);
  if (err.code === 3) return fail('INVALID_ARGUMENT', `OS Login refused the SSH key for ${account}: ${detail}`);
  return fail('INTERNAL', `OS Login failed to add your SSH key for ${account} in project ${project}: ${detail}`);
}
