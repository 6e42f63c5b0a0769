import * as vscode from 'vscode';
import type { Backend } from '../core/backend';
import { describeError, isTpwError } from '../core/errors';
import { createNodeRequest, createQueuedRequest, type CreateAnswers } from '../core/explorer/create-request';
import type { CreateComputeSliceRequest } from '../core/compute/provider';
import { zonesOffering } from '../core/tpu/zones';
import { cancelledError, signalFor } from './cancel';
import type { Ctx } from './ctx';
import type { VmTreeProvider } from './vm-tree';

/**
 * Carries out a create wizard's answers: a VM (waiting until READY, the tree showing it CREATING meanwhile)
 * or a queued resource (waiting only for the request; the tree follows it to ACTIVE). When Cloud TPU has no
 * capacity or quota for the type in that zone, it says which zones offer the type and offers to retry in one
 * of them or to queue the request instead.
 */
export async function provision(ctx: Ctx, tree: VmTreeProvider, backend: Backend, answers: CreateAnswers): Promise<void> {
  try {
    if (answers.queued) await queue(ctx, tree, backend, answers);
    else await createDirectly(ctx, tree, backend, answers);
  } catch (e) {
    if (!isTpwError(e, 'RESOURCE_EXHAUSTED')) throw e;
    await offerAlternatives(ctx, tree, backend, answers, e);
  }
}

async function createDirectly(ctx: Ctx, tree: VmTreeProvider, backend: Backend, a: CreateAnswers): Promise<void> {
  const req = createNodeRequest(backend.project, a);
  ctx.log.info(`creating ${a.name} (${a.acceleratorType}, ${a.runtimeVersion}, ${a.provisioning}) in ${backend.project}/${a.zone}`);
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Creating TPU VM ${a.name} (${a.acceleratorType})`, cancellable: true },
    async (progress, token) => {
      const signal = signalFor(token);
      let shown = false;
      try {
        await backend.api.createNode(req, {
          signal,
          onProgress: (p) => {
            // The first report means the node exists (CREATING): show it in the tree right away.
            if (!shown) tree.refresh();
            shown = true;
            progress.report({ message: p.done ? 'done' : 'waiting for the VM to become READY…' });
          },
        });
      } catch (e) {
        if (signal.aborted) {
          void vscode.window.showInformationMessage(`Stopped waiting for ${a.name}; Cloud TPU keeps creating it in the background.`);
          throw cancelledError();
        }
        throw e;
      } finally {
        tree.refresh();
      }
    },
  );
  ctx.log.info(`created ${a.name}`);
  void vscode.window.showInformationMessage(`TPU VM ${a.name} is READY.`);
}

async function queue(ctx: Ctx, tree: VmTreeProvider, backend: Backend, a: CreateAnswers): Promise<void> {
  const req = createQueuedRequest(backend.project, a);
  ctx.log.info(`queueing ${a.name} (${a.acceleratorType}, tier ${req.tier}${req.validUntil ? `, valid until ${req.validUntil}` : ''}) in ${backend.project}/${a.zone}`);
  const qr = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Queueing ${a.name} (${a.acceleratorType})`, cancellable: true }, async (_p, token) => {
    try {
      return await backend.api.createQueuedResource(req, { signal: signalFor(token) });
    } finally {
      tree.refresh();
    }
  });
  void vscode.window.showInformationMessage(`Queued resource ${a.name} is ${qr.state}. The TPU view follows it; the VM appears once capacity is there.`);
}

async function offerAlternatives(ctx: Ctx, tree: VmTreeProvider, backend: Backend, a: CreateAnswers, error: unknown): Promise<void> {
  ctx.log.warn(`${a.name}: ${describeError(error)}`);
  let others: string[] = [];
  try {
    others = (await zonesOffering(backend.api, backend.project, a.acceleratorType, { signal: AbortSignal.timeout(30_000) })).filter((z) => z !== a.zone);
  } catch (e) {
    ctx.log.warn(`looking up zones that offer ${a.acceleratorType}: ${describeError(e)}`);
  }
  const where = others.length > 0 ? ` ${a.acceleratorType} is also offered in ${others.join(', ')}.` : '';
  const retries = others.slice(0, 2).map((z) => ({ title: `Retry in ${z}`, zone: z }));
  const queueIt = a.queued ? [] : ['Queue it'];
  // Google's message ends with its own period; don't print "..".
  const reason = describeError(error).replace(/[.\s]+$/, '');
  const choice = await vscode.window.showErrorMessage(
    `No capacity or quota for ${a.acceleratorType} in ${a.zone}: ${reason}.${where}`,
    ...retries.map((r) => r.title),
    ...queueIt,
    'Show log',
  );
  if (choice === 'Show log') ctx.log.show(true);
  const retry = retries.find((r) => r.title === choice);
  if (retry) await provision(ctx, tree, backend, { ...a, zone: retry.zone, dataDisk: undefined });
  if (choice === 'Queue it') await provision(ctx, tree, backend, { ...a, queued: { tier: a.provisioning === 'spot' ? 'spot' : 'guaranteed' } });
}

/**
 * Creates a Compute Engine TPU VM or multi-host slice (workload policy → template → MIG) and waits until every VM
 * runs; the tree shows it as soon as the first operation is under way. A failed slice create has already removed
 * what it made (ComputeTpuProvider.createSlice).
 */
export async function provisionOnCompute(ctx: Ctx, tree: VmTreeProvider, backend: Backend, req: CreateComputeSliceRequest, summary: string): Promise<void> {
  ctx.log.info(`creating ${req.name} (${summary}) in ${req.project}/${req.zone}`);
  const slice = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Creating TPU VM ${req.name} (${req.acceleratorType}) on Compute Engine`, cancellable: true },
    async (progress, token) => {
      const signal = signalFor(token);
      let shown = false;
      try {
        return await backend.compute.createSlice(req, {
          signal,
          onProgress: (p) => {
            if (!shown) tree.refresh();
            shown = true;
            progress.report({ message: p.done ? 'done' : 'waiting for every VM to run…' });
          },
        });
      } catch (e) {
        if (signal.aborted) {
          void vscode.window.showInformationMessage(`Stopped waiting for ${req.name}; Compute Engine keeps creating it in the background.`);
          throw cancelledError();
        }
        throw e;
      } finally {
        tree.refresh();
      }
    },
  );
  ctx.log.info(`created ${req.name}: ${slice.workers.length} worker${slice.workers.length === 1 ? '' : 's'}`);
  void vscode.window.showInformationMessage(`TPU VM ${req.name} is ${slice.state} (${slice.workers.length} worker${slice.workers.length === 1 ? '' : 's'}).`);
}
