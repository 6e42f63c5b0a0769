import { isScalar, LineCounter, parseDocument, visit } from 'yaml';
import { MAX_NUM_NODES, RESOURCE_FIELDS, SKYPILOT_CLOUDS, TASK_FIELDS, TPU_FAMILIES, type FileMount, type TaskProblem, type TaskSpec } from './task-yaml-spec';

/**
 * Reads a SkyPilot task YAML and says whether tpw can run it. Two kinds of refusal, each naming the field:
 * "invalid" where SkyPilot's own `sky.Task.from_yaml` refuses the file too (test/unit/task-yaml-verdicts.test.ts
 * holds the two to the same verdicts on a corpus), and "unsupported" where SkyPilot accepts it but tpw does not
 * do what it asks (with why). Pure: reads no file, touches no network. Shared by `tpw launch` (core/task-yaml/)
 * and the language server's diagnostics, so the two never disagree.
 */

export interface ParsedTask {
  /** Set when there is no problem at all. */
  task?: TaskSpec;
  problems: TaskProblem[];
}

export interface ParseOptions {
  /** `--env` values, applied before the check that every env has a value (as `sky launch --env` does). */
  envOverrides?: Readonly<Record<string, string>>;
}

type Obj = Record<string, unknown>;

/** A name a POSIX shell can `export`. */
const isEnvName = (name: string): boolean => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name);

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
/** JSON-schema "integer": a whole number, never a boolean. */
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const DISK_SIZE = /^[0-9]+(kb|ki|mb|mi|gb|gi|tb|ti|pb|pi|KB|KI|MB|MI|GB|GI|TB|TI|PB|PI|Kb|Ki|Mb|Mi|Gb|Gi|Tb|Ti|Pb|Pi)?$/;
const INFRA = /^(?:gcp|[a-z0-9]+)(?:\/[^/]+(?:\/[^/]+)?)?$/i;

/** What Python's `str()` makes of a YAML scalar, which is what SkyPilot does to env and secret values. */
function pyStr(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(v);
  return undefined;
}

/** Parses YAML as PyYAML (which SkyPilot uses) reads it: YAML 1.1, so `yes`/`on` are booleans; a repeated key is refused, as SkyPilot refuses it. */
export function readYaml(text: string): { value?: unknown; error?: string } {
  // The yaml package's own check of repeated keys compares each key with every earlier one: 100,000 `envs`
  // took minutes. It is done here instead, with a set per mapping.
  const lines = new LineCounter();
  const doc = parseDocument(text, { version: '1.1', uniqueKeys: false, lineCounter: lines });
  if (doc.errors.length > 0) return { error: doc.errors[0].message.split('\n')[0].replace(/:\s*$/, '') };
  let repeated: string | undefined;
  visit(doc, {
    // The yaml package's 1.1 float also matches a lone "." (`workdir: .`), which PyYAML reads as a string.
    Scalar(_key, node) {
      if (isScalar(node) && typeof node.value === 'number' && typeof node.source === 'string' && !/[0-9]|inf|nan/i.test(node.source)) node.value = node.source;
    },
    Map(_key, node) {
      const seen = new Map<string, number>();
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : JSON.stringify(pair.key);
        if (key === '<<') continue;
        const line = isScalar(pair.key) && pair.key.range ? lines.linePos(pair.key.range[0]).line : 0;
        const first = seen.get(key);
        if (first !== undefined) {
          repeated = `Map keys must be unique: "${key.slice(0, 80)}" at line ${line} (also at line ${first})`;
          return visit.BREAK;
        }
        seen.set(key, line);
      }
      return undefined;
    },
  });
  if (repeated !== undefined) return { error: repeated };
  return { value: doc.toJS({ maxAliasCount: 1000 }) as unknown };
}

