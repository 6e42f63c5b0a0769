import { acceleratorInfo, type AcceleratorInfo } from './catalog';
import type { AcceleratorConfigJson, CreateNodeInput, NetworkConfigJson, NodeJson } from './types';

/**
 * The node fields a real TPU VM reports beside acceleratorType and networkEndpoints: acceleratorConfig (what
 * gcloud shows as TYPE and TOPOLOGY) and networkConfig (NETWORK). Derived here so that a node created
 * now and one loaded from an older state file carry the same fields.
 */

export function acceleratorConfigOf(accel: AcceleratorInfo): AcceleratorConfigJson {
  return { type: accel.generation, topology: accel.topology };
}

/** Region of a zone: "us-central2-b" → "us-central2". */
function regionOf(zone: string): string {
  return zone.replace(/-[a-z]$/, '');
}

/**
 * A node's networkConfig from the request. With no networkConfig at all the node gets the project's default
 * network with external IPs, as `gcloud compute tpus tpu-vm create` and the console make it; a request that
 * sends one gets what it says (proto3: an absent enableExternalIps is false). Short names become full names.
 */
export function networkConfigFor(parent: string, input: CreateNodeInput['networkConfig']): NetworkConfigJson {
  const [, project, , zone] = parent.split('/');
  const network = input?.network || 'default';
  const subnetwork = input?.subnetwork || network.split('/').pop() || 'default';
  return {
    network: network.includes('/') ? network : `projects/${project}/global/networks/${network}`,
    subnetwork: subnetwork.includes('/') ? subnetwork : `projects/${project}/regions/${regionOf(zone)}/subnetworks/${subnetwork}`,
    enableExternalIps: input ? input.enableExternalIps === true : true,
    canIpForward: input?.canIpForward === true,
  };
}

/** Fills acceleratorConfig and networkConfig of a node saved before the emulator reported them. */
export function withNodeConfigs(node: NodeJson): NodeJson {
  const parent = node.name.slice(0, node.name.indexOf('/nodes/'));
  const accel = acceleratorInfo(node.acceleratorType);
  if (!node.acceleratorConfig && accel) node.acceleratorConfig = acceleratorConfigOf(accel);
  if (!node.networkConfig) node.networkConfig = networkConfigFor(parent, undefined);
  return node;
}
