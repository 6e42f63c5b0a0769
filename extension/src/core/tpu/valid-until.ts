import { TpwError } from '../errors';

/**
 * A queued resource's "valid until": a duration from now ("6h", "1d12h", "90m", "3600s") or an RFC 3339
 * time ("2030-01-01T00:00:00Z"). Returns the RFC 3339 time (UTC) the API's queueingPolicy.validUntilTime takes.
 */
export function parseValidUntil(text: string, now: Date = new Date()): string {
  const t = text.trim();
  const ms = parseDurationMs(t);
  if (ms !== undefined) {
    if (ms <= 0) throw new TpwError('INVALID_ARGUMENT', `Valid-until duration "${text}" must be longer than zero.`);
    return new Date(now.getTime() + ms).toISOString();
  }
  // Times must say their time zone: a bare "2030-01-01T00:00" would mean different instants on different machines.
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(t)) {
    const at = Date.parse(t);
    if (!Number.isNaN(at)) {
      if (at <= now.getTime()) throw new TpwError('INVALID_ARGUMENT', `Valid-until time "${text}" is in the past.`);
      return new Date(at).toISOString();
    }
  }
  throw new TpwError(
    'INVALID_ARGUMENT',
    `Invalid valid-until "${text}": give a duration such as 6h, 1d or 90m, or a time such as 2030-01-01T00:00:00Z.`,
  );
}

/** "1d12h30m15s" → milliseconds; undefined when `text` is not a duration. */
export function parseDurationMs(text: string): number | undefined {
  const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text);
  if (!m || text === '') return undefined;
  const [d, h, min, s] = m.slice(1).map((x) => Number(x ?? 0));
  return (((d * 24 + h) * 60 + min) * 60 + s) * 1000;
}
