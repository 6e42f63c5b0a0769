import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { Backend } from '../core/backend';
import {
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
import {
  createComputeRequest,
  defaultControlPlane,
  describeSlice,
  parseImage,
  parseMaxRunDuration,
  parseReservation,
  parseTopology,
  tpuApiOffers,
  wizardTypes,
  CREATE_STEPS as ORDER,
  createStepApplies,
  reviewRowApplies,
  type ControlPlane,
  type CreateStepId as StepId,
  type ProvisioningChoice,
} from '../core/explorer/compute-create';
import { TPU_IMAGE_PROJECT, type CreateComputeSliceRequest, type Provisioning } from '../core/compute/provider';
import { gcloudComputeCommands } from '../core/compute/gcloud-compute-command';
import { familyInfo, parseAcceleratorType } from '../core/compute/tpu-machine-types';
import { describeError } from '../core/errors';
import { gcloudCreateCommand, gcloudQueuedCommand } from '../core/tpu/gcloud-command';
import { TpwError } from '../core/errors';
import { shortName } from '../core/tpu/models';
import { costFor } from './explorer/cost';
import { inputStep, pickStep } from './quick-input';
import { explorerZones, zoneOf, type VmTreeProvider } from './vm-tree';

/**
 * "Create TPU VM": a multi-step quick pick with a working Back button. Every answer is kept when going back,
 * lists come from the APIs for the chosen zone, a step with one possible answer is not asked (one zone; the
 * control plane of a type only Compute Engine makes), the recommended runtime (Cloud TPU API) is preselected,
 * each provisioning choice shows its hourly price, and the review shows the equivalent gcloud command(s) with
 * the answers that have a default as rows to change there (boot image, from the TPU VM images; startup script;
 * labels; data disk). A create that fails offers Retry, which opens the review again with every answer kept.
 */
export interface WizardAnswers extends Partial<Omit<CreateAnswers, 'labels' | 'queued' | 'provisioning'>> {
  plane?: ControlPlane;
  /** How many control planes offer the type in the zone (1: no control plane step). */
  planeChoices?: number;
  topologyText: string;
  imageText: string;
  maxRunText: string;
  reservationText: string;
  choice?: ProvisioningChoice;
  labelsText: string;
  validUntilText: string;
  dataDiskText: string;
  startupScriptPath?: string;
}

interface Item<T> extends vscode.QuickPickItem {
  value: T;
}

export type WizardResult = (
  | {
      plane: 'tpu-api';
      answers: CreateAnswers;
      /** The equivalent gcloud command, for the log. */
      gcloud: string;
    }
  | { plane: 'compute'; request: CreateComputeSliceRequest; summary: string; gcloud: string }
) & {
  /** Every answer as given: Retry opens the wizard with them. */
  wizard: WizardAnswers;
};

/**
 * Fills the answers step by step; undefined if the user cancelled. `again`: the answers of a create that failed,
 * shown at the review step (Back goes through every step, each with its answer).
 */
export async function runCreateWizard(backend: Backend, tree: VmTreeProvider, preset: { zone?: string; plane?: ControlPlane } = {}, again?: WizardAnswers): Promise<WizardResult | undefined> {
  const project = backend.project;
  const zones = await explorerZones(backend);
  if (zones.length === 0) throw new TpwError('FAILED_PRECONDITION', `No zone to create a TPU VM in: project ${project} lists none (setting tpuWorkbench.zones).`);
  const a: WizardAnswers = again ? { ...again } : {
    zone: preset.zone ?? (zones.length === 1 ? zones[0] : undefined),
    labelsText: '', validUntilText: '', dataDiskText: '', topologyText: '', imageText: '', maxRunText: '4h', reservationText: '',
  };
  /** Types the Cloud TPU API listed for the zone: a type it does not list there is Compute Engine's only. */
  const apiListed = new Set<string>();
  const apiHas = (type: string): boolean => tpuApiOffers(type) && apiListed.has(type);
  const takenIn = (zone: string | undefined): Set<string> => new Set(tree.lastNodes.filter((n) => zoneOf(n) === zone).map((n) => shortName(n.name)));
  a.name ??= suggestNodeId(new Set(tree.lastNodes.map((n) => shortName(n.name))));
  if (again?.acceleratorType && again.zone) {
    // The type step fills this as it lists the zone's types; a Retry that starts at the review needs it now.
    for (const i of await acceleratorTypeItems(backend, again.zone).catch(() => [])) if (i.tpuApi) apiListed.add(i.value);
  }

  // A single zone (the emulator, or one configured zone) needs no zone step.
  const flow = new WizardFlow<StepId, WizardAnswers>(ORDER, (id, s) => createStepApplies(id, s, zones.length));
  const STEP_LABELS: Record<StepId, string> = {
    name: 'name',
    zone: 'zone',
    type: 'accelerator type',
    plane: 'control plane',
    topology: 'topology',
    runtime: 'runtime version',
    image: 'boot image',
    maxRun: 'maximum run duration',
    reservation: 'reservation',
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
          placeholder: 'Accelerator type, e.g. v5litepod-8, v6e-8 or tpu7x-16',
          items: acceleratorTypeItems(backend, a.zone!).then((items) => {
            apiListed.clear();
            for (const i of items) if (i.tpuApi) apiListed.add(i.value);
            return items;
          }),
          active: (i) => i.value === a.acceleratorType,
          onAccept: ([i]) => {
            if (i.value !== a.acceleratorType) {
              // The recommended runtime, the usual topology and the default control plane change with the type.
              a.runtimeVersion = undefined;
              a.topologyText = '';
              // A zone row under a control plane's group preselects that plane where it offers the type.
              a.plane = !apiHas(i.value) ? 'compute' : preset.plane ?? defaultControlPlane(i.value);
            }
            a.acceleratorType = i.value;
            // Only Compute Engine makes it here: that is the answer, not a question.
            a.planeChoices = apiHas(i.value) ? 2 : 1;
          },
        });
      case 'plane': {
        const type = a.acceleratorType!;
        const label = parseAcceleratorType(type)?.family.label ?? type;
        const items: Item<ControlPlane>[] = [
          { label: 'Compute Engine', value: 'compute', description: apiHas(type) ? undefined : tpuApiOffers(type) ? `the Cloud TPU API does not list ${type} in ${a.zone}` : `the Cloud TPU API does not offer ${label}`, detail: 'TPU VMs as Compute Engine instances; a multi-host slice is a managed instance group. Google manages new TPUs this way.' },
        ];
        if (apiHas(type)) items.push({ label: 'Cloud TPU API', value: 'tpu-api', description: 'default for this type', detail: 'TPU nodes and queued resources (tpu.googleapis.com): runtime versions, queued resources, data disks.' });
        return pickStep<Item<ControlPlane>>({
          ...h,
          placeholder: apiHas(type) ? `Control plane for ${type}` : `Control plane: only Compute Engine makes ${type} here`,
          items,
          active: (i) => i.value === (a.plane ?? defaultControlPlane(type)),
          onAccept: ([i]) => {
            // Provisioning choices differ between the two (flex-start vs queued resources): ask again.
            if (i.value !== a.plane) a.choice = undefined;
            a.plane = i.value;
          },
        });
      }
      case 'topology': {
        const usual = parseTopology(a.acceleratorType!, '');
        return inputStep({
          ...h,
          prompt: usual.ok ? `Topology of ${a.acceleratorType} (Enter keeps ${usual.value.topology}: ${describeSlice(usual.value)})` : 'Topology',
          value: a.topologyText || (usual.ok ? usual.value.topology : ''),
          validate: (v) => {
            const p = parseTopology(a.acceleratorType!, v);
            return p.ok ? undefined : p.error;
          },
          onAccept: (v) => (a.topologyText = v.trim()),
        });
      }
      case 'image':
        return imageStep(backend, h, a);
      case 'maxRun':
        return inputStep({
          ...h,
          prompt: 'Flex-start: how long the VMs may run before Compute Engine deletes them (e.g. 4h, 90m, 1d12h)',
          value: a.maxRunText,
          validate: (v) => {
            const p = parseMaxRunDuration(v);
            return p.ok ? undefined : p.error;
          },
          onAccept: (v) => (a.maxRunText = v.trim()),
        });
      case 'reservation':
        return inputStep({
          ...h,
          prompt: `Name of the reservation in ${a.zone} to use`,
          value: a.reservationText,
          validate: (v) => {
            const p = parseReservation(v);
            return p.ok ? undefined : p.error;
          },
          onAccept: (v) => (a.reservationText = v.trim()),
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
        const items: Item<ProvisioningChoice>[] = a.plane === 'compute' ? [
          { label: 'On-demand', value: 'on-demand', description: price('on-demand'), detail: 'Runs until you delete it.' },
          { label: 'Spot', value: 'spot', description: price('spot'), detail: 'Cheaper; Compute Engine may stop it at any time (shown as preempted).' },
          { label: 'Flex-start', value: 'flex-start', description: price('on-demand'), detail: 'Made when capacity is there, for a maximum run duration; then deleted.' },
          { label: 'Reservation', value: 'reservation', description: price('reserved'), detail: 'Uses a specific reservation of the project.' },
        ] : [
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
      case 'review':
        // The rows of answers with a default open their step from here and come back to the review.
        for (;;) {
          let edit: StepId | undefined;
          const rows = REVIEW_ORDER.filter((id) => reviewRowApplies(id, a)).map((id) => reviewRow(id, a, project));
          const outcome = a.plane === 'compute'
            ? await computeReview(h, a, project, rows, (r) => (result = { ...r, wizard: { ...a } }), (id) => (edit = id))
            : await tpuApiReview(h, a, project, rows, (r) => (result = { ...r, wizard: { ...a } }), (id) => (edit = id));
          if (edit === undefined) return outcome;
          // Back or Escape there returns here too: nothing typed at the review's rows ends the wizard.
          await show(edit, true).catch((e: unknown) => void vscode.window.showErrorMessage(describeError(e)));
        }
    }
  };
  const finished = await flow.run(a, show, again ? 'review' : undefined);
  return finished ? result : undefined;
}

/** The review's rows, in this order. */
const REVIEW_ORDER: StepId[] = ['image', 'startupScript', 'labels', 'dataDisk'];

type ReviewRow = Item<ReviewChoice>;
type ReviewChoice = 'create' | 'copy' | { edit: StepId };

/** A review row: what the answer is now, chosen to change it. */
function reviewRow(id: StepId, a: WizardAnswers, project: string): ReviewRow {
  const edit = { edit: id };
  switch (id) {
    case 'image': {
      const family = familyInfo(parseAcceleratorType(a.acceleratorType ?? '')?.family.family ?? '')?.defaultImage ?? 'tpu-vm-ubuntu2204-base';
      return { label: '$(edit) Boot image', description: a.imageText || `${family} (Google's TPU VM image)`, value: edit };
    }
    case 'startupScript':
      return { label: '$(edit) Startup script', description: a.startupScriptPath ? vscode.workspace.asRelativePath(a.startupScriptPath) : 'none', value: edit };
    case 'labels':
      return { label: '$(edit) Labels', description: a.labelsText || 'none', value: edit };
    default: {
      const disk = parseDataDisk(a.dataDiskText, project, a.zone ?? '');
      return { label: '$(edit) Data disk', description: disk.ok && disk.value ? disk.value : 'none', value: edit };
    }
  }
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
    provisioning: choice === 'queued-spot' ? 'spot' : queued || choice === 'flex-start' ? 'on-demand' : choice === 'reservation' ? 'reserved' : choice,
    startupScript: a.startupScriptPath ? fs.readFileSync(a.startupScriptPath, 'utf8') : undefined,
    labels: labels.ok ? labels.value : {},
    dataDisk: disk.ok ? disk.value : undefined,
    queued: queued ? { tier: choice === 'queued-spot' ? 'spot' : 'guaranteed', validUntil: until.ok ? until.value : undefined } : undefined,
  };
}

