import type { Json } from './compute-state';
import { ApiError } from './types';

/**
 * How Compute Engine answers its list calls: `filter` (its expression language: `field = value`, `!=`, `<`,
 * `>`, `:` (has; `:*` for "is set"), the legacy `field eq|ne RE2` that gcloud sends for `--filter=name=x`, with
 * `AND` / `OR` / `NOT` and parentheses, adjacent terms ANDed), `maxResults` / `pageToken` paging, and the
 * `aggregated/…` form that gcloud and the client libraries use for every list without a zone: `items` keyed by
 * scope (`zones/z`, `regions/r`, `global`), each scope with its resources or a NO_RESULTS_ON_PAGE warning.
 */

const BASE = 'https://compute.googleapis.com/compute/v1';

type Pred = (item: Json) => boolean;

interface Tok {
  t: 'word' | 'str' | 'op' | '(' | ')';
  v: string;
}

function tokenize(expr: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && /[A-Za-z(]/.test(expr[i + 1] ?? '') && out[out.length - 1]?.t !== 'op') {
      // `-labels.x:*`: NOT.
      out.push({ t: 'word', v: '-' });
      i++;
    } else if (c === '(' || c === ')') {
      out.push({ t: c, v: c });
      i++;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      let v = '';
      while (j < expr.length && expr[j] !== c) {
        if (expr[j] === '\\' && j + 1 < expr.length) {
          // Inside a quoted RE2 value a backslash escapes for the regex, not for the string: keep it.
          v += expr[j] + expr[j + 1];
          j += 2;
        } else v += expr[j++];
      }
      if (j >= expr.length) throw invalid(expr, 'an unclosed quote');
      out.push({ t: 'str', v });
      i = j + 1;
    } else {
      const op = /^(!=|>=|<=|=|<|>|:)/.exec(expr.slice(i));
      if (op) {
        out.push({ t: 'op', v: op[1] });
        i += op[1].length;
      } else {
        const m = /^[^\s()=!<>:"']+/.exec(expr.slice(i));
        if (!m) throw invalid(expr, `"${c}"`);
        out.push({ t: 'word', v: m[0] });
        i += m[0].length;
      }
    }
  }
  return out;
}

function invalid(expr: string, what: string): ApiError {
  return new ApiError('INVALID_ARGUMENT', `Invalid value for field 'filter': '${expr}'. Invalid list filter expression (${what}).`, { reason: 'invalid' });
}

/** The value at a dotted path (`labels.team`, `scheduling.provisioningModel`), or undefined. */
function valueAt(item: Json, path: string): unknown {
  let at: unknown = item;
  for (const p of path.split('.')) at = at !== null && typeof at === 'object' ? (at as Json)[p] : undefined;
  return at;
}

const text = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '');

/** A `*` in a `=` or `:` value matches any run of characters, as Compute's filter has it. */
function globMatch(value: string, pattern: string): boolean {
  if (!pattern.includes('*')) return value === pattern;
  const re = pattern.split('*').map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`^${re}$`, 's').test(value);
}

function comparison(field: string, op: string, raw: string, expr: string): Pred {
  if (op === 'eq' || op === 'ne') {
    let re: RegExp;
    try {
      // RE2, matched against the whole value.
      re = new RegExp(`^(?:${raw})$`, 's');
    } catch {
      throw invalid(expr, `the regular expression ${raw}`);
    }
    return (item) => {
      const hit = re.test(text(valueAt(item, field)));
      return op === 'eq' ? hit : !hit;
    };
  }
  return (item) => {
    const v = valueAt(item, field);
    if (op === ':') {
      if (raw === '*') return v !== undefined && v !== null && v !== '';
      return Array.isArray(v) ? v.some((x) => globMatch(text(x), raw)) : globMatch(text(v), raw);
    }
    if (op === '=') return globMatch(text(v), raw);
    if (op === '!=') return !globMatch(text(v), raw);
    const [a, b] = [Number(text(v)), Number(raw)];
    const [x, y]: [number | string, number | string] = Number.isFinite(a) && Number.isFinite(b) && text(v) !== '' ? [a, b] : [text(v), raw];
    return op === '<' ? x < y : op === '>' ? x > y : op === '<=' ? x <= y : x >= y;
  };
}

