import * as vscode from 'vscode';
import type { Backend } from '../core/backend';
import { TpwError } from '../core/errors';
import { NODE_ID_PATTERN, parseNodeName, shortName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';
import { cancelledError, signalFor } from './cancel';
import { listAllNodes, VmItem, WorkerItem, zoneOf, type VmTreeProvider } from './vmTree';

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
    { title, placeHolder: 'TPU VM', matchOnDescription: true },
  );
  return picked?.node;
}

/** Suggests `tpu-vm-N` with the first N not taken in the zone. */
function suggestName(taken: Set<string>): string {
  for (let i = 1; ; i++) if (!taken.has(`tpu-vm-${i}`)) return `tpu-vm-${i}`;
}

/** Why `value` is not a valid new node ID, or undefined if it is. Exported for unit tests. */
export function validateNodeId(value: string, taken: ReadonlySet<string>): string | undefined {
  if (value.length === 0) return 'Enter a name for the TPU VM.';
  if (value.length > 63) return `The name is ${value.length} characters long; at most 63 are allowed.`;
  if (!NODE_ID_PATTERN.test(value)) {
    return 'Use lowercase letters, digits and hyphens; start with a letter and do not end with a hyphen (e.g. "my-tpu-1").';
  }
  if (taken.has(value)) return `A TPU VM named "${value}" already exists in this zone.`;
  return undefined;
}

export async function createVm(ctx: Ctx, tree: VmTreeProvider): Promise<void> {
  const backend = await ctx.backend();
  const project = backend.project;

  let zone = backend.zones[0];
  if (backend.zones.length > 1) {
    const z = await vscode.window.showQuickPick(backend.zones, { title: 'Create TPU VM (1/4): zone', placeHolder: 'Zone' });
    if (!z) return;
    zone = z;
  }
  if (!zone) throw new TpwError('FAILED_PRECONDITION', 'No zone is configured: set tpuWorkbench.zones.');

  // showQuickPick takes a promise and shows a busy bar while it resolves, so the lists load inside the pick.
  const types = backend.api.listAcceleratorTypes(project, zone).then((ts) =>
    ts
      .map((t) => t.type)
      .sort(compareAccelerators)
      .map((label) => ({ label })),
  );
  const type = await vscode.window.showQuickPick(types, { title: `Create TPU VM in ${zone} (2/4): accelerator type`, placeHolder: 'e.g. v5litepod-8' });
  if (!type) return;

  const versions = backend.api.listRuntimeVersions(project, zone).then((vs) =>
    vs
      .map((v) => v.version)
      .sort()
      .reverse()
      .map((label) => ({ label })),
  );
  const version = await vscode.window.showQuickPick(versions, { title: `Create ${type.label} in ${zone} (3/4): runtime version`, placeHolder: 'TPU software version' });
  if (!version) return;

  const taken = new Set((await backend.api.listNodes(project, zone)).map((n) => shortName(n.name)));
  const nodeId = await vscode.window.showInputBox({
    title: `Create ${type.label} in ${zone} (4/4): name`,
    prompt: 'Name of the new TPU VM',
    value: suggestName(taken),
    validateInput: (v) => validateNodeId(v.trim(), taken),
  });
  if (nodeId === undefined) return;
  const name = nodeId.trim();

  ctx.log.info(`creating ${name} (${type.label}, ${version.label}) in ${project}/${zone}`);
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Creating TPU VM ${name} (${type.label})`, cancellable: true },
    async (progress, token) => {
      const signal = signalFor(token);
      let shown = false;
      try {
        await backend.api.createNode(
          { project, zone, nodeId: name, acceleratorType: type.label, runtimeVersion: version.label },
          {
            signal,
            onProgress: (p) => {
              // The first report means the node exists (CREATING): show it in the tree right away.
              if (!shown) tree.refresh();
              shown = true;
              progress.report({ message: p.done ? 'done' : 'waiting for the VM to become READY…' });
            },
          },
        );
      } catch (e) {
        if (signal.aborted) {
          void vscode.window.showInformationMessage(`Stopped waiting for ${name}; Cloud TPU keeps creating it in the background.`);
          throw cancelledError();
        }
        throw e;
      } finally {
        tree.refresh();
      }
    },
  );
  ctx.log.info(`created ${name}`);
  void vscode.window.showInformationMessage(`TPU VM ${name} is READY.`);
}

export async function deleteVm(ctx: Ctx, tree: VmTreeProvider, arg: unknown): Promise<void> {
  const backend = await ctx.backend();
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
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Deleting TPU VM ${id.node}`, cancellable: true },
    async (_progress, token) => {
      const signal = signalFor(token);
      try {
        await backend.api.deleteNode(id, { signal, onProgress: () => tree.refresh() });
      } catch (e) {
        if (signal.aborted) throw cancelledError();
        throw e;
      } finally {
        tree.refresh();
      }
    },
  );
  ctx.log.info(`deleted ${node.name}`);
}

/** Sorts v5litepod-8 before v5litepod-16: by family, then by the chip count as a number. */
function compareAccelerators(a: string, b: string): number {
  const pa = /^(.*?)-(\d+)$/.exec(a);
  const pb = /^(.*?)-(\d+)$/.exec(b);
  if (pa && pb && pa[1] === pb[1]) return Number(pa[2]) - Number(pb[2]);
  return a.localeCompare(b);
}
