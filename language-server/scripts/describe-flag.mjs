// One-line meanings for flags, written by us from the flag's own name (never from XLA's help text): the name's
// abbreviations are spelled out and the sentence shape follows the type. Hand-written meanings in libtpu.json
// take precedence for the flags people actually put in recipes.
const WORDS = {
  tpu: 'TPU', gpu: 'GPU', cpu: 'CPU', hlo: 'HLO', spmd: 'SPMD', lhs: 'latency-hiding scheduler', sc: 'SparseCore',
  tc: 'TensorCore', ag: 'all-gather', ar: 'all-reduce', rs: 'reduce-scatter', kib: 'KiB', mib: 'MiB', mb: 'MB',
  gb: 'GB', msa: 'memory-space assignment', vmem: 'VMEM', ici: 'ICI (chip-to-chip)', dcn: 'DCN (cross-slice)',
  crs: 'cross-replica sum', ars: 'all-reduce-scatter', llo: 'low-level ops', nccl: 'NCCL', cudnn: 'cuDNN',
  cublas: 'cuBLAS', cublaslt: 'cuBLASLt', ptx: 'PTX', llvm: 'LLVM', ir: 'IR', mlir: 'MLIR', xla: 'XLA', sdc: 'SDC',
  rng: 'RNG', ptxas: 'ptxas', jit: 'JIT', aot: 'AOT', pgle: 'profile-guided latency estimation', nd: 'N-D',
  bf16: 'bf16', fp8: 'fp8', html: 'HTML', pb: 'protobuf', dot: 'dot', rwb: 'reduce+broadcast', licm: 'loop-invariant code motion',
  pjrt: 'PJRT', cse: 'common-subexpression elimination', isa: 'ISA', cuda: 'CUDA', rocm: 'ROCm', nvshmem: 'NVSHMEM',
  sol: 'speed-of-light', ftz: 'flush-to-zero', tma: 'TMA', xnn: 'XNNPACK', onednn: 'oneDNN', acl: 'ACL',
};

const PLATFORM = { tpu: 'TPU', gpu: 'GPU', cpu: 'CPU', sc: 'SparseCore', jf: 'TPU compiler', msa: 'Memory-space assignment' };

function phrase(tokens) {
  return tokens.map((t) => WORDS[t] ?? t).join(' ');
}

/** e.g. xla_tpu_enable_async_collective_fusion, bool → "TPU: turns on async collective fusion." */
export function describeFlag(name, type) {
  let tokens = name.replace(/^xla_/, '').split('_').filter(Boolean);
  let prefix = '';
  if (PLATFORM[tokens[0]] && tokens.length > 1) {
    prefix = `${PLATFORM[tokens[0]]}: `;
    tokens = tokens.slice(1);
  }
  const head = tokens[0];
  const rest = phrase(tokens.slice(1));
  let sentence;
  if (type === 'bool' && (head === 'enable' || head === 'use')) sentence = `turns on ${head === 'use' ? 'use of ' : ''}${rest}`;
  else if (type === 'bool' && head === 'disable') sentence = `turns off ${rest}`;
  else if (type === 'bool' && head === 'dump') sentence = `when dumping, also write ${rest || 'the dump'}`;
  else if (type === 'bool') sentence = `whether to apply: ${phrase(tokens)}`;
  else if (head === 'dump') sentence = `dump setting: ${rest}`;
  else if (type === 'int') sentence = `sets ${phrase(tokens)} (an integer)`;
  else if (type === 'float') sentence = `sets ${phrase(tokens)} (a number)`;
  else if (type === 'enum') sentence = `chooses the ${phrase(tokens)}${/^(mode|level|type|algorithm)$/.test(tokens[tokens.length - 1]) ? '' : ' mode'}`;
  else sentence = `sets ${phrase(tokens)} (text)`;
  const text = prefix ? prefix + sentence : sentence[0].toUpperCase() + sentence.slice(1);
  return `${text}.`;
}
