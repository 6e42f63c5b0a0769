import * as path from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient, TransportKind, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';
import { CompleteOverridesRequest, HydraModelNotification, type CompleteOverridesParams, type CompleteOverridesResult, type HydraModelParams } from '../../../protocol/language-server-requests';

/** What the rest of the extension asks the language server, besides what VS Code asks for documents. */
export interface LanguageService extends vscode.Disposable {
  /** Completion and validation of a typed line of hydra overrides; undefined when the server is not running. */
  completeOverrides(params: CompleteOverridesParams): Promise<CompleteOverridesResult | undefined>;
}

/**
 * Starts the TPU Workbench language server (dist/language-server.js, bundled next to the extension) for
 * recipes, hydra config YAML, task YAML, .env files and workspace settings. The server does the work; this only
 * says which documents it sees and forwards config file changes so it can reload the config tree.
 */
export function startLanguageClient(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): LanguageService {
  const module = path.join(context.extensionPath, 'dist', 'language-server.js');
  const settings = vscode.workspace.getConfiguration('tpuWorkbench.languageServer');
  const serverOptions: ServerOptions = {
    run: { module, transport: TransportKind.ipc },
    debug: { module, transport: TransportKind.ipc, options: { execArgv: ['--nolazy', '--inspect=6019'] } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'shellscript', pattern: '**/recipes/**' },
      { scheme: 'file', language: 'shellscript', pattern: '**/*.env' },
      { scheme: 'file', language: 'yaml', pattern: '**/configs/**' },
      // Task YAML (SkyPilot-style `envs:` / `run:`), usually next to the shell recipes.
      { scheme: 'file', language: 'yaml', pattern: '**/recipes/**' },
      // Task YAML anywhere else (the server acts only on a YAML whose top level has resources/run/setup/…).
      { scheme: 'file', language: 'yaml' },
      { scheme: 'file', pattern: '**/.env' },
      { scheme: 'file', language: 'dotenv' },
      { scheme: 'file', language: 'jsonc', pattern: '**/.vscode/settings.json' },
    ],
    synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher('**/{*.yaml,*.yml,*.schema.json}') },
    // Where the trainer's config tree and schema are, when not in the default places.
    initializationOptions: {
      configDirs: settings.get<string[]>('configDirs', []),
      schemaFile: settings.get<string>('schemaFile', '') || undefined,
    },
    outputChannelName: 'TPU Workbench Language Server',
  };
  const client = new LanguageClient('tpuWorkbench.languageServer', 'TPU Workbench Language Server', serverOptions, clientOptions);
  const status = new HydraModelStatus();
  client.onNotification(HydraModelNotification, (p) => status.show(p));
  // A server that fails to start must not break the rest of the extension: log it and carry on.
  const started = client.start().then(
    () => true,
    (e: unknown) => {
      log.error(`language server did not start: ${e instanceof Error ? e.message : String(e)}`);
      return false;
    },
  );
  return {
    dispose: () => {
      status.dispose();
      void client.stop().catch(() => undefined);
    },
    // Waits for a server still starting (the input may open right after activation); a failed one answers undefined.
    completeOverrides: async (params) => {
      if (!(await started) || !client.isRunning()) return undefined;
      try {
        return await client.sendRequest(CompleteOverridesRequest, params);
      } catch (e) {
        log.warn(`override completion failed: ${e instanceof Error ? e.message : String(e)}`);
        return undefined;
      }
    },
  };
}

/** The documents whose checks depend on the trainer's config. */
const HYDRA_DOCUMENTS: vscode.DocumentSelector = [
  { scheme: 'file', language: 'shellscript', pattern: '**/recipes/**' },
  { scheme: 'file', language: 'yaml', pattern: '**/configs/**' },
];

/**
 * Which trainer config recipes are checked against, in the language status of recipes and config files (like a
 * language's interpreter or version): the workspace's own, or, when it has none, the schema shipped with the
 * extension — said once in the status bar the first time a recipe is open, with where to point it instead.
 */
class HydraModelStatus implements vscode.Disposable {
  private readonly item = vscode.languages.createLanguageStatusItem('tpuWorkbench.hydraModel', HYDRA_DOCUMENTS);
  private told = false;
  private params: HydraModelParams | undefined;
  private readonly editors = vscode.window.onDidChangeActiveTextEditor(() => this.tellOnce());

  constructor() {
    this.item.name = 'TPU Workbench: trainer config';
    this.item.text = 'Hydra: …';
  }

  show(p: HydraModelParams): void {
    this.params = p;
    const point = { title: 'Point to your trainer', command: 'workbench.action.openSettings', arguments: ['tpuWorkbench.languageServer'] };
    if (p.source === 'workspace') {
      this.item.text = `Hydra: ${p.origin === 'schema' ? 'trainer schema' : 'config YAML'}`;
      this.item.detail = `this workspace's trainer (${p.configDirs.join(', ') || 'its schema'})`;
      this.item.severity = vscode.LanguageStatusSeverity.Information;
      this.item.command = undefined;
    } else if (p.source === 'shipped') {
      this.item.text = 'Hydra: shipped schema';
      this.item.detail = 'no trainer/ in this workspace: overrides are checked against the trainer TPU Workbench ships';
      this.item.severity = vscode.LanguageStatusSeverity.Information;
      this.item.command = point;
    } else {
      this.item.text = 'Hydra: not checked';
      this.item.detail = 'no trainer config found';
      this.item.severity = vscode.LanguageStatusSeverity.Warning;
      this.item.command = point;
    }
    this.tellOnce();
  }

  /** The first time a recipe is in front while the shipped schema stands in: one status bar message. */
  private tellOnce(): void {
    const doc = vscode.window.activeTextEditor?.document;
    if (this.told || this.params?.source !== 'shipped' || !doc || vscode.languages.match(HYDRA_DOCUMENTS, doc) === 0) return;
    this.told = true;
    vscode.window.setStatusBarMessage('$(info) TPU: no trainer/ in this workspace — recipes are checked against the shipped trainer schema (setting tpuWorkbench.languageServer.schemaFile points to yours)', 15_000);
  }

  dispose(): void {
    this.item.dispose();
    this.editors.dispose();
  }
}
