import * as vscode from 'vscode';
import { computeStatusNote, formatAge, healthNote, schedulingLabel } from '../../core/explorer/node-status';
import { parseNodeName, shortName, type QueuedResource, type TpuNode } from '../../core/tpu/models';
import type { VmCost } from './cost';

/** Hover cards of the explorer: every detail of a VM, worker or queued resource, as a Markdown table. */

function escapeCell(s: string): string {
  return s.replace(/[|\\`*_<>[\]]/g, (c) => `\\${c}`).replace(/\n/g, ' ');
}

function table(md: vscode.MarkdownString, rows: [string, string | undefined][]): void {
  md.appendMarkdown('| | |\n|---|---|\n');
  for (const [k, v] of rows) if (v) md.appendMarkdown(`| ${k} | ${escapeCell(v)} |\n`);
}

export function vmTooltip(node: TpuNode, cost: VmCost | undefined, now = new Date()): vscode.MarkdownString {
  const id = parseNodeName(node.name);
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**${escapeCell(id.node)}** — ${node.state}\n\n`);
  const age = formatAge(node.createTime, now);
  const labels = Object.entries(node.labels).map(([k, v]) => `${k}=${v}`).join(', ');
  table(md, [
    ['Accelerator', node.acceleratorType],
    ['Runtime', node.runtimeVersion || undefined],
    ['Control plane', node.controlPlane === 'compute' ? `Compute Engine (${node.compute?.kind === 'mig' ? 'multi-host slice: a managed instance group' : 'a VM instance'})` : 'Cloud TPU API'],
    ['Compute Engine status', computeStatusNote(node)],
    ['Machine type', node.compute?.machineType],
    ['Topology', node.compute?.topology],
    ['Provisioning', schedulingLabel(node)],
    ['Health', healthNote(node) ?? node.health],
    ['Workers', String(node.networkEndpoints.length)],
    ['Zone', id.zone],
    ['Project', id.project],
    ['Created', node.createTime ? `${node.createTime}${age ? ` (${age} ago)` : ''}` : undefined],
    ['Cost', cost ? `${cost.detail}, an estimate` : undefined],
    ['Labels', labels || undefined],
    ['Description', node.description],
  ]);
  return md;
}

export function workerTooltip(node: TpuNode, index: number): vscode.MarkdownString {
  const ep = node.networkEndpoints[index];
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**Worker ${index}** of ${escapeCell(shortName(node.name))} (\`TPU_WORKER_ID=${index}\`)\n\n`);
  table(md, [
    ['Internal IP', ep.port ? `${ep.ipAddress}:${ep.port}` : ep.ipAddress],
    ['External IP', ep.accessConfig?.externalIp],
    ['VM instance', node.compute?.workers[index] ? `${node.compute.workers[index].instance} (${node.compute.workers[index].status})` : undefined],
  ]);
  return md;
}

export function queuedTooltip(qr: QueuedResource, now = new Date()): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**${escapeCell(shortName(qr.name))}** — queued resource, ${qr.state}\n\n`);
  table(md, [
    ['Creates', qr.nodeIds.join(', ') || undefined],
    ['Accelerator', qr.acceleratorType],
    ['Runtime', qr.runtimeVersion],
    ['Tier', qr.tier],
    ['Valid until', qr.validUntil],
    ['Created', qr.createTime ? `${qr.createTime} (${formatAge(qr.createTime, now) ?? '?'} ago)` : undefined],
    ['Status', qr.stateMessage],
  ]);
  return md;
}
