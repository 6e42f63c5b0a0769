import { TpwError } from '../errors';
import {
  resolveSliceShape as resolveShape,
  shapeFromTopology as shapeOfTopology,
  TpuShapeError,
  type TpuSliceShape,
} from '../../../../protocol/tpu-machine-types';

/**
 * Compute Engine's TPU machine types and slice shapes (the facts live in protocol/tpu-machine-types.ts, which
 * the emulator serves too); here the shape errors become the product's TpwError, so callers branch on its code.
 */
export {
  familyInfo,
  listSliceShapes,
  machineTypeInfo,
  parseAcceleratorType,
  TPU_FAMILIES,
  TPU_MACHINE_TYPES,
  type TpuFamily,
  type TpuFamilyInfo,
  type TpuMachineType,
  type TpuSliceShape,
} from '../../../../protocol/tpu-machine-types';

/** The slice an accelerator type (and optionally a topology) describes; INVALID_ARGUMENT naming what is wrong. */
export function resolveSliceShape(acceleratorType: string, topology?: string): TpuSliceShape {
  return asTpwError(() => resolveShape(acceleratorType, topology));
}

/** The slice of `family` with `topology` (e.g. tpu7x, 2x2x2 → tpu7x-16, 2 VMs). */
export function shapeFromTopology(family: string, topology: string): TpuSliceShape {
  return asTpwError(() => shapeOfTopology(family, topology));
}

function asTpwError<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof TpuShapeError) throw new TpwError('INVALID_ARGUMENT', e.message);
    throw e;
  }
}
