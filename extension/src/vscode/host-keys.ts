import * as os from 'node:os';
import * as vscode from 'vscode';
import { addKeyToVm } from '../core/slices/add-key';
import { ensureExtensionKey } from '../core/ssh/keys';
import { shortName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';
import { hostKeyOptionsFor, type ConnectionManagerOptions, type HostKeyQuestion } from '../core/ssh/connection';

/**
 * First contact with a real TPU VM's worker: a modal with the key's fingerprint, as `ssh` asks on a terminal.
 * A pod has many workers, and a run connects to all of them at once: "Trust All New Keys" answers the
 * questions already waiting (that pod's), so a 64-host pod is one question, not 64 — but not questions asked
 * later, since the extension's one connection owner (Ctx) lives as long as the window. Prompts are
 * serialized: one modal at a time.
 */
export function vscodeHostKeys(kind: 'emulator' | 'cloud'): Pick<ConnectionManagerOptions, 'hostKeyPolicy' | 'confirmHostKey'> {
  if (kind === 'emulator') return hostKeyOptionsFor(kind, false);
  let trustAll = false;
  let waiting = 0;
  let queue: Promise<unknown> = Promise.resolve();
  const ask = async (q: HostKeyQuestion): Promise<boolean> => {
    if (trustAll) return true;
    const choice = await vscode.window.showWarningMessage(
      `First connection to ${q.label}. Trust its SSH host key?`,
      { modal: true, detail: `${q.keyType} key fingerprint:\n${q.fingerprint}\n\nCompare it with the VM's (e.g. the serial console), then trust it. It is recorded in TPU Workbench's known_hosts; a later change is refused.` },
      'Trust',
      'Trust All New Keys',
    );
    if (choice === 'Trust All New Keys') trustAll = true;
    return choice !== undefined;
  };
  return {
    hostKeyPolicy: 'strict',
    confirmHostKey: (q) => {
      waiting++;
      const answer = queue.then(() => ask(q)).finally(() => {
        // The burst of questions is answered: the next one (another VM, later) is asked again.
        if (--waiting === 0) trustAll = false;
      });
      queue = answer.catch(() => undefined);
      return answer;
    },
  };
}

/** "Add My Key to This VM": TPU Workbench's ed25519 public key into the node's metadata ssh-keys. */
export async function addMyKey(ctx: Ctx, node: TpuNode): Promise<void> {
  const backend = await ctx.backend();
  const key = ensureExtensionKey();
  const user = (await backend.workersOf(node))[0]?.username ?? os.userInfo().username;
  const added = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Adding your key to ${shortName(node.name)}` }, () =>
    addKeyToVm(backend, node, user, key.publicKey),
  );
  ctx.log.info(`added ${key.privateKeyPath}.pub for ${added.username} to ${node.name}${added.osLogin ? ' (OS Login profile)' : ''}`);
  if (!added.osLogin) void vscode.window.showInformationMessage(`Your TPU Workbench key is on ${shortName(node.name)} (user ${added.username}); new connections use it.`);
}
