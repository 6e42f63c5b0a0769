/**
 * The TPU Workbench language server: connection wiring only. The features live as pure functions in service/:
 * flags.ts (LIBTPU_INIT_ARGS / XLA_FLAGS), recipe-env.ts (the TORCH_TPU_* variables a recipe may export), overrides.ts (hydra overrides after the trainer command) and
 * hydra-yaml.ts (the config tree's YAML files), task-yaml.ts (SkyPilot task YAML); hydra/model.ts loads the trainer's schema and config tree.
 */
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  CodeActionKind,
  createConnection,
  DidChangeWatchedFilesNotification,
  ProposedFeatures,
  TextDocuments,
  TextDocumentSyncKind,
  type CompletionList,
  type Diagnostic,
} from 'vscode-languageserver/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { emptyModel, findConfigRoot, loadHydraModel, type HydraLocations, type HydraModel } from './hydra/model';
import { flagCompletion, flagDiagnostics, flagHover, quickFixes } from './service/flags';
import { configCompletion, configDefinition, configDiagnostics, configHover } from './service/hydra-yaml';
import { completeOverrideLine } from './service/override-line';
import { overrideCompletion, overrideDefinition, overrideDiagnostics, overrideHover } from './service/overrides';
import { recipeEnvCompletion, recipeEnvDiagnostics, recipeEnvHover } from './service/recipe-env';
import { taskCompletion, taskDiagnostics, taskHover } from './service/task-yaml';
import { CompleteOverridesRequest, HydraModelNotification, type HydraModelParams } from '../../protocol/language-server-requests';

const connection = createConnection(ProposedFeatures.all);
const documents = new TextDocuments(TextDocument);
let model: HydraModel = emptyModel();
let locations: HydraLocations | undefined;
let watchDynamically = false;
/** Whether completion items may carry `editor.action.triggerSuggest` (a VS Code command other clients lack). */
let suggestCommand = false;

interface InitOptions {
  schemaFile?: string;
  configDirs?: string[];
  /** The client runs `editor.action.triggerSuggest` from completion items; VS Code-based clients do unasked. */
  triggerSuggestCommand?: boolean;
}

/**
 * Without a workspace root (Neovim, Helix and others often send none): one model per config root found from
 * each document's folder upward, else the trainer schema next to the server (the extension's own copy).
 */
const rootless = new Map<string, HydraModel>();
const rootOfDir = new Map<string, string>();
const SHIPPED_ROOT = path.join(__dirname, '..');

/**
 * The workspace's model, or the shipped one when the workspace has no trainer config of its own (a new project
 * with only recipes): its overrides are still checked, against the trainer the extension ships.
 */
function workspaceModel(): HydraModel {
  return locations && model.origin !== 'none' ? model : shippedModel();
}

function modelFor(uri: string | undefined): HydraModel {
  if (locations || !uri?.startsWith('file:')) return workspaceModel();
  const dir = path.dirname(fileURLToPath(uri));
  let root = rootOfDir.get(dir);
  if (root === undefined) {
    root = findConfigRoot(dir) ?? SHIPPED_ROOT;
    rootOfDir.set(dir, root);
  }
  let m = rootless.get(root);
  if (!m) {
    const r = root;
    m = safely('loading the hydra config', emptyModel(), () => loadHydraModel({ root: r }));
    rootless.set(root, m);
    connection.console.info(`hydra config for ${dir} (no workspace root): ${m.origin}, from ${root}`);
  }
  return m;
}

function shippedModel(): HydraModel {
  let m = rootless.get(SHIPPED_ROOT);
  if (!m) {
    m = safely('loading the shipped schema', emptyModel(), () => loadHydraModel({ root: SHIPPED_ROOT }));
    rootless.set(SHIPPED_ROOT, m);
  }
  return m;
}

/** Completion items without the VS Code-only command, for clients that did not say they run it. */
function forClient(list: CompletionList | null): CompletionList | null {
  if (!list || suggestCommand) return list;
  // Set to undefined rather than deleted: JSON leaves it out either way, and objects keep their shape (fast).
  for (const it of list.items) if (it.command?.command === 'editor.action.triggerSuggest') it.command = undefined;
  return list;
}

