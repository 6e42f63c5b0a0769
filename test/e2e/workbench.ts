import { chromium, type Browser, type Locator, type Page } from 'playwright-core';

/**
 * Drives the VS Code workbench in headless Chromium through what a user sees: activity bar, tree
 * rows, the command palette, notifications and the Output panel. Selectors are VS Code's own DOM
 * classes as of 1.100.
 */
export const CHROMIUM = process.env.TPW_CHROMIUM ?? '/usr/bin/chromium';

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: process.env.TPW_E2E_HEADED !== '1',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
  });
}

export class Workbench {
  constructor(readonly page: Page) {}

  static async open(browser: Browser, url: string, folder: string): Promise<Workbench> {
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.monaco-workbench', { timeout: 90_000 });
    // The activity bar is there once the workbench has restored its parts.
    await page.waitForSelector('.activitybar .action-item', { timeout: 90_000 });
    return new Workbench(page);
  }

  /**
   * Opens an activity-bar view container by its title (e.g. "TPU") and waits until the side bar shows it. A click
   * on the container already shown would close the side bar, and the item's checked state can lag behind what is
   * shown, so this looks at the side bar itself and clicks again if it closed.
   */
  async openViewContainer(title: string): Promise<void> {
    const item = this.page.locator(`.activitybar .action-item a[aria-label^="${title}"]`).first();
    await item.waitFor({ timeout: 60_000 });
    const shown = this.page.locator('.part.sidebar .composite.title .title-label').filter({ hasText: new RegExp(`^\\s*${title}\\b`, 'i') });
    for (let attempt = 1; ; attempt++) {
      if (await shown.isVisible().catch(() => false)) return;
      await item.click();
      if (await shown.waitFor({ timeout: 5_000 }).then(() => true, () => false)) return;
      if (attempt >= 3) throw new Error(`the "${title}" view container did not show in the side bar`);
    }
  }

  /** The sidebar pane of a view, by its title (e.g. "TPU VMs"). */
  pane(title: string): Locator {
    return this.page.locator('.part.sidebar .pane').filter({ has: this.page.locator(`.pane-header[aria-label^="${title}"]`) });
  }

  /** Collapses the sidebar pane titled `title` (a view the test does not look at), giving its height to the others. */
  async collapsePane(title: string): Promise<void> {
    const header = this.page.locator(`.part.sidebar .pane-header[aria-label^="${title}"]`);
    await header.waitFor({ timeout: 30_000 });
    if ((await header.getAttribute('aria-expanded')) === 'true') await header.click();
    await this.page.locator(`.part.sidebar .pane-header[aria-label^="${title}"][aria-expanded="false"]`).waitFor({ timeout: 10_000 });
  }

  /** A tree row whose text contains `text`, within the pane. */
  row(paneTitle: string, text: string | RegExp): Locator {
    return this.pane(paneTitle).locator('.monaco-list-row').filter({ hasText: text });
  }

  async runCommand(title: string): Promise<void> {
    await this.dismissNotifications();
    await this.paletteShowing(`>${title}`, title);
    await this.page.keyboard.press('Enter');
  }

  /**
   * Opens the command palette, types `text` and waits until a row shows `row`. The whole sequence is tried again
   * when a step times out: under load, a webview (the run view) or an editor can take the keyboard focus as the
   * page settles, which swallows F1 or closes the palette between opening it and typing, or before its rows come.
   */
  private async paletteShowing(text: string, row: string, attempts = 4): Promise<void> {
    const input = this.page.locator('.quick-input-widget input.input');
    const rowLocator = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row').filter({ hasText: row }).first();
    for (let attempt = 1; ; attempt++) {
      try {
        await this.page.keyboard.press(attempt % 2 === 1 ? 'F1' : 'Control+Shift+P');
        await input.waitFor({ state: 'visible', timeout: 5_000 });
        await input.fill(text, { timeout: 5_000 });
        await rowLocator.waitFor({ timeout: 15_000 });
        return;
      } catch (e) {
        if (attempt >= attempts) throw e;
        // Close what is half open, take the focus back from a webview's frame (the top page's active element is
        // the frame: blur it), and click a part of the workbench that does nothing when clicked.
        await this.page.keyboard.press('Escape');
        await this.page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
        await this.page.locator('.part.sidebar .composite.title').click({ timeout: 5_000 }).catch(() => undefined);
      }
    }
  }

  /** Waits for a notification toast whose text matches, and returns its text. */
  async waitForNotification(text: RegExp, timeoutMs = 60_000): Promise<string> {
    const toast = this.page.locator('.notifications-toasts .notification-toast').filter({ hasText: text }).first();
    await toast.waitFor({ state: 'visible', timeout: timeoutMs });
    return (await toast.innerText()).replace(/\s+/g, ' ').trim();
  }

  async dismissNotifications(): Promise<void> {
    const toasts = this.page.locator('.notifications-toasts .notification-toast');
    if ((await toasts.count()) === 0) return;
    await this.paletteShowing('>Notifications: Clear All Notifications', 'Clear All Notifications');
    await this.page.keyboard.press('Enter');
    await toasts.first().waitFor({ state: 'detached', timeout: 10_000 }).catch(() => undefined);
  }

