// live.js: the web host's host (GET /app and GET /app/{instance_id}/{extension}).
// It implements the host interface of runtime.js against the server, one
// host per surface: configs and persisted state from uiConfig, capability and
// storage tool runs through invoke, persisted state through
// setExtensionState, images only through the image proxy (ui-images:fetch),
// and changes from the storageChanged subscription. Every surface of the page
// shares one connection (Connection): GraphQL over HTTP and one
// websocket (graphql-transport-ws) with one storageChanged subscription per
// Instance, whatever the number of its surfaces, and the viewer's
// notifications (notificationAdded) for the bell (bell.js).
//
// The page holds no credential: every request is same-origin and carries the
// credentials the browser already sent for the page (the session cookie,
// HTTP Basic with the token as the password, or the header the browser was
// given). Nothing here reads, stores or logs a token.
import * as words from './words.js';

function errorOf(x, message) {
  var err = { code: (x && x.code) || 'ERROR', message: message || '' };
  ['reason', 'exitCode', 'problems', 'connection'].forEach(function (k) { if (x && x[k] !== undefined) err[k] = x[k]; });
  return err;
}

// answer reads a GraphQL answer into {data} or {error}.
function answer(status, body) {
  if (body && body.errors && body.errors.length) return { error: errorOf(body.errors[0].extensions, body.errors[0].message), data: body.data };
  if (body && body.error) return { error: errorOf(body.error, body.error.message) };
  if (status !== 200 || !body) return { error: { code: status === 401 ? 'UNAUTHENTICATED' : 'HTTP_' + status, message: 'the server answered ' + status } };
  return { data: body.data };
}

// The runtime names an extension, a connection and a notification's action by
// the plugin's own id (its manifestId or actionId), read here as id.
var notificationFields = 'id instanceId pluginId title body severity read createdAt actions { id: actionId label type extension }';

