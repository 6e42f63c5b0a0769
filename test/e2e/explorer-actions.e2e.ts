/**
 * The TPU VM explorer's actions in a real VS Code (code-server 4.100.3) driven through headless Chromium, each
 * checked by its outcome rather than by its menu entry: Stop/Start of a single-host VM (the tree follows
 * STOPPING → STOPPED → READY by itself), Show Details (a read-only YAML document), Copy SSH Command (the copied
 * command really logs in) and Copy IP, the quota path (a capacity fault injected over the emulator's HTTP
 * faults endpoint → "Retry in <zone>" creates the VM there; "Queue it" → WAITING_FOR_RESOURCES → ACTIVE once the
 * fault is cleared → deleted from its menu), Prepare Workers with a tiny workspace setup recipe (no torch), a
 * multislice group (`tpw vm create --slices 2`) shown as one row with its slices and Run on TPU from that row
 * reaching every worker of every slice (a Cloud TPU queued resource's group, also offered as one item by the
 * palette's Run on TPU, and a Compute Engine group of slice MIGs, which its row's Delete removes), and the "Open" action of a SERVICE_DISABLED error. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/explorer-actions.e2e.ts
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser } from 'playwright-core';
import { emulatorHeaders } from '../helpers/emulator-http';
import { findLogs, type CodeServer } from './code-server';
import { findFiles } from './files';
import { delay, type ProcessTracker } from './processes';
import { ARTIFACTS, cliRunner, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const VIEW = 'TPU VMs';
/** Where the single-host VM lives and where the capacity fault is injected. */
const ZONE_A = 'us-east5-b';
/** Where "Retry in …" sends the VM that zone A has no capacity for. */
const ZONE_B = 'us-central2-b';
const SOLO = 'solo-vm';
const SOLO_TYPE = 'v5litepod-1';
/** A 2-worker pod (v4-16: 8 chips, 4 per host), so Prepare Workers has more than one worker to name. */
const POD_TYPE = 'v4-16';
const QUOTA_VM = 'quota-vm';
const QUEUED = 'queued-vm';
/** Slow enough that the tree is seen in STOPPING and STARTING, as on Cloud TPU (minutes there). */
const EMULATOR_OPTIONS = { opDelayMs: { create: 2500, stop: 5000, start: 4000, delete: 1500 } };
/** The tiny setup recipe Prepare Workers runs instead of installing torch: a marker in each worker's home. */
const PREPARE_RECIPE = '#!/usr/bin/env bash\n# e2e: stands in for the real setup (no torch in a test).\nexport TPW_MARK=prepared\n\nbash setup/mark.sh\n';
const MARK_SCRIPT = 'echo "worker=$TPU_WORKER_ID $TPW_MARK" > "$HOME/tpw-prepared.txt"\necho "prepared worker $TPU_WORKER_ID"\n';
/** The multislice group: two slices of POD_TYPE, and the one recipe of the workspace, which says where it runs. */
const GROUP = 'ms-group';
/** A Compute Engine group: two 2-VM slice MIGs (TPU7x is only on Compute Engine). */
const CE_GROUP = 'ce-group';
const CE_TYPE = 'tpu7x-16';
const WHERE_RECIPE = 'bash -c \'echo "slice=$MEGASCALE_SLICE_ID of $MEGASCALE_NUM_SLICES worker=$TPU_WORKER_ID"\'\n';

interface NodeJson {
  name: string;
  zone: string;
  state: string;
  acceleratorType: string;
  networkEndpoints: { ipAddress: string; port?: number; accessConfig?: { externalIp?: string } }[];
}

interface EndpointJson {
  host: string;
  restPort: number;
  /** Every REST call carries it (emulatorHeaders). */
  token: string;
  sshPort: number;
  username: string;
  zones: string[];
}

