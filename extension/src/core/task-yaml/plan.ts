import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Backend } from '../backend';
import { acceleratorInfo } from '../../../../protocol/tpu-catalog';
import { isTpwError, TpwError } from '../errors';
import { recommendedRuntime } from '../explorer/create-request';
import type { CreateNodeRequest } from '../tpu/api';
import { findNode } from '../slices/find';
import { findSliceGroup } from '../slices/multislice';
import { NODE_ID_PATTERN, shortName, type TpuNode } from '../tpu/models';
import { zonesOffering } from '../tpu/zones';
import { parseTaskYaml } from '../../../../protocol/task-yaml-check';
import { tpuVmWarnings } from '../../../../protocol/task-yaml-vm';
import { groupPlaneOf, hostsPerSlice, resolveGroup, type GroupCreateTarget, type GroupStep } from './slice-group';
import { skypilotVariableNames } from './task-env';
import { REMOTE_WORKDIR, type TaskSpec } from '../../../../protocol/task-yaml-spec';

/**
 * What `tpw launch` / `tpw exec` will do, worked out before anything changes: the task checked, the VM found
 * (or the request that creates it), the values of envs and secrets settled. `formatPlan` prints it for
 * `--dry-run` with variable and secret names only.
 */

export type VmStep =
  | { action: 'reuse'; node: TpuNode; zone: string }
  | { action: 'start'; node: TpuNode; zone: string }
  | { action: 'create'; request: CreateNodeRequest; zone: string }
  /** num_nodes > 1: a multislice group (slice-group.ts). */
  | GroupStep;

export interface LocalMount {
  dest: string;
  /** Absolute local path. */
  source: string;
  isDir: boolean;
}

export interface LaunchPlan {
  mode: 'launch' | 'exec';
  yamlPath: string;
  task: TaskSpec;
  cluster: string;
  vm: VmStep;
  /** Hosts of every slice together: from the VM when it exists, else from the accelerator type's published shape. */
  hosts: number | undefined;
  /** Slices: 1 for one VM, num_nodes for a multislice group. */
  slices: number;
  workdir?: string;
  localMounts: LocalMount[];
  bucketMounts: { dest: string; source: string }[];
  /** envs after --env: every one has a value. */
  env: Record<string, string>;
  /** secrets after --secret: every one has a value (never printed). */
  secrets: Record<string, string>;
  notes: string[];
  /** What the task expects that a TPU VM will not have (conda, SkyPilot's gcpuser home): it may fail there. */
  warnings: string[];
}

export interface PlanRequest {
  backend: Backend;
  mode: 'launch' | 'exec';
  yamlPath: string;
  /** `-c NAME` (exec: the VM to run on). */
  cluster?: string;
  /** The global --zone. */
  zone?: string;
  /** Where relative workdir and file_mounts paths start, as SkyPilot's: the current directory (default). */
  cwd?: string;
  /** Who `sky launch` would say is launching, for a generated VM name (default: SKYPILOT_USER, else the login name). */
  user?: string;
  /** `--env K[=V]`, values already resolved (K alone: from the caller's environment). */
  envOverrides: Readonly<Record<string, string>>;
  /** `--secret K[=V]`, values already resolved. */
  secretOverrides: Readonly<Record<string, string>>;
  signal?: AbortSignal;
}

