/**
 * worker_threads entry: reads and decodes a profile off the extension host's main thread (a large capture
 * takes seconds of CPU), then answers with the summary (typed arrays transferred, not copied).
 */
import { readFile } from 'node:fs/promises';
import { parentPort } from 'node:worker_threads';
import { analyzeXSpace } from './analyze';
import { writeChromeTrace } from './chrome-trace';
import type { WorkerReply, WorkerRequest } from './parse';
import { decodeXSpace } from './xplane';

async function handle(req: WorkerRequest): Promise<WorkerReply> {
  try {
    const space = decodeXSpace(await readFile(req.file));
    if (req.op === 'export') return { id: req.id, ok: true, events: await writeChromeTrace(space, req.out) };
    return { id: req.id, ok: true, summary: analyzeXSpace(space) };
  } catch (e) {
    return { id: req.id, ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

parentPort?.on('message', (req: WorkerRequest) => {
  void handle(req).then((reply) => {
    const transfer: ArrayBuffer[] = [];
    if (reply.ok && reply.summary) {
      for (const l of reply.summary.timeline.lines) transfer.push(l.start.buffer as ArrayBuffer, l.dur.buffer as ArrayBuffer, l.name_.buffer as ArrayBuffer, l.depth.buffer as ArrayBuffer);
    }
    parentPort?.postMessage(reply, transfer);
  });
});
