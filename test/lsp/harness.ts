/**
 * Talks to the built language server (dist/language-server.js) as an editor does: a child process over stdio,
 * JSON-RPC from vscode-languageserver-protocol. Documents are written with `|` marking the cursor. The bundle is
 * rebuilt first when any of its sources is newer (see test/helpers/fresh-bundle.ts), so editing
 * language-server/src and running one test file tests the edit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type {
  CodeAction,
  CompletionItem,
  CompletionList,
  Diagnostic,
  Hover,
  InitializeResult,
  Location,
  Position,
  PublishDiagnosticsParams,
} from 'vscode-languageserver-protocol';
import { createProtocolConnection, StreamMessageReader, StreamMessageWriter, type ProtocolConnection } from 'vscode-languageserver-protocol/node';
import { HydraModelNotification, type HydraModelParams } from '../../protocol/language-server-requests';
import { buildAll, ensureFreshBundle, type BundleSpec } from '../helpers/fresh-bundle';

export const bundle = path.join(__dirname, '..', '..', 'dist', 'language-server.js');
export const repoRoot = path.join(__dirname, '..', '..');

/** Our server's bundle: what it is built from, and how. */
export const serverBundle: BundleSpec = { entry: path.join(repoRoot, 'language-server', 'src', 'server.ts'), outfile: bundle, build: buildAll };
let fresh: Promise<void> | undefined;

/** `text` without its `|`, and the position the `|` marked. */
export function marked(text: string, marker = '|'): { text: string; position: Position } {
  const offset = text.indexOf(marker);
  if (offset < 0) throw new Error(`no ${marker} cursor marker in the text`);
  const clean = text.slice(0, offset) + text.slice(offset + marker.length);
  const before = clean.slice(0, offset).split('\n');
  return { text: clean, position: { line: before.length - 1, character: before[before.length - 1].length } };
}

export function labels(items: CompletionItem[]): string[] {
  return items.map((i) => i.label);
}

export class LspClient {
  readonly conn: ProtocolConnection;
  readonly proc: ChildProcess;
  init!: InitializeResult;
  private versions = new Map<string, number>();
  private published = new Map<string, PublishDiagnosticsParams>();
  private waiters: { uri: string; version: number; resolve: (d: Diagnostic[]) => void }[] = [];
  stderr = '';
  readonly errors: string[] = [];
  /** What the server said about the trainer config it checks against (`tpuWorkbench/hydraModel`), in order. */
  readonly hydraModels: HydraModelParams[] = [];
  settings: Record<string, unknown> = {};