/** Compute Engine's list filter as a predicate; the empty filter keeps everything. */
export function computeFilter(expr: string): Pred {
  const toks = tokenize(expr);
  if (toks.length === 0) return () => true;
  let p = 0;
  const isWord = (w: string) => toks[p]?.t === 'word' && toks[p].v.toUpperCase() === w;
  const orExpr = (): Pred => {
    const parts = [andExpr()];
    while (isWord('OR')) {
      p++;
      parts.push(andExpr());
    }
    return parts.length === 1 ? parts[0] : (item) => parts.some((f) => f(item));
  };
  const andExpr = (): Pred => {
    const parts = [notExpr()];
    for (;;) {
      if (isWord('AND')) p++;
      else if (!toks[p] || toks[p].t === ')' || isWord('OR')) break;
      parts.push(notExpr());
    }
    return parts.length === 1 ? parts[0] : (item) => parts.every((f) => f(item));
  };
  const notExpr = (): Pred => {
    if (isWord('NOT') || (toks[p]?.t === 'word' && toks[p].v === '-')) {
      p++;
      const inner = notExpr();
      return (item) => !inner(item);
    }
    return primary();
  };
  const primary = (): Pred => {
    const t = toks[p];
    if (!t) throw invalid(expr, 'it ends early');
    if (t.t === '(') {
      p++;
      const inner = orExpr();
      if (toks[p]?.t !== ')') throw invalid(expr, 'an unclosed parenthesis');
      p++;
      return inner;
    }
    if (t.t !== 'word') throw invalid(expr, `"${t.v}" where a field name belongs`);
    const field = t.v;
    p++;
    const o = toks[p];
    let op: string;
    if (o?.t === 'op') op = o.v;
    else if (o?.t === 'word' && (o.v === 'eq' || o.v === 'ne')) op = o.v;
    else throw invalid(expr, `no comparison after ${field}`);
    p++;
    const value = toks[p];
    if (!value || (value.t !== 'word' && value.t !== 'str')) throw invalid(expr, `no value after ${field} ${op}`);
    p++;
    return comparison(field, op, value.v, expr);
  };
  const pred = orExpr();
  if (p < toks.length) throw invalid(expr, `"${toks[p].v}" after the end`);
  return pred;
}

function pageBounds(total: number, q: URLSearchParams): [number, number] {
  const size = Number(q.get('maxResults') ?? '500');
  if (!Number.isInteger(size) || size < 0) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'maxResults': '${q.get('maxResults')}'.`, { reason: 'invalid' });
  const token = q.get('pageToken') ?? '';
  const start = token ? Number(Buffer.from(token, 'base64url').toString('utf8')) : 0;
  if (!Number.isInteger(start) || start < 0) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'pageToken': '${token}'.`, { reason: 'invalid' });
  return [start, size > 0 ? Math.min(start + size, total) : total];
}

const nextToken = (end: number, total: number) => (end < total ? { nextPageToken: Buffer.from(String(end), 'utf8').toString('base64url') } : {});

/** A list answer: the filter applied, then maxResults/pageToken; `items` (or `key`) and nextPageToken out. */
export function page(items: Json[], q: URLSearchParams, kind: string | undefined, key = 'items'): Json {
  const kept = items.filter(computeFilter(q.get('filter') ?? ''));
  const [start, end] = pageBounds(kept.length, q);
  return { ...(kind ? { kind } : {}), [key]: kept.slice(start, end), ...nextToken(end, kept.length) };
}

/**
 * An aggregated list: every scope's resources filtered, paged over all of them in scope order, and answered as
 * `items: { scope: { [key]: [...] } }`; a scope with none on the page gets Compute's NO_RESULTS_ON_PAGE warning.
 */
export function aggregatedPage(scopes: { scope: string; items: Json[] }[], key: string, q: URLSearchParams, kind: string, selfLink: string): Json {
  const keep = computeFilter(q.get('filter') ?? '');
  const flat = scopes.flatMap((s) => s.items.filter(keep).map((item) => ({ scope: s.scope, item })));
  const [start, end] = pageBounds(flat.length, q);
  const onPage = flat.slice(start, end);
  const items: Json = {};
  for (const { scope } of scopes) {
    const mine = onPage.filter((x) => x.scope === scope).map((x) => x.item);
    items[scope] = mine.length
      ? { [key]: mine }
      : { warning: { code: 'NO_RESULTS_ON_PAGE', message: `There are no results for scope '${scope}' on this page.`, data: [{ key: 'scope', value: scope }] } };
  }
  return { kind, id: selfLink, items, selfLink, ...nextToken(end, flat.length), unreachables: [] };
}

/**
 * A link as Compute Engine keeps it: full, on its own host, whatever form the client sent (`global/networks/x`,
 * `projects/p/…`, or a URL on another endpoint, as gcloud builds them from its endpoint override).
 */
export function canonicalLink(project: string, link: unknown): unknown {
  if (typeof link !== 'string' || link === '') return link;
  const full = /^(?:https?:\/\/[^/]+)?\/?(?:compute\/(?:v1|beta|alpha)\/)?(projects\/.+)$/.exec(link);
  if (full) return `${BASE}/${full[1]}`;
  if (/^(global|regions|zones)\//.test(link)) return `${BASE}/projects/${project}/${link}`;
  return link;
}
