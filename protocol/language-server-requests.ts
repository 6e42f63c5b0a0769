/**
 * Custom requests between the extension and the language server, as typed request objects: both sides import
 * the same object, so the method name, the params and the result are checked on both. Types and request objects
 * only, so the extension host can import this file without bundling any server code: the server keeps the one
 * hydra model, reloaded on config changes, and answers for recipes and for the "Run on TPU with Overrides…" input.
 */
import { NotificationType, RequestType } from 'vscode-languageserver-protocol';

export interface CompleteOverridesParams {
  /** Space-separated overrides, shell-quoted where a value has spaces: `max_steps=50 model=tiny-llama`. */
  line: string;
  /** Offset in `line` of the cursor; the token around it is completed. */
  cursor: number;
}

export interface OverrideLineItem {
  label: string;
  detail?: string;
  /** The whole line with the token completed. */
  line: string;
  /** Where the cursor goes in `line` after choosing the item. */
  cursor: number;
}

export interface OverrideLineProblem {
  /** The token as typed (quotes kept) and its offsets in the line. */
  token: string;
  start: number;
  end: number;
  message: string;
  /** Errors block the run; warnings (e.g. `+key` for an existing key) do not. */
  severity: 'error' | 'warning';
}

export interface CompleteOverridesResult {
  items: OverrideLineItem[];
  problems: OverrideLineProblem[];
  /** The overrides as the trainer receives them, one per argv entry (shell quotes removed). */
  overrides: string[];
  /** False when no trainer config was found: nothing can be checked, only passed on. */
  checked: boolean;
}

/** `tpuWorkbench/completeOverrides`: completion and validation of a line of hydra overrides typed by the user. */
export const CompleteOverridesRequest = new RequestType<CompleteOverridesParams, CompleteOverridesResult, void>('tpuWorkbench/completeOverrides');

/** Which trainer config the server checks recipes and overrides against. */
export interface HydraModelParams {
  /**
   * `workspace`: the workspace's own trainer (its config tree or schema); `shipped`: the workspace has none, so the
   * trainer schema shipped with the extension; `none`: neither was found, nothing is checked.
   */
  source: 'workspace' | 'shipped' | 'none';
  /** From a JSON Schema, inferred from the config YAML alone, or none. */
  origin: 'schema' | 'inferred' | 'none';
  configDirs: string[];
}

/** `tpuWorkbench/hydraModel`: sent by the server after it (re)loads the config, when the answer changed. */
export const HydraModelNotification = new NotificationType<HydraModelParams>('tpuWorkbench/hydraModel');