type StepHeader = { title: string; step: number; totalSteps: number; canGoBack: boolean };

/** The Cloud TPU API's types for the zone and Compute Engine's slice shapes the zone has machines for, each once. */
async function acceleratorTypeItems(backend: Backend, zone: string): Promise<(Item<string> & { tpuApi: boolean })[]> {
  const [api, machines] = await Promise.allSettled([backend.api.listAcceleratorTypes(backend.project, zone), backend.compute.listTpuMachineTypes(backend.project, zone)]);
  if (api.status === 'rejected' && machines.status === 'rejected') throw api.reason;
  const types = wizardTypes(api.status === 'fulfilled' ? api.value.map((t) => t.type) : [], machines.status === 'fulfilled' ? machines.value : []);
  return types.map((t) => ({
    label: t.type,
    value: t.type,
    description: [t.shape ? describeSlice(t.shape) : undefined, costFor(t.type, zone, 'on-demand')].filter((x): x is string => !!x).join(' · '),
    detail: t.tpuApi ? undefined : 'Compute Engine only',
    tpuApi: t.tpuApi,
  }));
}

async function tpuApiReview(h: StepHeader, a: WizardAnswers, project: string, rows: ReviewRow[], done: (r: WizardResult) => void, edit: (id: StepId) => void): Promise<StepOutcome> {
  const answers = finalAnswers(a, project);
  const gcloud = answers.queued ? gcloudQueuedCommand(createQueuedRequest(project, answers)) : gcloudCreateCommand(createNodeRequest(project, answers));
  const verb = answers.queued ? 'Queue' : 'Create';
  const what = `${answers.acceleratorType}, ${answers.runtimeVersion}, ${answers.queued ? `queued (${answers.queued.tier})` : answers.provisioning}`;
  return reviewStep(h, `Review: ${what}`, [{ label: `$(check) ${verb} ${answers.name}`, value: 'create', description: what, detail: gcloud }, ...rows], 'Copy gcloud command', gcloud, edit, () =>
    done({ plane: 'tpu-api', answers, gcloud, wizard: a }),
  );
}

