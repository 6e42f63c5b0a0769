import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { main } from '../../extension/src/cli/main';
import { Emulator } from '../../emulator/src/emulator';

export interface CliResult {
  code: number;
  out: string[];
  err: string[];
}

/** Runs `tpw argv…` in this process with `cwd` as the working folder, capturing its stdout and stderr lines. */
export async function runTpw(cwd: string, argv: string[]): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const saved = process.cwd();
  process.chdir(cwd);
  try {
    const code = await main(argv, (l) => out.push(l), (l) => err.push(l));
    return { code, out, err };
  } finally {
    process.chdir(saved);
  }
}

/**
 * `tpw argv…` in this process, with `env` laid over process.env for the call (a variable given as undefined is
 * removed) and `cwd` as the working folder: exit code, stdout and stderr as the shell would see them (each line
 * and a newline), without a child process and its transpile of the whole CLI (seconds per call).
 */
export async function tpwInProcess(argv: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<SpawnedTpw> {
  const saved = Object.fromEntries(Object.keys(opts.env ?? {}).map((k) => [k, process.env[k]]));
  const set = (vars: NodeJS.ProcessEnv) => {
    for (const [k, v] of Object.entries(vars)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  set(opts.env ?? {});
  try {
    const r = await runTpw(opts.cwd ?? process.cwd(), argv);
    const text = (lines: string[]) => lines.map((l) => `${l}\n`).join('');
    return { code: r.code, stdout: text(r.out), stderr: text(r.err) };
  } finally {
    set(saved);
  }
}

export interface SpawnedTpw {
  code: number;
  stdout: string;
  stderr: string;
}

const CLI_SOURCE = path.resolve(__dirname, '../../extension/src/cli/main.ts');

/**
 * Runs the real `tpw` as a child process: the TypeScript source through tsx (so never a stale bundle), with
 * `env` laid over this process's environment. Exit code, stdout and stderr as the user's shell would see them.
 */
export function spawnTpw(argv: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<SpawnedTpw> {
  // A variable given as undefined is removed from the child's environment.
  const env = Object.fromEntries(Object.entries({ ...process.env, ...opts.env }).filter(([, v]) => v !== undefined));
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--require', require.resolve('tsx/cjs'), CLI_SOURCE, ...argv],
      { cwd: opts.cwd, env, encoding: 'utf8', timeout: opts.timeoutMs ?? 120_000 },
      (error, stdout, stderr) => {
        const code = error ? error.code : 0;
        if (typeof code !== 'number') reject(new Error(`tpw ${argv.join(' ')} did not exit: ${String(error)}\nstdout: ${stdout}\nstderr: ${stderr}`));
        else resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Writes `recipes/<name>` under `ws`; returns its path relative to `ws`, as a user would type it. */
export function writeRecipeIn(ws: string, name: string, text: string): string {
  const file = path.join(ws, 'recipes', name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return path.relative(ws, file);
}

export interface EmulatorPod {
  /** TPW_HOME of the test (set in process.env while the fixture lives). */
  readonly home: string;
  /** The workspace the CLI runs in. */
  readonly ws: string;
  tpw(...argv: string[]): Promise<CliResult>;
  writeRecipe(name: string, text: string): string;
  /** The emulator itself (tests that inject faults into its workers). */
  readonly emulator: Emulator;
}

/**
 * Registers before/after hooks that start an emulator (SSH workers on `addressPrefix`.x) under a fresh TPW_HOME
 * and create the 4-worker VM `pod` (unless `opts.pod` is false); the CLI tests that run recipes on it share this.
 */
export function emulatorPodFixture(
  label: string,
  addressPrefix: string,
  hooks: { before: (fn: () => Promise<void>) => void; after: (fn: () => Promise<void>) => void },
  opts: { pod?: boolean } = {},
): EmulatorPod {
  let home = '';
  let ws = '';
  let emu: Emulator | undefined;
  const savedHome = process.env.TPW_HOME;
  const pod: EmulatorPod = {
    get home() {
      return home;
    },
    get ws() {
      return ws;
    },
    get emulator() {
      if (!emu) throw new Error('the emulator is not started yet');
      return emu;
    },
    tpw: (...argv) => runTpw(ws, argv),
    writeRecipe: (name, text) => writeRecipeIn(ws, name, text),
  };
  hooks.before(async () => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), `tpw-${label}-`));
    ws = fs.mkdtempSync(path.join(os.tmpdir(), `tpw-${label}-ws-`));
    process.env.TPW_HOME = home;
    const e = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix });
    emu = e;
    await e.start();
    if (opts.pod === false) return;
    const c = await pod.tpw('vm', 'create', 'pod', '--type', 'v5litepod-16');
    if (c.code !== 0) throw new Error(`creating the test VM failed: ${c.err.join('\n')}`);
  });
  hooks.after(async () => {
    await emu?.stop();
    fs.rmSync(ws, { recursive: true, force: true });
    fs.rmSync(home, { recursive: true, force: true });
    if (savedHome === undefined) delete process.env.TPW_HOME;
    else process.env.TPW_HOME = savedHome;
  });
  return pod;
}
