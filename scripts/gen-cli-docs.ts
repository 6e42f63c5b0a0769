// Writes docs/cli.md from the CLI's command table (extension/src/cli/reference.ts): npx tsx scripts/gen-cli-docs.ts
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { cliReference } from '../extension/src/cli/reference';

writeFileSync(path.join(__dirname, '..', 'docs', 'cli.md'), cliReference());