// Connection is the page's link to the server at the GraphQL path graphql.
// subscribe(instance, handler) joins the Instance's storageChanged
// subscription: handler({type: 'change', change}) for each event (a
// snapshot first, also to a surface that joins later), {type: 'ended'}
// when the server ends it, {type: 'closed'} when the socket drops; it
// returns the function that leaves it. onStatus(fn) hears the socket go
// 'live' and 'down'.
export function Connection(graphql) {
  var socket = null, acked = false, tries = 0, seq = 0, everLive = false;
  var subs = {};
  var statusFns = [];
  function status(s) { statusFns.forEach(function (fn) { fn(s); }); }
  // What can wait until the page's first screen shows its data (the
  // bell's list, the other screens' persisted state) waits, so that it
  // does not slow it: later(fn) runs fn then; settled() says it is.
  var waiting = [], isSettled = false;
  function later(fn) { if (isSettled) fn(); else waiting.push(fn); }
  function settled() {
    if (isSettled) return;
    isSettled = true;
    waiting.splice(0).forEach(function (fn) { fn(); });
  }
  setTimeout(settled, 1500);
  var onNotification = function () {};
  var onResponse = null, responseFields = '';

  // gql runs one GraphQL operation; it resolves to {data} or {error}. URLs
  // are built on location.origin: a page opened with credentials in its URL
  // may not fetch relative URLs, which would carry them.
  function gql(query, variables) {
    return fetch(location.origin + graphql, {
      method: 'POST', credentials: 'same-origin', cache: 'no-store',
      headers: { 'Content-Type': 'application/json', 'X-Pluginhost-App': '1' },
      body: JSON.stringify({ query: query, variables: variables || {} })
    }).then(function (resp) {
      return resp.json().catch(function () { return null; }).then(function (body) { return answer(resp.status, body); });
    }, function () {
      return { error: { code: 'UNREACHABLE', message: 'the server cannot be reached' } };
    });
  }

  function send(m) { if (socket && acked) socket.send(JSON.stringify(m)); }
  function subscribeMessage(instance, s) {
    send({ id: s.id, type: 'subscribe', payload: {
      query: 'subscription($i: ID!) { storageChanged(instanceId: $i) { storageRevision namespace key operation generation message } }',
      variables: { i: instance } } });
  }
  function byID(id) {
    for (var k in subs) if (subs[k].id === id) return { instance: k, sub: subs[k] };
    return null;
  }
  function tell(s, m) { s.handlers.slice().forEach(function (h) { h(m); }); }

  function connect() {
    if (socket) return;
    var ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + graphql, 'graphql-transport-ws');
    socket = ws;
    acked = false;
    ws.onopen = function () { ws.send(JSON.stringify({ type: 'connection_init', payload: {} })); };
    ws.onmessage = function (ev) {
      if (socket !== ws) return;
      var m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      if (m.type === 'connection_ack') {
        acked = true;
        tries = 0;
        Object.keys(subs).forEach(function (k) { subscribeMessage(k, subs[k]); });
        send({ id: 'n', type: 'subscribe', payload: { query: 'subscription { notificationAdded { ' + notificationFields + ' } }' } });
        if (onResponse) subscribeResponses();
        // Whatever came while the socket was away: the bell reads again
        // (not on the first connection: the bell has just read).
        if (everLive) onNotification(null);
        everLive = true;
        status('live');
        return;
      }
      if (m.type === 'ping') { ws.send(JSON.stringify({ type: 'pong' })); return; }
      if (m.id === 'n') {
        if (m.type === 'next' && m.payload && m.payload.data) onNotification(m.payload.data.notificationAdded);
        return;
      }
      if (m.id === 'r') {
        if (m.type === 'next' && m.payload && m.payload.data && onResponse) onResponse(m.payload.data.responseRendered);
        return;
      }
      var found = byID(m.id);
      if (!found) return;
      var s = found.sub;
      if (m.type === 'next' && m.payload && !(m.payload.errors && m.payload.errors.length)) {
        var c = m.payload.data.storageChanged;
        if (c.operation === 'snapshot') s.snapshot = { storageRevision: c.storageRevision, operation: 'snapshot', generation: c.generation };
        else if (s.snapshot) {
          s.snapshot.storageRevision = c.storageRevision;
          if (c.operation === 'package') s.snapshot.generation = c.generation;
        }
        tell(s, { type: 'change', change: c });
      } else if (m.type === 'next' || m.type === 'error' || m.type === 'complete') {
        // The server ended it (a disabled or removed Instance).
        delete subs[found.instance];
        tell(s, { type: 'ended' });
      }
    };
    ws.onclose = function () {
      if (socket !== ws) return;
      socket = null;
      acked = false;
      Object.keys(subs).forEach(function (k) { subs[k].snapshot = null; tell(subs[k], { type: 'closed' }); });
      status('down');
      tries++;
      setTimeout(connect, Math.min(30000, 500 * Math.pow(2, Math.min(tries, 6))));
    };
  }

  function subscribe(instance, handler) {
    var s = subs[instance];
    if (!s) {
      s = subs[instance] = { id: 's' + (++seq), handlers: [], snapshot: null };
      subscribeMessage(instance, s);
    }
    s.handlers.push(handler);
    connect();
    // A surface that joins a subscription already under way starts from
    // where it is.
    if (s.snapshot) handler({ type: 'change', change: { storageRevision: s.snapshot.storageRevision, operation: 'snapshot', generation: s.snapshot.generation } });
    return function () {
      s.handlers = s.handlers.filter(function (h) { return h !== handler; });
      if (s.handlers.length || subs[instance] !== s) return;
      delete subs[instance];
      send({ id: s.id, type: 'complete' });
    };
  }

  var notifications = {
    list: function () {
      return gql('query { notifications(first: 20) { unread notifications: nodes { ' + notificationFields + ' } } }')
        .then(function (r) { return r.error ? { error: r.error } : r.data.notifications; });
    },
    markRead: function (ids) {
      return gql('mutation($n: [ID!]!) { markNotificationsRead(ids: $n) }', { n: ids })
        .then(function (r) { return r.error ? { error: r.error } : { ok: true }; });
    },
    // run takes an action; host actions change storage, and the open
    // surfaces re-read their storage sources on the change's own event.
    run: function (id, action) {
      return gql('mutation($n: ID!, $a: String!) { runNotificationAction(notificationId: $n, actionId: $a) { type instanceId extension parameters result { summary } } }', { n: id, a: action })
        .then(function (r) { return r.error ? { error: r.error } : r.data.runNotificationAction; });
    },
    // watch hears each new notification; null says to read the list again.
    watch: function (fn) { onNotification = fn; connect(); }
  };

  function subscribeResponses() {
    send({ id: 'r', type: 'subscribe', payload: { query: 'subscription { responseRendered { ' + responseFields + ' } }' } });
  }
  // watchResponses hears each response UI rendered for the viewer from
  // now on (fields: the RenderedResponse fields to ask for).
  function watchResponses(fields, fn) {
    var was = onResponse;
    onResponse = fn;
    responseFields = fields;
    if (!was) subscribeResponses();
    connect();
  }

  // A browser that comes back online tries at once.
  window.addEventListener('online', function () {
    if (!socket) { tries = 0; connect(); }
  });

  return {
    gql: gql, subscribe: subscribe, notifications: notifications, watchResponses: watchResponses,
    // connected reports whether the socket is open and acknowledged.
    connected: function () { return acked; },
    onStatus: function (fn) { statusFns.push(fn); },
    later: later, settled: settled,
    // open connects the socket (for a page that subscribes to nothing).
    open: connect
  };
}

