import * as vscode from 'vscode';
import { describeError } from '../core/errors';
import { zonesOffering } from '../core/tpu/zones';
import * as config from './config';
import type { Ctx } from './ctx';
import type { VmTreeProvider } from './vm-tree';

/** Families offered as one-click zone sets, with a type every zone of the family offers (its smallest slice). */
const FAMILIES: { label: string; probeType: string }[] = [
  { label: 'v6e', probeType: 'v6e-8' },
  { label: 'v5e', probeType: 'v5litepod-8' },
  { label: 'v5p', probeType: 'v5p-8' },
  { label: 'v4', probeType: 'v4-8' },
];

interface ZonePick extends vscode.QuickPickItem {
  zone?: string;
  family?: string;
  probeType?: string;
}

/**
 * "TPU: Choose Zones…": a multi-select of the project's TPU zones (from the API's locations), with "All zones
 * that offer v6e" (and v5e, v5p, v4) as one click each. Selecting nothing means every zone.
 */
export async function chooseZones(ctx: Ctx, tree: VmTreeProvider): Promise<void> {
  const backend = await ctx.backend();
  const current = new Set(config.zones() ?? []);
  const all = (await backend.api.listZones(backend.project)).map((z) => z.locationId).sort();
  const items: ZonePick[] = [
    { label: 'Zone sets', kind: vscode.QuickPickItemKind.Separator },
    ...FAMILIES.map((f) => ({ label: `$(filter) All zones that offer ${f.label}`, family: f.label, probeType: f.probeType, description: `replaces the selection with the zones listing ${f.probeType}` })),
    { label: `Zones of ${backend.project}`, kind: vscode.QuickPickItemKind.Separator },
    ...all.map((z) => ({ label: z, zone: z, picked: current.has(z) })),
  ];
  const picked = await vscode.window.showQuickPick(items, {
    title: 'TPU: Choose Zones',
    placeHolder: 'Zones to list TPU VMs in (none selected: every zone)',
    canPickMany: true,
    matchOnDescription: true,
  });
  if (!picked) return;
  let zones = picked.filter((p) => p.zone).map((p) => p.zone!);
  const families = picked.filter((p) => p.probeType);
  if (families.length > 0) {
    zones = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Finding zones that offer ${families.map((f) => f.family).join(', ')}…` }, async () => {
      const found = new Set<string>();
      for (const f of families) {
        try {
          for (const z of await zonesOffering(backend.api, backend.project, f.probeType!, { zones: all })) found.add(z);
        } catch (e) {
          ctx.log.warn(`zones offering ${f.probeType}: ${describeError(e)}`);
          throw e;
        }
      }
      return [...found].sort();
    });
    if (zones.length === 0) {
      void vscode.window.showWarningMessage(`No zone of ${backend.project} offers ${families.map((f) => f.family).join(' or ')}; the zone setting is unchanged.`);
      return;
    }
  }
  await config.setZones(zones);
  ctx.log.info(`zones: ${zones.length > 0 ? zones.join(', ') : 'all'}`);
  void vscode.window.showInformationMessage(zones.length > 0 ? `Listing TPU VMs in ${zones.join(', ')}.` : `Listing TPU VMs in every zone of ${backend.project}.`);
  tree.refresh(true);
}