export function parseTaskYaml(text: string, opts: ParseOptions = {}): ParsedTask {
  const problems: TaskProblem[] = [];
  const invalid = (field: string, message: string) => problems.push({ kind: 'invalid', field, message });
  const unsupported = (field: string, message: string) => problems.push({ kind: 'unsupported', field, message });

  const read = readYaml(text);
  if (read.error !== undefined) {
    invalid('', `is not valid YAML: ${read.error}.`);
    return { problems };
  }
  const raw = read.value ?? {};
  if (!isObj(raw)) {
    invalid('', 'must be a mapping of task fields (name, resources, run, …).');
    return { problems };
  }
  // A field left empty (`run:`) is as good as absent for SkyPilot, except `envs:`, which it cannot read then.
  const doc = withoutNulls(raw, ['envs']);

  for (const [key, value] of Object.entries(doc)) {
    const f = TASK_FIELDS[key];
    if (!f) invalid(key, `is not a field of a SkyPilot task (known: ${Object.keys(TASK_FIELDS).filter((k) => !k.startsWith('_')).join(', ')}).`);
    else if (f.unsupported && value !== null && value !== undefined) unsupported(key, `is not supported: ${f.unsupported}`);
  }

  const str = (key: string): string | undefined => {
    const v = doc[key];
    if (!(key in doc)) return undefined;
    if (typeof v !== 'string') {
      invalid(key, `must be a string (got ${describe(v)}).`);
      return undefined;
    }
    return v;
  };
  const name = str('name');
  const setup = str('setup');
  const run = str('run');

  let workdir: string | undefined;
  if ('workdir' in doc) {
    const w = doc.workdir;
    if (typeof w === 'string') workdir = w;
    else if (isObj(w) && typeof w.url === 'string' && Object.keys(w).every((k) => k === 'url' || (k === 'ref' && typeof w.ref === 'string'))) {
      unsupported('workdir', 'as a git repository (url/ref) is not supported: give a local folder, or clone it in `setup`.');
    } else invalid('workdir', `must be a local folder or {url, ref} (got ${describe(w)}).`);
  }

  let numNodes = 1;
  if ('num_nodes' in doc) {
    const n = doc.num_nodes;
    if (!isInt(n)) invalid('num_nodes', `must be an integer (got ${describe(n)}).`);
    else if (n <= 0) invalid('num_nodes', `must be a positive integer (got ${n}).`);
    else if (n > MAX_NUM_NODES) unsupported('num_nodes', `is ${n}: a multislice group has at most ${MAX_NUM_NODES} slices.`);
    else numNodes = n;
  }

  const envs = stringMap(doc, 'envs', invalid, unsupported, true);
  for (const [k, v] of Object.entries(opts.envOverrides ?? {})) envs[k] = v;
  for (const [k, v] of Object.entries(envs)) {
    if (v === null) invalid(`envs.${k}`, `has no value: set it in the YAML or pass --env ${k}=VALUE (or --env ${k} to take it from your environment); "" sets it empty.`);
  }

  let secrets: Record<string, string | null> = {};
  if ('secrets' in doc && Array.isArray(doc.secrets)) {
    const bad = doc.secrets.find((s) => typeof s !== 'string' || !s.startsWith('secrets:'));
    if (bad !== undefined) invalid('secrets', `in list form must name managed secrets as secrets:NAME (got ${describe(bad)}); inline secrets use the mapping form NAME: value.`);
    else unsupported('secrets', 'in list form names managed secrets, and tpw has no secrets provider: use the mapping form (NAME: null) and pass --secret NAME.');
  } else {
    secrets = stringMap(doc, 'secrets', invalid, unsupported, false);
    for (const k of Object.keys(secrets)) if (!isEnvName(k)) unsupported(`secrets.${k}`, 'is not a name a shell can export, so it cannot reach the program as a variable.');
  }

  // As SkyPilot does at parse time: $NAME / ${NAME} of an env or an inline secret, in workdir and file_mounts.
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...envs, ...secrets })) if (v !== null) vars[k] = v;
  const fill = (text: string): string => text.replace(/\$\{?\b([a-zA-Z_][a-zA-Z0-9_]*)\b\}?/g, (m: string, n: string) => vars[n] ?? m);
  if (workdir !== undefined) workdir = fill(workdir);
  const fileMounts = parseFileMounts(doc, invalid, unsupported, fill);
  const res = parseResources(doc, invalid, unsupported);

  if (problems.length > 0 || !res) return { problems };
  if (setup === undefined && run === undefined) {
    unsupported('run', 'is missing, and so is setup: there is nothing to run.');
    return { problems };
  }
  const task: TaskSpec = {
    ...(name !== undefined ? { name } : {}),
    ...res,
    numNodes,
    ...(workdir !== undefined ? { workdir } : {}),
    fileMounts,
    ...(setup !== undefined ? { setup } : {}),
    ...(run !== undefined ? { run } : {}),
    envs,
    secrets,
  };
  return { task, problems };
}

