/**
 * The flag catalog: XLA / libtpu flags seen in published TPU recipes, with what they do. Data only; the
 * language server offers them inside LIBTPU_INIT_ARGS and XLA_FLAGS strings.
 */
export interface FlagInfo {
  name: string;
  type: 'bool' | 'int' | 'string' | 'enum';
  doc: string;
  values?: string[];
}

export const FLAGS: FlagInfo[] = [
  { name: 'xla_tpu_scoped_vmem_limit_kib', type: 'int', doc: 'Scoped VMEM limit per TensorCore, in KiB.' },
  { name: 'xla_tpu_enable_async_collective_fusion', type: 'bool', doc: 'Fuse collectives so they run asynchronously with compute.' },
  { name: 'xla_tpu_enable_async_collective_fusion_fuse_all_gather', type: 'bool', doc: 'Include all-gather in async collective fusion.' },
  { name: 'xla_tpu_enable_async_collective_fusion_multiple_steps', type: 'bool', doc: 'Let async collective fusion span multiple steps.' },
  { name: 'xla_tpu_overlap_compute_collective_tc', type: 'bool', doc: 'Overlap compute with collectives on the TensorCore.' },
  { name: 'xla_enable_async_all_gather', type: 'bool', doc: 'Run all-gather asynchronously.' },
  { name: 'xla_tpu_enable_data_parallel_all_reduce_opt', type: 'bool', doc: 'Optimise data-parallel all-reduce.' },
  { name: 'xla_tpu_enable_flash_attention', type: 'bool', doc: 'Let XLA pattern-match flash attention.' },
  { name: 'xla_latency_hiding_scheduler_rerun', type: 'int', doc: 'How many times the latency-hiding scheduler reruns.' },
  { name: 'xla_dump_to', type: 'string', doc: 'Directory to dump HLO modules into (XLA_FLAGS).' },
];
