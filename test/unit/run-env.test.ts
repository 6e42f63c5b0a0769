/**
 * What a run's program receives: 240 generated hostile strings arrive byte for byte as argv elements and as
 * environment values (real sshd and the emulator), and a secret passed through from the CLI's environment
 * reaches the program but never any argv (`ps`, every /proc/PID/cmdline), log, output or file of ours except the
 * worker's 0600 env file.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import { main } from '../../extension/src/cli/main';
import { Emulator } from '../../emulator/src/emulator';
import { SshWorkerPool } from '../../emulator/src/ssh-workers';
import { attachRun, startDetached } from '../../extension/src/core/run/detached';
import { passthroughEnv, redact } from '../../extension/src/core/run/secrets';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { freePort, startSshd } from '../helpers/sshd';
import { argvHolding } from '../helpers/argv';
import { testAddressPrefix } from '../helpers/loopback';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-env-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const username = os.userInfo().username;

/** Deterministic hostile strings: shell and hydra metacharacters, quotes, newlines, unicode, in many mixes. */
function hostileValues(n: number): string[] {
  const atoms = ["'", '"', '$(id)', '`id`', ';', '&&', '|', '\n', '\t', '\\', '\\n', '$HOME', '${X:-y}', '*', '?', '[a]', '{a,b}', '~', '-', '--x', '=', '%s', '#', '!', ' ', '  ', '\r', 'ü', '€', '🦀', 'א', 'e\u0301', '\u200b', '${oc.env:HOME}', 'a=b', "'\\''", '>', '<', '&', '(', ')'];
  let seed = 0x2545f491;
  const rnd = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 0x100000000;
  };
  const out: string[] = ['', ' ', "'", '"', '\n', '-n', '-e', '--', '\\', atoms.join('')];
  while (out.length < n) {
    const len = 1 + Math.floor(rnd() * 6);
    let s = '';
    for (let i = 0; i < len; i++) s += rnd() < 0.7 ? atoms[Math.floor(rnd() * atoms.length)] : String.fromCharCode(33 + Math.floor(rnd() * 94));
    out.push(s);
  }
  return out;
}

// Prints what it received as JSON (argv after -c, and every H_* variable), into the run folder.
const PROBE = [
  'import json, os, sys',
  "env = {k: os.environ[k] for k in os.environ if k.startswith('H_')}",
  "open(os.path.join(os.environ['TPW_RUN_DIR'], 'got.json'), 'w', encoding='utf-8', errors='surrogatepass').write(json.dumps({'argv': sys.argv[1:], 'env': env}))",
].join('\n');

describe('hostile strings arrive byte for byte', () => {
  const values = hostileValues(240);
  const check = async (workers: WorkerTarget[], runDir: (i: number, id: string) => string, runsRoot?: (w: WorkerTarget) => string) => {
    const conns = new ConnectionManager({ knownHostsPath: path.join(tmp, `kh-${workers[0].host}`) });
    try {
      const runId = `h-${crypto.randomBytes(4).toString('hex')}`;
      const env = Object.fromEntries(values.map((v, i) => [`H_${i}`, v]));
      await startDetached({ runId, workers, argv: ['python3', '-c', PROBE, ...values], cwd: tmp, env }, conns, { runsRoot });
      const r = await attachRun(runId, workers, conns, {}, { runsRoot }).result;
      assert.equal(r.ok, true, JSON.stringify(r.workers));
      for (const w of workers) {
        const got = JSON.parse(fs.readFileSync(path.join(runDir(w.index, runId), 'got.json'), 'utf8')) as { argv: string[]; env: Record<string, string> };
        assert.equal(got.argv.length, values.length);
        for (let i = 0; i < values.length; i++) {
          assert.equal(got.argv[i], values[i], `argv ${i} on worker ${w.index}: ${JSON.stringify(values[i])}`);
          assert.equal(got.env[`H_${i}`], values[i], `env H_${i} on worker ${w.index}: ${JSON.stringify(values[i])}`);
        }
      }
    } finally {
      conns.dispose();
    }
  };

  it('over real OpenSSH sshd', async () => {
    assert.ok(values.length >= 200 && new Set(values).size > 200);
    const sshd = await startSshd({ host: `${testAddressPrefix(7)}.1` });
    const root = path.join(tmp, 'sshd-runs');
    try {
      await check([{ host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey, index: 0 }], (_i, id) => path.join(root, id), () => root);
    } finally {
      await sshd.stop();
    }
  });

  it('over the emulator’s workers', async () => {
    const hostKey = generateEd25519KeyPair();
    const clientKey = generateEd25519KeyPair();
    const addresses = [`${testAddressPrefix(7)}.11`, `${testAddressPrefix(7)}.12`];
    const port = await freePort(addresses[0]);
    const pool = new SshWorkerPool({ port, hostKey: hostKey.private, authorizedKey: clientKey.public, username });
    const sandbox = (i: number) => path.join(tmp, 'emu', `w${i}`);
    try {
      for (const [index, address] of addresses.entries()) await pool.addWorker({ nodeId: 'h', index, address, hostnames: addresses, sandboxDir: sandbox(index), acceleratorType: 'v4-16' });
      const workers = addresses.map((host, index) => ({ host, port, username, privateKey: clientKey.private, index }));
      await check(workers, (i, id) => path.join(sandbox(i), '.tpw', 'runs', id));
    } finally {
      await pool.close();
    }
  });
});