async function computeReview(h: StepHeader, a: WizardAnswers, project: string, rows: ReviewRow[], done: (r: WizardResult) => void, edit: (id: StepId) => void): Promise<StepOutcome> {
  const labels = parseLabels(a.labelsText);
  let made: ReturnType<typeof createComputeRequest>;
  try {
    made = createComputeRequest(project, {
      name: a.name!, zone: a.zone!, acceleratorType: a.acceleratorType!, topologyText: a.topologyText, imageText: a.imageText,
      provisioning: (a.choice ?? 'on-demand') as Provisioning, maxRunText: a.maxRunText, reservationText: a.reservationText,
      labels: labels.ok ? labels.value : {}, ...(a.startupScriptPath ? { startupScript: fs.readFileSync(a.startupScriptPath, 'utf8') } : {}),
    });
  } catch (e) {
    void vscode.window.showErrorMessage(describeError(e));
    return 'back';
  }
  const gcloud = gcloudComputeCommands(made.request, made.shape).join('\n');
  const summary = `${made.shape.acceleratorType} (${made.shape.topology}), ${describeSlice(made.shape)}, ${made.request.provisioning ?? 'on-demand'} on Compute Engine`;
  const items: ReviewRow[] = [{ label: `$(check) Create ${a.name}`, value: 'create', description: summary, detail: gcloud.split('\n').join(' && ') }, ...rows];
  return reviewStep(h, `Review: ${summary}`, items, 'Copy gcloud compute commands', gcloud, edit, () => done({ plane: 'compute', request: made.request, summary, gcloud, wizard: a }));
}

