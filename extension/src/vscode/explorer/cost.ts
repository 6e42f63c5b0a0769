import { provisioningOf } from '../../core/explorer/node-status';
import { formatCost, hourlyCost, type PriceTier } from '../../core/tpu/cost';
import type { TpuNode } from '../../core/tpu/models';

/** A VM's estimated price as the tree shows it ("~$9.60/h") and explains it in the tooltip. */
export interface VmCost {
  text: string;
  detail: string;
}

/**
 * From the dated list-price table (core/tpu/cost.ts). Reserved capacity is billed by its commitment, so the
 * table may have no price for it: then nothing is shown rather than a wrong number.
 */
export function vmCost(node: TpuNode, zone: string): VmCost | undefined {
  const tier = provisioningOf(node);
  const c = hourlyCost(node.acceleratorType, zone, tier);
  if (!c) return undefined;
  return { text: `~${formatCost(c)}`, detail: formatCost(c, { detail: true, tier }) };
}

/** "~$9.60/h (8 chips × …)" for the create wizard, or undefined when the table has no price. */
export function costFor(acceleratorType: string, zone: string, tier: PriceTier): string | undefined {
  const c = hourlyCost(acceleratorType, zone, tier);
  return c ? `~${formatCost(c, { detail: true })}` : undefined;
}