type Report = (field: string, message: string) => void;

/** `envs` / `secrets` as a mapping: names and values turned into strings as SkyPilot does; null values kept. */
function stringMap(doc: Obj, key: 'envs' | 'secrets', invalid: Report, unsupported: Report, namesAreShellNames: boolean): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  if (!(key in doc)) return out;
  const m = doc[key];
  if (!isObj(m)) {
    invalid(key, `must be a mapping of NAME: value (got ${describe(m)}).`);
    return out;
  }
  for (const [k, v] of Object.entries(m)) {
    if (namesAreShellNames && !isEnvName(k)) {
      invalid(`${key}.${k}`, 'is not a valid variable name (letters, digits and _, not starting with a digit).');
      continue;
    }
    if (v === null || v === undefined) out[k] = null;
    else {
      const s = pyStr(v);
      if (s === undefined) unsupported(`${key}.${k}`, `has a ${describe(v)} as its value; give a string.`);
      else out[k] = s;
    }
  }
  return out;
}

function parseFileMounts(doc: Obj, invalid: Report, unsupported: Report, fill: (text: string) => string): FileMount[] {
  const out: FileMount[] = [];
  if (!('file_mounts' in doc)) return out;
  const m = doc.file_mounts;
  if (!isObj(m)) {
    invalid('file_mounts', `must be a mapping of remote path: source (got ${describe(m)}).`);
    return out;
  }
  for (const [rawDest, rawSource] of Object.entries(m)) {
    const field = `file_mounts.${rawDest}`;
    const dest = fill(rawDest);
    const source = typeof rawSource === 'string' ? fill(rawSource) : rawSource;
    if (isObj(source)) {
      unsupported(field, 'is a SkyPilot storage object (source/mode/store), which tpw does not create or mount: give a local path or a gs:// path.');
    } else if (typeof source !== 'string') {
      unsupported(field, `has a ${describe(source)} as its source; give a local path or a gs:// path.`);
    } else if (source.startsWith('gs://')) {
      out.push({ dest, kind: 'bucket', source });
    } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) {
      unsupported(field, `comes from ${source.split('://')[0]}://, which a TPU VM has no tools or credentials for: copy it to a gs:// bucket or a local path.`);
    } else {
      out.push({ dest, kind: 'local', source });
    }
  }
  return out;
}

type ResourcePart = Pick<TaskSpec, 'acceleratorType' | 'runtimeVersion' | 'spot' | 'zone' | 'region' | 'labels'>;

