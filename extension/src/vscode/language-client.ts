import * as path from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient, TransportKind, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';
import { CompleteOverridesRequest, type CompleteOverridesParams, type CompleteOverridesResult } from '../../../protocol/language-server-requests';

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
  // A server that fails to start must not break the rest of the extension: log it and carry on.
  const started = client.start().then(
    () => true,
    (e: unknown) => {
      log.error(`language server did not start: ${e instanceof Error ? e.message : String(e)}`);
      return false;
    },
  );
  return {
    dispose: () => void client.stop().catch(() => undefined),
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
