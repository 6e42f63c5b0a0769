/**
 * worker_threads entry: decodes a profile off the extension host's main thread (a large capture takes a second
 * of CPU or more), streaming it from disk line by line (on several threads when it is large and cores allow:
 * this same script is the helpers'), then answers with the summary (typed arrays transferred, not copied).
 */
import { parentPort } from 'node:worker_threads';
import { timelineBuffers, type ProfileSummary } from './analyze';
import { exportChromeTraceFile } from './chrome-trace';
import { analyzeProfileFileParallel, runShardIfHelper } from './parallel';
import type { WorkerReply, WorkerRequest } from './parse';

async function handle(req: WorkerRequest): Promise<WorkerReply> {
  try {
    if (req.op === 'export') return { id: req.id, ok: true, events: exportChromeTraceFile(req.file, req.out) };
    // __filename: this bundle (dist/profile-worker.js), which is also the helper thread's script.
    const summary: ProfileSummary = await analyzeProfileFileParallel(req.file, __filename);
    return { id: req.id, ok: true, summary };
  } catch (e) {
    return { id: req.id, ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

if (!runShardIfHelper()) {
  parentPort?.on('message', (req: WorkerRequest) => {
    void handle(req).then((reply) => {
      parentPort?.postMessage(reply, reply.ok && reply.summary ? timelineBuffers(reply.summary.timeline.lines) : []);
    });
  });
}
