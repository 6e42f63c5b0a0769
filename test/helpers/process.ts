import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';

/**
 * Looking at this machine's processes from a test: every "worker" of a test fleet (real sshd or the
 * emulator) runs its programs here, so /proc tells what a run left behind.
 */

/**
 * True if the process group has a live (non-zombie) member. Zombies are dead: they only wait for init to
 * reap them, which in some containers never happens.
 */
export function groupAlive(pgid: number): boolean {
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') return true;
    } catch {
      // gone
    }
  }
  return false;
}

/** Pids whose environment holds `needle` (e.g. TPW_RUN_ID=<id>): every process a run started carries it. */
export function processesWithEnv(needle: string): number[] {
  const want = Buffer.from(`\0${needle}\0`);
  const pids: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const env = Buffer.concat([Buffer.from([0]), fs.readFileSync(`/proc/${e}/environ`)]);
      if (env.includes(want)) pids.push(Number(e));
    } catch {
      // gone or unreadable
    }
  }
  return pids;
}

/** Polls `cond` every 50 ms; fails the test naming `what` after `timeoutMs`. */
export async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Established TCP connections whose local end is `host:port` (IPv4), from /proc/net/tcp: on a listening
 * server's address these are the connections it accepted and still holds — the server's count, not the
 * client's.
 */
export function acceptedConnections(host: string, port: number): number {
  const hex = host.split('.').map((o) => Number(o).toString(16).padStart(2, '0')).reverse().join('').toUpperCase();
  const local = `${hex}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const ESTABLISHED = '01';
  return fs
    .readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[1] === local && f[3] === ESTABLISHED).length;
}

/** Runs a program (a peer tool in a benchmark, a set-up step); rejects with its stderr unless it exits 0. */
export function runProgram(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.once('error', reject);
    child.once('exit', (code, sig) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ').slice(0, 200)} → ${code ?? sig}: ${err.trim().slice(0, 400)}`))));
  });
}

/** The process group a run folder's `pid` file names (its first field; the others identify the process). */
export function recordedGroup(runDir: string): number {
  return Number(fs.readFileSync(`${runDir}/pid`, 'utf8').trim().split(/\s+/)[0]);
}
