import { isTpwError, TpwError } from '../errors';
import type { TpuApi, WaitOptions } from '../tpu/api';
import type { NodeId, TpuNode } from '../tpu/models';
import type { ComputeSlice, ComputeTpuProvider } from './provider';
import { groupOf, sliceGroupName } from './slice-group';

/**
 * One slice model above both control planes: a TpuApi whose nodes are the Cloud TPU API's nodes and Compute
 * Engine's TPU VMs and multi-host slices (as nodes with `controlPlane: 'compute'` and one network endpoint per
 * worker, in worker-id order). Runs, terminals, preemption checks and "Add my key" go through backend.api and so
 * work on both without knowing which made the VMs. Creating stays per control plane (createNode: Cloud TPU API;
 * ComputeTpuProvider.createSlice: Compute Engine).
 */

/** Port the TPU runtime listens on; Compute Engine reports none, Cloud TPU reports this one. */
const WORKER_ENDPOINT_PORT = 8470;

/** A Compute Engine slice in the Cloud TPU node shape the rest of the product reads. */
export function sliceToNode(slice: ComputeSlice): TpuNode {
  const group = groupOf(slice.labels);
  return {
    name: `projects/${slice.project}/locations/${slice.zone}/nodes/${slice.name}`,
    acceleratorType: slice.acceleratorType,
    runtimeVersion: '',
    state: slice.state,
    description: `Compute Engine ${slice.kind === 'mig' ? `multi-host slice (${slice.workers.length} VMs, ${slice.status})` : `TPU VM (${slice.machineType})`}`,
    networkEndpoints: slice.workers.map((w) => ({ ipAddress: w.internalIp, port: WORKER_ENDPOINT_PORT, ...(w.externalIp ? { accessConfig: { externalIp: w.externalIp } } : {}) })),
    schedulingConfig: { spot: slice.provisioning === 'spot', preemptible: slice.provisioning === 'flex-start', reserved: slice.provisioning === 'reservation' },
    labels: slice.labels,
    metadata: slice.metadata,
    ...(slice.createTime ? { createTime: slice.createTime } : {}),
    controlPlane: 'compute',
    ...(group ? { sliceGroup: sliceGroupName(slice.project, slice.zone, group.group) } : {}),
    compute: {
      kind: slice.kind,
      status: slice.status,
      machineType: slice.machineType,
      ...(slice.topology ? { topology: slice.topology } : {}),
      provisioning: slice.provisioning,
      ...(slice.reservation ? { reservation: slice.reservation } : {}),
      ...(slice.maxRunDurationSeconds !== undefined ? { maxRunDurationSeconds: slice.maxRunDurationSeconds } : {}),
      ...(slice.targetSize !== undefined ? { targetSize: slice.targetSize } : {}),
      ...(slice.isStable !== undefined ? { isStable: slice.isStable } : {}),
      ...(slice.lastError ? { lastError: slice.lastError } : {}),
      workers: slice.workers.map((w) => ({ instance: w.instance, status: w.status })),
    },
  };
}

/** Errors that mean "this control plane has nothing for you here", so the other one is asked or listed alone. */
function unavailableHere(e: unknown): boolean {
  return isTpwError(e, 'NOT_FOUND') || isTpwError(e, 'API_DISABLED') || isTpwError(e, 'PERMISSION_DENIED');
}