function parseResources(doc: Obj, invalid: Report, unsupported: Report): ResourcePart | undefined {
  const given: unknown = doc.resources ?? {};
  if (!isObj(given)) {
    invalid('resources', `must be a mapping (got ${describe(given)}).`);
    return undefined;
  }
  const r = withoutNulls(given, []);
  for (const [key, value] of Object.entries(r)) {
    const f = RESOURCE_FIELDS[key];
    if (!f) invalid(`resources.${key}`, `is not a field of SkyPilot's resources (known: ${Object.keys(RESOURCE_FIELDS).filter((k) => !k.startsWith('_')).join(', ')}).`);
    else if (f.unsupported && value !== null && value !== undefined) unsupported(`resources.${key}`, `is not supported: ${f.unsupported}`);
  }
  const str = (key: string): string | undefined => {
    if (!(key in r)) return undefined;
    const v = r[key];
    if (typeof v !== 'string') invalid(`resources.${key}`, `must be a string (got ${describe(v)}).`);
    return typeof v === 'string' ? v : undefined;
  };
  let zone = str('zone');
  let region = str('region');
  let cloud = str('cloud')?.toLowerCase();
  if (cloud !== undefined && !(SKYPILOT_CLOUDS as readonly string[]).includes(cloud)) {
    invalid('resources.cloud', `"${cloud}" is not a cloud SkyPilot knows (${SKYPILOT_CLOUDS.join(', ')}).`);
    cloud = undefined;
  }
  const infra = str('infra');
  if (infra !== undefined) {
    if (!INFRA.test(infra)) invalid('resources.infra', `"${infra}" is not cloud[/region[/zone]].`);
    else {
      const [c, reg, z] = infra.split('/');
      cloud = c.toLowerCase();
      if (reg !== undefined && reg !== '*') region = reg;
      if (z !== undefined && z !== '*') zone = z;
    }
  }
  if ('use_spot' in r && typeof r.use_spot !== 'boolean') invalid('resources.use_spot', `must be true or false (got ${describe(r.use_spot)}).`);
  if ('disk_size' in r) {
    const d = r.disk_size;
    if (isInt(d)) {
      if (d <= 0) invalid('resources.disk_size', `must be a positive size in GB (got ${d}).`);
    } else if (typeof d !== 'string' || !DISK_SIZE.test(d)) invalid('resources.disk_size', `must be a size such as 256 or 256GB (got ${describe(d)}).`);
  }
  const labels: Record<string, string> = {};
  if ('labels' in r) {
    if (!isObj(r.labels)) invalid('resources.labels', `must be a mapping of key: value (got ${describe(r.labels)}).`);
    else {
      for (const [k, v] of Object.entries(r.labels)) {
        if (typeof v === 'string') labels[k] = v;
        else invalid(`resources.labels.${k}`, `must be a string (got ${describe(v)}).`);
      }
    }
  }
  let runtimeVersion: string | undefined;
  if ('accelerator_args' in r) {
    const a = r.accelerator_args;
    if (!isObj(a)) invalid('resources.accelerator_args', `must be a mapping (got ${describe(a)}).`);
    else {
      const types: Record<string, 'string' | 'boolean'> = { runtime_version: 'string', tpu_name: 'string', tpu_vm: 'boolean', gcp_queued_resource: 'boolean' };
      for (const [k, v] of Object.entries(a)) {
        const field = `resources.accelerator_args.${k}`;
        if (!(k in types)) invalid(field, `is not one of SkyPilot's accelerator_args (${Object.keys(types).join(', ')}).`);
        else if (typeof v !== types[k]) invalid(field, `must be a ${types[k]} (got ${describe(v)}).`);
      }
      if (typeof a.runtime_version === 'string') runtimeVersion = a.runtime_version;
      if (a.tpu_vm === false) unsupported('resources.accelerator_args.tpu_vm', 'is false (a TPU Node, the legacy architecture): tpw runs on TPU VMs only.');
      if (typeof a.tpu_name === 'string') unsupported('resources.accelerator_args.tpu_name', 'is not supported: name the VM with `tpw launch -c NAME`.');
      if (a.gcp_queued_resource === true) unsupported('resources.accelerator_args.gcp_queued_resource', 'is not supported by launch: queue the VM with `tpw vm create NAME --queued`, then `tpw launch -c NAME`.');
    }
  }
  const acc = parseAccelerator(r.accelerators, 'accelerators' in r, invalid, unsupported);
  if (acc?.tpu && cloud !== undefined && cloud !== 'gcp' && cloud !== 'kubernetes') invalid('resources.cloud', `is ${cloud}, but TPUs are only on gcp.`);
  else if (cloud !== undefined && cloud !== 'gcp') unsupported('resources.cloud', `is ${cloud}: tpw runs on Cloud TPU (gcp) only.`);
  if (!acc?.tpu) return undefined;
  return {
    acceleratorType: acc.type,
    ...(runtimeVersion !== undefined ? { runtimeVersion } : {}),
    spot: r.use_spot === true,
    ...(zone !== undefined ? { zone } : {}),
    ...(region !== undefined ? { region } : {}),
    labels,
  };
}