/** A feature must never take the server down: a bug answers "nothing here" and is logged. */
function safely<T>(what: string, fallback: T, f: () => T): T {
  try {
    return f();
  } catch (e) {
    connection.console.error(`${what}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return fallback;
  }
}

function reloadModel(): void {
  // Rootless models load again on next use.
  rootless.clear();
  rootOfDir.clear();
  if (!locations) return;
  model = safely('loading the hydra config', emptyModel(), () => loadHydraModel(locations!));
  connection.console.info(`hydra config: ${model.origin}, ${model.groups.size} groups, dirs ${model.configDirs.join(', ') || '(none)'}`);
  announceModel();
}

let announced = '';
/** Notifications wait for the client's `initialized` (the first load happens while initializing). */
let clientReady = false;

/** Tells the client which trainer config the checks use (it says so in the status bar), when that changes. */
function announceModel(): void {
  if (!clientReady || !locations) return;
  const shipped = model.origin === 'none';
  const m = shipped ? shippedModel() : model;
  const params: HydraModelParams = {
    source: shipped ? (m.origin === 'none' ? 'none' : 'shipped') : 'workspace',
    origin: m.origin,
    configDirs: m.configDirs,
  };
  const key = JSON.stringify(params);
  if (key === announced) return;
  announced = key;
  void connection.sendNotification(HydraModelNotification, params);
}

connection.onInitialize((params) => {
  const rootUri = params.workspaceFolders?.[0]?.uri ?? params.rootUri ?? (params.rootPath ? pathToFileURL(params.rootPath).toString() : undefined);
  const opts = (params.initializationOptions ?? {}) as InitOptions;
  if (rootUri?.startsWith('file:')) {
    locations = { root: fileURLToPath(rootUri), schemaFile: opts.schemaFile, configDirs: opts.configDirs };
    reloadModel();
  }
  // No LSP capability says "runs this editor command": an explicit option wins, else VS Code and its forks.
  suggestCommand = opts.triggerSuggestCommand ?? /visual studio code|code - oss|code-server|vscodium|cursor/i.test(params.clientInfo?.name ?? '');
  watchDynamically = params.capabilities.workspace?.didChangeWatchedFiles?.dynamicRegistration === true;
  return {
    capabilities: {
      textDocumentSync: TextDocumentSyncKind.Incremental,
      completionProvider: { triggerCharacters: ['-', '=', '.', '/', ' ', ':'] },
      hoverProvider: true,
      definitionProvider: true,
      codeActionProvider: { codeActionKinds: [CodeActionKind.QuickFix] },
    },
    serverInfo: { name: 'tpu-workbench-language-server', version: '0.1.0' },
  };
});

connection.onInitialized(() => {
  clientReady = true;
  announceModel();
  // Editors that let us register watchers get told about config edits made outside the editor, too.
  if (watchDynamically) {
    void connection.client.register(DidChangeWatchedFilesNotification.type, {
      watchers: [{ globPattern: '**/*.{yaml,yml}' }, { globPattern: '**/config.schema.json' }],
    });
  }
});

function isConfigFile(file: string): boolean {
  return file.endsWith('.schema.json') || model.configDirs.some((d) => !path.relative(d, file).startsWith('..'));
}

connection.onDidChangeWatchedFiles((params) => {
  const relevant = params.changes.some((c) => c.uri.startsWith('file:') && isConfigFile(fileURLToPath(c.uri)));
  // A new option file may appear in a folder we do not know yet: reload on any YAML change when unsure.
  if (relevant || model.configDirs.length === 0) {
    reloadModel();
    for (const d of documents.all()) scheduleValidation(d);
  }
});

connection.onCompletion((params): CompletionList | null =>
  safely('completion', null, () => {
    const doc = documents.get(params.textDocument.uri);
    if (!doc) return null;
    const m = modelFor(doc.uri);
    return forClient(flagCompletion(doc, params.position) ?? recipeEnvCompletion(doc, params.position) ?? overrideCompletion(m, doc, params.position) ?? configCompletion(m, doc, params.position) ?? taskCompletion(doc, params.position));
  }),
);

// The "Run on TPU with Overrides…" input: the same checks as overrides in a recipe, against the same model.
connection.onRequest(CompleteOverridesRequest, (params) =>
  safely('override line', { items: [], problems: [], overrides: params.line.split(/\s+/).filter(Boolean), checked: false }, () =>
    completeOverrideLine(workspaceModel(), params.line, params.cursor),
  ),
);

connection.onHover((params) =>
  safely('hover', null, () => {
    const doc = documents.get(params.textDocument.uri);
    if (!doc) return null;
    const m = modelFor(doc.uri);
    return flagHover(doc, params.position) ?? recipeEnvHover(doc, params.position) ?? overrideHover(m, doc, params.position) ?? configHover(m, doc, params.position) ?? taskHover(doc, params.position);
  }),
);

connection.onDefinition((params) =>
  safely('definition', null, () => {
    const doc = documents.get(params.textDocument.uri);
    if (!doc) return null;
    const m = modelFor(doc.uri);
    return overrideDefinition(m, doc, params.position) ?? configDefinition(m, doc, params.position);
  }),
);

connection.onCodeAction((params) =>
  safely('code action', [], () => {
    const doc = documents.get(params.textDocument.uri);
    return doc ? quickFixes(doc, params.context.diagnostics) : [];
  }),
);

export function validate(doc: TextDocument): Diagnostic[] {
  const model = modelFor(doc.uri);
  return [
    ...safely('flag diagnostics', [], () => flagDiagnostics(doc)),
    ...safely('recipe variable diagnostics', [], () => recipeEnvDiagnostics(doc)),
    ...safely('override diagnostics', [], () => overrideDiagnostics(model, doc)),
    ...safely('config diagnostics', [], () => configDiagnostics(model, doc)),
    ...safely('task YAML diagnostics', [], () => taskDiagnostics(doc)),
  ];
}

// Several edits in one burst (a paste, a multi-cursor edit) give one validation, of the latest version.
const pending = new Map<string, NodeJS.Immediate>();
function scheduleValidation(doc: TextDocument): void {
  const prev = pending.get(doc.uri);
  if (prev) clearImmediate(prev);
  pending.set(
    doc.uri,
    setImmediate(() => {
      pending.delete(doc.uri);
      const cur = documents.get(doc.uri);
      if (cur) void connection.sendDiagnostics({ uri: cur.uri, version: cur.version, diagnostics: validate(cur) });
    }),
  );
}

documents.onDidChangeContent((e) => scheduleValidation(e.document));
documents.onDidSave((e) => {
  if (e.document.uri.startsWith('file:') && isConfigFile(fileURLToPath(e.document.uri))) {
    reloadModel();
    for (const d of documents.all()) scheduleValidation(d);
  }
});
documents.onDidClose((e) => void connection.sendDiagnostics({ uri: e.document.uri, diagnostics: [] }));

documents.listen(connection);
connection.listen();
