import { shQuote } from '../ssh/quote';
import type { CreateNodeRequest, CreateQueuedResourceRequest } from './api';

/**
 * The `gcloud` command equivalent to a create request, for people who want to see (or script) what the
 * wizard and `tpw vm create --dry-run` do. Every value is shell-quoted, and map flags (--labels, --metadata)
 * switch to gcloud's `^DELIM^` list syntax when a value contains a comma, so a pasted command creates
 * exactly the request: description, labels and scripts with quotes, `$()` or newlines included.
 */

export interface GcloudCommandOptions {
  /**
   * The startup script's file, if it came from one: then `--metadata-from-file=startup-script=FILE` is
   * shown instead of the whole script inline.
   */
  startupScriptFile?: string;
  /** Put each flag on its own line, joined with ` \` (default: one line). */
  multiline?: boolean;
}

/** `gcloud compute tpus tpu-vm create …` for a CreateNodeRequest. */
export function gcloudCreateCommand(req: CreateNodeRequest, opts: GcloudCommandOptions = {}): string {
  const head = ['gcloud', 'compute', 'tpus', 'tpu-vm', 'create', req.nodeId];
  const flags: string[][] = [
    flag('zone', req.zone),
    flag('project', req.project),
    flag('accelerator-type', req.acceleratorType),
    flag('version', req.runtimeVersion),
    ...(req.spot ? [['--spot']] : req.reserved ? [['--reserved']] : []),
    ...nodeFlags(req, opts),
  ];
  return render(head, flags, opts);
}

/** `gcloud compute tpus queued-resources create …` for a CreateQueuedResourceRequest. */
export function gcloudQueuedCommand(req: CreateQueuedResourceRequest, opts: GcloudCommandOptions = {}): string {
  const head = ['gcloud', 'compute', 'tpus', 'queued-resources', 'create', req.queuedResourceId];
  const flags: string[][] = [
    flag('zone', req.zone),
    flag('project', req.project),
    ...(req.slices !== undefined && req.slices > 1 ? [flag('node-count', String(req.slices)), flag('node-prefix', req.node.nodeId)] : [flag('node-id', req.node.nodeId)]),
    flag('accelerator-type', req.node.acceleratorType),
    flag('runtime-version', req.node.runtimeVersion),
    [req.tier === 'spot' ? '--spot' : '--guaranteed'],
    ...(req.node.reserved && req.tier !== 'spot' ? [['--reserved']] : []),
    ...(req.validUntil ? [flag('valid-until-time', req.validUntil)] : []),
    ...nodeFlags(req.node, opts),
  ];
  return render(head, flags, opts);
}

type NodeSpec = Pick<CreateNodeRequest, 'description' | 'labels' | 'startupScript' | 'metadata' | 'dataDisks'>;

function nodeFlags(n: NodeSpec, opts: GcloudCommandOptions): string[][] {
  const out: string[][] = [];
  if (n.description) out.push(flag('description', n.description));
  if (n.labels && Object.keys(n.labels).length > 0) out.push(flag('labels', gcloudDict(n.labels)));
  const metadata: Record<string, string> = { ...(n.metadata ?? {}) };
  if (n.startupScript !== undefined && opts.startupScriptFile === undefined) metadata['startup-script'] = n.startupScript;
  else delete metadata['startup-script'];
  if (Object.keys(metadata).length > 0) out.push(flag('metadata', gcloudDict(metadata)));
  if (n.startupScript !== undefined && opts.startupScriptFile !== undefined) {
    out.push(flag('metadata-from-file', gcloudDict({ 'startup-script': opts.startupScriptFile })));
  }
  for (const d of n.dataDisks ?? []) {
    out.push(flag('data-disk', gcloudDict({ source: d.sourceDisk, mode: d.mode === 'READ_ONLY' ? 'read-only' : 'read-write' })));
  }
  return out;
}

/** A `--name=value` flag: [name, value], rendered with only the value quoted so it reads like gcloud's docs. */
function flag(name: string, value: string): string[] {
  return [`--${name}=`, value];
}

/**
 * gcloud's dict syntax, `k=v,k2=v2`; when a key or value holds a comma, gcloud's alternative delimiter form
 * `^D^k=vDk2=v2` with a D found nowhere in the entries (see `gcloud topic escaping`).
 */
export function gcloudDict(entries: Record<string, string>): string {
  const pairs = Object.entries(entries).map(([k, v]) => `${k}=${v}`);
  if (!pairs.some((p) => p.includes(','))) return pairs.join(',');
  const text = pairs.join('');
  const delim = [';', '|', '#', '@', '~', ':', '+', '%', '!'].find((d) => !text.includes(d) && d !== '^');
  if (delim) return `^${delim}^${pairs.join(delim)}`;
  // Every candidate occurs in the text: a multi-character delimiter that does not.
  let n = 0;
  while (text.includes(`:${n}:`)) n++;
  return `^:${n}:^${pairs.join(`:${n}:`)}`;
}

function render(head: string[], flags: string[][], opts: GcloudCommandOptions): string {
  // `--name=` is safe bare, and bash joins it with the quoted value into one word.
  const words = [head.map(shQuote).join(' '), ...flags.map((f) => (f.length === 2 ? `${f[0]}${shQuote(f[1])}` : shQuote(f[0])))];
  return opts.multiline ? words.join(' \\\n    ') : words.join(' ');
}
