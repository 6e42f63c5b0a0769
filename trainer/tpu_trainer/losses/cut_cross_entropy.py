"""Cut cross-entropy: linear classifier + cross-entropy without the full logits.

The naive loss `cross_entropy(h @ W.T, y)` keeps a (tokens x vocab) logits
tensor alive for backward, and autograd adds a log-softmax and a logits
gradient of the same size: at 8k tokens and a 128k vocabulary that is ~4 GiB
each in fp32. Here the tokens are processed in chunks; each chunk's logits live
only inside one loop iteration.

Because the loss is a scalar, its gradient is the chunk-local quantity
d loss / d logits = (softmax - target distribution) / n_valid times the scalar
grad_output. So the forward pass already computes d h and d W chunk by chunk
(fp32 accumulation) and backward only scales them. That costs the same three
matmuls as the naive forward + backward (a recompute-in-backward design costs
four), which is what keeps the time near the naive loss. When no gradient is
needed (eval, torch.no_grad) the gradient work is skipped.

Options: label smoothing (mixes the one-hot target with the uniform
distribution), z-loss (z * logsumexp^2, keeps the softmax normaliser near 1),
ignore_index (excluded from loss and mean), and `shift` for causal LM (position
t predicts label t+1). No Triton: plain tensor ops, so the same code traces on
torch_xla (the chunk loop unrolls into one static graph) and runs on CPU/CUDA.
Vocab is not chunked: with the gradient fused into the forward, a vocab split
would need a second pass for the logsumexp, i.e. a fourth matmul; the token
chunk is sized from `chunk_elems` instead (0: automatic) so one chunk's logits stay small.

Sharded vocabulary (tensor parallelism: lm_head's weight a DTensor split over its rows):
each rank computes its vocabulary slice of every chunk's logits, and the row maxima,
exp-sums, target logits and logit sums are completed with one all-reduce each over
the tensor-parallel group, so the full logits exist nowhere; d h is summed over the
group once, d W stays on its shard.
"""


from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor, Shard

# A chunk's logits buffer (logits, then probabilities, then d loss / d logits, in place) is the one
# large buffer of the loss. Its size trades memory for time: every chunk reads and writes the whole fp32
# dW accumulator (vocab x hidden), and a chunk of few tokens turns the three matmuls into skinny ones that
# multicore CPUs and GPUs run well below their speed (on 16 cores, 131-token chunks of a 256k vocabulary
# ran the matmuls 1.7x slower per token than 1,024-token ones). The automatic size (chunk_elems=0): 2^26
# logits (256 MiB fp32), and never fewer than 512 tokens; test/bench/cce_bench.py measures it.
AUTO_CHUNK_ELEMS = 1 << 26
AUTO_MIN_ROWS = 512


