import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { EmulatorError } from './errors';
import { NodeStateSchema } from './names';
import type { NodeJson, OperationJson } from './types';

/**
 * The emulator's state on disk (`<dir>/state.json`): written atomically (temp file, fsync, rename), with the generation before the last write kept as `state.json.prev`. A file that cannot be read,
 * parsed or trusted stops the emulator from starting, with a message that names the file, the problem and the
 * two ways out (`--restore-previous`, `--reset-state`): starting with less than the file held would make the
 * emulator forget VMs whose sandboxes (runs, checkpoints) are still on disk.
 */

export const STATE_VERSION = 1;

export interface StateFile {
  version: typeof STATE_VERSION;
  sshPort?: number;
  nodes: NodeJson[];
  operations: OperationJson[];
  /** loopback address → "<node resource name>#<worker index>" */
  addresses: Record<string, string>;
  /** Queued resources (queued.ts keeps them; they live in this file so one file holds the whole state). */
  queuedResources?: unknown[];
  /** Compute Engine instances, templates, MIGs, policies and operations (compute-state.ts). */
  compute?: unknown;
}

export type StateRecovery = 'restore-previous' | 'reset-state';

// What the emulator relies on; other fields pass through untouched.
const NodeSchema = z
  .object({
    name: z.string().regex(/^projects\/[^/]+\/locations\/[^/]+\/nodes\/[^/]+$/, 'not a node resource name'),
    state: NodeStateSchema,
    acceleratorType: z.string(),
    runtimeVersion: z.string(),
    networkEndpoints: z.array(z.object({ ipAddress: z.string() }).passthrough()),
    schedulingConfig: z.object({}).passthrough(),
  })
  .passthrough();
const OperationSchema = z
  .object({ name: z.string(), done: z.boolean(), metadata: z.object({ target: z.string(), verb: z.string() }).passthrough() })
  .passthrough();
// Compute Engine's part (compute-state.ts reads these fields; the rest passes through).
const ComputeLinkSchema = z.string().regex(/^https:\/\/compute\.googleapis\.com\/compute\/v1\/projects\/[^/]+\//, 'not a Compute Engine link');
const ComputeSchema = z
  .object({
    instances: z.array(
      z
        .object({
          name: z.string(),
          selfLink: ComputeLinkSchema,
          status: z.string(),
          machineType: z.string(),
          networkInterfaces: z.array(z.object({ networkIP: z.string() }).passthrough()).min(1),
          metadata: z.object({ items: z.array(z.object({ key: z.string(), value: z.string() }).passthrough()) }).passthrough(),
        })
        .passthrough(),
    ),
    workers: z.record(z.string(), z.object({ key: z.string(), index: z.number().int(), address: z.string(), hostnames: z.array(z.string()), acceleratorType: z.string() }).passthrough()),
    templates: z.array(z.object({ selfLink: ComputeLinkSchema }).passthrough()),
    migs: z.array(z.object({ selfLink: ComputeLinkSchema, targetSize: z.number(), _members: z.array(z.string()) }).passthrough()),
    policies: z.array(z.object({ selfLink: ComputeLinkSchema }).passthrough()),
    operations: z.array(z.object({ selfLink: z.string(), status: z.string(), targetLink: z.string(), operationType: z.string() }).passthrough()),
  })
  .partial()
  .passthrough();
const StateFileSchema = z.object({
  version: z.number(),
  sshPort: z.number().int().optional(),
  nodes: z.array(NodeSchema),
  operations: z.array(OperationSchema),
  addresses: z.record(z.string(), z.string()),
  queuedResources: z.array(z.unknown()).optional(),
  compute: ComputeSchema.optional(),
});

export function stateFile(dir: string): string {
  return path.join(dir, 'state.json');
}

export function previousStateFile(dir: string): string {
  return `${stateFile(dir)}.prev`;
}

/** The state in `dir`; undefined when there is none yet. Throws FAILED_PRECONDITION naming the file and the fix. */
export function readStateFile(dir: string): StateFile | undefined {
  const file = stateFile(dir);
  if (!fs.existsSync(file) && fs.existsSync(previousStateFile(dir))) {
    throw stateError(dir, file, 'it is missing, though its previous generation is there');
  }
  const result = parseStateFile(file);
  if (result.ok) return result.state;
  if (result.problem === undefined) return undefined;
  throw stateError(dir, file, result.problem);
}

type Parsed = { ok: true; state: StateFile } | { ok: false; problem?: string };

function parseStateFile(file: string): Parsed {
  let raw: string;
  try {
    raw = fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? { ok: false } : { ok: false, problem: `it cannot be read (${code ?? (e as Error).message})` };
  }
  if (raw.trim() === '') return { ok: false, problem: 'it is empty' };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { ok: false, problem: `it is not valid JSON (${raw.length} bytes; cut short?)` };
  }
  const version = (json as { version?: unknown } | null)?.version;
  if (version !== STATE_VERSION) {
    return { ok: false, problem: `its version is ${JSON.stringify(version)}, and this emulator reads version ${STATE_VERSION}` };
  }
  const parsed = StateFileSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`);
    return { ok: false, problem: `it is incomplete or malformed (${issues.join('; ')})` };
  }
  const state = parsed.data as unknown as StateFile;
  const problem = inconsistency(state);
  return problem ? { ok: false, problem } : { ok: true, state };
}

/** Cross-checks the schema cannot make: one entry per node, and every worker address allocated to its worker. */
function inconsistency(state: StateFile): string | undefined {
  const names = new Set<string>();
  for (const n of state.nodes) {
    if (names.has(n.name)) return `node ${n.name} is listed twice`;
    names.add(n.name);
    for (const [i, ep] of n.networkEndpoints.entries()) {
      if (state.addresses[ep.ipAddress] !== `${n.name}#${i}`) {
        return `worker ${i} of ${n.name} has address ${ep.ipAddress}, which the file's address table gives to ${state.addresses[ep.ipAddress] ?? 'no one'}`;
      }
    }
  }
  return undefined;
}

