/**
 * The real `@google-cloud/tpu` client (through CloudTpuApi) against a real emulator in a temp folder, for the
 * tests of the TPU API layer, and the two ways those tests look past the client: the emulator's HTTP endpoints
 * called directly, and the SSH banner a worker's address answers with.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Emulator, type EmulatorOptions } from '../../emulator/src/emulator';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { emulatorTpuApi, type CloudTpuApi } from '../../extension/src/core/tpu/cloud';
import { emulatorRequest } from './emulator-http';

export interface EmulatorApi {
  dir: string;
  emu: Emulator;
  ep: EmulatorEndpoint;
  api: CloudTpuApi;
  /** Closes the client, stops the emulator, removes its folder and restores GOOGLE_APPLICATION_CREDENTIALS. */
  close(): Promise<void>;
}

/** `prefix` names the temp folder (`tpw-api-…`); `options` are the emulator's, less its folder. */
export async function startEmulatorApi(prefix: string, options: Omit<EmulatorOptions, 'dir'>): Promise<EmulatorApi> {
  const savedAdc = process.env.GOOGLE_APPLICATION_CREDENTIALS;
  // Were the client to look for Application Default Credentials, this would make it fail loudly.
  process.env.GOOGLE_APPLICATION_CREDENTIALS = '/nonexistent/adc.json';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const emu = new Emulator({ ...options, dir });
  const ep = await emu.start();
  const api = emulatorTpuApi(ep);
  return {
    dir,
    emu,
    ep,
    api,
    async close() {
      await api.close();
      await emu.stop();
      fs.rmSync(dir, { recursive: true, force: true });
      if (savedAdc === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
      else process.env.GOOGLE_APPLICATION_CREDENTIALS = savedAdc;
    },
  };
}

/** One HTTP call to the emulator with its token, past the client (its test-only endpoints, or to see a raw page). */
export async function emulatorCall(ep: EmulatorEndpoint, method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const { status, body: reply } = await emulatorRequest(ep, method, urlPath, body);
  return { status, body: reply };
}

/** The first line a server sends: an SSH server identifies itself before anything else. */
export function sshBanner(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port });
    let data = '';
    s.on('data', (d) => {
      data += d.toString();
      if (data.includes('\n')) {
        s.destroy();
        resolve(data.split('\n')[0]);
      }
    });
    s.on('error', reject);
    s.on('close', () => reject(new Error(`no banner from ${host}:${port}`)));
  });
}
