import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Backend } from '../core/backend';
import { readEmulatorEndpoint } from '../core/local-emulator';
import { TpwError } from '../core/errors';
import { nodeToYaml, queuedResourceToYaml } from '../core/explorer/resource-yaml';
import { hasInclude, readIfExists, upsertManagedBlock, withInclude, workerHostAlias, writeConfigFile, type SshHostEntry } from '../core/explorer/ssh-config';
import { knownHostsFile, tpwHome } from '../core/paths';
import { extensionKeyPath } from '../core/ssh/keys';
import { shJoin } from '../core/ssh/quote';
import { gcloudComputeSshCommand } from '../core/compute/gcloud-compute-command';
import type { WorkerTarget } from '../core/ssh/types';
import { parseNodeName, shortName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';
import { QueuedItem, VmItem, WorkerItem } from './vm-tree';

/**
 * Worker-level actions that need no shell of ours: copy an address or an ssh command, open a worker in
 * Remote-SSH, and show a VM as YAML.
 */

/** The worker a command was invoked on: a worker row, else worker 0 of a single-host VM row, else a pick. */
export async function workerFromArg(arg: unknown, title: string): Promise<{ node: TpuNode; index: number } | undefined> {
  if (arg instanceof WorkerItem) return { node: arg.node, index: arg.index };
  if (!(arg instanceof VmItem)) throw new TpwError('INVALID_ARGUMENT', `${title}: run it from a worker or a VM in the TPU view.`);
  const node = arg.node;
  if (node.networkEndpoints.length <= 1) return { node, index: 0 };
  const picked = await vscode.window.showQuickPick(
    node.networkEndpoints.map((ep, i) => ({ label: `w${i}`, description: ep.accessConfig?.externalIp ? `${ep.ipAddress} · external ${ep.accessConfig.externalIp}` : ep.ipAddress, index: i })),
    { title: `${title}: worker of ${shortName(node.name)}` },
  );
  return picked ? { node, index: picked.index } : undefined;
}

export async function copyIp(arg: unknown): Promise<void> {
  const w = await workerFromArg(arg, 'Copy IP');
  if (!w) return;
  const ep = w.node.networkEndpoints[w.index];
  // The external address is the one that works from a laptop; the internal one inside the VPC.
  const ip = ep.accessConfig?.externalIp ?? ep.ipAddress;
  await vscode.env.clipboard.writeText(ip);
  void vscode.window.showInformationMessage(`Copied ${ip} (w${w.index} of ${shortName(w.node.name)}).`);
}

/** The private key file a command-line ssh should use for this backend. */
function identityFile(backend: Backend): string {
  if (backend.kind === 'emulator') {
    const ep = readEmulatorEndpoint();
    if (!ep) throw new TpwError('EMULATOR_NOT_RUNNING', 'The local TPU emulator is not running.');
    return ep.clientKeyPath;
  }
  const own = extensionKeyPath(tpwHome());
  return fs.existsSync(own) ? own : path.join(os.homedir(), '.ssh', 'google_compute_engine');
}

/**
 * For Cloud TPU the canonical command is gcloud's (it handles keys and IAP); for the emulator, plain ssh with
 * the emulator's key and our known_hosts file.
 */
export async function copySshCommand(ctx: Ctx, arg: unknown): Promise<void> {
  const w = await workerFromArg(arg, 'Copy SSH Command');
  if (!w) return;
  const backend = await ctx.backend();
  const id = parseNodeName(w.node.name);
  let command: string;
  if (backend.kind === 'cloud' && w.node.controlPlane === 'compute') {
    command = gcloudComputeSshCommand(w.node, w.index);
  } else if (backend.kind === 'cloud') {
    command = shJoin(['gcloud', 'compute', 'tpus', 'tpu-vm', 'ssh', id.node, `--zone=${id.zone}`, `--project=${id.project}`, `--worker=${w.index}`]);
  } else {
    const t = (await backend.workersOf(w.node))[w.index];
    command = shJoin(['ssh', '-i', identityFile(backend), '-p', String(t.port), '-o', `UserKnownHostsFile=${knownHostsFile()}`, '-o', 'StrictHostKeyChecking=accept-new', `${t.username}@${t.host}`]);
  }
  await vscode.env.clipboard.writeText(command);
  void vscode.window.showInformationMessage(`Copied: ${command}`);
}

/** Our ssh config file, included from ~/.ssh/config. */
export function managedSshConfigPath(): string {
  return path.join(os.homedir(), '.ssh', 'tpu-workbench.config');
}

const INCLUDE_ASKED_KEY = 'remoteSsh.includeAnswer';
const REMOTE_SSH_ID = 'ms-vscode-remote.remote-ssh';

function hostEntries(backend: Backend, node: TpuNode, workers: WorkerTarget[]): SshHostEntry[] {
  const vm = shortName(node.name);
  const key = identityFile(backend);
  return workers.map((t) => ({
    alias: workerHostAlias(vm, t.index),
    hostName: t.host,
    port: t.port,
    user: t.username,
    identityFile: key,
    proxyJump: t.proxyJump ? `${t.proxyJump.username}@${t.proxyJump.host}:${t.proxyJump.port}` : undefined,
    proxyCommand: t.proxyCommand,
    // Host keys TPU Workbench already trusted are trusted here too, and the other way round.
    userKnownHostsFile: knownHostsFile(),
    strictHostKeyChecking: backend.kind === 'emulator' ? 'accept-new' : undefined,
    comment: `worker ${t.index} of ${vm} (${node.acceleratorType}, ${parseNodeName(node.name).zone})`,
  }));
}

/**
 * Writes `tpu-<vm>-w<N>` for every worker into our config file, asks once to include it from ~/.ssh/config,
 * then opens a Remote-SSH window on the chosen worker.
 */
export async function openInRemoteSsh(ctx: Ctx, arg: unknown): Promise<void> {
  const w = await workerFromArg(arg, 'Open Worker in Remote-SSH');
  if (!w) return;
  const backend = await ctx.backend();
  const workers = await backend.workersOf(w.node);
  const ours = managedSshConfigPath();
  writeConfigFile(ours, upsertManagedBlock(readIfExists(ours), w.node.name, hostEntries(backend, w.node, workers)));
  const alias = workerHostAlias(shortName(w.node.name), w.index);
  ctx.log.info(`wrote ${workers.length} Host entries for ${shortName(w.node.name)} to ${ours}`);

  const userConfig = path.join(os.homedir(), '.ssh', 'config');
  const current = readIfExists(userConfig);
  if (!hasInclude(current, ours, os.homedir())) {
    const asked = ctx.extContext.globalState.get<string>(INCLUDE_ASKED_KEY);
    if (asked === undefined) {
      const choice = await vscode.window.showInformationMessage(
        `Add "Include ${ours}" to the top of ${userConfig}? Remote-SSH and ssh then know the TPU workers as tpu-<vm>-w<N>.`,
        { modal: true },
        'Add Include',
        'Not Now',
      );
      await ctx.extContext.globalState.update(INCLUDE_ASKED_KEY, choice === 'Add Include' ? 'yes' : 'no');
      if (choice === 'Add Include') {
        writeConfigFile(userConfig, withInclude(current, ours));
        ctx.log.info(`added Include ${ours} to ${userConfig}`);
      }
    }
  }

  if (!vscode.extensions.getExtension(REMOTE_SSH_ID)) {
    const choice = await vscode.window.showInformationMessage(
      `The Host entry "${alias}" is in ${ours}. Install the Remote - SSH extension to open the worker in a VS Code window, or run \`ssh ${alias}\`.`,
      'Install Remote - SSH',
      'Copy ssh command',
    );
    if (choice === 'Install Remote - SSH') await vscode.commands.executeCommand('workbench.extensions.search', REMOTE_SSH_ID);
    if (choice === 'Copy ssh command') await vscode.env.clipboard.writeText(`ssh ${alias}`);
    return;
  }
  try {
    await vscode.commands.executeCommand('opensshremotes.openEmptyWindow', { host: alias });
  } catch {
    // Older Remote-SSH without that command: open the login's home as a folder.
    await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.parse(`vscode-remote://ssh-remote+${alias}/home/${workers[w.index].username}`), { forceNewWindow: true });
  }
}

/** Read-only documents with a VM's or queued resource's YAML, under their own scheme. */
export class DetailsDocuments implements vscode.TextDocumentContentProvider {
  static readonly scheme = 'tpu-workbench-details';
  private readonly contents = new Map<string, string>();

  async show(arg: unknown): Promise<void> {
    let name: string;
    let text: string;
    if (arg instanceof VmItem || arg instanceof WorkerItem) {
      name = shortName(arg.node.name);
      text = nodeToYaml(arg.node);
    } else if (arg instanceof QueuedItem) {
      name = `${shortName(arg.qr.name)}-queued`;
      text = queuedResourceToYaml(arg.qr);
    } else {
      throw new TpwError('INVALID_ARGUMENT', 'Show Details: run it from a VM or a queued resource in the TPU view.');
    }
    const uri = vscode.Uri.from({ scheme: DetailsDocuments.scheme, path: `/${name}.yaml`, query: String(Date.now()) });
    this.contents.set(uri.toString(), text);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, 'yaml');
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '# This view is gone; run "Show Details" again.\n';
  }
}
