// The rules of the host cache (preview/assets/hostcache.js), without a page:
// node --test preview/testdata/hostcache.test.mjs (TestModulesUnderNode runs it).
import test from 'node:test';
import assert from 'node:assert/strict';
import * as hc from '../assets/hostcache.js';

// deferred is a call whose answer the test gives.
function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

const ok = (summary) => ({ result: { summary, data: { items: [] } } });

test('a key is the same for the same Instance, capability, query and arguments, in any key order', () => {
  assert.equal(hc.key('i1', 'host.storage.list', null, { namespace: 'notes', limit: 50 }),
    hc.key('i1', 'host.storage.list', null, { limit: 50, namespace: 'notes' }));
  const others = [
    hc.key('i2', 'host.storage.list', null, { namespace: 'notes', limit: 50 }),
    hc.key('i1', 'host.storage.get', null, { namespace: 'notes', limit: 50 }),
    hc.key('i1', 'host.storage.list', 'a', { namespace: 'notes', limit: 50 }),
    hc.key('i1', 'host.storage.list', null, { namespace: 'notes', limit: 49 }),
  ];
  const base = hc.key('i1', 'host.storage.list', null, { namespace: 'notes', limit: 50 });
  for (const k of others) assert.notEqual(k, base);
});

test('loads of one key share the call under way, and every other surface hears the result', async () => {
  const c = new hc.Cache();
  const k = hc.key('i1', 'notes.summary', null, {});
  const d = deferred();
  let calls = 0;
  const heard = [];
  c.subscribe((key, r, origin) => heard.push([key, r.result.summary, origin]));
  const a = c.load(k, 'i1', 'notes.summary', () => { calls++; return d.promise; }, { origin: 'home' });
  const b = c.load(k, 'i1', 'notes.summary', () => { calls++; return d.promise; }, { origin: 'screen' });
  assert.equal(a.shared, false);
  assert.equal(b.shared, true);
  assert.equal(calls, 1);
  d.resolve(ok('3 notes'));
  assert.equal((await a.promise).result.summary, '3 notes');
  assert.equal((await b.promise).result.summary, '3 notes');
  assert.deepEqual(heard, [[k, '3 notes', 'home']]);
  assert.equal(c.result(k).result.summary, '3 notes');
  assert.equal(c.entries.get(k).pending, null, 'no call is left under way');
});

test('a refresh makes a new call even while one is under way', async () => {
  const c = new hc.Cache();
  const k = hc.key('i1', 'weather.now', null, {});
  let calls = 0;
  c.load(k, 'i1', 'weather.now', () => { calls++; return new Promise(() => {}); });
  c.load(k, 'i1', 'weather.now', () => { calls++; return Promise.resolve(ok('sunny')); }, { fresh: true });
  assert.equal(calls, 2);
});

test('after a storage change a call started for an older revision is not shared', async () => {
  const c = new hc.Cache();
  const k = hc.key('i1', 'host.storage.list', null, { namespace: 'notes' });
  let calls = 0;
  const call = () => { calls++; return new Promise(() => {}); };
  c.load(k, 'i1', 'host.storage.list', call, { revision: 4 });
  assert.equal(c.load(k, 'i1', 'host.storage.list', call, { revision: 4 }).shared, true, 'same revision: shared');
  assert.equal(c.load(k, 'i1', 'host.storage.list', call, { revision: 5 }).shared, false, 'newer revision: a new call');
  assert.equal(c.load(k, 'i1', 'host.storage.list', call, { revision: 5 }).shared, true);
  assert.equal(calls, 2);
});

test('a failure never replaces a good result; a first failure leaves nothing cached', async () => {
  const c = new hc.Cache();
  const k = hc.key('i1', 'notes.summary', null, {});
  await c.load(k, 'i1', 'notes.summary', () => Promise.resolve(ok('good'))).promise;
  const r = await c.load(k, 'i1', 'notes.summary', () => Promise.resolve({ error: { code: 'CAPABILITY_FAILED' } }), { fresh: true }).promise;
  assert.equal(r.error.code, 'CAPABILITY_FAILED');
  assert.equal(c.result(k).result.summary, 'good');

  const k2 = hc.key('i1', 'notes.other', null, {});
  await c.load(k2, 'i1', 'notes.other', () => Promise.resolve({ error: { code: 'CAPABILITY_FAILED' } })).promise;
  assert.equal(c.result(k2), null);
  assert.equal(c.entries.has(k2), false);
});

