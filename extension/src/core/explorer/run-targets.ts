import { parseNodeName, shortName, type TpuNode } from '../tpu/models';

/**
 * What "Run on TPU" offers when it is not invoked on a tree row: every READY VM, and every multislice group whose
 * slices are all READY as one item (a run on it goes to every worker of every slice, as the group row's Run on
 * TPU does). Pure, so the choice of items is tested without VS Code (test/unit/run-targets.test.ts).
 */

export type RunTargetItem =
  | { target: 'vm'; label: string; description: string; node: TpuNode }
  /** `slices` in slice order (slice 0 first, as a run takes them). */
  | { target: 'group'; label: string; description: string; group: string; slices: TpuNode[] };

/** A group's slices `<prefix>-0`, `<prefix>-1`, … by their numeric suffix (MEGASCALE_SLICE_ID order). */
export function sliceOrder(nodes: readonly TpuNode[]): TpuNode[] {
  const n = (x: TpuNode) => Number(/-(\d+)$/.exec(shortName(x.name))?.[1] ?? 0);
  return [...nodes].sort((a, b) => n(a) - n(b));
}

/** The nodes a list holds, by multislice group (in first-seen order); nodes of no group are left out. */
export function sliceGroupsOf(nodes: readonly TpuNode[]): Map<string, TpuNode[]> {
  const groups = new Map<string, TpuNode[]>();
  for (const n of nodes) if (n.sliceGroup) groups.set(n.sliceGroup, [...(groups.get(n.sliceGroup) ?? []), n]);
  for (const [g, slices] of groups) groups.set(g, sliceOrder(slices));
  return groups;
}

const planeLabel = (n: TpuNode) => (n.controlPlane === 'compute' ? 'Compute Engine' : 'Cloud TPU API');

/**
 * The items, in the order the nodes came (a group where its first slice was): a VM not in a group when READY, a
 * group when every slice is READY. A group's slices are never offered one by one: a run on one slice of a
 * multislice job would wait for the others forever.
 */
export function runTargetItems(nodes: readonly TpuNode[]): RunTargetItem[] {
  const groups = sliceGroupsOf(nodes);
  const items: RunTargetItem[] = [];
  for (const n of nodes) {
    if (!n.sliceGroup) {
      if (n.state === 'READY') items.push({ target: 'vm', label: shortName(n.name), description: `${n.acceleratorType} · ${parseNodeName(n.name).zone} · ${planeLabel(n)}`, node: n });
      continue;
    }
    const slices = groups.get(n.sliceGroup) ?? [];
    if (items.some((i) => i.target === 'group' && i.group === n.sliceGroup)) continue;
    if (!slices.every((s) => s.state === 'READY')) continue;
    const workers = slices[0].networkEndpoints.length;
    items.push({
      target: 'group',
      label: shortName(n.sliceGroup),
      description: `multislice: ${slices.length} slices × ${workers} worker${workers === 1 ? '' : 's'} · ${slices[0].acceleratorType} · ${parseNodeName(slices[0].name).zone} · ${planeLabel(slices[0])}`,
      group: n.sliceGroup,
      slices,
    });
  }
  return items;
}
