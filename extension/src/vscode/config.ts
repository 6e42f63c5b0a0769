import * as vscode from 'vscode';
import type { BackendOptions } from '../core/backend';

/**
 * Typed access to the `tpuWorkbench.*` settings. Everything else reads settings through here, so a
 * setting's name and its default live in one place besides package.json.
 */
const SECTION = 'tpuWorkbench';

function section(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

/** The GCP project, or undefined when none is configured. */
export function project(): string | undefined {
  const p = section().get<string>('project')?.trim();
  return p ? p : undefined;
}

/** Zones to list; undefined means "whatever the backend serves". */
export function zones(): string[] | undefined {
  const z = (section().get<string[]>('zones') ?? []).map((s) => s.trim()).filter((s) => s.length > 0);
  return z.length > 0 ? z : undefined;
}

/**
 * `useEmulator` is tri-state: true/false force a backend; null (the default) picks the emulator
 * when no project is configured, so a fresh install works offline without any setup.
 */
export function useEmulator(): boolean {
  const v = section().get<boolean | null>('useEmulator');
  if (typeof v === 'boolean') return v;
  return project() === undefined;
}

/** Seconds a chip may idle while its trainer is training before the run view's Health notes it. */
export function chipIdleNoteSeconds(): number {
  const v = section().get<number>('chips.idleNoteSeconds');
  return typeof v === 'number' && v > 0 ? v : 30;
}

export function failFast(): boolean {
  return section().get<boolean>('run.failFast') ?? true;
}

/** Runs' output also in the "TPU Run" Output channel (the run view has it either way). */
export function runOutputChannel(): boolean {
  return section().get<boolean>('run.outputChannel') ?? false;
}

/** Ask before running a recipe the editor shows errors in. */
export function confirmRecipeErrors(): boolean {
  return section().get<boolean>('run.confirmRecipeErrors') ?? true;
}

export async function stopConfirmingRecipeErrors(): Promise<void> {
  await section().update('run.confirmRecipeErrors', false, vscode.ConfigurationTarget.Global);
}

export function backendOptions(): BackendOptions {
  const jump = section().get<string>('ssh.proxyJump')?.trim();
  const command = (section().get<string[]>('ssh.proxyCommand') ?? []).filter((a) => typeof a === 'string');
  return { useEmulator: useEmulator(), project: project(), zones: zones(), sshProxy: { jump: jump || undefined, command: command.length ? command : undefined } };
}

/** A key that changes whenever a setting that affects the backend changes. */
export function backendKey(): string {
  return JSON.stringify(backendOptions());
}

/** True if the event touches a setting that requires reopening the backend. */
export function affectsBackend(e: vscode.ConfigurationChangeEvent): boolean {
  return ['useEmulator', 'project', 'zones', 'ssh'].some((k) => e.affectsConfiguration(`${SECTION}.${k}`));
}

/**
 * Saves the zone list where it is currently set (workspace folder, workspace or user settings): writing
 * user settings while a workspace value exists would change nothing the user sees.
 */
export async function setZones(zones: string[]): Promise<void> {
  const info = section().inspect<string[]>('zones');
  const target =
    info?.workspaceFolderValue !== undefined
      ? vscode.ConfigurationTarget.WorkspaceFolder
      : info?.workspaceValue !== undefined
        ? vscode.ConfigurationTarget.Workspace
        : vscode.ConfigurationTarget.Global;
  await section().update('zones', zones, target);
}