function stateError(dir: string, file: string, problem: string): EmulatorError {
  const prev = previousStateFile(dir);
  const prevOk = parseStateFile(prev).ok;
  const restore = prevOk
    ? `\`tpw emulator start --restore-previous\` brings back the previous generation (${prev}, written ${fs.statSync(prev).mtime.toISOString()}); `
    : '';
  return new EmulatorError(
    'FAILED_PRECONDITION',
    `The local emulator's state file ${file} is unusable: ${problem}. The emulator did not start and changed nothing. ` +
      `${restore}\`tpw emulator start --reset-state\` sets the file aside and starts with no VMs (worker sandboxes are kept, under ${path.join(dir, 'workers-orphaned')}).`,
  );
}

/** Writes the state atomically; the file it replaces becomes `state.json.prev`. */
export function writeStateFile(dir: string, data: StateFile): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = stateFile(dir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeDurably(tmp, JSON.stringify(data, null, 2));
  const prev = previousStateFile(dir);
  if (fs.existsSync(file)) {
    // A hard link keeps the old generation without copying it; rename below then swaps in the new one atomically.
    fs.rmSync(prev, { force: true });
    try {
      fs.linkSync(file, prev);
    } catch {
      fs.copyFileSync(file, prev);
    }
  }
  // The file's own fsync is what rules out a torn state.json; the folder is not synced here (it costs ~8 ms a
  // write, and every transition writes): after a power loss the rename may be undone, leaving the older,
  // complete generation.
  fs.renameSync(tmp, file);
}

/**
 * `--restore-previous`: the previous generation replaces the current file, which is kept as
 * `state.json.before-restore-<time>`. Returns what it did, for the user.
 */
export function restorePreviousState(dir: string): string {
  const file = stateFile(dir);
  const prev = previousStateFile(dir);
  const parsed = parseStateFile(prev);
  if (!parsed.ok) {
    throw new EmulatorError(
      'FAILED_PRECONDITION',
      `Cannot restore ${prev}: ${parsed.problem ?? 'there is none'}. \`tpw emulator start --reset-state\` sets ${file} aside and starts with no VMs.`,
    );
  }
  const aside = setAside(file, 'before-restore');
  writeDurably(`${file}.${process.pid}.tmp`, JSON.stringify(parsed.state, null, 2));
  fs.renameSync(`${file}.${process.pid}.tmp`, file);
  syncFolder(dir);
  return `Restored the emulator's state from ${prev} (${parsed.state.nodes.length} VM(s))${aside ? `; the file it replaced is kept as ${aside}` : ''}.`;
}

/** `--reset-state`: the state file (and its previous generation) are set aside; the emulator starts empty. */
export function resetState(dir: string): string {
  const aside = setAside(stateFile(dir), 'reset');
  const prevAside = setAside(previousStateFile(dir), 'reset');
  syncFolder(dir);
  const kept = [aside, prevAside].filter(Boolean).join(' and ');
  return kept ? `Set the emulator's state aside as ${kept}; it starts with no VMs.` : 'There was no emulator state to reset.';
}

function setAside(file: string, tag: string): string | undefined {
  if (!fs.existsSync(file)) return undefined;
  const aside = `${file}.${tag}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  fs.renameSync(file, aside);
  return aside;
}

function writeDurably(file: string, text: string): void {
  fs.rmSync(file, { force: true });
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    // write() may take fewer bytes than asked (a disk filling up): the rest goes on until all of it is there.
    const data = Buffer.from(text);
    for (let at = 0; at < data.length; ) at += fs.writeSync(fd, data, at, data.length - at);
    fs.fsyncSync(fd);
  } catch (e) {
    // A full disk: the half-written copy goes, so it neither fills the disk further nor is ever read.
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
    throw e;
  }
  fs.closeSync(fd);
}

/** Makes a rename durable; some platforms cannot open a folder for that, and there it is skipped. */
function syncFolder(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // best effort
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
