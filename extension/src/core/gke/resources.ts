/**
 * The fields of JobSet (jobset.x-k8s.io/v1alpha2) and Kueue (kueue.x-k8s.io/v1beta1) objects tpw reads, as the
 * API server serves them (JSON). Only what is read is typed; everything is optional because a half-made object
 * (a JobSet Kueue has not looked at yet) lacks most of it.
 */

export const JOBSET = { group: 'jobset.x-k8s.io', version: 'v1alpha2', plural: 'jobsets' } as const;
export const KUEUE_GROUP = 'kueue.x-k8s.io';
export const KUEUE_VERSION = 'v1beta1';

export interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
  ownerReferences?: Array<{ kind?: string; name?: string; uid?: string }>;
}

export interface JobSetObject {
  metadata?: ObjectMeta;
  spec?: {
    suspend?: boolean;
    replicatedJobs?: Array<{
      name?: string;
      replicas?: number;
      template?: { spec?: { parallelism?: number; template?: { spec?: { nodeSelector?: Record<string, string> } } } };
    }>;
  };
  status?: {
    conditions?: Condition[];
    restarts?: number;
    terminalState?: string;
    replicatedJobsStatus?: Array<{ name?: string; ready?: number; succeeded?: number; failed?: number; active?: number; suspended?: number }>;
  };
}

export interface KueueWorkloadObject {
  metadata?: ObjectMeta;
  spec?: { queueName?: string };
  status?: { conditions?: Condition[]; admission?: { clusterQueue?: string } };
}

export interface ClusterQueueObject {
  metadata?: ObjectMeta;
  spec?: {
    resourceGroups?: Array<{ flavors?: Array<{ name?: string; resources?: Array<{ name?: string; nominalQuota?: string | number }> }> }>;
  };
  status?: {
    pendingWorkloads?: number;
    admittedWorkloads?: number;
    reservingWorkloads?: number;
    flavorsUsage?: Array<{ name?: string; resources?: Array<{ name?: string; total?: string | number }> }>;
    flavorsReservation?: Array<{ name?: string; resources?: Array<{ name?: string; total?: string | number }> }>;
    conditions?: Condition[];
  };
}

export interface LocalQueueObject {
  metadata?: ObjectMeta;
  spec?: { clusterQueue?: string };
  status?: { pendingWorkloads?: number; admittedWorkloads?: number; reservingWorkloads?: number };
}

export interface ObjectList<T> {
  items?: T[];
  metadata?: { continue?: string; remainingItemCount?: number };
}

export function condition(conditions: Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}