describe('TPU VM explorer actions in VS Code (code-server)', { timeout: 20 * 60_000 }, () => {
  let root: string;
  let home: string;
  let env: NodeJS.ProcessEnv;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let server: CodeServer | undefined;
  let wb: Workbench;

  const shot = (name: string): Promise<void> => wb.screenshot(path.join(ARTIFACTS, name));
  const endpoint = (): EndpointJson => JSON.parse(fs.readFileSync(path.join(home, 'emulator', 'endpoint.json'), 'utf8')) as EndpointJson;
  let cli: (...args: string[]) => string;
  const vmList = (): NodeJson[] => JSON.parse(cli('vm', 'list', '--json')) as NodeJson[];
  /** The emulator's test-only fault endpoint, as a test harness (or a demo) drives it over HTTP. */
  const faults = async (method: 'POST' | 'DELETE', body?: object): Promise<void> => {
    const ep = endpoint();
    const res = await fetch(`http://${ep.host}:${ep.restPort}/emulator/v1/faults`, {
      method,
      headers: emulatorHeaders(ep, true),
      body: body ? JSON.stringify(body) : undefined,
    });
    assert.equal(res.status, 200, `${method} /emulator/v1/faults: ${res.status} ${await res.text()}`);
  };

  before(async () => {
    requireBuilt('extension.js', 'cli.js');
    let workspace: string;
    ({ root, home, workspace, procs } = testRoot('actions'));
    fs.mkdirSync(path.join(workspace, 'setup'));
    fs.writeFileSync(path.join(workspace, 'setup', 'prepare-workers.sh'), PREPARE_RECIPE);
    fs.writeFileSync(path.join(workspace, 'setup', 'mark.sh'), MARK_SCRIPT);
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.writeFileSync(path.join(workspace, 'recipes', 'where.sh'), WHERE_RECIPE);
    env = testEnv(home, { TPW_EMULATOR_OPTIONS: JSON.stringify(EMULATOR_OPTIONS) });
    cli = cliRunner(procs, env);
    await startEmulator(procs, env);
    // The single-host VM comes from the CLI, as a user with a terminal would make it.
    cli('vm', 'create', SOLO, '--type', SOLO_TYPE, '--zone', ZONE_A, '--version', 'v2-alpha-tpuv5-lite');
    ({ server, browser, wb } = await openVsCode(procs, { root, workspace, env, settings: { 'workbench.colorTheme': 'Default Dark Modern', 'tpuWorkbench.run.outputChannel': true } }));
    // Copy actions write to the browser's clipboard; the test reads it back like a paste would.
    await wb.page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  });

  after(() => teardown({ browser, procs, server, home, env, root, failed: steps.failed, logsName: 'logs-explorer-actions' }));

  const steps = stepper('actions', (file) => shot(file), 4 * 60_000);
  const step = steps.step;

  const quick = () => wb.page.locator('.quick-input-widget');
  /** A VM row: its label, then its description, which starts with the accelerator type. */
  const vmRow = (name: string, type: string) => wb.row(VIEW, new RegExp(`^\\s*${name}\\s*${type}`));
  /** A queued resource's row: its description starts with its state. */
  const queuedRow = (name: string) => wb.row(VIEW, new RegExp(`^\\s*${name}\\s*(ACCEPTED|WAITING_FOR_RESOURCES|PROVISIONING|ACTIVE|FAILED|SUSPEND|DELETING)`));
  const toast = (text: RegExp) => wb.page.locator('.notifications-toasts .notification-toast').filter({ hasText: text }).first();
  const clipboard = (): Promise<string> => wb.page.evaluate(() => navigator.clipboard.readText());
  /** Runs `action`, then waits until the clipboard holds something new. */
  const copied = async (action: () => Promise<void>): Promise<string> => {
    const sentinel = `e2e-sentinel-${Date.now()}`;
    await wb.page.evaluate((s) => navigator.clipboard.writeText(s), sentinel);
    await action();
    for (const deadline = Date.now() + 15_000; ; await delay(200)) {
      const text = await clipboard();
      if (text !== sentinel) return text;
      if (Date.now() > deadline) throw new Error('nothing was copied to the clipboard');
    }
  };

  /** The create wizard with every answer that has a default kept (the review's rows untouched), from the palette. */
  const wizard = async (name: string, zone: string, type: string, provisioning: string): Promise<void> => {
    await wb.runCommand('TPU: Create TPU VM');
    await wb.waitQuickInputTitle(/: name \(/);
    await wb.typeQuickInput(name);
    await quick().getByText('is not allowed').waitFor({ state: 'detached', timeout: 10_000 });
    await wb.page.keyboard.press('Enter');
    await wb.waitQuickInputTitle(/: zone \(/);
    await wb.acceptQuickPick(zone);
    await wb.waitQuickInputTitle(/: accelerator type \(/);
    await wb.acceptQuickPick(type);
    // Both control planes offer the type; these VMs are Cloud TPU API nodes (compute.e2e.ts covers Compute Engine).
    await wb.waitQuickInputTitle(/: control plane \(/);
    await wb.acceptQuickPick('Cloud TPU API');
    await wb.waitQuickInputTitle(/: runtime version \(/);
    await wb.acceptQuickPick();
    await wb.waitQuickInputTitle(/: provisioning \(/);
    await wb.acceptQuickPick(provisioning);
    await wb.waitQuickInputTitle(/: review \(/);
    // Enter only once the review lists its action (the step's items render after its title).
    await quick().locator('.quick-input-list .monaco-list-row').first().filter({ hasText: `Create ${name}` }).waitFor({ timeout: 15_000 });
    await wb.page.keyboard.press('Enter');
    await quick().waitFor({ state: 'hidden', timeout: 15_000 });
  };

  step('a single-host VM offers Stop; the tree follows STOPPING → STOPPED, and Start brings it back READY', async () => {
    await wb.openViewContainer('TPU');
    // The GKE and Runs views share the sidebar (this file looks at neither): collapsed, they leave the TPU VMs tree
    // tall enough that a queued resource's row under its VMs is drawn (the tree draws only the rows in sight).
    await wb.collapsePane('GKE');
    await wb.collapsePane('Runs');
    await wb.widenSidebar(620);
    await vmRow(SOLO, SOLO_TYPE).filter({ hasText: 'READY' }).waitFor({ timeout: 90_000 });
    let labels = await wb.contextMenuLabels(vmRow(SOLO, SOLO_TYPE));
    assert.ok(labels.includes('Stop TPU VM'), `a single-host VM can be stopped: ${labels.join(', ')}`);
    assert.ok(!labels.includes('Start TPU VM'), labels.join(', '));

    await wb.contextMenu(vmRow(SOLO, SOLO_TYPE), 'Stop TPU VM');
    // Nobody presses Refresh: the command shows the transitional state and the tree polls from there.
    await vmRow(SOLO, SOLO_TYPE).filter({ hasText: 'STOPPING' }).waitFor({ timeout: 20_000 });
    await vmRow(SOLO, SOLO_TYPE).filter({ hasText: 'STOPPED' }).waitFor({ timeout: 60_000 });
    await wb.waitForNotification(new RegExp(`TPU VM ${SOLO} is STOPPED`), 30_000);
    assert.equal(vmList().find((n) => n.name.endsWith(`/${SOLO}`))?.state, 'STOPPED');

    labels = await wb.contextMenuLabels(vmRow(SOLO, SOLO_TYPE));
    assert.ok(labels.includes('Start TPU VM') && !labels.includes('Stop TPU VM'), `a STOPPED VM offers Start only: ${labels.join(', ')}`);
    await wb.contextMenu(vmRow(SOLO, SOLO_TYPE), 'Start TPU VM');
    await vmRow(SOLO, SOLO_TYPE).filter({ hasText: 'STARTING' }).waitFor({ timeout: 20_000 });
    await vmRow(SOLO, SOLO_TYPE).filter({ hasText: 'READY' }).waitFor({ timeout: 60_000 });
    await wb.waitForNotification(new RegExp(`TPU VM ${SOLO} is READY`), 30_000);
    assert.equal(vmList().find((n) => n.name.endsWith(`/${SOLO}`))?.state, 'READY');
    await wb.row(VIEW, /^\s*w0\s*127\./).waitFor({ timeout: 15_000 });
    await wb.dismissNotifications();
  });

  step('"Show Details" opens a read-only YAML document with the type and state', async () => {
    await wb.contextMenu(vmRow(SOLO, SOLO_TYPE), 'Show Details');
    await wb.page.locator(`.tabs-container .tab.active[aria-label^="${SOLO}.yaml"]`).waitFor({ timeout: 15_000 });
    const editor = wb.page.locator('.editor-group-container .editor-instance .monaco-editor').first();
    const lines = editor.locator('.view-lines');
    await lines.getByText(`acceleratorType: ${SOLO_TYPE}`).waitFor({ timeout: 15_000 });
    const text = (await lines.innerText()).replace(/\u00a0/g, ' ');
    assert.match(text, /^state: READY$/m, text);
    assert.match(text, new RegExp(`^name: projects/[^/]+/locations/${ZONE_A}/nodes/${SOLO}$`, 'm'), text);
    assert.match(text, /^networkEndpoints:/m, text);
    // Typing changes nothing and says why: the document is read-only.
    await lines.click();
    await wb.page.keyboard.type('x');
    await wb.page.locator('.monaco-editor-overlaymessage').filter({ hasText: /read-only/i }).waitFor({ timeout: 10_000 });
    assert.equal((await lines.innerText()).replace(/\u00a0/g, ' '), text, 'the document is unchanged');
    await wb.settle();
    await shot('details-yaml.png');
    await wb.page.keyboard.press('Escape');
  });

  step('"Copy SSH Command" copies a quoted ssh command that logs in to worker 0; "Copy IP" its address', async () => {
    const ep = endpoint();
    const node = vmList().find((n) => n.name.endsWith(`/${SOLO}`));
    assert.ok(node, `${SOLO} is listed`);
    const ip = node.networkEndpoints[0].accessConfig?.externalIp ?? node.networkEndpoints[0].ipAddress;
    const command = await copied(() => wb.contextMenu(vmRow(SOLO, SOLO_TYPE), 'Copy SSH Command'));
    console.log(`# copied: ${command}`);
    assert.match(command, /^ssh /, command);
    assert.ok(command.includes(` -p ${ep.sshPort} `), `the worker's SSH port ${ep.sshPort}: ${command}`);
    assert.ok(command.endsWith(` ${ep.username}@${ip}`), `the worker's user and address ${ep.username}@${ip}: ${command}`);
    // `=` would otherwise start an assignment-looking word: such values are single-quoted.
    assert.match(command, / -o 'UserKnownHostsFile=[^']+'/, command);
    // And the copied text works as it is, pasted into a shell: it runs on worker 0 of this VM.
    const r = spawnSync('bash', ['-c', `${command} -o BatchMode=yes -o ConnectTimeout=20 'echo "login-ok worker=$TPU_WORKER_ID"'`], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, `the copied command failed (${r.status}): ${r.stderr}`);
    assert.match(r.stdout, /login-ok worker=0/, r.stdout);

    const copiedIp = await copied(() => wb.contextMenu(wb.row(VIEW, /^\s*w0\s*127\./), 'Copy IP'));
    assert.equal(copiedIp, ip);
    await wb.waitForNotification(new RegExp(`Copied ${ip.replace(/\./g, '\\.')} \\(w0 of ${SOLO}\\)`), 15_000);
    await wb.dismissNotifications();
  });

  step('no capacity in a zone: the error names the zones offering the type, and "Retry in" creates it there', async () => {
    await faults('POST', { capacity: [{ zone: ZONE_A, acceleratorType: POD_TYPE }] });
    await wizard(QUOTA_VM, ZONE_A, POD_TYPE, 'On-demand');
    const others = endpoint().zones.filter((z) => z !== ZONE_A).sort();
    const text = await wb.waitForNotification(new RegExp(`No capacity or quota for ${POD_TYPE} in ${ZONE_A}`), 60_000);
    assert.ok(text.includes(`${POD_TYPE} is also offered in ${others.join(', ')}`), `the zones that offer ${POD_TYPE}: ${text}`);
    assert.doesNotMatch(text, /\.\./, 'one period between the reason and the zones');
    const retry = toast(/No capacity or quota/).getByRole('button', { name: `Retry in ${ZONE_B}` });
    await retry.waitFor({ timeout: 10_000 });
    assert.ok(await toast(/No capacity or quota/).getByRole('button', { name: 'Queue it' }).isVisible());
    await wb.settle();
    await shot('quota-retry.png');
    await retry.click();
    await vmRow(QUOTA_VM, POD_TYPE).filter({ hasText: 'READY' }).waitFor({ timeout: 90_000 });
    const made = vmList().filter((n) => n.name.endsWith(`/${QUOTA_VM}`));
    assert.deepEqual(made.map((n) => n.zone), [ZONE_B], `${QUOTA_VM} exists in ${ZONE_B} only`);
    assert.equal(made[0].networkEndpoints.length, 2);
    // In the tree it sits under zone B: the nearest zone row above it.
    const rows = (await wb.pane(VIEW).locator('.monaco-list-row').allInnerTexts()).map((t) => t.trim());
    const at = rows.findIndex((t) => t.startsWith(QUOTA_VM));
    const zoneAbove = rows.slice(0, at).reverse().find((t) => endpoint().zones.some((z) => t.startsWith(z)));
    assert.ok(zoneAbove?.startsWith(ZONE_B), `${QUOTA_VM} is listed under ${ZONE_B} (rows: ${rows.join(' | ')})`);
    await wb.dismissNotifications();
  });

  step('"Queue it": the queued resource waits for capacity, becomes ACTIVE when it is there, and is deleted from its menu', async () => {
    await wizard(QUEUED, ZONE_A, POD_TYPE, 'On-demand');
    const queueIt = toast(new RegExp(`No capacity or quota for ${POD_TYPE} in ${ZONE_A}`)).getByRole('button', { name: 'Queue it' });
    await queueIt.waitFor({ timeout: 60_000 });
    await queueIt.click();
    await wb.row(VIEW, /^\s*Queued resources/).waitFor({ timeout: 30_000 });
    await queuedRow(QUEUED).filter({ hasText: 'WAITING_FOR_RESOURCES' }).waitFor({ timeout: 30_000 });
    assert.equal(await vmRow(QUEUED, POD_TYPE).count(), 0, 'no VM while it waits');
    await wb.settle();
    await shot('queued-resources.png');

    await faults('DELETE');
    // The tree keeps polling while the request is transitional: no Refresh pressed.
    await queuedRow(QUEUED).filter({ hasText: 'ACTIVE' }).waitFor({ timeout: 90_000 });
    await vmRow(QUEUED, POD_TYPE).filter({ hasText: 'READY' }).waitFor({ timeout: 30_000 });
    assert.deepEqual(vmList().filter((n) => n.name.endsWith(`/${QUEUED}`)).map((n) => n.zone), [ZONE_A]);

    await wb.dismissNotifications();
    await wb.contextMenu(queuedRow(QUEUED), 'Delete Queued Resource');
    const dialog = wb.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 15_000 });
    const asked = await dialog.innerText();
    assert.match(asked, new RegExp(`Delete queued resource "${QUEUED}" in ${ZONE_A}`), asked);
    assert.match(asked, /ACTIVE: its TPU VM \(queued-vm\) is deleted with it/, asked);
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await queuedRow(QUEUED).waitFor({ state: 'detached', timeout: 90_000 });
    await vmRow(QUEUED, POD_TYPE).waitFor({ state: 'detached', timeout: 30_000 });
    assert.deepEqual(JSON.parse(cli('qr', 'list', '--json')), []);
    assert.ok(!vmList().some((n) => n.name.endsWith(`/${QUEUED}`)), 'its VM went with it');
  });

  step('"Prepare Workers" runs the workspace\'s setup recipe on every worker', async () => {
    await wb.dismissNotifications();
    await wb.contextMenu(vmRow(QUOTA_VM, POD_TYPE), 'Prepare Workers');
    const text = await wb.waitForNotification(/Run (finished|failed|cancelled)|Prepare Workers failed/, 120_000);
    const files = findLogs(server!.userDataDir, 'TPU Run.log');
    assert.equal(files.length, 1, `one "TPU Run" log (${files.join(', ')})`);
    const output = fs.readFileSync(files[0], 'utf8');
    assert.match(text, new RegExp(`Run finished: prepare-workers\\.sh on ${QUOTA_VM}, all 2 workers ok`), `${text}\n${output.slice(-3000)}`);
    for (const i of [0, 1]) assert.match(output, new RegExp(`^\\[w${i}\\] prepared worker ${i}$`, 'm'), output);
    assert.match(output, /2\/2 workers ok.*w0=.*w1=/, output);
    // Each worker's sandbox home has its own marker, written there by the recipe.
    const marks = findFiles(home, (name) => name === 'tpw-prepared.txt').map((f) => fs.readFileSync(f, 'utf8').trim()).sort();
    assert.deepEqual(marks, ['worker=0 prepared', 'worker=1 prepared']);
    await wb.settle();
    await shot('prepare-workers.png');
    await wb.dismissNotifications();
  });

  step('a multislice group is one row with its slices under it; Run on TPU from it runs on every worker of every slice', async () => {
    cli('vm', 'create', GROUP, '--type', POD_TYPE, '--slices', '2', '--zone', ZONE_B);
    await wb.runCommand('TPU: Refresh');
    const group = wb.row(VIEW, new RegExp(`^\\s*${GROUP}\\s*2 slices · ${POD_TYPE} · READY`));
    await group.waitFor({ timeout: 120_000 });
    for (const s of [0, 1]) await vmRow(`${GROUP}-${s}`, POD_TYPE).filter({ hasText: 'READY' }).waitFor({ timeout: 30_000 });
    await wb.settle();
    await shot('multislice-group.png');
    await wb.dismissNotifications();
    await wb.contextMenu(group, 'Run on TPU');
    const text = await wb.waitForNotification(/Run (finished|failed|cancelled)/, 120_000);
    assert.match(text, new RegExp(`Run finished: where\\.sh on ${GROUP} \\(2 slices\\), all 4 workers ok`), text);
    const logs = findLogs(server!.userDataDir, 'TPU Run.log');
    const output = logs.map((f) => fs.readFileSync(f, 'utf8')).join('\n');
    for (const s of [0, 1]) for (const w of [0, 1]) assert.match(output, new RegExp(`^\\[s${s}w${w}\\] slice=${s} of 2 worker=${w}$`, 'm'), output.slice(-3000));
    await wb.dismissNotifications();
  });

  step('Run on TPU from the palette lists the group as one item next to the VMs (never its slices alone); picking it runs on every slice', async () => {
    await wb.runCommand('TPU: Run on TPU');
    const rows = quick().locator('.quick-input-list .monaco-list-row');
    // A workspace with more than one recipe asks for the recipe first.
    const recipe = rows.filter({ hasText: /^\s*where\.sh/ });
    const item = rows.filter({ hasText: new RegExp(`${GROUP}\\s*multislice: 2 slices × 2 workers · ${POD_TYPE} · ${ZONE_B} · Cloud TPU API`) });
    await recipe.or(item).first().waitFor({ timeout: 30_000 });
    if ((await recipe.count()) > 0) await recipe.first().click();
    await item.waitFor({ timeout: 30_000 });
    const labels = (await rows.allInnerTexts()).map((l) => l.replace(/\s+/g, ' '));
    assert.ok(labels.some((l) => l.includes(SOLO)), labels.join(' | '));
    assert.ok(!labels.some((l) => new RegExp(`${GROUP}-[01]\\b`).test(l)), `slices are not offered one by one: ${labels.join(' | ')}`);
    await shot('run-pick-multislice.png');
    await item.click();
    const text = await wb.waitForNotification(/Run (finished|failed|cancelled)/, 120_000);
    assert.match(text, new RegExp(`Run finished: where\\.sh on ${GROUP} \\(2 slices\\), all 4 workers ok`), text);
    await wb.dismissNotifications();
  });

  step('a Compute Engine multislice group (slice MIGs) is one row too; Run on TPU reaches every worker; Delete deletes every slice', async () => {
    cli('vm', 'create', CE_GROUP, '--type', CE_TYPE, '--slices', '2', '--zone', ZONE_A);
    await wb.runCommand('TPU: Refresh');
    // The tree only renders the rows in view: fold the other zone (the Cloud TPU group) so this one's fit.
    await wb.row(VIEW, new RegExp(`${ZONE_B}\\s*\\d+ VMs`)).first().click();
    const group = wb.row(VIEW, new RegExp(`^\\s*${CE_GROUP}\\s*2 slices · ${CE_TYPE} · READY`));
    await group.waitFor({ timeout: 120_000 });
    for (const s of [0, 1]) await vmRow(`${CE_GROUP}-${s}`, CE_TYPE).filter({ hasText: 'READY' }).waitFor({ timeout: 30_000 });
    await wb.settle();
    await shot('compute-multislice-group.png');
    await wb.dismissNotifications();
    await wb.contextMenu(group, 'Run on TPU');
    const text = await wb.waitForNotification(/Run (finished|failed|cancelled)/, 120_000);
    assert.match(text, new RegExp(`Run finished: where\\.sh on ${CE_GROUP} \\(2 slices\\), all 4 workers ok`), text);
    await wb.dismissNotifications();

    await wb.contextMenu(group, 'Delete TPU VM');
    const dialog = wb.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 15_000 });
    const asked = await dialog.innerText();
    assert.match(asked, new RegExp(`Delete multislice group "${CE_GROUP}" in ${ZONE_A}`), asked);
    assert.match(asked, new RegExp(`All 2 slices \\(${CE_GROUP}-0, ${CE_GROUP}-1\\) are deleted`), asked);
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await group.waitFor({ state: 'detached', timeout: 90_000 });
    assert.ok(!vmList().some((n) => n.name.includes(`/${CE_GROUP}-`)), 'every slice went with the group');
  });

  step('with the Cloud TPU API disabled, a refresh shows the error with an "Open" action for the activation URL', async () => {
    await faults('POST', { serviceDisabled: true });
    // Opening the link must not reach the internet: answer it here.
    await wb.page.context().route('https://console.developers.google.com/**', (r) => r.fulfill({ status: 200, contentType: 'text/html', body: '<title>activation</title>' }));
    await wb.runCommand('TPU: Refresh');
    // The client rewords Google's SERVICE_DISABLED 403 ("has not been used in project … or it is disabled").
    const error = toast(/Cloud TPU API is not enabled in project/);
    await error.waitFor({ timeout: 60_000 });
    const text = (await error.innerText()).replace(/\s+/g, ' ');
    const url = /https:\/\/console\.developers\.google\.com\/apis\/api\/tpu\.googleapis\.com\/overview\?project=\d+/.exec(text)?.[0];
    assert.ok(url, `the notification carries the activation URL: ${text}`);
    // The view says so too (its message), and shows no stale rows.
    await wb.pane(VIEW).getByText(/Cloud TPU API is not enabled/).first().waitFor({ timeout: 15_000 });
    assert.equal(await vmRow(SOLO, SOLO_TYPE).count(), 0);
    await wb.settle();
    await shot('error-service-disabled.png');

    const popup = wb.page.context().waitForEvent('page', { timeout: 30_000 });
    await error.getByRole('button', { name: 'Open' }).click();
    // VS Code asks before opening a link to a domain it does not trust; the dialog names the URL.
    const dialog = wb.page.locator('.monaco-dialog-box');
    const opened = await Promise.race([popup.then(() => 'popup' as const), dialog.waitFor({ timeout: 15_000 }).then(() => 'dialog' as const)]);
    if (opened === 'dialog') {
      // It elides the query string; the opened page below is checked for the whole URL.
      assert.ok((await dialog.innerText()).includes(url.slice(0, url.indexOf('?') + 1)), await dialog.innerText());
      await dialog.getByRole('button', { name: 'Open' }).click();
    }
    const page = await popup;
    await page.waitForLoadState('domcontentloaded').catch(() => undefined);
    assert.equal(page.url(), url, 'the opened page is the activation URL');
    await page.close();

    await faults('DELETE');
    await wb.runCommand('TPU: Refresh');
    await vmRow(SOLO, SOLO_TYPE).filter({ hasText: 'READY' }).waitFor({ timeout: 60_000 });
  });
});