describe('secrets', () => {
  it('passthrough picks only the known names, and redact hides values', () => {
    assert.deepEqual(passthroughEnv({ HF_TOKEN: 'h', XLA_IR_DEBUG: '1', LIBTPU_INIT_ARGS: '--xla_x=1 --y', PATH: '/bin', WANDB_API_KEY: '', AWS_SECRET: 'no' }), {
      HF_TOKEN: 'h',
      XLA_IR_DEBUG: '1',
      LIBTPU_INIT_ARGS: '--xla_x=1 --y',
    });
    assert.equal(redact('token=sekrit123 again sekrit123', { HF_TOKEN: 'sekrit123' }), 'token=<HF_TOKEN> again <HF_TOKEN>');
  });

  it('a secret from the CLI environment reaches the program and nothing else', async () => {
    const home = path.join(tmp, 'sec-home');
    const ws = path.join(tmp, 'sec-ws');
    fs.mkdirSync(path.join(ws, 'recipes'), { recursive: true });
    const secret = `hf_${crypto.randomBytes(12).toString('hex')}`;
    const wandb = `wb_${crypto.randomBytes(12).toString('hex')}`;
    const sha = crypto.createHash('sha256').update(secret).digest('hex');
    fs.writeFileSync(
      path.join(ws, 'recipes', 'secret.sh'),
      `python3 -c 'import hashlib, os, time; print("sha", hashlib.sha256(os.environ["HF_TOKEN"].encode()).hexdigest(), len(os.environ["WANDB_API_KEY"]), os.environ["XLA_IR_DEBUG"]); time.sleep(2)'\n`,
    );
    const saved = { home: process.env.TPW_HOME, hf: process.env.HF_TOKEN, wb: process.env.WANDB_API_KEY, xla: process.env.XLA_IR_DEBUG };
    process.env.TPW_HOME = home;
    process.env.HF_TOKEN = secret;
    process.env.WANDB_API_KEY = wandb;
    process.env.XLA_IR_DEBUG = '1';
    const emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(12) });
    await emu.start();
    const cwd = process.cwd();
    process.chdir(ws);
    const out: string[] = [];
    try {
      assert.equal(await main(['vm', 'create', 'sec', '--type', 'v5litepod-16'], (l) => out.push(l), (l) => out.push(l)), 0);
      assert.equal(await main(['run', 'recipes/secret.sh', '--vm', 'sec', '--detach'], (l) => out.push(l), (l) => out.push(l)), 0, out.join('\n'));
      const runId = out.at(-1) ?? '';
      // While it runs: no process on this machine (client, sshd-side shells, the program) has it in argv.
      const ps = execFileSync('ps', ['-eww', '-o', 'args'], { encoding: 'utf8' });
      assert.ok(ps.includes('import hashlib'), 'the program is running (ps sees its argv)');
      for (const s of [secret, wandb]) assert.equal(ps.includes(s), false, 'not in ps');
      assert.deepEqual(argvHolding(secret, wandb), [], 'not in any /proc/<pid>/cmdline');
      assert.equal(await main(['logs', runId, '--follow'], (l) => out.push(l), (l) => out.push(l)), 0, out.join('\n'));
      for (const w of [0, 1, 2, 3]) assert.ok(out.includes(`[w${w}] sha ${sha} ${wandb.length} 1`), `worker ${w} got the secret:\n${out.join('\n')}`);
      for (const s of [secret, wandb]) assert.equal(out.join('\n').includes(s), false, 'not in CLI output');
      // No file under TPW_HOME (registry, caches, emulator state, the workers' sandboxes and logs) holds it: the
      // workers' env files were removed as soon as the wrappers had read them.
      const holding: string[] = [];
      const scan = (dir: string) => {
        for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
          const p = path.join(dir, e.name);
          if (e.isDirectory()) scan(p);
          else if (e.isFile() && fs.readFileSync(p, 'latin1').includes(secret)) holding.push(p);
        }
      };
      scan(home);
      assert.deepEqual(holding, [], 'the secret is in no file');
      assert.ok(fs.readdirSync(path.join(home, 'runs')).some((n) => n.startsWith(runId)), 'the registry was scanned with this run in it');
    } finally {
      process.chdir(cwd);
      await emu.stop();
      for (const [k, v] of [['TPW_HOME', saved.home], ['HF_TOKEN', saved.hf], ['WANDB_API_KEY', saved.wb], ['XLA_IR_DEBUG', saved.xla]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
