import * as vscode from 'vscode';
import type { Backend } from '../core/backend';
import { describeError, isTpwError, TpwError } from '../core/errors';
import { isMultiHost } from '../core/explorer/node-status';
import { parseNodeName, shortName, type QueuedResource, type TpuNode } from '../core/tpu/models';
import { deleteSliceGroup } from '../core/slices/multislice';
import { cancelledError, signalFor } from './cancel';
import { runCreateWizard, type WizardAnswers } from './create-wizard';
import type { Ctx } from './ctx';
import { provision, provisionOnCompute } from './provision';
import { listAllNodes, QueuedItem, SliceGroupItem, VmItem, WorkerItem, ZoneItem, zoneOf, type VmTreeProvider } from './vm-tree';

/** The VM a tree command was invoked on, if any (view/item/context passes the tree item). */
export function nodeFromArg(arg: unknown): TpuNode | undefined {
  if (arg instanceof VmItem || arg instanceof WorkerItem) return arg.node;
  return undefined;
}

interface NodePick extends vscode.QuickPickItem {
  node: TpuNode;
}

/** Asks for a VM among those matching `filter`; undefined if the user dismissed the pick. */
export async function pickNode(backend: Backend, title: string, filter: (n: TpuNode) => boolean, emptyMessage: string): Promise<TpuNode | undefined> {
  const { nodes } = await listAllNodes(backend);
  const candidates = nodes.filter(filter);
  if (candidates.length === 0) throw new TpwError('FAILED_PRECONDITION', emptyMessage);
  const picked = await vscode.window.showQuickPick<NodePick>(
    candidates.map((node) => ({
      label: shortName(node.name),
      description: `${node.acceleratorType} · ${zoneOf(node)} · ${node.state}`,
      node,
    })),
    // Often a second step (Run on TPU: recipe, then VM); stays open when a webview takes focus (see secrets.ts).
    { title, placeHolder: 'TPU VM', matchOnDescription: true, ignoreFocusOut: true },
  );
  return picked?.node;
}

/** The node from the tree item, or a pick; then its current state (the tree may be seconds old). */
async function targetNode(ctx: Ctx, arg: unknown, title: string, filter: (n: TpuNode) => boolean, emptyMessage: string): Promise<{ backend: Backend; node: TpuNode } | undefined> {
  const backend = await ctx.backend();
  const fromTree = nodeFromArg(arg);
  const node = fromTree ? await backend.api.getNode(parseNodeName(fromTree.name)) : await pickNode(backend, title, filter, emptyMessage);
  return node ? { backend, node } : undefined;
}

/** "Create TPU VM". `again`: the answers of a create that failed (Retry), shown at the wizard's review. */
export async function createVm(ctx: Ctx, tree: VmTreeProvider, arg: unknown, again?: WizardAnswers): Promise<void> {
  const backend = await ctx.backend();
  const result = await runCreateWizard(backend, tree, arg instanceof ZoneItem ? { zone: arg.scan.zone, plane: arg.plane } : {}, again);
  if (!result) return;
  ctx.log.info(`create: equivalent to ${result.gcloud}`);
  try {
    if (result.plane === 'compute') await provisionOnCompute(ctx, tree, backend, result.request, result.summary);
    else await provision(ctx, tree, backend, result.answers);
  } catch (e) {
    if (isTpwError(e, 'CANCELLED')) throw e;
    // Nothing typed is lost: Retry opens the wizard again at its review, every answer as it was.
    const name = result.plane === 'compute' ? result.request.name : result.answers.name;
    ctx.log.error(`Create TPU VM ${name} failed: ${describeError(e)}`);
    const choice = await vscode.window.showErrorMessage(`Create TPU VM ${name} failed: ${describeError(e)}`, 'Retry…', 'Show log');
    if (choice === 'Show log') ctx.log.show(true);
    if (choice === 'Retry…') await createVm(ctx, tree, arg, result.wizard);
  }
}

/** Runs a long-running operation on a VM with a cancellable notification, refreshing the tree as it goes. */
async function nodeOperation(tree: VmTreeProvider, title: string, op: (signal: AbortSignal) => Promise<unknown>): Promise<void> {
  await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, async (_progress, token) => {
    const signal = signalFor(token);
    try {
      // The operation moves the VM into a transitional state: show it, and the tree polls from there.
      setTimeout(() => tree.refresh(), 500);
      await op(signal);
    } catch (e) {
      if (signal.aborted) throw cancelledError();
      throw e;
    } finally {
      tree.refresh();
    }
  });
}

export async function deleteVm(ctx: Ctx, tree: VmTreeProvider, arg: unknown): Promise<void> {
  const backend = await ctx.backend();
  if (arg instanceof SliceGroupItem) return deleteGroup(ctx, tree, backend, arg);
  const node = nodeFromArg(arg) ?? (await pickNode(backend, 'Delete TPU VM', () => true, 'There are no TPU VMs to delete.'));
  if (!node) return;
  const id = parseNodeName(node.name);
  const answer = await vscode.window.showWarningMessage(
    `Delete TPU VM "${id.node}" in ${id.zone}?`,
    { modal: true, detail: `${node.acceleratorType}, ${node.networkEndpoints.length} workers. Everything on its workers is lost; this cannot be undone.` },
    'Delete',
  );
  if (answer !== 'Delete') return;
  ctx.log.info(`deleting ${node.name}`);
  await nodeOperation(tree, `Deleting TPU VM ${id.node}`, (signal) => backend.api.deleteNode(id, { signal }));
  ctx.log.info(`deleted ${node.name}`);
}

