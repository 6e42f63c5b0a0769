/**
 * The metrics record's fields the Metrics tab draws, in chart order. Kept apart from the charts (no DOM, no
 * chart library) so test/unit/protocol-contracts.test.ts can check them against the record's schema in Node.
 */
import type { MetricRecord } from '../../protocol/metrics-record';

export const CHARTED_METRICS = ['loss', 'lr', 'step_time_s', 'tokens_per_s', 'mfu', 'mem_bytes'] as const satisfies readonly (keyof MetricRecord)[];
export type ChartedMetric = (typeof CHARTED_METRICS)[number];
