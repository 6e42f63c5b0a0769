/** The cost table and its functions: chips per slice, regions, hourly estimates, formatting, and the data file. */
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chipsOf, chipHourPrice, formatCost, generationOf, hourlyCost, PRICE_SOURCE, pricedRegions, regionOf } from '../../extension/src/core/tpu/cost';
import prices from '../../extension/src/core/tpu/prices.json';

describe('chipsOf', () => {
  it('counts TensorCores as half a chip for v2, v3, v4 and v5p, chips for v5e and v6e', () => {
    const cases: [string, number | undefined][] = [
      ['v4-8', 4],
      ['v4-32', 16],
      ['v5p-8', 4],
      ['v5p-128', 64],
      ['v5litepod-16', 16],
      ['v5litepod-1', 1],
      ['v6e-8', 8],
      ['v6e-256', 256],
      ['v2-8', 4],
      ['v3-32', 16],
      ['v4-7', undefined],
      ['v7-8', undefined],
      // TPU7x counts TensorCores, two per chip (Google's TPU7x page; torch_xla reads tpu7x-N the same way):
      // a tpu7x-standard-4t VM (4 chips) is tpu7x-8, xpk's 4x4x4 slice (64 chips) is tpu7x-128.
      ['tpu7x-8', 4],
      ['tpu7x-16', 8],
      ['tpu7x-128', 64],
      ['tpu7x-7', undefined],
      ['v6e', undefined],
      ['v6e-0', undefined],
      ['', undefined],
    ];
    for (const [type, chips] of cases) assert.equal(chipsOf(type), chips, type);
  });

  it('maps types to the generations the table prices', () => {
    assert.equal(generationOf('v5litepod-4'), 'v5e');
    assert.equal(generationOf('v5p-8'), 'v5p');
    assert.equal(generationOf('v4-8'), 'v4');
    assert.equal(generationOf('v6e-1'), 'v6e');
    assert.equal(generationOf('v3-8'), undefined);
    assert.equal(generationOf('tpu7x-8'), 'tpu7x');
  });
});

describe('regionOf', () => {
  it('drops the zone letter, and leaves regions alone', () => {
    assert.equal(regionOf('us-central2-b'), 'us-central2');
    assert.equal(regionOf('europe-west4-a'), 'europe-west4');
    assert.equal(regionOf('asia-southeast1-b'), 'asia-southeast1');
    assert.equal(regionOf('us-east5'), 'us-east5');
  });
});

describe('hourlyCost', () => {
  it('multiplies chips by the regional chip-hour price, per tier', () => {
    assert.deepEqual(hourlyCost('v5litepod-16', 'us-east5-b', 'on-demand'), { usdPerHour: 19.2, chips: 16, usdPerChipHour: 1.2, asOf: prices.asOf });
    assert.equal(hourlyCost('v5litepod-16', 'us-east5-b', 'spot')?.usdPerHour, 9.6);
    assert.equal(hourlyCost('v6e-8', 'us-east1-d', 'on-demand')?.usdPerHour, 21.6);
    assert.equal(hourlyCost('v4-8', 'us-central2-b', 'on-demand')?.usdPerHour, 12.88);
    assert.equal(hourlyCost('v5p-8', 'us-central1-a', 'on-demand')?.usdPerHour, 16.8);
    assert.equal(hourlyCost('v5p-8', 'us-central1-a', 'spot')?.usdPerHour, 6.72);
  });

  it('is undefined rather than a guess: reserved, an unpriced region, an unknown type', () => {
    assert.equal(hourlyCost('v5litepod-16', 'us-east5-b', 'reserved'), undefined);
    assert.equal(hourlyCost('v4-8', 'europe-west4-a', 'on-demand'), undefined);
    assert.equal(hourlyCost('v6e-8', 'southamerica-east1-c', 'on-demand'), undefined);
    assert.equal(hourlyCost('v3-8', 'us-central1-a', 'on-demand'), undefined);
    assert.equal(hourlyCost('nonsense', 'us-central1-a', 'on-demand'), undefined);
  });

  it('knows TPU7x but shows no TPU7x estimate: no source gave a list price, and the notes say so with the date', () => {
    assert.deepEqual(pricedRegions('tpu7x'), []);
    for (const tier of ['on-demand', 'spot', 'reserved'] as const) assert.equal(hourlyCost('tpu7x-8', 'us-central1-c', tier), undefined);
    assert.ok(PRICE_SOURCE.notes.some((n) => /TPU7x/.test(n) && /\d{4}-\d{2}-\d{2}/.test(n)));
  });

  it('formats for the tree (short) and tooltips (with the arithmetic and the date)', () => {
    const c = hourlyCost('v5litepod-16', 'us-east5-b', 'on-demand');
    assert.ok(c);
    assert.equal(formatCost(c), '$19.20/h');
    assert.equal(formatCost(c, { detail: true, tier: 'on-demand' }), `$19.20/h (16 chips × $1.20/chip-hour, on-demand list price as of ${prices.asOf})`);
    assert.equal(formatCost({ usdPerHour: 1234.5, chips: 256, usdPerChipHour: 4.82, asOf: 'x' }), '$1,235/h');
    assert.match(formatCost({ usdPerHour: 1.2, chips: 1, usdPerChipHour: 1.2, asOf: 'x' }, { detail: true }), /\(1 chip ×/);
  });
});

describe('prices.json', () => {
  it('says where its figures come from and when, and explains what it omits', () => {
    assert.equal(PRICE_SOURCE.url, 'https://cloud.google.com/tpu/pricing');
    assert.match(PRICE_SOURCE.asOf, /^\d{4}-\d{2}-\d{2}$/);
    assert.ok(PRICE_SOURCE.notes.some((n) => /Reserved/.test(n)));
  });

  it('has on-demand and spot prices for v4, v5e, v5p and v6e, spot below on-demand', () => {
    for (const gen of ['v4', 'v5e', 'v5p', 'v6e'] as const) {
      const regions = pricedRegions(gen);
      assert.ok(regions.length > 0, gen);
      for (const r of regions) {
        const od = chipHourPrice(gen, r, 'on-demand');
        const spot = chipHourPrice(gen, r, 'spot');
        assert.ok(od !== undefined && od > 0 && od < 20, `${gen} ${r} on-demand ${od}`);
        assert.ok(spot !== undefined && spot > 0 && spot < od, `${gen} ${r} spot ${spot}`);
      }
    }
  });
});