test('a package change discards answers of the older generation, once for every surface', async () => {
  const c = new hc.Cache();
  const k = hc.key('i1', 'notes.summary', null, {});
  const other = hc.key('i2', 'notes.summary', null, {});
  assert.equal(c.generation('i1', 1), false, 'the first generation seen clears nothing');
  await c.load(other, 'i2', 'notes.summary', () => Promise.resolve(ok('i2'))).promise;
  const d = deferred();
  const heard = [];
  c.subscribe((key) => heard.push(key));
  const l = c.load(k, 'i1', 'notes.summary', () => d.promise);
  assert.equal(c.generation('i1', 2), true, 'a new generation clears the Instance');
  assert.equal(c.generation('i1', 2), false, 'the second surface to hear of it clears nothing');
  d.resolve(ok('old'));
  const r = await l.promise;
  assert.equal(r.stale, true);
  assert.equal(c.result(k), null, 'the old answer is not cached');
  assert.deepEqual(heard, [], 'nor published');
  assert.equal(c.result(other).result.summary, 'i2', 'another Instance keeps its results');
  assert.equal(hc.discardReason({ stale: r.stale, epoch: 0, currentEpoch: 1, alive: true, token: 1, currentToken: 1 }), 'the package generation changed');
  assert.equal(c.generation('i1', null), true, 'an unknown newer generation clears too');
});

test('a stored result is put in the cache and heard by other surfaces', () => {
  const c = new hc.Cache();
  const k = hc.key('i1', 'weather.lookup', null, { city: 'Oslo' });
  const heard = [];
  c.subscribe((key, r, origin) => heard.push([r.result.summary, origin]));
  c.put(k, 'i1', 'weather.lookup', { summary: 'Oslo 3°', data: {} }, 'screen');
  assert.deepEqual(heard, [['Oslo 3°', 'screen']]);
  assert.equal(c.result(k).result.summary, 'Oslo 3°');
});

test('a storage change drops storage results that no call renews, and only those', () => {
  const c = new hc.Cache();
  const list = hc.key('i1', 'host.storage.list', null, { namespace: 'notes' });
  const tool = hc.key('i1', 'notes.summary', null, {});
  const otherInstance = hc.key('i2', 'host.storage.list', null, { namespace: 'notes' });
  c.put(list, 'i1', 'host.storage.list', { summary: '', data: {} });
  c.put(tool, 'i1', 'notes.summary', { summary: '', data: {} });
  c.put(otherInstance, 'i2', 'host.storage.list', { summary: '', data: {} });
  c.dropStorage('i1');
  assert.equal(c.result(list), null);
  assert.notEqual(c.result(tool), null, 'a tool result is not re-run needlessly');
  assert.notEqual(c.result(otherInstance), null);
});

test('a storage change re-reads each shown storage source once, newest surface first', () => {
  const surface = (keys, extra) => Object.assign({
    sources: {
      notes: { capability: 'host.storage.list', trigger: 'load' },
      one: { capability: 'host.storage.get', trigger: 'manual' },
      tool: { capability: 'notes.summary', trigger: 'load' },
    },
    keys, good: {}, loading: {}, errors: {},
  }, extra || {});
  const screen = surface({ notes: 'K1', one: 'K2' });
  const home = surface({ notes: 'K1', one: 'K3' }, { good: { one: true } });
  const plan = hc.storagePlan([screen, home]).map((p) => [p.surface === screen ? 'screen' : 'home', p.id]);
  assert.deepEqual(plan, [['screen', 'notes'], ['home', 'one']],
    'K1 once (by the screen); the manual source the screen never loaded is left; the home\'s shown one is re-read; tools are not');
});

test('auto refresh runs only while visible and shown; a resume loads what fell due', () => {
  assert.equal(hc.autoRefresh('visible', true), true);
  assert.equal(hc.autoRefresh('hidden', true), false);
  assert.equal(hc.autoRefresh('visible', false), false);
  const s = {
    sources: {
      weather: { capability: 'weather.now', refresh_seconds: 60 },
      fresh: { capability: 'weather.now', refresh_seconds: 60 },
      busy: { capability: 'weather.now', refresh_seconds: 60 },
      notes: { capability: 'host.storage.list', refresh_seconds: 60 },
      once: { capability: 'weather.now' },
    },
    loading: { busy: true },
    loadedAt: { weather: 1000, fresh: 100000, busy: 0, notes: 0, once: 0 },
  };
  assert.deepEqual(hc.dueOnResume(s, 100000), ['weather']);
});

test('a failed load shows the retry state only when the source never had a good result', () => {
  assert.equal(hc.retryState(false, { code: 'X' }), true);
  assert.equal(hc.retryState(true, { code: 'X' }), false);
  assert.equal(hc.retryState(false, null), false);
});

test('answers are discarded when the surface closed or a newer load answered first', () => {
  const base = { stale: false, epoch: 3, currentEpoch: 3, alive: true, token: 2, currentToken: 2 };
  assert.equal(hc.discardReason(base), null);
  assert.equal(hc.discardReason({ ...base, alive: false }), 'the screen was closed');
  assert.equal(hc.discardReason({ ...base, currentToken: 3 }), 'a newer load of the source answered first');
});