  private constructor(argv: string[]) {
    this.proc = spawn(process.execPath, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr!.on('data', (b: Buffer) => (this.stderr += b.toString()));
    this.conn = createProtocolConnection(new StreamMessageReader(this.proc.stdout!), new StreamMessageWriter(this.proc.stdin!));
    this.conn.onNotification('textDocument/publishDiagnostics', (p: PublishDiagnosticsParams) => {
      this.published.set(p.uri, p);
      this.waiters = this.waiters.filter((w) => {
        if (w.uri === p.uri && (p.version === undefined || p.version >= w.version)) {
          w.resolve(p.diagnostics);
          return false;
        }
        return true;
      });
    });
    // Errors the server caught and logged (a feature threw): tests assert there are none.
    this.conn.onNotification('window/logMessage', (p: { type: number; message: string }) => {
      if (p.type === 1) this.errors.push(p.message);
    });
    this.conn.onNotification(HydraModelNotification, (p) => this.hydraModels.push(p));
    this.conn.onRequest('client/registerCapability', () => null);
    // Servers that pull their settings (yaml-language-server does) get them from `settings`, by section.
    this.conn.onRequest('workspace/configuration', (p: { items: { section?: string }[] }) => p.items.map((i) => (i.section ? (this.settings[i.section] ?? null) : null)));
    this.conn.listen();
  }

  /** Starts our server; `argv` starts another (the benchmark's peer, yaml-language-server). */
  /** `initExtra` adds to or replaces fields of the initialize request (rootPath, clientInfo, ...). */
  static async start(root: string | null = repoRoot, initializationOptions?: object, argv = [bundle, '--stdio'], capabilities?: object, initExtra: object = {}): Promise<LspClient> {
    if (argv[0] === bundle) await (fresh ??= ensureFreshBundle(serverBundle));
    const c = new LspClient(argv);
    c.init = (await c.conn.sendRequest('initialize', {
      processId: process.pid,
      rootUri: root ? pathToFileURL(root).toString() : null,
      capabilities: capabilities ?? { workspace: { didChangeWatchedFiles: { dynamicRegistration: true } } },
      initializationOptions,
      ...initExtra,
    })) as InitializeResult;
    await c.conn.sendNotification('initialized', {});
    return c;
  }

  /** Opens `text` with its cursor marker (`|` unless told) removed; returns the marked position. */
  async openMarked(uri: string, text: string, languageId = 'shellscript', marker = '|'): Promise<Position> {
    const m = marked(text, marker);
    await this.open(uri, m.text, languageId);
    return m.position;
  }

  /** Opens (or replaces) a document as written. */
  async open(uri: string, text: string, languageId = 'shellscript'): Promise<void> {
    const m = { text };
    const prev = this.versions.get(uri);
    const version = (prev ?? 0) + 1;
    this.versions.set(uri, version);
    if (prev === undefined) {
      await this.conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId, version, text: m.text } });
    } else {
      await this.conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text: m.text }] });
    }
  }

  /** Applies one incremental edit, as an editor sends while typing. */
  async edit(uri: string, range: { start: Position; end: Position }, text: string): Promise<void> {
    const version = (this.versions.get(uri) ?? 0) + 1;
    this.versions.set(uri, version);
    await this.conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ range, text }] });
  }

  async complete(uri: string, position: Position): Promise<CompletionItem[]> {
    const r = (await this.conn.sendRequest('textDocument/completion', { textDocument: { uri }, position })) as CompletionItem[] | CompletionList | null;
    return Array.isArray(r) ? r : (r?.items ?? []);
  }

  /** Opens `text` with its `|` cursor and completes there. */
  async completeAt(uri: string, text: string, languageId?: string, marker?: string): Promise<CompletionItem[]> {
    return this.complete(uri, await this.openMarked(uri, text, languageId, marker));
  }

  async hover(uri: string, position: Position): Promise<Hover | null> {
    return (await this.conn.sendRequest('textDocument/hover', { textDocument: { uri }, position })) as Hover | null;
  }

  async definition(uri: string, position: Position): Promise<Location | Location[] | null> {
    return (await this.conn.sendRequest('textDocument/definition', { textDocument: { uri }, position })) as Location | Location[] | null;
  }

  async codeActions(uri: string, diagnostics: Diagnostic[]): Promise<CodeAction[]> {
    const range = diagnostics[0]?.range ?? { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } };
    return ((await this.conn.sendRequest('textDocument/codeAction', { textDocument: { uri }, range, context: { diagnostics } })) as CodeAction[] | null) ?? [];
  }

  /** The diagnostics published for the document's current version. */
  diagnostics(uri: string, timeoutMs = 5000): Promise<Diagnostic[]> {
    const version = this.versions.get(uri) ?? 0;
    const p = this.published.get(uri);
    if (p && p.version !== undefined && p.version >= version) return Promise.resolve(p.diagnostics);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no diagnostics for ${uri} v${version} in ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({ uri, version, resolve: (d) => (clearTimeout(timer), resolve(d)) });
    });
  }

  async openAndDiagnose(uri: string, text: string, languageId?: string): Promise<Diagnostic[]> {
    await this.open(uri, text, languageId);
    return this.diagnostics(uri);
  }

  async stop(): Promise<number | null> {
    try {
      await this.conn.sendRequest('shutdown');
      await this.conn.sendNotification('exit');
    } catch {
      // already gone
    }
    const code = await new Promise<number | null>((resolve) => {
      if (this.proc.exitCode !== null) return resolve(this.proc.exitCode);
      const t = setTimeout(() => (this.proc.kill(), resolve(null)), 2000);
      this.proc.once('exit', (c) => (clearTimeout(t), resolve(c)));
    });
    this.conn.dispose();
    return code;
  }
}