export async function planLaunch(req: PlanRequest): Promise<LaunchPlan> {
  const yamlPath = path.resolve(req.yamlPath);
  let text: string;
  try {
    text = fs.readFileSync(yamlPath, 'utf8');
  } catch (e) {
    throw new TpwError('NOT_FOUND', `Cannot read the task YAML ${yamlPath}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}.`);
  }
  const parsed = parseTaskYaml(text, { envOverrides: req.envOverrides });
  if (!parsed.task) {
    // One line that names every field at fault (the CLI prints an error's first line only).
    const what = parsed.problems.map((p) => `${p.field === '' ? 'the file' : p.field} ${p.message.replace(/\.$/, '')}`);
    throw new TpwError('INVALID_ARGUMENT', `${path.basename(yamlPath)} cannot run: ${what.join('; ')}.`);
  }
  const task = parsed.task;
  const env = Object.fromEntries(Object.entries(task.envs).map(([k, v]) => [k, v ?? '']));
  const secrets: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...task.secrets, ...req.secretOverrides })) {
    if (v === null) throw new TpwError('INVALID_ARGUMENT', `Secret ${k} of ${path.basename(yamlPath)} has no value: pass --secret ${k} to take it from your environment.`);
    secrets[k] = v;
  }

  const notes: string[] = [];
  const named = vmName(req.cluster, task.name, req.user ?? skypilotUser());
  const cluster = named.name;
  if (named.note) notes.push(named.note);

  const { workdir, localMounts, bucketMounts } = localPaths(task, req.cwd ?? process.cwd(), req.mode, path.basename(yamlPath));
  if (req.mode === 'exec' && (task.fileMounts.length > 0 || task.setup !== undefined)) {
    notes.push('exec skips setup and file_mounts (as `sky exec` does); workdir is synced.');
  }

  const warnings = tpuVmWarnings(task).map((w) => `${w.field}: ${w.message}`);

  const vm = task.numNodes > 1 ? await resolveGroup(req.backend, req.mode, task, cluster, req.zone ?? task.zone, () => createTarget(req, task), req.signal) : await resolveVm(req, task, cluster);
  const perSlice = vm.action === 'create' ? acceleratorInfo(task.acceleratorType)?.workers : vm.action === 'reuse' || vm.action === 'start' ? vm.node.networkEndpoints.length : hostsPerSlice(vm, task.acceleratorType);
  const hosts = perSlice === undefined ? undefined : perSlice * task.numNodes;
  return { mode: req.mode, yamlPath, task, cluster, vm, hosts, slices: task.numNodes, ...(workdir ? { workdir } : {}), localMounts, bucketMounts, env, secrets, notes, warnings };
}

async function resolveVm(req: PlanRequest, task: TaskSpec, cluster: string): Promise<VmStep> {
  const { backend } = req;
  const zone = req.zone ?? task.zone;
  try {
    const found = await findNode(backend, cluster, zone, req.signal);
    if (found.node.acceleratorType !== task.acceleratorType) {
      throw new TpwError('FAILED_PRECONDITION', `TPU VM "${cluster}" is a ${found.node.acceleratorType}, but the task asks for tpu-${task.acceleratorType}: \`tpw down ${cluster}\` first, or launch with another -c NAME.`);
    }
    if (found.node.state === 'READY') return { action: 'reuse', node: found.node, zone: found.zone };
    if (found.node.state === 'STOPPED' && req.mode === 'launch') return { action: 'start', node: found.node, zone: found.zone };
    throw new TpwError('FAILED_PRECONDITION', `TPU VM "${cluster}" is ${found.node.state}, not READY${found.node.state === 'PREEMPTED' ? `: \`tpw down ${cluster}\`, then launch again` : ''}.`);
  } catch (e) {
    if (!isTpwError(e, 'NOT_FOUND')) throw e;
    const group = await findSliceGroup(backend, cluster, zone, req.signal).catch(() => undefined);
    if (group) {
      throw new TpwError('FAILED_PRECONDITION', `"${cluster}" is a multislice group of ${group.slices.length} slices, but the task asks for one VM (num_nodes: 1): set num_nodes: ${group.slices.length}, or launch with another -c NAME.`);
    }
    if (req.mode === 'exec') throw new TpwError('NOT_FOUND', `TPU VM "${cluster}" does not exist: \`tpw launch\` creates it (exec runs on an existing VM only).`);
  }
  const target = await createTarget(req, task);
  const runtimeVersion = await target.runtimeVersion();
  const request: CreateNodeRequest = {
    project: backend.project,
    zone: target.zone,
    nodeId: cluster,
    acceleratorType: task.acceleratorType,
    runtimeVersion,
    ...(task.spot ? { spot: true } : {}),
    ...(Object.keys(task.labels).length > 0 ? { labels: task.labels } : {}),
  };
  return { action: 'create', request, zone: target.zone };
}