  /**
   * Opens a workspace file through Quick Open, as a user would, and waits for its tab. A webview with the focus (the
   * run view) keeps Ctrl+P to itself: then the focus is taken back and it is tried again, as paletteShowing does.
   */
  async openFile(relativePath: string, attempts = 3): Promise<void> {
    const base = relativePath.split('/').pop() ?? relativePath;
    const input = this.page.locator('.quick-input-widget input.input');
    for (let attempt = 1; ; attempt++) {
      try {
        await this.page.keyboard.press('Control+P');
        await input.waitFor({ state: 'visible', timeout: 5_000 });
        break;
      } catch (e) {
        if (attempt >= attempts) throw e;
        await this.page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
        await this.page.locator('.part.sidebar .composite.title').click({ timeout: 5_000 }).catch(() => undefined);
      }
    }
    await input.fill(relativePath);
    const row = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row').filter({ hasText: base }).first();
    await row.waitFor({ timeout: 30_000 });
    // A click, not Enter: a key may still go to a webview that had the focus.
    await row.click();
    await this.page.locator(`.tabs-container .tab.active[aria-label^="${base}"]`).first().waitFor({ timeout: 15_000 });
  }

  /** True if the quick input shows a title matching `title` within `timeoutMs`. */
  async quickInputTitle(title: RegExp, timeoutMs: number): Promise<boolean> {
    try {
      await this.waitQuickInputTitle(title, timeoutMs);
      return true;
    } catch {
      return false;
    }
  }

  async waitQuickInputTitle(title: RegExp, timeoutMs = 30_000): Promise<void> {
    await this.page.locator('.quick-input-widget .quick-input-title').filter({ hasText: title }).waitFor({ state: 'visible', timeout: timeoutMs });
  }

  /** Accepts the quick pick's item whose label is exactly `label` (filtering first), or the first item. */
  async acceptQuickPick(label?: string): Promise<void> {
    const rows = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
    if (label !== undefined) {
      await this.page.locator('.quick-input-widget input.input').fill(label);
      // Wait until the filtered list leads with exactly this label, then accept it with Enter.
      // A row with a detail line has a second .label-name (the detail's); the first is the label.
      const first = rows.first().locator('.label-name').first();
      const deadline = Date.now() + 30_000;
      while ((await first.innerText().catch(() => '')).trim() !== label) {
        if (Date.now() > deadline) throw new Error(`quick pick has no item "${label}"`);
        await this.page.waitForTimeout(100);
      }
      await this.page.keyboard.press('Enter');
      return;
    }
    await rows.first().waitFor({ timeout: 30_000 });
    await this.page.keyboard.press('Enter');
  }

  /** Right-clicks `target` and chooses the context-menu entry whose label is `item`. */
  async contextMenu(target: Locator, item: string): Promise<void> {
    await target.click({ button: 'right' });
    const entry = this.page.locator('.context-view .monaco-menu .action-item').filter({ has: this.page.locator('.action-label', { hasText: new RegExp(`^${item.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }) });
    await entry.first().waitFor({ timeout: 15_000 });
    // VS Code's menus act on mouseup after a hover, like a real pointer: move there, then press and release.
    const box = await entry.first().boundingBox();
    if (!box) throw new Error(`context menu entry "${item}" has no box`);
    await this.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 3 });
    await this.page.waitForTimeout(150);
    await this.page.mouse.down();
    await this.page.mouse.up();
    await entry.first().waitFor({ state: 'detached', timeout: 10_000 });
  }

  /** The labels of the context menu `target` offers (the menu is closed again with Escape). */
  async contextMenuLabels(target: Locator): Promise<string[]> {
    await target.click({ button: 'right' });
    const labels = this.page.locator('.context-view .monaco-menu .action-item .action-label');
    await labels.first().waitFor({ timeout: 15_000 });
    const texts = (await labels.allInnerTexts()).map((t) => t.trim()).filter((t) => t.length > 0);
    await this.page.keyboard.press('Escape');
    return texts;
  }

  async typeQuickInput(text: string): Promise<void> {
    await this.page.locator('.quick-input-widget input.input').fill(text);
  }

  /** Drags the sidebar's edge so tree descriptions are not cut off in screenshots. */
  async widenSidebar(width: number): Promise<void> {
    const box = await this.page.locator('.part.sidebar').boundingBox();
    if (!box || box.width >= width) return;
    const x = box.x + box.width;
    const y = box.y + box.height / 2;
    await this.page.mouse.move(x - 1, y);
    await this.page.mouse.down();
    await this.page.mouse.move(box.x + width, y, { steps: 5 });
    await this.page.mouse.up();
  }

  /** Moves the mouse out of the way (no hover tooltips) and lets animations (toasts fade in) finish. */
  async settle(): Promise<void> {
    await this.page.mouse.move(700, 400);
    await this.page.waitForTimeout(600);
  }

  /** The text currently rendered in the Output panel's editor (only the lines on screen). */
  async outputText(): Promise<string> {
    const lines = this.page.locator('.part.panel .output-view .view-lines .view-line');
    const texts = await lines.allInnerTexts();
    // Monaco renders spaces as U+00A0.
    return texts.map((t) => t.replace(/\u00a0/g, ' ')).join('\n');
  }

  async screenshot(file: string): Promise<void> {
    await this.page.screenshot({ path: file });
  }
}
