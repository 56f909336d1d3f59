// dashboard.js: the live storage dashboard (GET /dashboard), a view of the
// web host's shell: the viewer's Installations and Instances with their
// usage against the quotas, kept current through the page's connection
// (one storageChanged subscription per enabled Instance), and the changes
// as they are committed. window.pluginhostDashboard tells a test its state.
import { el, icon, add } from './ui.js';
import * as words from './words.js';

var INSTALLATION_LIMIT = 524288;
var INSTANCE_FIELDS = 'id name enabled storageRevision usage { namespace keys bytes maxBytes }';

export function Dashboard(opts) {
  var root = opts.root, conn = opts.conn;
  // status is live once every watched Instance's subscription answered
  // its snapshot: from then on, every change reaches the page.
  var state = { installations: [], instances: {}, events: [], status: 'connecting' };
  var snapped = {};
  var leaves = [];
  var gone = false;
  var mainEl = el('div', { 'class': 'ph-dash-main' }, [el('div', { 'class': 'ph-skeleton ph-skeleton-card', 'aria-hidden': 'true' })]);
  var logEl = el('ol', { 'class': 'ph-dash-log', 'aria-live': 'polite', id: 'log' });
  var statusEl = el('span', { 'class': 'ph-status-chip', id: 'status', 'data-state': state.status });
  add(root, [
    el('div', { 'class': 'ph-page-head' }, [el('h1', { 'class': 'ph-page-title', text: 'Storage dashboard' }),
      el('p', { 'class': 'ph-page-sub' }, ['What each of your Instances keeps, live. ', statusEl])]),
    el('div', { 'class': 'ph-dash-grid' }, [mainEl,
      el('section', { 'class': 'ph-dash-side', 'aria-labelledby': 'ph-dash-log-title' }, [el('h2', { 'class': 'ph-h2', id: 'ph-dash-log-title', text: 'Changes as they happen' }), logEl])])
  ]);
  setStatus(state.status);
  conn.onStatus(function (s) {
    if (gone) return;
    if (s === 'live') liveWhenSnapped();
    else { snapped = {}; setStatus('down'); }
  });
  function liveWhenSnapped() {
    var all = Object.keys(state.instances).every(function (id) { return !watched[id] || snapped[id]; });
    if (all && conn.connected()) setStatus('live');
  }
  var watched = {};

  function gql(q, v) {
    return conn.gql(q, v).then(function (r) {
      if (r.error) throw new Error(words.problem(r.error).text);
      return r.data;
    });
  }
  function setStatus(s) {
    state.status = s;
    statusEl.setAttribute('data-state', s);
    statusEl.textContent = s === 'live' ? 'Live' : s === 'down' ? 'Reconnecting…' : 'Connecting…';
  }

  function bar(used, max) {
    var pct = max ? Math.min(100, (100 * used) / max) : 0;
    var fill = el('span', { 'class': 'ph-meter-fill' + (pct > 90 ? ' ph-meter-high' : '') });
    fill.style.width = pct + '%';
    return el('div', { 'class': 'ph-meter', role: 'meter', 'aria-valuemin': '0', 'aria-valuemax': String(max), 'aria-valuenow': String(used), 'aria-label': words.bytes(used) + ' of ' + words.bytes(max) }, [fill]);
  }

  function render() {
    mainEl.textContent = '';
    if (!state.installations.length) {
      mainEl.appendChild(el('div', { 'class': 'ph-empty-state' }, [icon('inbox'), el('p', { text: 'No plugins installed yet.' })]));
    }
    state.installations.forEach(function (instl) {
      var rows = el('tbody');
      instl.instances.forEach(function (i) { rows.appendChild(instanceRow(state.instances[i.id])); });
      mainEl.appendChild(el('section', { 'class': 'ph-dash-card', 'data-installation': instl.id, 'aria-labelledby': 'ph-dash-' + instl.id }, [
        el('h2', { 'class': 'ph-dash-title', id: 'ph-dash-' + instl.id, text: instl.name + ' ' + instl.version }),
        el('p', { 'class': 'ph-setting-sub', text: instl.pluginId + ' · data policy ' + instl.dataPolicy + ' · ' + words.bytes(instl.usedBytes) + ' of 512 KiB over all its Instances' }),
        bar(instl.usedBytes, INSTALLATION_LIMIT),
        el('div', { 'class': 'ph-table-wrap' }, [el('table', { 'class': 'ph-table' }, [
          el('thead', null, [el('tr', null, [el('th', { scope: 'col', text: 'Instance' }), el('th', { scope: 'col', text: 'Revision' }), el('th', { scope: 'col', text: 'Namespaces' })])]),
          rows])])
      ]));
    });
  }

  function instanceRow(i) {
    var ns = el('div');
    i.usage.forEach(function (u) {
      ns.appendChild(el('div', { 'data-namespace': u.namespace, 'class': 'ph-dash-ns' }, [
        el('div', { 'class': 'ph-setting-sub', text: u.namespace + ': ' + u.keys + ' keys, ' + (u.bytes / 1024).toFixed(1) + ' KiB of ' + (u.maxBytes / 1024).toFixed(1) + ' KiB' }),
        bar(u.bytes, u.maxBytes)]));
    });
    var status = i.ended ? el('div', { 'class': 'ph-setting-error', text: i.ended }) : (i.enabled ? null : el('div', { 'class': 'ph-setting-error', text: 'disabled' }));
    return el('tr', { 'data-instance': i.id }, [
      el('td', null, [i.name, status]),
      el('td', { 'class': 'rev', 'data-revision': String(i.storageRevision), text: String(i.storageRevision) }),
      el('td', null, [ns])
    ]);
  }

  function replaceRow(id) {
    var old = root.querySelector('tr[data-instance="' + id + '"]');
    if (!old) return;
    var row = instanceRow(state.instances[id]);
    row.querySelector('.rev').classList.add('ph-flash');
    old.replaceWith(row);
  }

  var refreshing = {};
  function refresh(id) {
    if (refreshing[id]) { refreshing[id] = 'again'; return; }
    refreshing[id] = true;
    (function once() {
      if (refreshing[id] === 'again') refreshing[id] = true;
      gql('query($i: ID!) { instance(id: $i) { ' + INSTANCE_FIELDS + ' installation { id usedBytes } } }', { i: id }).then(function (data) {
        var instl = state.installations.filter(function (x) { return x.id === data.instance.installation.id; })[0];
        if (instl) instl.usedBytes = data.instance.installation.usedBytes;
        var rev = state.instances[id].storageRevision;
        var merged = Object.assign({}, state.instances[id], data.instance);
        merged.storageRevision = Math.max(rev, data.instance.storageRevision);
        state.instances[id] = merged;
        if (!gone) render();
        if (refreshing[id] === 'again') once(); else delete refreshing[id];
      }, function (e) {
        logLine('The usage of ' + state.instances[id].name + ' could not be read: ' + e.message);
        delete refreshing[id];
      });
    })();
  }

  function logLine(text) {
    logEl.insertBefore(el('li', { text: new Date().toLocaleTimeString() + ' ' + text }), logEl.firstChild);
  }

  function watch(id) {
    watched[id] = true;
    leaves.push(conn.subscribe(id, function (m) {
      var i = state.instances[id];
      if (m.type === 'change') {
        var c = m.change;
        if (c.operation === 'snapshot') { snapped[id] = true; liveWhenSnapped(); }
        var changed = c.storageRevision !== i.storageRevision;
        i.storageRevision = Math.max(i.storageRevision, c.storageRevision);
        state.events.push({ instanceId: id, operation: c.operation, namespace: c.namespace, key: c.key, storageRevision: c.storageRevision });
        if (c.operation !== 'snapshot') logLine(i.name + ': ' + c.operation + ' ' + (c.namespace || '') + (c.key ? '/' + c.key : '') + ' → revision ' + c.storageRevision);
        replaceRow(id);
        if (c.operation !== 'snapshot' || changed) refresh(id);
      } else if (m.type === 'ended') {
        delete watched[id];
        i.ended = 'live updates ended: the Instance is disabled or gone';
        state.events.push({ instanceId: id, operation: 'ended' });
        logLine(i.name + ': ' + i.ended);
        refresh(id);
      }
    }));
  }

  gql('{ installations { id pluginId name version dataPolicy usedBytes instances { ' + INSTANCE_FIELDS + ' } } }').then(function (data) {
    if (gone) return;
    state.installations = data.installations;
    data.installations.forEach(function (instl) {
      instl.instances.forEach(function (i) { state.instances[i.id] = Object.assign({}, i, { installation: instl.id }); });
    });
    render();
    Object.keys(state.instances).forEach(function (id) { if (state.instances[id].enabled) watch(id); });
    conn.open();
    liveWhenSnapped();
  }, function (e) {
    mainEl.textContent = '';
    mainEl.appendChild(el('p', { 'class': 'ph-setting-error', role: 'alert', text: 'The dashboard cannot be loaded: ' + e.message }));
    setStatus('down');
  });

  window.pluginhostDashboard = {
    state: function () { return JSON.parse(JSON.stringify(state)); },
    events: function () { return state.events.slice(); }
  };
  return {
    destroy: function () {
      gone = true;
      leaves.forEach(function (l) { l(); });
      delete window.pluginhostDashboard;
    }
  };
}
