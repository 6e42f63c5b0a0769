/** OS Login's on/off rule, apart from the client (compute/os-login.ts) so that the emulator can use it without the client. */

/**
 * Whether OS Login governs an instance, as Compute Engine decides it: the instance's `enable-oslogin` metadata when
 * it holds a boolean, else the project's common instance metadata, else off. Values are read as the guest agent
 * reads them (Go's strconv.ParseBool: 1/t/T/TRUE/true/True and 0/f/F/FALSE/false/False); anything else is unset.
 */
export function osLoginEnabledOn(instanceMetadata: Record<string, string | undefined>, projectMetadata: Record<string, string | undefined>): 'instance' | 'project' | undefined {
  const own = parseBool(instanceMetadata['enable-oslogin']);
  if (own !== undefined) return own ? 'instance' : undefined;
  return parseBool(projectMetadata['enable-oslogin']) ? 'project' : undefined;
}

export function parseBool(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  const s = v.trim();
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(s)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(s)) return false;
  return undefined;
}
