/**
 * The TPU Workbench language server: connection wiring only. The features (hydra config completion from the
 * trainer's JSON Schema, LIBTPU_INIT_ARGS / XLA_FLAGS flag completion) live as pure functions in service/.
 */
import { createConnection, ProposedFeatures, TextDocuments, TextDocumentSyncKind } from 'vscode-languageserver/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { completeFlags } from './service/flag-completion';

const connection = createConnection(ProposedFeatures.all);
const documents = new TextDocuments(TextDocument);

connection.onInitialize(() => ({
  capabilities: {
    textDocumentSync: TextDocumentSyncKind.Incremental,
    completionProvider: { triggerCharacters: ['-', '_'] },
  },
  serverInfo: { name: 'tpu-workbench-language-server', version: '0.1.0' },
}));

connection.onCompletion((params) => {
  const doc = documents.get(params.textDocument.uri);
  return doc ? completeFlags(doc, params.position) : [];
});

documents.listen(connection);
connection.listen();
