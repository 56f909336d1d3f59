// The web host's addresses (preview/assets/router.js) and what it says to a
// person (preview/assets/words.js), without a page:
// node --test preview/testdata/webhost.test.mjs (TestModulesUnderNode runs it).
import test from 'node:test';
import assert from 'node:assert/strict';
import * as router from '../assets/router.js';
import * as words from '../assets/words.js';

test('every view is an address, and an address is its view', () => {
  const rows = [
    ['/app', '', { kind: 'home' }],
    ['/app/', '', { kind: 'home' }],
    ['/dashboard', '', { kind: 'dashboard' }],
    ['/app/inst_1/-/settings', '', { kind: 'settings', instance: 'inst_1' }],
    ['/app/inst_1/main', '', { kind: 'screen', instance: 'inst_1', extension: 'main', params: {} }],
    ['/app/inst_1/detail', '?key=milk&n=3&debug=1', { kind: 'screen', instance: 'inst_1', extension: 'detail', params: { key: 'milk', n: '3' } }],
    ['/app/inst%201/my%2Fscreen', '?k=a%26b', { kind: 'screen', instance: 'inst 1', extension: 'my/screen', params: { k: 'a&b' } }],
  ];
  for (const [path, search, want] of rows) assert.deepEqual(router.parse(path, search), want, path + search);
  for (const path of ['/', '/app/-/graphql', '/app/i/-/graphql', '/app/i/-/other', '/app/a/b/c/d', '/app/%E0%A4%A']) {
    assert.equal(router.parse(path, ''), null, path);
  }
  // href writes them back, parameters in order, with the debug view kept.
  const v = { kind: 'screen', instance: 'inst 1', stack: [{ extension: 'main', params: {} }, { extension: 'detail', params: { key: 'a&b', n: 3, o: { x: 1 } } }] };
  assert.equal(router.href(v, false), '/app/inst%201/detail?key=a%26b&n=3&o=%7B%22x%22%3A1%7D');
  assert.equal(router.href({ kind: 'settings', instance: 'i' }, true), '/app/i/-/settings?debug=1');
  assert.equal(router.href({ kind: 'home' }, false), '/app');
  assert.equal(router.href({ kind: 'dashboard' }, false), '/dashboard');
  const back = router.parse('/app/inst%201/detail', '?key=a%26b&n=3');
  assert.equal(back.extension, 'detail');
  assert.deepEqual(back.params, { key: 'a&b', n: '3' });
});

test('a reload keeps the screens a screen was opened from; a shared link opens its screen alone', () => {
  const stack = [{ extension: 'main', params: {}, result_state: null }, { extension: 'detail', params: { key: 'milk', n: 3 }, result_state: 'opened' }];
  const state = router.viewState({ kind: 'screen', instance: 'i1', stack });
  assert.deepEqual(state, { ph: 1, kind: 'screen', instance: 'i1', stack });
  // The same address: the whole stack, with typed parameters.
  const reloaded = router.fromHistory(state, '/app/i1/detail', '?key=milk&n=3');
  assert.deepEqual(reloaded.stack, stack);
  assert.deepEqual(reloaded.params, { key: 'milk', n: 3 });
  // Another address under the same state (a link typed in the same tab):
  // the address wins, alone.
  for (const [path, search] of [['/app/i1/detail', '?key=eggs&n=3'], ['/app/i1/main', ''], ['/app/i2/detail', '?key=milk&n=3']]) {
    const v = router.fromHistory(state, path, search);
    assert.equal(v.stack.length, 1, path + search);
    assert.deepEqual(v.stack[0].params, router.parse(path, search).params);
  }
  // No state: the address alone.
  assert.deepEqual(router.fromHistory(null, '/app/i1/detail', '?key=milk').stack, [{ extension: 'detail', params: { key: 'milk' }, result_state: null }]);
  assert.deepEqual(router.fromHistory({ ph: 1, kind: 'home' }, '/app/i1/-/settings', ''), { kind: 'settings', instance: 'i1' });
  assert.equal(router.fromHistory(null, '/somewhere', ''), null);
});

