import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { GoogleAuth } from 'google-auth-library';
import { isTpwError, TpwError } from '../errors';
import { ADC_HINT, CloudTpuApi } from './cloud';

/**
 * Google credentials the standard way: Application Default Credentials through google-auth-library, as the
 * client library itself does (GOOGLE_APPLICATION_CREDENTIALS, then gcloud's application-default file, then the
 * metadata server on Google Cloud). They are checked up front, so a missing or broken setup is one clear
 * message ("run `gcloud auth application-default login`") instead of a failure deep inside the first call.
 * Credential contents never appear in messages or logs: only the file's path and what is wrong with it.
 */

const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

export interface AdcInfo {
  /** Where the credentials come from. */
  source: 'GOOGLE_APPLICATION_CREDENTIALS' | 'gcloud' | 'metadata-server';
  /** The credentials file, when there is one. */
  file?: string;
  /** The file's `type` (authorized_user, service_account, external_account, …). */
  type?: string;
}

/** gcloud's application-default credentials file (`gcloud auth application-default login` writes it). */
export function wellKnownAdcFile(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CLOUDSDK_CONFIG) return path.join(env.CLOUDSDK_CONFIG, 'application_default_credentials.json');
  if (process.platform === 'win32' && env.APPDATA) return path.join(env.APPDATA, 'gcloud', 'application_default_credentials.json');
  return path.join(env.HOME || os.homedir(), '.config', 'gcloud', 'application_default_credentials.json');
}

/**
 * Checks a credentials file without printing any of it: it must exist, be readable, be a JSON object and name
 * its `type`. Throws UNAUTHENTICATED naming the file (and the variable that pointed at it).
 */
export function checkCredentialsFile(file: string, via: string): { type: string } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable' : code === 'EISDIR' ? 'is a folder' : `cannot be read (${code ?? 'error'})`;
    throw new TpwError('UNAUTHENTICATED', `The credentials file ${file} (${via}) ${why}: fix ${via} or ${ADC_HINT}.`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text it choked on; that could be a secret, so it is not passed on.
    throw new TpwError('UNAUTHENTICATED', `The credentials file ${file} (${via}) is not valid JSON: replace it, or ${ADC_HINT}.`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new TpwError('UNAUTHENTICATED', `The credentials file ${file} (${via}) is not a JSON object: replace it, or ${ADC_HINT}.`);
  }
  const type = (parsed as Record<string, unknown>).type;
  if (typeof type !== 'string' || !type) {
    throw new TpwError('UNAUTHENTICATED', `The credentials file ${file} (${via}) has no "type" field, so it is not a Google credentials file: ${ADC_HINT}.`);
  }
  return { type };
}

export interface CredentialOptions {
  env?: NodeJS.ProcessEnv;
  /** Overrides what google-auth-library is built with (tests). */
  auth?: GoogleAuth;
}

/**
 * Finds Application Default Credentials and makes sure google-auth-library can build a client from them.
 * Throws TpwError UNAUTHENTICATED with the command to run when there are none or they are broken.
 */
export async function resolveAdc(opts: CredentialOptions = {}): Promise<{ auth: GoogleAuth; info: AdcInfo }> {
  const env = opts.env ?? process.env;
  let info: AdcInfo;
  if (env.GOOGLE_APPLICATION_CREDENTIALS) {
    const file = env.GOOGLE_APPLICATION_CREDENTIALS;
    info = { source: 'GOOGLE_APPLICATION_CREDENTIALS', file, ...checkCredentialsFile(file, 'GOOGLE_APPLICATION_CREDENTIALS') };
  } else if (fs.existsSync(wellKnownAdcFile(env))) {
    const file = wellKnownAdcFile(env);
    info = { source: 'gcloud', file, ...checkCredentialsFile(file, 'gcloud application-default credentials') };
  } else {
    info = { source: 'metadata-server' };
  }
  const auth = opts.auth ?? new GoogleAuth({ scopes: [CLOUD_PLATFORM_SCOPE] });
  try {
    await auth.getClient();
  } catch (e) {
    if (isTpwError(e)) throw e;
    const where = info.file ? `from ${info.file}` : '(no credentials file, and this is not a Google Cloud VM)';
    throw new TpwError('UNAUTHENTICATED', `No usable Google Application Default Credentials ${where}: ${ADC_HINT}.`, { cause: e });
  }
  return { auth, info };
}

/**
 * The CloudTpuApi for a Google Cloud project, authenticated with Application Default Credentials
 * (checked first: see resolveAdc).
 */
export async function cloudTpuApiForProject(project: string, opts: CredentialOptions = {}): Promise<CloudTpuApi> {
  const { auth } = await resolveAdc(opts);
  return new CloudTpuApi({ kind: 'google', clientOptions: { auth }, description: `project ${project}` });
}
