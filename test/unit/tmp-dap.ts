import { DapClient } from '../helpers/dap-client';
(async () => {
  const c = await DapClient.connect(5699);
  await c.request('initialize', { clientID: 'x', adapterID: 'debugpy', pathFormat: 'path', linesStartAt1: true, columnsStartAt1: true });
  const att = c.request('attach', { justMyCode: false, pathMappings: [{ localRoot: process.argv[2], remoteRoot: process.argv[3] }] });
  await c.event('initialized', 120000);
  console.log(JSON.stringify((await c.request('setBreakpoints', { source: { path: process.argv[4] }, breakpoints: [{ line: Number(process.argv[5] ?? 2) }] })).body));
  await c.request('configurationDone'); await att;
  const s = await Promise.race([c.event('stopped', 120000), c.event('terminated', 120000)]);
  console.log(s.event, JSON.stringify(s.body));
  c.close();
})();