test('stacks share the routes they open with the same parameters, in any key order', () => {
  const a = [{ extension: 'main', params: {} }, { extension: 'detail', params: { key: 'milk', o: { x: 1, y: 2 } } }];
  assert.equal(router.common(a, [{ extension: 'main', params: {} }, { extension: 'detail', params: { o: { y: 2, x: 1 }, key: 'milk' } }]), 2);
  assert.equal(router.common(a, [{ extension: 'main', params: {} }]), 1);
  assert.equal(router.common(a, [{ extension: 'main', params: {} }, { extension: 'detail', params: { key: 'eggs' } }]), 1);
  assert.equal(router.common(a, [{ extension: 'about', params: {} }]), 0);
});

test('errors are said in words, with the action that fixes them', () => {
  const names = { plugin: 'Weather', connection: (id) => ({ key: 'Weather service key' })[id] };
  const rows = [
    [{ code: 'CAPABILITY_FAILED', reason: 'connection_required', connection: 'key' }, 'connect', 'Connect Weather service key to use this.'],
    [{ code: 'CAPABILITY_FAILED', reason: 'exit', exitCode: 1, connection: 'key', refused: 401 }, 'fix_key', 'Weather service key refused the key (HTTP 401). Enter a new one.'],
    [{ code: 'CAPABILITY_FAILED', reason: 'network_denied' }, 'grant', 'Weather needs your permission to use the network.'],
    [{ code: 'CAPABILITY_FAILED', reason: 'timeout' }, 'retry', 'Weather took too long to answer. Try again in a moment.'],
    [{ code: 'CAPABILITY_FAILED', reason: 'exit', exitCode: 1 }, 'retry', null],
    [{ code: 'PLUGIN_STORAGE_QUOTA_EXCEEDED', message: 'namespace "notes" would hold 70000 bytes' }, 'settings', null],
    [{ code: 'UNREACHABLE' }, 'retry', null],
    [{ code: 'UNAUTHENTICATED' }, 'sign_in', null],
    [{ code: 'PLUGIN_STORAGE_PERMISSION_DENIED' }, 'settings', null],
    [{ code: 'SOMETHING_NEW' }, 'retry', null],
  ];
  for (const [err, action, text] of rows) {
    const p = words.problem(err, names);
    assert.equal(p.action, action, JSON.stringify(err));
    if (text) assert.equal(p.text, text);
    // A person never reads a code.
    assert.doesNotMatch(p.text, /[A-Z]{3,}_[A-Z]+|CAPABILITY|exit code|\(exit/, JSON.stringify(err));
  }
  assert.equal(words.codeOf({ code: 'CAPABILITY_FAILED', reason: 'exit', exitCode: 1, message: 'the module exited' }), 'CAPABILITY_FAILED (exit 1) – the module exited');
});

test('names, not ids', () => {
  assert.equal(words.screenLabel({ id: 'main', config: { app_bar: { title: 'Notes' } } }), 'Notes');
  assert.equal(words.screenLabel({ id: 'week_plan', config: { app_bar: { title: '{{state.title}}' } } }), 'Week plan');
  assert.equal(words.screenLabel({ id: 'trip-list', config: {} }), 'Trip list');
  assert.equal(words.instanceName('Notes', 'Work'), 'Notes · Work');
  assert.equal(words.instanceName('Notes', 'Notes'), 'Notes');
  assert.equal(words.iconName({ name: 'home' }), 'home');
  assert.equal(words.iconName(3), null);
  assert.equal(words.bytes(1), '1 byte');
  assert.equal(words.bytes(3482), '3.4 KiB');
  assert.equal(words.plural(1, 'item'), '1 item');
  assert.equal(words.plural(12, 'item'), '12 items');
  const now = Date.parse('2025-01-01T12:00:00Z');
  assert.equal(words.when('2025-01-01T11:59:30Z', now), 'just now');
  assert.equal(words.when('2025-01-01T11:30:00Z', now), '30 min ago');
  assert.equal(words.when('nonsense', now), '');
});
