/**
 * Entry of dist/tpw-profile: `tpw profile` as a native executable, compiled by Bun (scripts/build.mjs) from the
 * same core code as the node CLI and the run view. bin/tpw runs it for `tpw profile`, because node's own start
 * (60–110 ms before any of our code runs) is longer than reading most captures; this starts in under 10 ms.
 *
 * It hands the invocation, unchanged, to the node CLI (bin/tpw.js) where node answers better:
 * - anything profileMain does not take (--help, an unknown flag): the full CLI answers, as it does for node;
 * - big captures (profile-hand-off.ts): there JavaScriptCore was no faster than V8 and held more memory, and only
 *   node has the helper threads' bundle for splitting a capture over cores.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { captureSizes, handOffToNode } from './profile-hand-off';
import { exitQuietlyOnClosedPipe, profileMain } from './profile-main';

/**
 * Runs the node CLI on `args`, passing this terminal on; its exit status, or undefined where node could not be
 * started. TPW_NODE names the node to use (tests, and machines where it is not on the PATH).
 */
function runNode(args: string[]): number | undefined {
  // process.execPath is this executable, dist/tpw-profile; bin/tpw.js is beside dist/.
  const cli = path.join(path.dirname(process.execPath), '..', 'bin', 'tpw.js');
  const r = spawnSync(process.env.TPW_NODE || 'node', [cli, ...args], { stdio: 'inherit' });
  if (r.error) return undefined;
  if (r.signal) process.kill(process.pid, r.signal);
  return r.status ?? 1;
}

async function main(args: string[]): Promise<number> {
  if (args[0] !== 'profile') return runNode(args) ?? noNode(args);
  const argv = args.slice(1);
  if (handOffToNode(captureSizes(argv))) {
    const code = runNode(args);
    if (code !== undefined) return code;
    // No node: analyze here, slower on a big capture but the same answer.
  }
  const code = await profileMain(argv);
  return code ?? runNode(args) ?? noNode(args);
}

function noNode(args: string[]): number {
  process.stderr.write(`tpw: \`tpw ${args.join(' ')}\` needs node, which was not found (set TPW_NODE to its path).\n`);
  return 1;
}

exitQuietlyOnClosedPipe(process.stdout);
exitQuietlyOnClosedPipe(process.stderr);
void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
