/**
 * What the .vsix users install holds (the one `npm run package` makes, test/helpers/packaged.ts): the icon the
 * Marketplace and the Extensions view show, the walkthrough's pictures, the sample recipe "Get the Sample Recipe"
 * copies, the trainer schema the language server falls back to, and the emulator; nothing of the development
 * tree besides.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { packagedExtension } from '../helpers/packaged';

interface Manifest {
  icon?: string;
  contributes: { walkthroughs: { steps: { id: string; media: { svg?: string; image?: string; markdown?: string; altText?: string } }[] }[] };
}

const { root } = packagedExtension();
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as Manifest;

test('the icon is a PNG of at least 128×128 (what the Marketplace takes)', () => {
  assert.equal(manifest.icon, 'media/icon.png');
  const png = fs.readFileSync(path.join(root, manifest.icon));
  assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  assert.ok(width >= 128 && width === height, `${width}×${height}`);
});

test('every walkthrough step shows a picture with a description, and the package has it', () => {
  for (const s of manifest.contributes.walkthroughs[0].steps) {
    assert.equal(s.media.markdown, undefined, `${s.id}: a picture, not a page of text`);
    const file = s.media.svg ?? s.media.image;
    assert.ok(file && fs.existsSync(path.join(root, file)), `${s.id}: ${file} is in the package`);
    assert.match(fs.readFileSync(path.join(root, file), 'utf8').slice(0, 200), /^<svg /, `${s.id}: an SVG`);
    assert.ok((s.media.altText ?? '').length > 20, `${s.id}: described for screen readers`);
  }
});

test('the sample recipe, the shipped trainer schema and the emulator are in it; the sources are not', () => {
  for (const f of ['recipes/tiny-llama.sh', 'trainer/config.schema.json', 'trainer/tpu_trainer/configs/default.yaml', 'dist/emulator.js', 'dist/cli.js', 'dist/language-server.js']) {
    assert.ok(fs.existsSync(path.join(root, f)), f);
  }
  for (const f of ['extension', 'test', 'webview', 'node_modules', 'trainer/tpu_trainer/train.py']) assert.ok(!fs.existsSync(path.join(root, f)), `${f} is not packaged`);
});
