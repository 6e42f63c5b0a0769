import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { Backend } from '../core/backend';
import {
  compareAcceleratorTypes,
  createNodeRequest,
  createQueuedRequest,
  parseDataDisk,
  parseLabels,
  parseValidUntil,
  recommendedRuntime,
  suggestNodeId,
  validateNodeId,
  type CreateAnswers,
} from '../core/explorer/create-request';
import type { ProvisioningModel } from '../core/explorer/node-status';
import { WizardFlow, type StepOutcome } from '../core/explorer/wizard-flow';
import { gcloudCreateCommand, gcloudQueuedCommand } from '../core/tpu/gcloud-command';
import { TpwError } from '../core/errors';
import { shortName } from '../core/tpu/models';
import { costFor } from './explorer/cost';
import { inputStep, pickStep } from './quick-input';
import { explorerZones, zoneOf, type VmTreeProvider } from './vm-tree';

/**
 * "Create TPU VM": a multi-step quick pick with a working Back button. Every answer is kept when going back,
 * lists come from the API for the chosen zone, the recommended runtime for the type is preselected, each
 * provisioning choice shows its hourly price, and the last step shows the equivalent gcloud command.
 */
type StepId = 'name' | 'zone' | 'type' | 'runtime' | 'provisioning' | 'validUntil' | 'startupScript' | 'labels' | 'dataDisk' | 'review';
const ORDER: StepId[] = ['name', 'zone', 'type', 'runtime', 'provisioning', 'validUntil', 'startupScript', 'labels', 'dataDisk', 'review'];

/** What the provisioning step offers: the VM's pricing model, or a queued resource in one of its tiers. */
type ProvisioningChoice = ProvisioningModel | 'queued-guaranteed' | 'queued-spot';

interface WizardAnswers extends Partial<Omit<CreateAnswers, 'labels' | 'queued' | 'provisioning'>> {
  choice?: ProvisioningChoice;
  labelsText: string;
  validUntilText: string;
  dataDiskText: string;
  startupScriptPath?: string;
}

interface Item<T> extends vscode.QuickPickItem {
  value: T;
}

export interface WizardResult {
  answers: CreateAnswers;
  /** The equivalent gcloud command, for the log. */
  gcloud: string;
}