def _chunk_rows(n_tokens: int, vocab: int, chunk_elems: int) -> int:
    if chunk_elems <= 0:
        return max(1, min(n_tokens, max(AUTO_MIN_ROWS, AUTO_CHUNK_ELEMS // max(1, vocab))))
    return max(1, min(n_tokens, chunk_elems // max(1, vocab)))


@dataclass(frozen=True)
class VocabShard:
    """The vocabulary rows [offset, offset + local rows) of lm_head's weight that this rank holds,
    under tensor parallelism (a DTensor split on dim 0 over a 1-D mesh), and the group whose sums
    and maxima complete a row's softmax. Tokens are the same on every rank of the group."""

    offset: int
    vocab: int
    group: Any

    @staticmethod
    def of(weight: DTensor) -> "VocabShard | None":
        """None unless the weight is split over the vocabulary on a 1-D mesh (then it is gathered instead)."""
        if weight.device_mesh.ndim != 1 or tuple(weight.placements) != (Shard(0),):
            return None
        vocab, ways = weight.shape[0], weight.device_mesh.size()
        per = -(-vocab // ways)  # DTensor's Shard(0) splits as torch.chunk does
        return VocabShard(min(weight.device_mesh.get_local_rank() * per, vocab), vocab,
                          weight.device_mesh.get_group())

    def sum(self, t: torch.Tensor) -> torch.Tensor:
        dist.all_reduce(t, group=self.group)
        return t

    def max(self, t: torch.Tensor) -> torch.Tensor:
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        return t


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, h: torch.Tensor, w: torch.Tensor, targets: torch.Tensor, ignore_index: int,
                label_smoothing: float, z_loss: float, chunk_elems: int, need_grad: bool,
                shard: VocabShard | None) -> torch.Tensor:
        n, v = h.shape[0], w.shape[0]
        vocab = shard.vocab if shard else v
        wf = w.float()  # no copy when the weight is already fp32
        valid = targets != ignore_index
        # max(1, ...) so a batch of only ignored tokens gives 0 rather than NaN
        n_valid = valid.sum().clamp(min=1).to(torch.float32)
        total = torch.zeros((), dtype=torch.float32, device=h.device)
        dh = torch.empty((n, h.shape[1]), dtype=torch.float32, device=h.device) if need_grad else None
        dw = torch.zeros((v, w.shape[1]), dtype=torch.float32, device=w.device) if need_grad else None
        rows = _chunk_rows(n, v, chunk_elems)
        eps = label_smoothing
        # Eager devices reuse one logits buffer for every chunk: a fresh (rows x vocab) allocation per chunk
        # is a fresh mapping the kernel must fault in and zero each time, which on CPU costs as much as a
        # fifth of the loss. Under XLA the loop is traced into one graph and the compiler places buffers.
        eager = h.device.type in ("cpu", "cuda")
        buf = torch.empty((rows, v), dtype=torch.float32, device=h.device) if eager else None
        for start in range(0, n, rows):
            end = min(n, start + rows)
            hc = h[start:end].float()
            tc = targets[start:end]
            vc = valid[start:end]
            safe_t = torch.where(vc, tc, torch.zeros_like(tc))  # ignored rows gather index 0, then masked
            logits = torch.mm(hc, wf.t(), out=buf[: end - start]) if buf is not None else hc @ wf.t()
            if shard is None:
                tgt_logit = logits.gather(1, safe_t[:, None]).squeeze(1)
                mean_logit = logits.mean(dim=-1) if eps > 0 else None
                row_max = logits.amax(dim=-1, keepdim=True)
            else:
                # This rank holds vocabulary rows [offset, offset + v): a target outside them contributes 0 here,
                # and the other ranks' sums complete every per-row quantity.
                mine = (safe_t >= shard.offset) & (safe_t < shard.offset + v)
                safe_t = torch.where(mine, safe_t - shard.offset, torch.zeros_like(safe_t))
                tgt_logit = shard.sum(logits.gather(1, safe_t[:, None]).squeeze(1) * mine)
                mean_logit = shard.sum(logits.sum(dim=-1)) / vocab if eps > 0 else None
                row_max = shard.max(logits.amax(dim=-1, keepdim=True))
                vc_scatter = vc & mine
            # One exp pass serves both the loss and the gradient: probs = exp(logits - max) / sum,
            # computed in place so a chunk holds a single (rows x vocab) buffer.
            probs = logits.sub_(row_max).exp_()
            sum_exp = probs.sum(dim=-1) if shard is None else shard.sum(probs.sum(dim=-1))
            lse = row_max.squeeze(1) + sum_exp.log()
            loss = lse - tgt_logit
            if eps > 0:
                # smoothed target: (1 - eps) one-hot + eps / V uniform
                assert mean_logit is not None
                loss = (1 - eps) * loss + eps * (lse - mean_logit)
            if z_loss > 0:
                loss = loss + z_loss * lse.square()
            total = total + torch.where(vc, loss, torch.zeros_like(loss)).sum()
            if dh is None or dw is None:  # no gradient wanted
                continue
            # d loss / d logits_ij = [p_ij (1 + 2 z lse_i) - (1 - eps) [j = y_i] - eps / V] * valid_i / n_valid;
            # every per-row factor folds into one multiply of the buffer.
            scale = vc.to(torch.float32) / n_valid
            probs.mul_(((1 + 2 * z_loss * lse) * scale / sum_exp)[:, None])
            if eps > 0:
                probs.sub_((eps / vocab * scale)[:, None])
            hit = scale if shard is None else vc_scatter.to(torch.float32) / n_valid
            probs.scatter_add_(1, safe_t[:, None], (-(1 - eps) * hit)[:, None])
            if eager:
                torch.mm(probs, wf, out=dh[start:end])
            else:
                dh[start:end] = probs @ wf
            dw.addmm_(probs.t(), hc)
        if shard is not None and dh is not None:
            dh = shard.sum(dh)  # each rank's part of dL/dh comes from its vocabulary rows
        ctx.save_for_backward(dh, dw)
        ctx.dtypes, ctx.used = (h.dtype, w.dtype), False
        return total / n_valid

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        dh, dw = ctx.saved_tensors
        if dh is None:
            raise RuntimeError("cut_cross_entropy ran without gradients (no_grad forward); cannot backward")
        if ctx.used:
            raise RuntimeError("cut_cross_entropy supports one backward per forward (gradients are scaled in place)")
        ctx.used = True
        # In place: a scaled copy of dW would be another (vocab x hidden) fp32 buffer at the peak.
        dh, dw = dh.mul_(grad_out), dw.mul_(grad_out)
        return dh.to(ctx.dtypes[0]), dw.to(ctx.dtypes[1]), None, None, None, None, None, None, None


def cut_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    *,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    z_loss: float = 0.0,
    shift: bool = False,
    chunk_elems: int = 0,
) -> torch.Tensor:
    """Mean cross-entropy of `hidden @ weight.T` against `targets`, never materialising all logits.

    hidden [..., D], weight [V, D], targets [...] (same leading shape as hidden).
    shift=True: hidden [B, T, D] and targets [B, T] are the same positions (labels
    = input ids); position t is scored against label t+1 and the last position
    is dropped, as in a causal LM.
    """
    if shift:
        hidden, targets = hidden[..., :-1, :], targets[..., 1:]
    h = hidden.reshape(-1, hidden.shape[-1])
    t = targets.reshape(-1)
    need_grad = torch.is_grad_enabled() and (h.requires_grad or weight.requires_grad)
    shard = None
    if isinstance(weight, DTensor):
        shard = VocabShard.of(weight)
        # to_local is differentiable: the shard's gradient becomes the DTensor weight's gradient.
        weight = weight.to_local() if shard else weight.full_tensor()
    return _LinearCrossEntropy.apply(h, weight, t, ignore_index, label_smoothing, z_loss, chunk_elems, need_grad,
                                     shard)


def naive_linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    *,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    z_loss: float = 0.0,
    shift: bool = False,
    chunk_elems: int | None = None,
) -> torch.Tensor:
    """The reference: full logits, then torch's cross_entropy (+ z-loss). Same arguments as cut_cross_entropy."""
    del chunk_elems
    if shift:
        hidden, targets = hidden[..., :-1, :], targets[..., 1:]
    logits = (hidden.reshape(-1, hidden.shape[-1]) @ weight.t()).float()
    t = targets.reshape(-1)
    loss = torch.nn.functional.cross_entropy(logits, t, ignore_index=ignore_index, label_smoothing=label_smoothing)
    if z_loss > 0:
        valid = t != ignore_index
        lse = torch.logsumexp(logits, dim=-1)
        loss = loss + z_loss * torch.where(valid, lse.square(), torch.zeros_like(lse)).sum() / valid.sum().clamp(min=1)
    return loss
