/**
 * Whether OS Login governs an instance, the way Compute Engine's guest agent decides it: `enable-oslogin` in the
 * instance's metadata wins when it is a boolean; otherwise the project's common instance metadata; otherwise off.
 * The guest agent reads booleans with Go's strconv.ParseBool, so only 1/t/T/TRUE/true/True and
 * 0/f/F/FALSE/false/False count; any other value is as if the key were absent.
 */
export function osLoginGoverns(instanceMetadata: Record<string, string | undefined>, projectMetadata: Record<string, string | undefined>): 'instance' | 'project' | undefined {
  const fromInstance = goBool(instanceMetadata['enable-oslogin']);
  if (fromInstance === false) return undefined;
  if (fromInstance === true) return 'instance';
  return goBool(projectMetadata['enable-oslogin']) === true ? 'project' : undefined;
}

const GO_TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const GO_FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

function goBool(value: string | undefined): boolean | undefined {
  const v = value?.trim();
  if (v === undefined) return undefined;
  return GO_TRUE.has(v) ? true : GO_FALSE.has(v) ? false : undefined;
}