/** Fills the answers step by step; undefined if the user cancelled. */
export async function runCreateWizard(backend: Backend, tree: VmTreeProvider, preset: { zone?: string } = {}): Promise<WizardResult | undefined> {
  const project = backend.project;
  const zones = await explorerZones(backend);
  if (zones.length === 0) throw new TpwError('FAILED_PRECONDITION', `No zone to create a TPU VM in: project ${project} lists none (setting tpuWorkbench.zones).`);
  const a: WizardAnswers = { zone: preset.zone ?? (zones.length === 1 ? zones[0] : undefined), labelsText: '', validUntilText: '', dataDiskText: '' };
  const takenIn = (zone: string | undefined): Set<string> => new Set(tree.lastNodes.filter((n) => zoneOf(n) === zone).map((n) => shortName(n.name)));
  a.name = suggestNodeId(new Set(tree.lastNodes.map((n) => shortName(n.name))));

  // A single zone (the emulator, or one configured zone) needs no zone step.
  const flow = new WizardFlow<StepId, WizardAnswers>(ORDER, (id, s) => {
    if (id === 'zone') return zones.length > 1;
    if (id === 'validUntil') return s.choice === 'queued-guaranteed' || s.choice === 'queued-spot';
    return true;
  });
  const STEP_LABELS: Record<StepId, string> = {
    name: 'name',
    zone: 'zone',
    type: 'accelerator type',
    runtime: 'runtime version',
    provisioning: 'provisioning',
    validUntil: 'valid until',
    startupScript: 'startup script',
    labels: 'labels',
    dataDisk: 'data disk',
    review: 'review',
  };
  // The step's name ends the title, so each step says what it asks even with the answers so far in front.
  const title = (id: StepId): string => `Create TPU VM${a.name && id !== 'name' ? ` ${a.name}` : ''}${a.zone && id !== 'zone' && id !== 'name' ? ` in ${a.zone}` : ''}: ${STEP_LABELS[id]}`;

  let result: WizardResult | undefined;
  const show = async (id: StepId, canGoBack: boolean): Promise<StepOutcome> => {
    const { step, total } = flow.position(id, a);
    const h = { title: title(id), step, totalSteps: total, canGoBack };
    switch (id) {
      case 'name':
        return inputStep({
          ...h,
          prompt: 'Name of the new TPU VM (lowercase letters, digits and hyphens)',
          value: a.name ?? '',
          validate: (v) => validateNodeId(v.trim(), takenIn(a.zone)),
          onAccept: (v) => (a.name = v.trim()),
        });
      case 'zone': {
        const outcome = await pickStep<Item<string>>({
          ...h,
          placeholder: 'Zone',
          items: zones.map((z) => ({ label: z, value: z, description: takenIn(z).has(a.name ?? '') ? `a VM named ${a.name} exists here` : undefined })),
          active: (i) => i.value === a.zone,
          onAccept: ([i]) => (a.zone = i.value),
        });
        // The name is unique per zone: go back to it when this zone already has one.
        if (outcome === 'next' && takenIn(a.zone).has(a.name ?? '')) {
          void vscode.window.showWarningMessage(`A TPU VM named "${a.name}" already exists in ${a.zone}: choose another name.`);
          return 'back';
        }
        return outcome;
      }
      case 'type':
        return pickStep<Item<string>>({
          ...h,
          placeholder: 'Accelerator type, e.g. v5litepod-8 or v6e-8',
          items: backend.api.listAcceleratorTypes(project, a.zone!).then((ts) =>
            ts
              .map((t) => t.type)
              .sort(compareAcceleratorTypes)
              .map((t) => ({ label: t, value: t, description: costFor(t, a.zone!, 'on-demand') })),
          ),
          active: (i) => i.value === a.acceleratorType,
          onAccept: ([i]) => {
            if (i.value !== a.acceleratorType) a.runtimeVersion = undefined; // the recommended one changes with the type
            a.acceleratorType = i.value;
          },
        });
      case 'runtime': {
        const recommended = recommendedRuntime(a.acceleratorType!);
        return pickStep<Item<string>>({
          ...h,
          placeholder: `TPU software version${recommended ? ` (recommended for ${a.acceleratorType}: ${recommended})` : ''}`,
          items: backend.api.listRuntimeVersions(project, a.zone!).then((vs) => {
            const versions = vs.map((v) => v.version).sort().reverse();
            // The recommended runtime goes first, where the eye (and Enter) lands.
            if (recommended && versions.includes(recommended)) {
              versions.splice(versions.indexOf(recommended), 1);
              versions.unshift(recommended);
            }
            return versions.map((v) => ({ label: v, value: v, description: v === recommended ? 'recommended' : undefined }));
          }),
          active: (i) => i.value === (a.runtimeVersion ?? recommended),
          onAccept: ([i]) => (a.runtimeVersion = i.value),
        });
      }
      case 'provisioning': {
        const price = (tier: ProvisioningModel) => costFor(a.acceleratorType!, a.zone!, tier) ?? 'no list price';
        const items: Item<ProvisioningChoice>[] = [
          { label: 'On-demand', value: 'on-demand', description: price('on-demand'), detail: 'Runs until you delete it.' },
          { label: 'Spot', value: 'spot', description: price('spot'), detail: 'Cheaper; Cloud TPU may preempt it at any time.' },
          { label: 'Reserved', value: 'reserved', description: price('reserved'), detail: 'Uses a reservation of the project.' },
          { label: 'Queued resource (guaranteed)', value: 'queued-guaranteed', description: price('on-demand'), detail: 'Waits in line until capacity is free, then creates the VM.' },
          { label: 'Queued resource (spot)', value: 'queued-spot', description: price('spot'), detail: 'Waits for spot capacity; the VM may be preempted.' },
        ];
        return pickStep<Item<ProvisioningChoice>>({
          ...h,
          placeholder: 'Provisioning',
          items,
          active: (i) => i.value === (a.choice ?? 'on-demand'),
          onAccept: ([i]) => (a.choice = i.value),
        });
      }
      case 'validUntil':
        return inputStep({
          ...h,
          prompt: 'Give up waiting after (e.g. 6h, 2d) or at a time (2026-12-01T18:00:00Z); empty: wait indefinitely',
          value: a.validUntilText,
          validate: (v) => {
            const p = parseValidUntil(v);
            return p.ok ? undefined : p.error;
          },
          onAccept: (v) => (a.validUntilText = v),
        });
      case 'startupScript':
        return startupScriptStep(h, a);
      case 'labels':
        return inputStep({
          ...h,
          prompt: 'Labels, key=value separated by commas (optional)',
          placeholder: 'team=ml,env=dev',
          value: a.labelsText,
          validate: (v) => {
            const p = parseLabels(v);
            return p.ok ? undefined : p.error;
          },
          onAccept: (v) => (a.labelsText = v),
        });
      case 'dataDisk':
        return inputStep({
          ...h,
          prompt: 'Persistent disk to attach read-write (optional): a disk name in this zone, or projects/P/zones/Z/disks/D',
          value: a.dataDiskText,
          validate: (v) => {
            const p = parseDataDisk(v, project, a.zone!);
            return p.ok ? undefined : p.error;
          },
          onAccept: (v) => (a.dataDiskText = v),
        });
      case 'review': {
        const answers = finalAnswers(a, project);
        const gcloud = answers.queued ? gcloudQueuedCommand(createQueuedRequest(project, answers)) : gcloudCreateCommand(createNodeRequest(project, answers));
        const copy = async () => {
          await vscode.env.clipboard.writeText(gcloud);
          void vscode.window.showInformationMessage('Copied the gcloud command.');
        };
        const verb = answers.queued ? 'Queue' : 'Create';
        const what = `${answers.acceleratorType}, ${answers.runtimeVersion}, ${answers.queued ? `queued (${answers.queued.tier})` : answers.provisioning}`;
        return pickStep<Item<'create' | 'copy'>>({
          ...h,
          placeholder: `Review: ${what}`,
          items: [
            { label: `$(check) ${verb} ${answers.name}`, value: 'create', description: what, detail: gcloud },
            { label: '$(copy) Copy gcloud command', value: 'copy', detail: 'Copies the command and closes the wizard without creating anything.' },
          ],
          buttons: [{ button: { iconPath: new vscode.ThemeIcon('copy'), tooltip: 'Copy gcloud command' }, run: copy }],
          onAccept: ([i]) => {
            if (i.value === 'copy') void copy();
            else result = { answers, gcloud };
          },
        });
      }
    }
  };
  const finished = await flow.run(a, show);
  return finished ? result : undefined;
}

