import { TpwError } from '../errors';
import { gkeTpuType } from './tpu-types';

/**
 * A TPU node pool as `gcloud container node-pools create NAME --machine-type M --tpu-topology T --num-nodes N
 * [--spot | --reservation-affinity=specific --reservation=R]` asks the GKE API for it: one slice of the TPU type
 * (its VMs as nodes), on spot capacity or out of a specific Compute Engine reservation.
 */

export interface TpuNodePoolSpec {
  name: string;
  tpuType: string;
  spot?: boolean;
  /** A specific reservation in the cluster's project and zone, by name. */
  reservation?: string;
}

/** The GKE API's NodePool (the fields this request sets). */
export interface NodePoolBody {
  name: string;
  initialNodeCount: number;
  config: {
    machineType: string;
    spot?: boolean;
    reservationAffinity?: { consumeReservationType: 'SPECIFIC_RESERVATION'; key: string; values: string[] };
  };
  placementPolicy?: { tpuTopology: string };
}

/** GKE's and Compute Engine's key for "this reservation, by name". */
export const RESERVATION_NAME_KEY = 'compute.googleapis.com/reservation-name';

const DNS_LABEL = /^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$/;
const RESERVATION = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function tpuNodePoolRequest(spec: TpuNodePoolSpec): NodePoolBody {
  if (!DNS_LABEL.test(spec.name)) throw new TpwError('INVALID_ARGUMENT', `"${spec.name}" is not a node pool name: lowercase letters, digits and hyphens, starting with a letter, at most 40.`);
  if (spec.reservation !== undefined && !RESERVATION.test(spec.reservation)) {
    throw new TpwError('INVALID_ARGUMENT', `--reservation "${spec.reservation}" is not a reservation name: lowercase letters, digits and hyphens, starting with a letter.`);
  }
  if (spec.spot && spec.reservation) throw new TpwError('INVALID_ARGUMENT', 'A node pool is either --spot or out of --reservation R, not both.');
  const t = gkeTpuType(spec.tpuType);
  if (t.workloadPolicy) {
    throw new TpwError('FAILED_PRECONDITION', `A multi-host ${t.name} node pool needs a Compute Engine workload policy (gcloud container node-pools create … --placement-policy): create it with gcloud.`);
  }
  return {
    name: spec.name,
    initialNodeCount: t.vmsPerSlice,
    config: {
      machineType: t.machineType,
      ...(spec.spot ? { spot: true } : {}),
      ...(spec.reservation ? { reservationAffinity: { consumeReservationType: 'SPECIFIC_RESERVATION', key: RESERVATION_NAME_KEY, values: [spec.reservation] } } : {}),
    },
    // A single-host pool's topology follows from its machine type (gcloud sends none).
    ...(t.vmsPerSlice > 1 ? { placementPolicy: { tpuTopology: t.topology } } : {}),
  };
}