/** The zone a new VM or group goes to (one that offers the type), and its runtime version when asked. */
async function createTarget(req: PlanRequest, task: TaskSpec): Promise<GroupCreateTarget> {
  const { backend } = req;
  const zone = req.zone ?? task.zone;
  const candidates = zone ? [zone] : task.region ? backend.zones.filter((z) => z.startsWith(`${task.region}-`)) : backend.zones;
  if (candidates.length === 0) throw new TpwError('INVALID_ARGUMENT', `No zone of ${backend.project} is in region ${task.region} (zones: ${backend.zones.join(', ')}).`);
  let createZone = candidates[0];
  // Compute Engine types (TPU7x) are not in the Cloud TPU API's list; Compute Engine refuses a zone without them itself.
  if (task.numNodes === 1 || groupPlaneOf(task.acceleratorType) === 'tpu-api') {
    // As SkyPilot's optimizer does without a zone: any zone (of the region) that offers the type.
    const offering = await zonesOffering(backend.api, backend.project, task.acceleratorType, { zones: candidates, signal: req.signal });
    const first = candidates.find((z) => offering.includes(z));
    if (!first) {
      const everywhere = await zonesOffering(backend.api, backend.project, task.acceleratorType, { signal: req.signal }).catch(() => []);
      const where = zone ? `Zone ${zone} does not` : candidates.length === 1 ? `Zone ${candidates[0]} (the only one${task.region ? ` of region ${task.region}` : ''} this project uses) does not` : `None of the zones${task.region ? ` of region ${task.region}` : ''} this project uses (${candidates.join(', ')}) does`;
      throw new TpwError('INVALID_ARGUMENT', `${where} offer tpu-${task.acceleratorType}; ${everywhere.length ? `it is offered in ${everywhere.join(', ')} (set resources.zone or --zone)` : 'no zone of the project offers it'}.`);
    }
    createZone = first;
  }
  const runtimeVersion = async (): Promise<string> => {
    if (task.runtimeVersion) return task.runtimeVersion;
    const listed = (await backend.api.listRuntimeVersions(backend.project, createZone, req.signal)).map((v) => v.version);
    const recommended = recommendedRuntime(task.acceleratorType);
    const chosen = recommended && listed.includes(recommended) ? recommended : listed[0];
    if (!chosen) throw new TpwError('INVALID_ARGUMENT', `Zone ${createZone} lists no runtime versions: set resources.accelerator_args.runtime_version.`);
    return chosen;
  };
  return { zone: createZone, runtimeVersion };
}

/**
 * The task's local paths as SkyPilot resolves them (Task.expand_and_validate_workdir / _file_mounts:
 * os.path.abspath(os.path.expanduser(p))): from the directory `sky launch` runs in, not the YAML's. Checked to
 * exist, as SkyPilot checks them; exec syncs the workdir only.
 */