/** A multislice group's row: every slice of a Compute Engine group (a Cloud TPU group is refused with its queued resource's command). */
async function deleteGroup(ctx: Ctx, tree: VmTreeProvider, backend: Backend, item: SliceGroupItem): Promise<void> {
  const name = shortName(item.group);
  const zone = parseNodeName(item.slices[0]?.name ?? '').zone;
  const answer = await vscode.window.showWarningMessage(
    `Delete multislice group "${name}" in ${zone}?`,
    { modal: true, detail: `All ${item.slices.length} slices (${item.slices.map((n) => shortName(n.name)).join(', ')}) are deleted. Everything on their workers is lost; this cannot be undone.` },
    'Delete',
  );
  if (answer !== 'Delete') return;
  ctx.log.info(`deleting multislice group ${item.group}`);
  await nodeOperation(tree, `Deleting multislice group ${name}`, (signal) => deleteSliceGroup(backend, name, zone, { signal }));
  ctx.log.info(`deleted multislice group ${item.group}`);
}

export async function startVm(ctx: Ctx, tree: VmTreeProvider, arg: unknown): Promise<void> {
  const t = await targetNode(ctx, arg, 'Start TPU VM', (n) => n.state === 'STOPPED', 'There is no STOPPED TPU VM to start.');
  if (!t) return;
  const id = parseNodeName(t.node.name);
  if (t.node.state !== 'STOPPED') throw new TpwError('FAILED_PRECONDITION', `TPU VM ${id.node} is ${t.node.state}; only a STOPPED VM can be started.`);
  ctx.log.info(`starting ${t.node.name}`);
  await nodeOperation(tree, `Starting TPU VM ${id.node}`, (signal) => t.backend.api.startNode(id, { signal }));
  void vscode.window.showInformationMessage(`TPU VM ${id.node} is READY.`);
}

export async function stopVm(ctx: Ctx, tree: VmTreeProvider, arg: unknown): Promise<void> {
  const t = await targetNode(ctx, arg, 'Stop TPU VM', (n) => n.state === 'READY' && !isMultiHost(n), 'There is no READY single-host TPU VM to stop (pod slices cannot be stopped).');
  if (!t) return;
  const id = parseNodeName(t.node.name);
  // The API refuses to stop multi-host slices; say why here rather than relay its error.
  if (isMultiHost(t.node)) throw new TpwError('FAILED_PRECONDITION', `TPU VM ${id.node} has ${t.node.networkEndpoints.length} workers: Cloud TPU can stop single-host VMs only. Delete it instead, or keep it running.`);
  ctx.log.info(`stopping ${t.node.name}`);
  await nodeOperation(tree, `Stopping TPU VM ${id.node}`, (signal) => t.backend.api.stopNode(id, { signal }));
  void vscode.window.showInformationMessage(`TPU VM ${id.node} is STOPPED.`);
}

export async function deleteQueuedResource(ctx: Ctx, tree: VmTreeProvider, arg: unknown): Promise<void> {
  const backend = await ctx.backend();
  let qr: QueuedResource | undefined = arg instanceof QueuedItem ? arg.qr : undefined;
  if (!qr) {
    const all = tree.lastScans.flatMap((s) => s.queued);
    if (all.length === 0) throw new TpwError('FAILED_PRECONDITION', 'There are no queued resources to delete.');
    qr = (await vscode.window.showQuickPick(all.map((q) => ({ label: shortName(q.name), description: `${q.state} · ${q.acceleratorType ?? ''}`, q })), { title: 'Delete Queued Resource' }))?.q;
    if (!qr) return;
  }
  const m = /^projects\/([^/]+)\/locations\/([^/]+)\/queuedResources\/([^/]+)$/.exec(qr.name);
  if (!m) throw new TpwError('INTERNAL', `Not a queued resource name: ${qr.name}`);
  const id = { project: m[1], zone: m[2], queuedResource: m[3] };
  const active = qr.state === 'ACTIVE';
  const answer = await vscode.window.showWarningMessage(
    `Delete queued resource "${id.queuedResource}" in ${id.zone}?`,
    { modal: true, detail: active ? `It is ACTIVE: its TPU VM (${qr.nodeIds.join(', ')}) is deleted with it.` : `It is ${qr.state}; the request is withdrawn.` },
    'Delete',
  );
  if (answer !== 'Delete') return;
  ctx.log.info(`deleting queued resource ${qr.name}${active ? ' (force: with its node)' : ''}`);
  await nodeOperation(tree, `Deleting queued resource ${id.queuedResource}`, (signal) => backend.api.deleteQueuedResource(id, { signal, force: active }));
}