/** `accelerators`: "tpu-v6e-8", "tpu-v6e-8:1", {tpu-v6e-8: 1} or a list of candidates (not supported). */
function parseAccelerator(v: unknown, given: boolean, invalid: Report, unsupported: Report): { tpu: true; type: string } | { tpu: false } | undefined {
  const field = 'resources.accelerators';
  if (!given || v === null || v === undefined) {
    unsupported(field, 'is missing: tpw runs tasks on Cloud TPU, so name a TPU type (e.g. tpu-v6e-8, tpu-v5litepod-16).');
    return undefined;
  }
  let name: string;
  let count: unknown = 1;
  if (typeof v === 'string') {
    const [n, c, ...more] = v.split(':');
    if (more.length > 0 || n === '') {
      invalid(field, `"${v}" is not NAME or NAME:COUNT.`);
      return undefined;
    }
    name = n.trim();
    if (c !== undefined) count = Number(c);
  } else if (isObj(v)) {
    const entries = Object.entries(v);
    const bad = entries.find(([, c]) => c !== null && typeof c !== 'number');
    if (bad) {
      invalid(field, `counts must be numbers (got ${describe(bad[1])} for ${bad[0]}).`);
      return undefined;
    }
    if (entries.length !== 1) {
      unsupported(field, entries.length === 0 ? 'is empty: name one TPU type.' : 'names several accelerators: tpw runs on one TPU type, name one.');
      return undefined;
    }
    [name, count] = [entries[0][0], entries[0][1] ?? 1];
  } else if (Array.isArray(v)) {
    if (v.some((x) => typeof x !== 'string')) invalid(field, 'as a list must hold accelerator names.');
    else unsupported(field, 'as a list of candidates is not supported: tpw does not choose among resources, name one TPU type.');
    return undefined;
  } else {
    invalid(field, `must be a name such as tpu-v6e-8 (got ${describe(v)}).`);
    return undefined;
  }
  const m = /^tpu-([a-z0-9]+)-(\d+)$/i.exec(name);
  if (!m) {
    unsupported(field, `is ${name}, not a TPU: tpw runs tasks on Cloud TPU VMs (e.g. tpu-v6e-8, tpu-v5litepod-16, tpu-v4-8).`);
    return { tpu: false };
  }
  const family = m[1].toLowerCase();
  if (!(TPU_FAMILIES as readonly string[]).includes(family)) {
    unsupported(field, `is ${name}: ${family} is not a TPU family Cloud TPU offers TPU VMs of (${TPU_FAMILIES.join(', ')}).`);
    return { tpu: true, type: `${family}-${m[2]}` };
  }
  if (count !== 1) unsupported(field, `asks for ${String(count)} of ${name}: a TPU type is one slice (pick a bigger type for more chips).`);
  return { tpu: true, type: `${family}-${m[2]}` };
}

/** The mapping without its null-valued fields (but those in `keep`): SkyPilot checks a mapping that way. */
function withoutNulls(o: Obj, keep: readonly string[]): Obj {
  return Object.fromEntries(Object.entries(o).filter(([k, v]) => (v !== null && v !== undefined) || keep.includes(k)));
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return JSON.stringify(v);
  return `${typeof v} ${String(v)}`;
}

/** One line per problem, as the CLI prints them: `TASK.yaml: resources.disk_size is not supported: …`. */
export function formatProblems(file: string, problems: readonly TaskProblem[]): string[] {
  return problems.map((p) => `${file}: ${p.field === '' ? 'the file' : p.field} ${p.message}`);
}
