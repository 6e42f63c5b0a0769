import { acceleratorByConfig, acceleratorInfo, ACCELERATOR_TYPES, type AcceleratorInfo } from './catalog';
import { ApiError, type AcceleratorConfigJson, type CreateNodeInput, type NetworkConfigJson, type NodeJson } from './types';

/**
 * The node fields a real TPU VM reports beside acceleratorType and networkEndpoints: acceleratorConfig (what
 * gcloud shows as TYPE and TOPOLOGY) and networkConfig (NETWORK). Derived here so that a node created
 * now and one loaded from an older state file carry the same fields; and the reverse, a request's
 * acceleratorConfig resolved to the accelerator type it names.
 */

/** google.cloud.tpu.v2.AcceleratorConfig.Type values, for `enum-encoding=int`. */
export const ACCEL_CONFIG_TYPE: Record<string, number> = { TYPE_UNSPECIFIED: 0, V2: 2, V3: 4, V4: 7, V5LITE_POD: 9, V5P: 10, V6E: 11 };

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

/** A Node names its slice by acceleratorType or by acceleratorConfig (generation + topology); both must agree. */
export function acceleratorTypeOf(body: Record<string, unknown>): string | undefined {
  const type = typeof body.acceleratorType === 'string' && body.acceleratorType ? body.acceleratorType : undefined;
  const cfg = body.acceleratorConfig as { type?: unknown; topology?: unknown } | undefined;
  if (!cfg || typeof cfg !== 'object') return type;
  const gen = typeof cfg.type === 'number' ? Object.keys(ACCEL_CONFIG_TYPE).find((k) => ACCEL_CONFIG_TYPE[k] === cfg.type) : cfg.type;
  const accel = acceleratorByConfig(String(gen), String(cfg.topology));
  if (!accel) {
    const known = ACCELERATOR_TYPES.map((a) => `${a.generation} ${a.topology}`).join(', ');
    throw new ApiError('INVALID_ARGUMENT', `Invalid acceleratorConfig: type ${String(gen)} with topology "${String(cfg.topology)}" is not offered. Offered: ${known}.`);
  }
  if (type && type !== accel.type) {
    throw new ApiError('INVALID_ARGUMENT', `acceleratorType "${type}" and acceleratorConfig (${accel.generation} ${accel.topology}, that is ${accel.type}) disagree; set one of them.`);
  }
  return accel.type;
}
