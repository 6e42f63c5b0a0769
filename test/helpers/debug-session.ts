import assert from 'node:assert/strict';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { ConnectionManager, hostKeyOptionsFor } from '../../extension/src/core/ssh/connection';
import type { SocketForward } from '../../extension/src/core/ssh/port-forward';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { findNode } from '../../extension/src/core/slices/find';
import type { TpuNode } from '../../extension/src/core/tpu/models';
import type { EmulatorPod } from './cli';
import type { DapClient } from './dap-client';

/**
 * What a debugger test against the emulator holds: the backend, the connection owner the run and the tunnel
 * share, the tunnel and the DAP client. Closed after the file's tests, whatever they got to.
 */
export interface DebugSession {
  backend?: Backend;
  conns?: ConnectionManager;
  forward?: SocketForward;
  dap?: DapClient;
}

export function debugSessionFixture(hooks: { after: (fn: () => Promise<void>) => void }): DebugSession {
  const s: DebugSession = {};
  hooks.after(async () => {
    s.dap?.close();
    await s.forward?.close();
    s.conns?.dispose();
    await s.backend?.close();
  });
  return s;
}

/** Creates the single-host VM `vm` on the pod's emulator and opens the session's backend and connections to its worker. */
export async function vmWorker(pod: EmulatorPod, s: DebugSession, vm = 'one'): Promise<{ backend: Backend; conns: ConnectionManager; node: TpuNode; w0: WorkerTarget }> {
  const made = await pod.tpw('vm', 'create', vm, '--type', 'v5litepod-8');
  assert.equal(made.code, 0, made.err.join('\n'));
  const backend = await openBackend({ useEmulator: true });
  s.backend = backend;
  const conns = new ConnectionManager(hostKeyOptionsFor(backend.kind, false));
  s.conns = conns;
  const { node } = await findNode(backend, vm);
  const [w0] = await backend.workersOf(node);
  return { backend, conns, node, w0 };
}
