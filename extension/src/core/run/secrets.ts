import { isEnvName } from '../ssh/quote';

/**
 * Environment a run inherits from where it was started, like torchprime's `tp run`: tokens (secrets) and the
 * XLA/libtpu debug knobs people set in their shell. Values travel only inside the 0600 env file, written from
 * the SSH channel's stdin: never in argv (so never in `ps` on either side), never in a log, the run registry
 * or settings. In VS Code the secrets come from SecretStorage; in the CLI from the environment.
 */

/** Values that are secret: never shown, never stored by us except in the worker's 0600 env file. */
export const SECRET_NAMES = ['HF_TOKEN', 'WANDB_API_KEY'] as const;

/** Passed through when set, secrets included. */
export const PASSTHROUGH_NAMES = ['HF_TOKEN', 'WANDB_API_KEY', 'XLA_IR_DEBUG', 'XLA_HLO_DEBUG', 'LIBTPU_INIT_ARGS'] as const;

/** The passthrough variables that are set (non-empty) in `source`. */
export function passthroughEnv(source: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of PASSTHROUGH_NAMES) {
    const v = source[k];
    if (typeof v === 'string' && v.length > 0 && isEnvName(k)) out[k] = v;
  }
  return out;
}

/** Replaces every occurrence of a secret value in `text` (for anything we print that might echo one back). */
export function redact(text: string, secrets: Readonly<Record<string, string>>): string {
  let out = text;
  for (const [k, v] of Object.entries(secrets)) {
    if (v.length >= 4) out = out.split(v).join(`<${k}>`);
  }
  return out;
}