// liveHost is the host of one surface (env.bundle.live names its
// Instance and extension) on the page's connection conn.
export function liveHost(conn, env) {
  var bundle = env.bundle;
  var live = bundle.live;
  var instanceID = live.instance_id;
  var gql = conn.gql;
  var persistedState = {};
  var loaded = null; // the last successful load
  var listener = function () {};
  var leave = null, lastRevision = null, blockedPoll = null, closed = false;
  // subscribed: the Instance's subscription has answered its snapshot on
  // the open socket, so every storage write reaches the surface as a
  // storageChanged event, its own writes too.
  var subscribed = false;

  var instanceQuery = 'query($i: ID!) { viewer { name admin } instance(id: $i) { id name enabled grants installation { id pluginId name version generation permissions aiStorageConsent extensions { id: manifestId point } } } }';

  // blockedOf says why an Instance cannot be shown, or null.
  function blockedOf(r) {
    if (r.error) {
      if (r.error.code === 'PLUGIN_STORAGE_PERMISSION_DENIED' || r.error.code === 'FORBIDDEN') return { blocked: 'denied', title: 'This is not one of your plugins', error: { code: r.error.code, message: 'The Instance this link opens is someone else\'s, or it was deleted.' } };
      return { blocked: 'unavailable', title: 'The plugin cannot be loaded', error: { code: r.error.code, message: words.problem(r.error).text } };
    }
    var inst = r.data.instance;
    if (!inst) return { blocked: 'not_found', title: 'This is not one of your plugins', error: { code: 'NOT_FOUND', message: 'The Instance this link opens is someone else\'s, or it was deleted.' } };
    if (!inst.enabled) return { blocked: 'disabled', title: 'This Instance is disabled', error: { code: 'DISABLED', message: 'Its data is kept, but nothing can be read or written until it is enabled again.' } };
    return null;
  }

  // startQuery is webhost.StartQuery; the page usually carries its answer
  // for the first load (live.preload), which saves a request.
  var startQuery = live.start_query;

  function noExtension(instl) {
    var names = instl.extensions.filter(function (e) { return e.point === 'screen' || e.point === 'home'; }).map(function (e) { return words.idWords(e.id); });
    return { blocked: 'no_extension', title: instl.name + ' has no such screen', error: { code: 'BAD_USER_INPUT', message: 'It may have been removed in an update. Its screens: ' + (names.join(', ') || 'none') + '.' } };
  }

  // load reads, in one request, the Instance, its package's extensions with
  // their configs, and the opening extension's config, generation and
  // persisted state; the other extensions' persisted state follows.
  function load() {
    var pre = live.preload;
    live.preload = null;
    var first = pre ? Promise.resolve(answer(pre.status, pre.body)) : gql(startQuery, { i: instanceID, e: live.extension });
    return first.then(function (r) {
      if (r.error) {
        // Say why: a blocked Instance, or an extension it does not have.
        return gql(instanceQuery, { i: instanceID }).then(function (r2) {
          var b = blockedOf(r2);
          if (b) return b;
          if (r.error.code === 'BAD_USER_INPUT') return noExtension(r2.data.instance.installation);
          return blockedOf(r);
        });
      }
      var b = blockedOf(r);
      if (b) return b;
      var inst = r.data.instance, instl = inst.installation, start = r.data.start;
      // A response surface (live.response: a rendered response) shows its
      // response extension; every other surface a screen or a home one.
      var exts = instl.extensions.filter(function (e) {
        return e.point === 'screen' || e.point === 'home' || (live.response && e.point === 'response' && e.id === live.extension);
      });
      if (!exts.some(function (e) { return e.id === live.extension; })) return noExtension(instl);
      if (live.response && live.response.generation !== start.generation) {
        return { blocked: 'stale', title: 'This answer was for an older version', error: { code: 'PLUGIN_STORAGE_CONFLICT', message: 'The plugin ' + instl.name + ' was updated since the assistant showed this answer.' } };
      }
      // A hidden extension is reached only by the plugin's own navigate.
      if (exts.some(function (e) { return e.id === live.extension && e.placement === 'hidden'; })) {
        return { blocked: 'hidden', title: 'This screen opens from within the plugin', error: { code: 'HIDDEN', message: instl.name + ' shows it only from its own screens; open one of them instead.' } };
      }
      persistedState = {};
      persistedState[start.extension] = start.persistedState || {};
      // The revision the first reads saw (the server's, for a page it
      // started): a change before the subscription's snapshot is re-read.
      if (lastRevision === null && typeof inst.storageRevision === 'number') lastRevision = inst.storageRevision;
      var list = exts.map(function (e) { return { id: e.id, point: e.point, config: e.id === start.extension ? start.config : e.config }; });
      var grants = {};
      inst.grants.forEach(function (g) { grants[g] = true; });
      var cs = connectionsOf(inst.connections);
      loaded = {
        plugin: { id: instl.pluginId, name: instl.name + ' · ' + inst.name, version: instl.version, permissions: instl.permissions, capabilities: [] },
        extensions: list,
        start: live.extension,
        generation: start.generation,
        context: {
          platform: 'web',
          permissions: { storage: true, ai_storage: !!instl.aiStorageConsent, network: !!grants.network },
          connections: cs.connections,
          connected: cs.connected,
          connection_kinds: cs.kinds,
          connection_state: cs.state
        },
        route: live.route || {},
        state: null,
        warnings: []
      };
      // The response shows the result the assistant chose, as the result
      // of its data sources of the capability: no call.
      if (live.response) {
        var ids = Object.keys(live.response.data || {});
        loaded.response = { capability: live.response.capability, result: ids.length ? live.response.data[ids[0]] : null, verdict: { renders: true, checks: [] } };
      }
      conn.later(function () { loadPersistedOthers(exts.filter(function (e) { return e.id !== start.extension; }), start.generation); });
      return loaded;
    });
  }

  // loadPersistedOthers reads the persisted state of the other extensions.
  function loadPersistedOthers(exts, generation) {
    if (!exts.length) return;
    var vars = { i: instanceID }, fields = [], decl = ['$i: ID!'];
    exts.forEach(function (e, n) {
      vars['e' + n] = e.id;
      decl.push('$e' + n + ': String!');
      fields.push('c' + n + ': uiConfig(instanceId: $i, extension: $e' + n + ') { extension generation persistedState }');
    });
    gql('query(' + decl.join(', ') + ') { ' + fields.join(' ') + ' }', vars).then(function (c) {
      if (c.error || !loaded || loaded.generation !== generation) return;
      exts.forEach(function (e, n) {
        var u = c.data['c' + n];
        if (u && !(u.extension in persistedState)) persistedState[u.extension] = u.persistedState || {};
      });
    });
  }

  var runMutation = 'mutation($i: ID!, $c: String!, $a: JSON, $q: String, $g: Int) { invoke(instanceId: $i, capability: $c, arguments: $a, query: $q, generation: $g) { summary data evidence { type instanceId namespace key revision } } }';
  var writes = { 'host.storage.create': true, 'host.storage.update': true, 'host.storage.delete': true };

  // recheck reads the Instance again after a refusal: a disabled Instance
  // blocks the page, a newer generation marks the answer stale.
  function recheck(err) {
    return gql(instanceQuery, { i: instanceID }).then(function (r) {
      var b = blockedOf(r);
      if (b) { listener({ type: 'blocked', kind: b.blocked, message: b.error.message, title: b.title }); watchBlocked(); return err; }
      if (loaded && r.data.instance.installation.generation !== loaded.generation) {
        err.stale_generation = true;
        err.message = 'the plugin was updated while this ran; the screen reloads with the new version';
      }
      return err;
    });
  }

  // A server older than the contract's invoke(query, generation) gets the
  // older form; the generation is then checked by the package events alone.
  var runMutationOld = 'mutation($i: ID!, $c: String!, $a: JSON) { invoke(instanceId: $i, capability: $c, arguments: $a) { summary data evidence { type instanceId namespace key revision } } }';
  var oldInvoke = false;
  function invoke(vars) {
    if (oldInvoke) return gql(runMutationOld, { i: vars.i, c: vars.c, a: vars.a });
    return gql(runMutation, vars).then(function (r) {
      if (r.error && /Unknown argument "(query|generation)" on field "Mutation.invoke"/.test(r.error.message)) {
        oldInvoke = true;
        return invoke(vars);
      }
      return r;
    });
  }

  function run(capability, args, query, generation) {
    return invoke({ i: instanceID, c: capability, a: args, q: query, g: generation || null }).then(function (r) {
      if (r.error) {
        var code = r.error.code;
        if (code === 'PLUGIN_STORAGE_CONFLICT' || code === 'PLUGIN_STORAGE_PERMISSION_DENIED' || code === 'PERMISSION_DENIED') {
          return recheck(r.error).then(function (e) { return { error: e }; });
        }
        return { error: r.error };
      }
      var out = { result: { summary: r.data.invoke.summary, data: r.data.invoke.data, evidence: r.data.invoke.evidence || [] } };
      // The page re-reads its storage sources on the write's own event
      // while subscribed, and at once when it is not.
      if (writes[capability] && !subscribed) out.changed = true;
      return out;
    });
  }

  // connectionsOf is what bindings see of each connection (never its
  // secret), whether all are connected, each one's kind and whether its
  // provider refused it (state), for the host's own connect banners.
  function connectionsOf(list) {
    var out = { connections: {}, connected: true, kinds: {}, state: {} };
    (list || []).forEach(function (c) {
      out.connections[c.id] = { connected: c.connected, label: c.label, account: c.account || null };
      out.kinds[c.id] = c.kind;
      out.state[c.id] = { refused: c.refusedStatus || null, refusedAt: c.refusedAt || null };
      out.connected = out.connected && c.connected;
    });
    return out;
  }
  var connectionsQuery = 'query($i: ID!) { instance(id: $i) { connections { id: manifestId label kind connected account refusedStatus refusedAt } } }';

  // connections reads the Instance's connections again.
  function connections() {
    return gql(connectionsQuery, { i: instanceID }).then(function (r) {
      if (r.error) return { error: r.error };
      return connectionsOf(r.data.instance.connections);
    });
  }

  // connectKey keeps an API key for a connection; the page forgets it.
  function connectKey(id, key) {
    return gql('mutation($i: ID!, $c: String!, $k: String!) { connectApiKey(instanceId: $i, connection: $c, key: $k) { connected } }', { i: instanceID, c: id, k: key })
      .then(function (r) { return r.error ? { error: r.error } : connections(); });
  }

  // startOAuth returns the provider's page to send the user to; the
  // provider sends the user back to this page.
  function startOAuth(id) {
    return gql('mutation($i: ID!, $c: String!) { startOAuth(instanceId: $i, connection: $c) { authorizationUrl } }', { i: instanceID, c: id })
      .then(function (r) { return r.error ? { error: r.error } : { url: r.data.startOAuth.authorizationUrl }; });
  }

  // grant gives the Instance a permission (network) the plugin requests.
  function grant(permission) {
    return gql('mutation($i: ID!, $p: String!) { setInstanceGrant(instanceId: $i, permission: $p, granted: true) { grants installation { permissions aiStorageConsent } } }', { i: instanceID, p: permission })
      .then(function (r) {
        if (r.error) return { error: r.error };
        var g = {};
        r.data.setInstanceGrant.grants.forEach(function (x) { g[x] = true; });
        return { permissions: { storage: true, ai_storage: !!r.data.setInstanceGrant.installation.aiStorageConsent, network: !!g.network } };
      });
  }

  function disconnect(id) {
    return gql('mutation($i: ID!, $c: String!) { disconnect(instanceId: $i, connection: $c) }', { i: instanceID, c: id })
      .then(function (r) { return r.error ? { error: r.error } : connections(); });
  }

  function persist(extID, values) {
    return gql('mutation($i: ID!, $e: String!, $v: JSON!) { setExtensionState(instanceId: $i, extension: $e, values: $v) }', { i: instanceID, e: extID, v: values }).then(function (r) {
      if (r.error) return { error: r.error };
      persistedState[extID] = r.data.setExtensionState || {};
      return { ok: true };
    });
  }

  // image asks the server's image proxy; the page never requests the URL.
  function image(url) {
    return fetch(location.origin + live.images, {
      method: 'POST', credentials: 'same-origin', cache: 'no-store',
      headers: { 'Content-Type': 'application/json', 'X-Pluginhost-App': '1' },
      body: JSON.stringify({ url: url })
    }).then(function (resp) {
      if (resp.ok) return resp.blob().then(function (b) { return { src: URL.createObjectURL(b) }; });
      return resp.json().catch(function () { return {}; }).then(function (body) {
        var e = (body && body.error) || {};
        var err = { code: e.code || 'HTTP_' + resp.status, message: e.message || '' };
        if (body && body.reason) err.reason = body.reason;
        else if (e.reason) err.reason = e.reason;
        if (resp.status === 403) err.reason = 'no network permission';
        return { error: err };
      });
    }, function () { return { error: { code: 'UNREACHABLE', message: 'the server cannot be reached' } }; });
  }

  // ---- Changes: the Instance's storageChanged events ---------------------

  function join() {
    if (leave || closed) return;
    leave = conn.subscribe(instanceID, function (m) {
      if (m.type === 'change') change(m.change);
      else if (m.type === 'closed') {
        subscribed = false;
        listener({ type: 'status', status: 'reconnecting', message: 'live updates paused; reconnecting' });
      } else if (m.type === 'ended') {
        leave = null;
        subscribed = false;
        ended();
      }
    });
  }
  function part() {
    subscribed = false;
    if (leave) { var l = leave; leave = null; l(); }
  }
  function change(c) {
    if (c.operation === 'snapshot') {
      subscribed = true;
      listener({ type: 'status', status: 'live' });
      if (lastRevision !== null && c.storageRevision !== lastRevision) listener({ type: 'storage', operation: 'resync', revision: c.storageRevision });
      lastRevision = c.storageRevision;
      if (loaded && c.generation !== undefined && c.generation !== loaded.generation) listener({ type: 'package', generation: c.generation });
      return;
    }
    if (c.operation === 'development') { listener({ type: 'development', message: c.message || '' }); return; }
    lastRevision = c.storageRevision;
    if (c.operation === 'package') { listener({ type: 'package', generation: c.generation }); return; }
    listener({ type: 'storage', namespace: c.namespace, operation: c.operation, revision: c.storageRevision });
  }
  // ended: the subscription ended (a disabled or removed Instance): say why.
  function ended() {
    recheck({ code: 'ENDED', message: '' }).then(function () {
      if (!blockedPoll && !closed) {
        listener({ type: 'status', status: 'reconnecting', message: 'live updates ended; reconnecting' });
        setTimeout(join, 1000);
      }
    });
  }
  // watchBlocked checks now and then whether a blocked Instance is back.
  function watchBlocked() {
    if (blockedPoll || closed) return;
    part();
    listener({ type: 'status', status: 'ended', message: 'live updates ended' });
    blockedPoll = setInterval(function () {
      gql(instanceQuery, { i: instanceID }).then(function (r) {
        if (blockedOf(r) || closed) return;
        clearInterval(blockedPoll);
        blockedPoll = null;
        listener({ type: 'unblocked' });
        join();
      });
    }, 3000);
  }

  return {
    kind: 'live',
    instance: instanceID,
    load: load,
    run: run,
    persisted: function (extID) { return persistedState[extID] || {}; },
    persist: persist,
    image: image,
    connectKey: connectKey,
    startOAuth: startOAuth,
    disconnect: disconnect,
    connections: connections,
    grant: grant,
    watch: function (l) {
      listener = l;
      if (loaded) join();
      else watchBlocked();
    },
    // close leaves the subscription: the surface is gone.
    close: function () {
      closed = true;
      part();
      if (blockedPoll) { clearInterval(blockedPoll); blockedPoll = null; }
    }
  };
}
