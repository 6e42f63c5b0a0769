// Draws media/icon.png (package.json "icon": the Marketplace wants a PNG) from media/icon.svg in headless
// Chromium, so the picture has one source. Run after changing the SVG:
//   node scripts/render-icon.mjs            (TPW_CHROMIUM: the browser, default /usr/bin/chromium)
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const media = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'media');
const svg = readFileSync(path.join(media, 'icon.svg'), 'utf8');
const browser = await chromium.launch({ executablePath: process.env.TPW_CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage({ viewport: { width: 256, height: 256 } });
  await page.setContent(`<html><body style="margin:0;background:transparent">${svg}</body></html>`);
  await page.locator('svg').screenshot({ path: path.join(media, 'icon.png'), omitBackground: true });
} finally {
  await browser.close();
}