export function localPaths(task: TaskSpec, cwd: string, mode: 'launch' | 'exec', file: string): { workdir?: string; localMounts: LocalMount[]; bucketMounts: { dest: string; source: string }[] } {
  let workdir: string | undefined;
  if (task.workdir !== undefined) {
    workdir = path.resolve(cwd, expandHome(task.workdir));
    if (!fs.statSync(workdir, { throwIfNoEntry: false })?.isDirectory()) {
      throw new TpwError('NOT_FOUND', `workdir ${task.workdir} of ${file} is not a folder (${workdir}): SkyPilot reads a relative workdir from the directory it is run in, not the YAML's.`);
    }
  }
  const localMounts: LocalMount[] = [];
  const bucketMounts: { dest: string; source: string }[] = [];
  if (mode === 'launch') {
    for (const m of task.fileMounts) {
      if (m.kind === 'bucket') {
        bucketMounts.push({ dest: m.dest, source: m.source });
        continue;
      }
      const source = path.resolve(cwd, expandHome(m.source));
      const st = fs.statSync(source, { throwIfNoEntry: false });
      if (!st) throw new TpwError('NOT_FOUND', `file_mounts ${m.dest}: the local path ${m.source} does not exist (${source}; relative paths start from the directory you run in).`);
      localMounts.push({ dest: m.dest, source, isDir: st.isDirectory() });
    }
  }
  return { ...(workdir ? { workdir } : {}), localMounts, bucketMounts };
}

/** SkyPilot's common_utils.get_cleaned_username: lowercase, [a-z0-9-_] only, no leading digits or hyphens, one trailing hyphen dropped, 63 at most. */
export function cleanedUserName(user: string): string {
  return user
    .toLowerCase()
    .replace(/[^a-z0-9-_]/g, '')
    .replace(/^[0-9-]+/, '')
    .replace(/-$/, '')
    .slice(0, 63);
}

/** SkyPilot's user name (SKYPILOT_USER, else the login name), as its generated cluster names carry it. */
function skypilotUser(): string {
  if (process.env.SKYPILOT_USER) return process.env.SKYPILOT_USER;
  try {
    return os.userInfo().username;
  } catch {
    return process.env.USER ?? '';
  }
}

/**
 * The VM's name: `-c NAME`; else the task's name where it is a valid TPU VM name; else one made as `sky launch`
 * makes a cluster's (sky.utils.cluster_utils.generate_cluster_name: `sky-` + 4 hex digits + the user name, cleaned
 * by common_utils.get_cleaned_username, with `_` and `.` turned into `-` as make_cluster_name_on_cloud does).
 */
export function vmName(explicit: string | undefined, taskName: string | undefined, user: string): { name: string; note?: string } {
  if (explicit !== undefined) {
    if (!NODE_ID_PATTERN.test(explicit)) {
      const near = explicit.toLowerCase().replace(/[._]/g, '-');
      throw new TpwError('INVALID_ARGUMENT', `-c "${explicit}" cannot be a TPU VM name: use lowercase letters, digits and hyphens, starting with a letter (at most 63)${NODE_ID_PATTERN.test(near) ? `, e.g. -c ${near}` : ''}.`);
    }
    return { name: explicit };
  }
  if (taskName !== undefined && NODE_ID_PATTERN.test(taskName)) return { name: taskName };
  // A TPU VM name has no `_` and at most 63 characters ("sky-" and 4 hex digits take 9 of them).
  const cleaned = cleanedUserName(user).replace(/[._]/g, '-').slice(0, 54).replace(/-+$/, '');
  const name = `sky-${randomBytes(2).toString('hex')}${cleaned ? `-${cleaned}` : ''}`;
  const why = taskName === undefined ? 'the task has no name' : `the task's name "${taskName}" is not a valid TPU VM name`;
  return { name, note: `no -c: the VM is named ${name}, as \`sky launch\` names a cluster (${why}); launch again with -c ${name} to reuse it.` };
}

function expandHome(p: string): string {
  const home = process.env.HOME ?? '';
  return p === '~' ? home : p.startsWith('~/') ? path.join(home, p.slice(2)) : p;
}

