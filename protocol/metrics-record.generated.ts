// Generated from metrics-record.schema.json by scripts/gen-protocol-types.ts: edit the schema, not this file.

/**
 * One line of the trainer's <output_dir>/metrics.jsonl: one JSON object per logged step, written and flushed at
 * once so a tail over SSH sees it. The trainer writes every property below on every record
 * (test/trainer/test_metrics_schema.py checks it); readers need only `step` and ignore properties they do not know,
 * so files from older or newer trainers still chart. A diverged step's loss is NaN, which Python writes as the bare
 * token NaN: that line is not JSON, and readers skip it.
 */
export interface MetricRecord {
  /** Optimizer step, 1-based. An integer. */
  step: number;
  /** Training loss of that step. */
  loss?: number;
  /** Learning rate used by that step. */
  lr?: number;
  /**
   * Mean wall time per step since the previous logged step, in seconds (the first logged step includes XLA
   * compilation).
   */
  step_time_s?: number;
  /** Tokens processed per second over the same interval. */
  tokens_per_s?: number;
  /**
   * Model FLOPs utilisation in [0, 1]; null when the device's peak FLOP/s is unknown (plain CPU, XLA:CPU) and
   * peak_flops_per_device is not set.
   */
  mfu?: number | null;
  /**
   * Device memory in use when the runtime reports it (TPU, GPU); otherwise the process's resident set size.
   * `mem_kind` says which. An integer.
   */
  mem_bytes?: number;
  /** Which of the two `mem_bytes` is. */
  mem_kind?: 'device' | 'host_rss';
  /** Global gradient norm before clipping; null when norm clipping is off (optimizer.grad_clip=0). */
  grad_norm?: number | null;
  /** Tokens processed so far. An integer. */
  tokens?: number;
  /** TPU worker id (TPU_WORKER_ID), 0 on a single host. An integer. */
  worker?: number;
  /** The device the step ran on, e.g. "xla:TPU v5 lite", "xla:CPU", "cpu". */
  device?: string;
  /**
   * XLA graph compilations so far; null off XLA. A count that keeps growing means a recompiling step. An integer.
   */
  compiles?: number | null;
  /** Unix time of the record, in seconds. */
  time?: number;
}
