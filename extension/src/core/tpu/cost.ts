import prices from './prices.json';

/**
 * Hourly cost estimates for TPU VMs from the dated list-price table in prices.json (USD per chip-hour, by
 * generation and region, on-demand and spot). Estimates only: the table says where its figures come from and
 * when they were read; anything it lacks (a region, reserved pricing) yields `undefined`, never a guess.
 */

export type PriceTier = 'on-demand' | 'spot' | 'reserved';

/**
 * The generations the table knows, named as the table names them. TPU7x is known (its chip count) but has no
 * figures yet: no source gave a TPU7x list price on 2026-11-24 (prices.json's notes say which were checked).
 */
export type PricedGeneration = 'v4' | 'v5e' | 'v5p' | 'v6e' | 'tpu7x';

export interface HourlyCost {
  usdPerHour: number;
  chips: number;
  usdPerChipHour: number;
  /** When the table's figures were read (YYYY-MM-DD). */
  asOf: string;
}

interface RegionPrice {
  onDemand?: number;
  spot?: number;
  reserved?: number;
}

interface PriceTable {
  source: string;
  asOf: string;
  notes: string[];
  generations: Record<string, Record<string, RegionPrice>>;
}

const TABLE: PriceTable = prices;

/** Where the figures come from and when they were read, for tooltips and `tpw vm cost`. */
export const PRICE_SOURCE: { url: string; asOf: string; notes: readonly string[] } = { url: TABLE.source, asOf: TABLE.asOf, notes: TABLE.notes };

/**
 * Chips in a slice. The number after the dash counts TensorCores for v2, v3, v4, v5p and TPU7x (2 per chip) and
 * chips for v5e (v5litepod) and v6e: v4-8 → 4, v5p-8 → 4, v5litepod-16 → 16, v6e-8 → 8, v3-8 → 4, tpu7x-8 → 4
 * (one tpu7x-standard-4t VM; Google's TPU7x page: two TensorCores per chip).
 */
export function chipsOf(acceleratorType: string): number | undefined {
  const m = /^(v2|v3|v4|v5p|v5litepod|v5e|v6e|tpu7x)-(\d+)$/.exec(acceleratorType.trim());
  if (!m) return undefined;
  const n = Number(m[2]);
  if (!Number.isSafeInteger(n) || n <= 0) return undefined;
  const coresPerChip = ['v2', 'v3', 'v4', 'v5p', 'tpu7x'].includes(m[1]) ? 2 : 1;
  if (n % coresPerChip !== 0) return undefined;
  return n / coresPerChip;
}

/** The table's generation for an accelerator type (v5litepod-16 → v5e); undefined for unpriced ones. */
export function generationOf(acceleratorType: string): PricedGeneration | undefined {
  const family = /^([a-z0-9]+)-\d+$/.exec(acceleratorType.trim())?.[1];
  switch (family) {
    case 'v4':
      return 'v4';
    case 'v5litepod':
    case 'v5e':
      return 'v5e';
    case 'v5p':
      return 'v5p';
    case 'v6e':
      return 'v6e';
    case 'tpu7x':
      return 'tpu7x';
    default:
      return undefined;
  }
}

/** us-central2-b → us-central2 (a zone is its region plus "-<letter>"); a region is returned unchanged. */
export function regionOf(zone: string): string {
  const m = /^([a-z]+-[a-z]+\d+)-[a-z]$/.exec(zone.trim());
  return m ? m[1] : zone.trim();
}

/** USD per chip-hour for a generation in a region and tier, if the table has it. */
export function chipHourPrice(generation: PricedGeneration, region: string, tier: PriceTier): number | undefined {
  const p = TABLE.generations[generation]?.[region];
  if (!p) return undefined;
  const v = tier === 'on-demand' ? p.onDemand : tier === 'spot' ? p.spot : p.reserved;
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}

/** The estimated hourly cost of a slice in a zone, or undefined when the type or the region is not priced. */
export function hourlyCost(acceleratorType: string, zone: string, tier: PriceTier): HourlyCost | undefined {
  const chips = chipsOf(acceleratorType);
  const generation = generationOf(acceleratorType);
  if (chips === undefined || generation === undefined) return undefined;
  const usdPerChipHour = chipHourPrice(generation, regionOf(zone), tier);
  if (usdPerChipHour === undefined) return undefined;
  // Cents are what people compare; the product of two decimals otherwise shows float noise (9.600000000000001).
  const usdPerHour = Math.round(chips * usdPerChipHour * 100) / 100;
  return { usdPerHour, chips, usdPerChipHour, asOf: TABLE.asOf };
}

/** Regions the table prices a generation in (for "cheaper elsewhere" hints). */
export function pricedRegions(generation: PricedGeneration): string[] {
  return Object.keys(TABLE.generations[generation] ?? {}).sort();
}

/**
 * "$9.60/h" or, with detail, "$9.60/h (8 chips × $1.20/chip-hour, spot list price as of 2026-11-22)".
 * Amounts of $100 and more drop the cents.
 */
export function formatCost(cost: HourlyCost, opts: { detail?: boolean; tier?: PriceTier } = {}): string {
  const money = (usd: number) => (usd >= 100 ? `$${Math.round(usd).toLocaleString('en-US')}` : `$${usd.toFixed(2)}`);
  const head = `${money(cost.usdPerHour)}/h`;
  if (!opts.detail) return head;
  const tier = opts.tier ? `${opts.tier} ` : '';
  return `${head} (${cost.chips} chip${cost.chips === 1 ? '' : 's'} × $${cost.usdPerChipHour.toFixed(2)}/chip-hour, ${tier}list price as of ${cost.asOf})`;
}