/** The plan as `--dry-run` prints it: names of variables and secrets, never their values. */
export function formatPlan(plan: LaunchPlan): string[] {
  const { task, vm } = plan;
  const lines: string[] = [];
  const type = `tpu-${task.acceleratorType}`;
  if (vm.action === 'create') {
    const r = vm.request;
    lines.push(`VM: create ${plan.cluster} (${type}, ${r.runtimeVersion}${r.spot ? ', spot' : ''}) in ${vm.zone}${r.labels ? `, labels ${Object.keys(r.labels).join(', ')}` : ''}`);
  } else if (vm.action === 'create-group') {
    const names = `${plan.cluster}-0 … ${plan.cluster}-${vm.slices - 1}`;
    const how = vm.plane === 'tpu-api' ? `one queued resource with ${vm.slices} nodes, ${vm.request.node.runtimeVersion}, ${vm.request.tier}` : `${vm.slices} labelled slices on Compute Engine, ${vm.request.provisioning}`;
    lines.push(`VM: create multislice group ${plan.cluster}: ${vm.slices} slices of ${type} (${names}; ${how}) in ${vm.zone}${Object.keys(task.labels).length ? `, labels ${Object.keys(task.labels).join(', ')}` : ''}`);
  } else if (vm.action === 'reuse-group') {
    const g = vm.group;
    lines.push(`VM: reuse multislice group ${plan.cluster}: ${g.slices.length} slices of ${g.slices[0].acceleratorType} (${g.slices.map((s) => shortName(s.name)).join(', ')}; ${g.controlPlane === 'tpu-api' ? 'Cloud TPU queued resource' : 'Compute Engine'}) in ${vm.zone}`);
  } else {
    lines.push(`VM: ${vm.action === 'start' ? 'start the stopped' : 'reuse'} ${plan.cluster} (${vm.node.acceleratorType}, ${vm.node.runtimeVersion}) in ${vm.zone}`);
  }
  const existing = vm.action === 'reuse' || vm.action === 'start' ? [vm.node] : vm.action === 'reuse-group' ? vm.group.slices : undefined;
  const multi = plan.slices > 1;
  const hostList = existing?.flatMap((n, s) => n.networkEndpoints.map((e, i) => `${multi ? `s${s}` : ''}w${i}=${e.ipAddress}`)).join(' ');
  const perSlice = plan.hosts === undefined ? undefined : plan.hosts / plan.slices;
  const count = `${plan.hosts ?? 'unknown'}${multi ? ` (${plan.slices} slices × ${perSlice ?? '?'} hosts; rank = slice × ${perSlice ?? 'hosts per slice'} + host)` : ''}`;
  lines.push(`Hosts: ${count}${hostList ? ` (${hostList})` : existing ? '' : ' (once created)'}`);
  const every = multi ? 'every host of every slice' : 'every host';
  if (plan.workdir) lines.push(`Sync: workdir ${plan.workdir} → ${REMOTE_WORKDIR} on ${every}`);
  for (const m of plan.localMounts) lines.push(`Sync: ${m.source}${m.isDir ? '/' : ''} → ${m.dest} on ${every}`);
  for (const m of plan.bucketMounts) lines.push(`Copy: ${m.source} → ${m.dest} on ${every} (gcloud storage, else gsutil)`);
  const cwd = plan.workdir ? REMOTE_WORKDIR : '~';
  if (plan.mode === 'launch' && task.setup !== undefined) lines.push(`Setup: on ${every}, in ${cwd}, unless unchanged since it last ran there: ${firstLine(task.setup)}`);
  if (task.run !== undefined) lines.push(`Run: on ${every}, in ${cwd}: ${firstLine(task.run)}`);
  lines.push(`Variables: ${[...Object.keys(plan.env)].join(', ') || '(none from the task)'}`);
  lines.push(`Secrets (names only): ${Object.keys(plan.secrets).join(', ') || '(none)'}`);
  lines.push(`SkyPilot and TPU variables: ${skypilotVariableNames('run', plan.slices).filter((k) => !(k in plan.env)).join(', ')}`);
  for (const n of plan.notes) lines.push(`Note: ${n}`);
  for (const w of plan.warnings) lines.push(`Warning: ${w}`);
  return lines;
}

function firstLine(script: string): string {
  const lines = script.trim().split('\n');
  return lines.length > 1 ? `${lines[0]} … (${lines.length} lines)` : lines[0];
}