/** The last step: Create, the rows that change an answer, and copying the gcloud command(s) instead. */
function reviewStep(h: StepHeader, placeholder: string, items: ReviewRow[], copyLabel: string, gcloud: string, edit: (id: StepId) => void, create: () => void): Promise<StepOutcome> {
  const copy = async () => {
    await vscode.env.clipboard.writeText(gcloud);
    void vscode.window.showInformationMessage(`Copied the ${copyLabel.replace(/^Copy /, '')}.`);
  };
  return pickStep<ReviewRow>({
    ...h,
    placeholder,
    items: [...items, { label: `$(copy) ${copyLabel}`, value: 'copy', detail: 'Copies and closes the wizard without creating anything.' }],
    buttons: [{ button: { iconPath: new vscode.ThemeIcon('copy'), tooltip: copyLabel }, run: copy }],
    onAccept: ([i]) => {
      if (i.value === 'copy') void copy();
      else if (i.value === 'create') create();
      else edit(i.value.edit);
    },
  });
}

/** Google's TPU VM images, the type's default first; any other image typed under "Other image…". */
async function imageStep(backend: Backend, h: StepHeader, a: WizardAnswers): Promise<StepOutcome> {
  const family = familyInfo(parseAcceleratorType(a.acceleratorType!)?.family.family ?? '')?.defaultImage ?? 'tpu-vm-ubuntu2204-base';
  const OTHER = '';
  const familyPath = (f: string) => `projects/${TPU_IMAGE_PROJECT}/global/images/family/${f}`;
  let other = false;
  const outcome = await pickStep<Item<string>>({
    ...h,
    placeholder: 'Boot image',
    items: backend.compute.listTpuImageFamilies().catch(() => [family]).then((families) => [
      ...[family, ...families.filter((f) => f !== family)].map((f) => ({ label: f, value: f === family ? '' : familyPath(f), description: f === family ? `default for ${a.acceleratorType}` : undefined, detail: familyPath(f) })),
      ...(a.imageText && !a.imageText.endsWith(`/family/${family}`) && !families.some((f) => familyPath(f) === a.imageText) ? [{ label: `$(check) ${a.imageText}`, value: a.imageText }] : []),
      { label: '$(edit) Other image…', value: OTHER, description: 'projects/PROJECT/global/images/[family/]NAME', alwaysShow: true },
    ]),
    active: (i) => i.value === a.imageText && !i.label.startsWith('$(edit)'),
    onAccept: ([i]) => {
      other = i.label.startsWith('$(edit)');
      if (!other) a.imageText = i.value;
    },
  });
  if (outcome !== 'next' || !other) return outcome;
  return inputStep({
    ...h,
    prompt: 'Boot image: projects/PROJECT/global/images/NAME or projects/PROJECT/global/images/family/FAMILY',
    value: a.imageText,
    validate: (v) => {
      const p = parseImage(v);
      return p.ok ? undefined : p.error;
    },
    onAccept: (v) => (a.imageText = v.trim()),
  });
}