async function startupScriptStep(h: { title: string; step: number; totalSteps: number; canGoBack: boolean }, a: WizardAnswers): Promise<StepOutcome> {
  for (;;) {
    let choice: 'none' | 'file' | 'keep' | undefined;
    const items: Item<'none' | 'file' | 'keep'>[] = [
      { label: 'No startup script', value: 'none' },
      { label: '$(file) Choose a file…', value: 'file', detail: 'Runs as root on every worker at boot (metadata startup-script).' },
    ];
    if (a.startupScriptPath) items.unshift({ label: `$(check) ${vscode.workspace.asRelativePath(a.startupScriptPath)}`, value: 'keep' });
    const outcome = await pickStep<Item<'none' | 'file' | 'keep'>>({ ...h, placeholder: 'Startup script (optional)', items, onAccept: ([i]) => (choice = i.value) });
    if (outcome !== 'next') return outcome;
    if (choice === 'none') a.startupScriptPath = undefined;
    if (choice !== 'file') return 'next';
    const picked = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: 'Use as startup script', title: 'Startup script' });
    if (picked?.[0]) {
      a.startupScriptPath = picked[0].fsPath;
      return 'next';
    }
    // Dialog dismissed: ask again.
  }
}

function finalAnswers(a: WizardAnswers, project: string): CreateAnswers {
  const labels = parseLabels(a.labelsText);
  const until = parseValidUntil(a.validUntilText);
  const disk = parseDataDisk(a.dataDiskText, project, a.zone!);
  const choice = a.choice ?? 'on-demand';
  const queued = choice === 'queued-guaranteed' || choice === 'queued-spot';
  return {
    name: a.name!,
    zone: a.zone!,
    acceleratorType: a.acceleratorType!,
    runtimeVersion: a.runtimeVersion!,
    provisioning: choice === 'queued-spot' ? 'spot' : queued ? 'on-demand' : choice,
    startupScript: a.startupScriptPath ? fs.readFileSync(a.startupScriptPath, 'utf8') : undefined,
    labels: labels.ok ? labels.value : {},
    dataDisk: disk.ok ? disk.value : undefined,
    queued: queued ? { tier: choice === 'queued-spot' ? 'spot' : 'guaranteed', validUntil: until.ok ? until.value : undefined } : undefined,
  };
}