export function withComputeSlices(api: TpuApi, compute: ComputeTpuProvider): TpuApi & { readonly compute: ComputeTpuProvider } {
  const find = async (id: NodeId, signal?: AbortSignal): Promise<{ node: TpuNode; plane: 'tpu-api' | 'compute' }> => {
    let tpuError: unknown;
    try {
      return { node: await api.getNode(id, signal), plane: 'tpu-api' };
    } catch (e) {
      if (!unavailableHere(e)) throw e;
      tpuError = e;
    }
    try {
      return { node: sliceToNode(await compute.getSlice(id.project, id.zone, id.node)), plane: 'compute' };
    } catch (e) {
      if (!unavailableHere(e)) throw e;
      // Not on either: the Cloud TPU API's "not found" names the VM as users know it; otherwise Compute's error.
      throw isTpwError(tpuError, 'NOT_FOUND') && isTpwError(e, 'NOT_FOUND')
        ? new TpwError('NOT_FOUND', `TPU VM "${id.node}" was not found in ${id.project}/${id.zone} (neither the Cloud TPU API nor Compute Engine has it).`)
        : isTpwError(tpuError, 'NOT_FOUND') ? e : tpuError;
    }
  };
  const onCompute = async <T>(id: NodeId, tpu: () => Promise<T>, ce: () => Promise<T>): Promise<T> => ((await find(id)).plane === 'compute' ? ce() : tpu());
  const composite: TpuApi & { readonly compute: ComputeTpuProvider } = {
    compute,
    description: api.description,
    async listNodes(project, zone, signal) {
      const [tpu, ce] = await Promise.allSettled([api.listNodes(project, zone, signal), compute.listSlices(project, zone, signal)]);
      if (tpu.status === 'rejected' && ce.status === 'rejected') throw tpu.reason;
      if (tpu.status === 'rejected' && !unavailableHere(tpu.reason)) throw tpu.reason;
      if (ce.status === 'rejected' && !unavailableHere(ce.reason)) throw ce.reason;
      const nodes = tpu.status === 'fulfilled' ? tpu.value.map((n) => ({ ...n, controlPlane: 'tpu-api' as const })) : [];
      const slices = ce.status === 'fulfilled' ? ce.value.map(sliceToNode) : [];
      return [...nodes, ...slices].sort((a, b) => a.name.localeCompare(b.name));
    },
    getNode: async (id, signal) => (await find(id, signal)).node,
    createNode: async (req, opts) => {
      if (req.controlPlane !== 'compute') return api.createNode(req, opts);
      // Recreate after a preemption: the same type, topology and provisioning (spot, flex-start with its run
      // duration, the same reservation); Compute Engine picks the image.
      const { 'tpw-accelerator-type': _type, ...labels } = req.labels ?? {};
      const c = req.compute;
      const slice = await compute.createSlice(
        {
          project: req.project, zone: req.zone, name: req.nodeId, acceleratorType: req.acceleratorType,
          provisioning: c?.provisioning ?? (req.spot ? 'spot' : 'on-demand'),
          ...(c?.reservation ? { reservation: c.reservation } : {}),
          ...(c?.maxRunDurationSeconds !== undefined ? { maxRunDurationSeconds: c.maxRunDurationSeconds } : {}),
          ...(c?.topology ? { topology: c.topology } : {}),
          labels, ...(req.metadata ? { metadata: req.metadata } : {}),
        },
        opts,
      );
      return sliceToNode(slice);
    },
    deleteNode: (id, opts) => onCompute(id, () => api.deleteNode(id, opts), () => compute.deleteSlice(id.project, id.zone, id.node, opts)),
    startNode: (id, opts) => onCompute(id, () => api.startNode(id, opts), async () => sliceToNode(await compute.startSlice(id.project, id.zone, id.node, opts))),
    stopNode: (id, opts) => onCompute(id, () => api.stopNode(id, opts), async () => sliceToNode(await compute.stopSlice(id.project, id.zone, id.node, opts))),
    updateNodeMetadata: (id, metadata, opts?: WaitOptions) =>
      onCompute(id, () => api.updateNodeMetadata(id, metadata, opts), async () => sliceToNode(await compute.setSliceMetadata(id.project, id.zone, id.node, metadata, opts))),
    listAcceleratorTypes: (p, z, s) => api.listAcceleratorTypes(p, z, s),
    listRuntimeVersions: (p, z, s) => api.listRuntimeVersions(p, z, s),
    listZones: (p, s) => api.listZones(p, s),
    listQueuedResources: (p, z, s) => api.listQueuedResources(p, z, s),
    createQueuedResource: (req, opts) => api.createQueuedResource(req, opts),
    deleteQueuedResource: (id, opts) => api.deleteQueuedResource(id, opts),
    close: async () => {
      await Promise.allSettled([api.close(), compute.close()]);
    },
  };
  return composite;
}
