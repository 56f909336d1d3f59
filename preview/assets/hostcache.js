// hostcache.js: the host cache and its refresh rules, one for every surface
// of a page (home cards, the screen, AI responses). It touches no DOM, so
// that its rules are tested apart from any page (hostcache_test.js, run by
// node --test): an ES module, bundled for the page.
//
// An entry is keyed by Instance, capability and the resolved query and
// arguments. It holds the last good result and the call under way, if any.
// Opening a source whose result is cached reuses it without a call; a load
// already under way for the same key is shared; a fresh result reaches every
// surface that subscribed; a failure never replaces a good result. A package
// change empties its Instance's entries and starts a new epoch: answers of
// the older one are discarded.

import { core } from './core.js';

// key is the cache key of a call: JSON with sorted object keys, so that
// equal arguments make equal keys.
export function key(instance, capability, query, args) {
  return core.writeJSON([instance, capability, query === undefined ? null : query, args === undefined ? {} : args]);
}

// isStorage reports whether a capability reads the Instance's storage, so
// that a storage change re-reads it.
export function isStorage(capability) { return capability === 'host.storage.list' || capability === 'host.storage.get'; }

export function Cache() {
  this.entries = new Map();
  this.epochs = {};
  this.generations = {};
  this.listeners = [];
  this.calls = 0;
}

// epoch is the Instance's package epoch: it moves on every package change.
Cache.prototype.epoch = function (instance) { return this.epochs[instance] || 0; };

// result returns the last good result of a key, or null.
Cache.prototype.result = function (k) {
  var e = this.entries.get(k);
  return e && e.result ? e.result : null;
};

// entry returns the key's entry, made empty when it has none.
Cache.prototype.entry = function (k, instance, capability) {
  var e = this.entries.get(k);
  if (!e) {
    e = { instance: instance, capability: capability, result: null, pending: null, revision: -1 };
    this.entries.set(k, e);
  }
  return e;
};

// load returns {promise, shared} for a call of key: the call under way
// when there is one that started at storage revision opts.revision or
// later (any, without a revision), else a new one made by call(). The
// promise resolves to the call's answer ({result} or {error}) with
// stale set when the Instance's package changed while it ran. A good
// answer is kept and published to every subscriber but opts.origin.
Cache.prototype.load = function (k, instance, capability, call, opts) {
  opts = opts || {};
  var self = this;
  var e = this.entries.get(k);
  var rev = opts.revision === undefined || opts.revision === null ? -1 : opts.revision;
  if (e && e.pending && !opts.fresh && e.revision >= rev) return { promise: e.pending, shared: true };
  e = this.entry(k, instance, capability);
  var epoch = this.epoch(instance);
  this.calls++;
  e.revision = rev;
  var p = Promise.resolve(call()).then(function (r) {
    r = r || { error: { code: 'ERROR', message: 'no answer' } };
    if (self.epoch(instance) !== epoch) return { result: r.result, error: r.error, stale: true };
    if (e.pending === p) e.pending = null;
    if (!r.error) {
      e.result = { result: r.result };
      self.publish(k, e.result, opts.origin);
    } else if (!e.result && !e.pending && self.entries.get(k) === e) {
      self.entries.delete(k);
    }
    return r;
  });
  e.pending = p;
  return { promise: p, shared: false };
};

// put keeps a result the host already has (a response's tool result, an
// invoke's stored result) and publishes it to every subscriber but origin.
Cache.prototype.put = function (k, instance, capability, result, origin) {
  var e = this.entry(k, instance, capability);
  e.result = { result: result };
  this.publish(k, e.result, origin);
};

// dropStorage forgets the Instance's storage results no call is renewing,
// so that the next open reads again.
Cache.prototype.dropStorage = function (instance) {
  var self = this;
  this.entries.forEach(function (e, k) {
    if (e.instance === instance && isStorage(e.capability) && !e.pending) self.entries.delete(k);
  });
};

// generation records the Instance's package generation as a surface
// loaded it. A generation other than the one recorded (or null: newer,
// not yet known) forgets every entry of the Instance and moves its epoch,
// so that calls under way for it answer stale; it reports whether it did.
// Surfaces of one Instance that see the same change clear it once.
Cache.prototype.generation = function (instance, g) {
  var known = this.generations[instance];
  if (g !== null && (known === undefined || known === g)) {
    this.generations[instance] = g;
    return false;
  }
  var self = this;
  if (g !== null) this.generations[instance] = g;
  this.epochs[instance] = this.epoch(instance) + 1;
  this.entries.forEach(function (e, k) { if (e.instance === instance) self.entries.delete(k); });
  return true;
};

// subscribe calls fn(key, result, origin) for every fresh result; it
// returns the function that ends the subscription.
Cache.prototype.subscribe = function (fn) {
  var self = this;
  this.listeners.push(fn);
  return function () { self.listeners = self.listeners.filter(function (l) { return l !== fn; }); };
};

Cache.prototype.publish = function (k, result, origin) {
  this.listeners.slice().forEach(function (fn) { fn(k, result, origin); });
};

// storagePlan is which sources a storage change re-reads: of the open
// surfaces (newest first), each storage source that has been shown,
// tried or loads by itself, each key once. A surface is {sources, keys,
// good, loading, errors}; the answer lists {surface, id}.
export function storagePlan(surfaces) {
  var done = {}, out = [];
  surfaces.forEach(function (s) {
    Object.keys(s.sources).forEach(function (id) {
      var decl = s.sources[id];
      if (!isStorage(decl.capability)) return;
      if (!(s.good[id] || s.loading[id] || s.errors[id] || decl.trigger !== 'manual')) return;
      var k = s.keys[id];
      if (k && done[k]) return;
      if (k) done[k] = true;
      out.push({ surface: s, id: id });
    });
  });
  return out;
}

// dueOnResume is which refresh_seconds sources (not storage ones, which a
// resume re-reads anyway) load once when the page is visible again: those
// whose period passed since they last loaded.
export function dueOnResume(surface, now) {
  return Object.keys(surface.sources).filter(function (id) {
    var s = surface.sources[id];
    return s.refresh_seconds && !isStorage(s.capability) && !surface.loading[id] && now - (surface.loadedAt[id] || 0) >= s.refresh_seconds * 1000;
  });
}

// autoRefresh reports whether a refresh_seconds timer loads its source
// now: only while the page is visible and the surface is shown.
export function autoRefresh(visibility, shown) { return visibility === 'visible' && !!shown; }

// discardReason says why an answer must not be shown, or null: the
// package changed while it ran, the surface closed, or a newer load of
// the same source answered first.
export function discardReason(a) {
  if (a.stale || a.epoch !== a.currentEpoch) return 'the package generation changed';
  if (!a.alive) return 'the screen was closed';
  if (a.token !== a.currentToken) return 'a newer load of the source answered first';
  return null;
}

// retryState reports whether a failed load shows the retry state: only
// when the source never had a good result (a failed refresh keeps it).
export function retryState(hadGood, error) { return !!error && !hadGood; }
