#!/usr/bin/env node
// The `tpw` command on node: a thin launcher for the bundled CLI (build it with `npm run build`). bin/tpw runs it,
// or runs dist/tpw-profile for `tpw profile` where that native build exists (not in a .vsix: there `tpw profile`
// runs the same analysis as WebAssembly, dist/profile.wasm, from the small dist/profile-cli.js).
const path = require('node:path');
const fs = require('node:fs');
const bundle = path.join(__dirname, '..', 'dist', 'cli.js');
function full() {
  if (!fs.existsSync(bundle)) {
    process.stderr.write(`tpw: ${bundle} is missing; run \`npm run build\` in ${path.dirname(__dirname)} first.\n`);
    process.exit(1);
  }
  const cli = require(bundle);
  cli.exitQuietlyOnClosedPipe(process.stdout);
  cli.exitQuietlyOnClosedPipe(process.stderr);
  cli
    .main(process.argv.slice(2))
    .then((code) => { process.exitCode = code; });
}
// `tpw profile` has a small bundle of its own: loading the whole CLI costs more than reading most captures.
// It answers undefined for anything it does not take (--help, a bad flag), which the full CLI then handles.
const profile = path.join(__dirname, '..', 'dist', 'profile-cli.js');
if (process.argv[2] === 'profile' && fs.existsSync(profile)) {
  const fast = require(profile);
  fast.exitQuietlyOnClosedPipe(process.stdout);
  fast.exitQuietlyOnClosedPipe(process.stderr);
  fast
    .profileMain(process.argv.slice(3))
    .then((code) => { if (code === undefined) full(); else process.exitCode = code; });
} else {
  full();
}
