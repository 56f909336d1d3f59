// fixtures.js: the preview's host. It implements the host interface of
// runtime.js on what the page embeds: the plugin's configs, the fixtures
// that stand in for capabilities, an in-page store for the storage tools
// (core.js), and localStorage for persisted state. It never touches the
// network; nothing it holds changes by itself, so it has no changes to watch.
export function fixturesHost(env) {
  var core = env.core, bundle = env.bundle, emit = env.emit;
  var fixtures = bundle.fixtures || {};
  var plugin = bundle.plugin;
  var store = new core.Store(plugin.storage || null);
  var used = {};
  var extensions = {};
  bundle.extensions.forEach(function (e) { extensions[e.id] = e; });
  function clone(v) { return v === undefined ? undefined : JSON.parse(JSON.stringify(v)); }
  function sleep(ms) { return new Promise(function (res) { setTimeout(res, ms); }); }

  // Seed the in-page store from the fixtures.
  if (fixtures.storage && plugin.storage) {
    Object.keys(fixtures.storage).forEach(function (ns) {
      if (ns === '$comment') return;
      fixtures.storage[ns].forEach(function (it) { store.seed(ns, it.key, it.value, it.revision); });
    });
  }

  // Persisted state lives in localStorage, namespaced per plugin and
  // extension. usesPersist: whether an extension can persist anything at
  // all; the first use of localStorage is slow, so a screen that never
  // persists skips it.
  function persistKey(extID) { return 'pluginhost-preview:' + plugin.id + ':' + extID + ':state'; }
  function usesPersist(ext) { return JSON.stringify(ext.config).indexOf('"persist":true') >= 0; }
  function persisted(extID) {
    if (extensions[extID] && !usesPersist(extensions[extID])) return {};
    try {
      var raw = window.localStorage.getItem(persistKey(extID));
      return raw ? JSON.parse(raw) : {};
    } catch (e) {
      return {};
    }
  }

  return {
    kind: 'fixtures',
    // instance names the one Instance the page shows, for the host cache.
    instance: 'preview',
    // load reads the plugin and its configs.
    load: function () {
      var fctx = fixtures.context || {};
      return Promise.resolve({
        plugin: plugin,
        extensions: bundle.extensions,
        start: bundle.start,
        generation: 1,
        context: fctx,
        route: fctx.route || {},
        state: fixtures.state || null,
        warnings: bundle.warnings || [],
        response: bundle.response || null
      });
    },
    // run answers a capability: the in-page store for the storage tools,
    // the fixtures for everything else. A capability without a fitting
    // fixture is an error the screen shows, never an empty result.
    run: function (capability, args, query) {
      if (capability.indexOf('host.storage.') === 0) {
        if (!plugin.storage) return Promise.resolve({ error: { code: 'PLUGIN_STORAGE_PERMISSION_DENIED', message: 'the plugin does not request the storage permission' } });
        return Promise.resolve(clone(store.invoke(capability, args)));
      }
      var list = (fixtures.capabilities || {})[capability];
      if (!list) {
        emit('fixture_missing', { capability: capability, arguments: args, query: query });
        return Promise.resolve({ error: { code: 'PREVIEW_NO_FIXTURE', message: 'the fixtures file has no response for ' + capability } });
      }
      var u = used[capability] || (used[capability] = []);
      for (var i = 0; i < list.length; i++) {
        var resp = list[i];
        if (resp.times !== undefined && (u[i] || 0) >= resp.times) continue;
        if (resp.query !== undefined && resp.query !== query) continue;
        var m = resp.match || {};
        var ok = Object.keys(m).every(function (k) { return core.isObject(args) && core.equal(args[k], m[k]); });
        if (!ok) continue;
        u[i] = (u[i] || 0) + 1;
        var answer = resp.error ? { error: { code: resp.error.code, message: resp.error.message || '' } } : { result: { summary: resp.result.summary, data: clone(resp.result.data), evidence: clone(resp.result.evidence || []) } };
        answer.fixture = i;
        return resp.delay_ms ? sleep(resp.delay_ms).then(function () { return answer; }) : Promise.resolve(answer);
      }
      emit('fixture_missing', { capability: capability, arguments: args, query: query });
      return Promise.resolve({ error: { code: 'PREVIEW_NO_FIXTURE', message: 'no response of the fixtures file matches this call of ' + capability } });
    },
    // persisted returns the values kept for an extension.
    persisted: persisted,
    // persist merges values into what is kept for an extension.
    persist: function (extID, values) {
      try {
        var cur = persisted(extID);
        Object.keys(values).forEach(function (k) { cur[k] = values[k]; });
        window.localStorage.setItem(persistKey(extID), JSON.stringify(cur));
        return Promise.resolve({ ok: true });
      } catch (e) {
        return Promise.resolve({ error: { code: 'PERSIST_UNAVAILABLE', message: 'the page cannot use localStorage here, so persisted state lasts only until reload' } });
      }
    },
    // image is null: the preview never loads an image; the runtime draws a
    // placeholder naming the URL.
    image: null,
    imageNote: 'the preview never loads images; the host fetches them through its image proxy',
    // watch: the fixtures never change by themselves.
    watch: function () {}
  };
}
