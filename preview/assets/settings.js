// settings.js: an Instance's settings (GET /app/{instance_id}/-/settings):
// its connections (connect, change or remove a key, connect again through
// the provider, the account and when its access expires, a key the
// provider refused), what it may do (the network, the assistant's access to
// its data, notifications), its data (what it holds, a reset that says what
// is lost), and the Instance itself (on or off, deleted). Every change is
// made at once and said where it was made; a refusal says why in words.
import { el, icon, add, confirm, announce } from './ui.js';
import * as words from './words.js';

// Settings draws the settings of opts.instance into opts.root: opts.query
// is webhost.SettingsQuery, opts.preload the server's answer to it when it
// ran it for the page.
export function Settings(opts) {
  var root = opts.root;
  var inst = null;
  var notes = {}; // what the last change of a part said: {text, error}
  var busy = {};
  var gone = false;

  function gql(q, v) { return opts.conn.gql(q, v); }

  function load() {
    var first = opts.preload ? Promise.resolve(answerOf(opts.preload)) : gql(opts.query, { i: opts.instance });
    opts.preload = null;
    return first.then(function (r) {
      if (gone) return;
      if (r.error || !r.data || !r.data.instance) {
        root.textContent = '';
        add(root, [el('h1', { 'class': 'ph-page-title', text: 'Settings' }),
          el('div', { 'class': 'ph-empty-state', role: 'alert' }, [icon('warning'),
            el('p', { text: r.error && r.error.code !== 'PLUGIN_STORAGE_PERMISSION_DENIED' ? words.problem(r.error).text : 'This is not one of your Instances: it is someone else\'s, or it was deleted.' })])]);
        return;
      }
      inst = r.data.instance;
      if (opts.extensions) opts.extensions(inst.installation.extensions);
      render();
    });
  }
  function answerOf(p) {
    var b = p.body || {};
    if (b.errors && b.errors.length) return { error: { code: (b.errors[0].extensions || {}).code || 'ERROR', message: b.errors[0].message } };
    return { data: b.data };
  }

  function note(part) {
    var n = notes[part];
    if (!n) return null;
    return el('p', { 'class': 'ph-setting-note' + (n.error ? ' ph-setting-error' : ''), role: n.error ? 'alert' : 'status', 'data-ph-note': part, text: n.text });
  }
  function say(part, text, error) {
    notes[part] = { text: text, error: !!error };
    if (!error) announce(text);
  }
  // change runs a mutation for a part, says what it did, and reads the
  // Instance again.
  function change(part, q, v, done) {
    busy[part] = true;
    render();
    return gql(q, v).then(function (r) {
      busy[part] = false;
      if (r.error) say(part, words.problem(r.error).text + (opts.debug ? ' [' + words.codeOf(r.error) + ']' : ''), true);
      else if (done) say(part, done(r.data));
      return gql(opts.query, { i: opts.instance }).then(function (r2) {
        if (!r2.error && r2.data.instance) inst = r2.data.instance;
        render();
        return r;
      });
    });
  }

  function section(id, title, kids) {
    return el('section', { 'class': 'ph-settings-section', 'aria-labelledby': 'ph-set-' + id, 'data-ph-section': id }, [
      el('h2', { 'class': 'ph-h2', id: 'ph-set-' + id, text: title })].concat(kids));
  }
  function row(kids, attrs) { return el('div', Object.assign({ 'class': 'ph-setting-row' }, attrs || {}), kids); }
  function text(main, sub) {
    return el('div', { 'class': 'ph-setting-text' }, [el('div', { 'class': 'ph-setting-label', text: main }), sub ? el('div', { 'class': 'ph-setting-sub', text: sub }) : null]);
  }
  function toggle(id, label, checked, disabled, onchange) {
    var input = el('input', { type: 'checkbox', role: 'switch', 'class': 'ph-switch', id: id, checked: checked, disabled: disabled, 'aria-label': label, 'data-ph-toggle': id });
    input.addEventListener('change', function () { onchange(input.checked); });
    return input;
  }

  function render() {
    if (!inst || gone) return;
    var focusKey = document.activeElement && root.contains(document.activeElement) ? document.activeElement.getAttribute('data-ph-focus') || document.activeElement.id : null;
    var instl = inst.installation;
    var name = words.instanceName(instl.name, inst.name);
    root.textContent = '';
    add(root, [
      el('div', { 'class': 'ph-page-head' }, [
        el('h1', { 'class': 'ph-page-title', text: 'Settings' }),
        el('p', { 'class': 'ph-page-sub', text: name + ' · version ' + instl.version })
      ]),
      connectionsPart(), permissionsPart(), dataPart(), instancePart(name)
    ]);
    if (focusKey) {
      var again = root.querySelector('[data-ph-focus="' + focusKey + '"]') || document.getElementById(focusKey);
      if (again) again.focus();
    }
  }

  // ---- Connections ------------------------------------------------------------

  function connectionsPart() {
    if (!inst.connections.length) return null;
    return section('connections', 'Connections', inst.connections.map(connectionRow));
  }
  function connectionRow(c) {
    var part = 'conn:' + c.id;
    var status;
    if (c.refusedStatus) status = c.label + ' refused ' + (c.kind === 'api_key' ? 'this key' : 'this connection') + ' (HTTP ' + c.refusedStatus + ')' + (c.refusedAt ? ' ' + words.when(c.refusedAt, Date.now()) : '') + '. ' + (c.kind === 'api_key' ? 'Enter a new key.' : 'Connect again.');
    else if (c.connected) status = 'Connected' + (c.account ? ' as ' + c.account : '') + (c.expiresAt ? '; access renews by itself (next ' + new Date(c.expiresAt).toLocaleString() + ')' : '') + '.';
    else status = 'Not connected: what needs ' + c.label + ' does not work until it is.';
    var kids = [text(c.label, c.kind === 'api_key' ? 'An API key you get from ' + c.label + '.' : 'Sign in with ' + c.label + ' to allow it.'),
      el('p', { 'class': 'ph-setting-status' + (c.refusedStatus ? ' ph-setting-error' : c.connected ? ' ph-setting-ok' : ''), id: 'ph-status-' + c.id, 'data-ph-connection-status': c.id, role: c.refusedStatus ? 'alert' : null, text: status })];
    var actions = el('div', { 'class': 'ph-setting-actions' });
    if (c.kind === 'api_key') {
      var input = el('input', { type: 'password', 'class': 'ph-text-input', id: 'ph-key-' + c.id, autocomplete: 'off', placeholder: c.connected ? 'New key' : 'Key',
        'aria-label': (c.connected ? 'New key for ' : 'Key for ') + c.label, 'aria-describedby': 'ph-status-' + c.id, 'aria-invalid': c.refusedStatus ? 'true' : null,
        disabled: busy[part], 'data-ph-settings-key': c.id });
      var save = function () {
        var key = input.value;
        input.value = '';
        change(part, 'mutation($i: ID!, $c: String!, $k: String!) { connectApiKey(instanceId: $i, connection: $c, key: $k) { id } }', { i: inst.id, c: c.id, k: key },
          function () { return 'Saved. ' + c.label + ' is asked with it the next time the plugin uses it.'; });
      };
      input.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') { ev.preventDefault(); save(); } });
      add(actions, [input, el('button', { type: 'button', 'class': 'ph-btn ph-btn-tonal', disabled: busy[part], 'data-ph-save-key': c.id, 'data-ph-focus': 'save:' + c.id,
        text: c.connected ? 'Change key' : 'Save key', onclick: save })]);
    } else {
      actions.appendChild(el('button', { type: 'button', 'class': 'ph-btn ph-btn-tonal', disabled: busy[part], 'data-ph-oauth': c.id, 'data-ph-focus': 'oauth:' + c.id,
        text: c.connected || c.refusedStatus ? 'Connect again' : 'Connect', onclick: function () {
          busy[part] = true;
          render();
          gql('mutation($i: ID!, $c: String!) { startOAuth(instanceId: $i, connection: $c) { authorizationUrl } }', { i: inst.id, c: c.id }).then(function (r) {
            busy[part] = false;
            if (r.error) { say(part, words.problem(r.error).text, true); render(); return; }
            location.assign(r.data.startOAuth.authorizationUrl);
          });
        } }));
    }
    if (c.connected) {
      actions.appendChild(el('button', { type: 'button', 'class': 'ph-btn ph-btn-text', disabled: busy[part], 'data-ph-disconnect': c.id, 'data-ph-focus': 'disc:' + c.id,
        text: c.kind === 'api_key' ? 'Remove key' : 'Disconnect', onclick: function () {
          change(part, 'mutation($i: ID!, $c: String!) { disconnect(instanceId: $i, connection: $c) }', { i: inst.id, c: c.id },
            function () { return c.kind === 'api_key' ? 'The key was removed.' : c.label + ' was disconnected.'; });
        } }));
    }
    kids.push(actions, note(part));
    return row(kids, { 'data-ph-setting-connection': c.id });
  }

  // ---- What it may do ---------------------------------------------------------

  function permissionsPart() {
    var instl = inst.installation, perms = instl.permissions, grants = {};
    inst.grants.forEach(function (g) { grants[g] = true; });
    var rows = [];
    if (perms.indexOf('network') >= 0) {
      rows.push(row([text('Network', 'Lets ' + instl.name + ' reach the internet services its publisher listed, and show pictures from the web.'),
        toggle('ph-grant-network', 'Network', !!grants.network, busy.network, function (on) {
          change('network', 'mutation($i: ID!, $on: Boolean!) { setInstanceGrant(instanceId: $i, permission: "network", granted: $on) { id } }', { i: inst.id, on: on },
            function () { return on ? 'Network allowed.' : 'Network turned off: the plugin cannot reach the internet.'; });
        }), note('network')]));
    }
    if (perms.indexOf('ai_storage') >= 0) {
      rows.push(row([text('Your assistant', 'Lets your AI assistant read and change what ' + instl.name + ' keeps, without asking each time (for every Instance of ' + instl.name + ').'),
        toggle('ph-grant-ai', 'Your assistant', !!instl.aiStorageConsent, busy.ai, function (on) {
          change('ai', 'mutation($i: ID!, $on: Boolean!) { setAiStorageConsent(installationId: $i, granted: $on) { id } }', { i: instl.id, on: on },
            function () { return on ? 'Your assistant may use its data.' : 'Your assistant asks before using its data.'; });
        }), note('ai')]));
    }
    if (perms.indexOf('notifications') >= 0) {
      rows.push(row([text('Notifications', 'Lets ' + instl.name + ' tell you things in the bell.'),
        toggle('ph-grant-notifications', 'Notifications', !inst.notificationsMuted, busy.notifications, function (on) {
          change('notifications', 'mutation($i: ID!, $on: Boolean!) { setInstanceGrant(instanceId: $i, permission: "notifications", granted: $on) { id } }', { i: inst.id, on: on },
            function () { return on ? 'Notifications on.' : 'Notifications muted.'; });
        }), note('notifications')]));
    }
    if (!rows.length) rows.push(el('p', { 'class': 'ph-setting-sub', text: instl.name + ' asks for nothing beyond keeping its own data.' }));
    return section('permissions', 'What it may do', rows);
  }

  // ---- Data ----------------------------------------------------------------------

  function totals() {
    var keys = 0, size = 0;
    inst.usage.forEach(function (u) { keys += u.keys; size += u.bytes; });
    return { keys: keys, bytes: size };
  }
  function dataPart() {
    var t = totals();
    var list = el('ul', { 'class': 'ph-usage-list' }, inst.usage.map(function (u) {
      var pct = u.maxBytes ? Math.min(100, Math.round(100 * u.bytes / u.maxBytes)) : 0;
      return el('li', { 'class': 'ph-usage', 'data-namespace': u.namespace }, [
        el('div', { 'class': 'ph-usage-text', text: u.namespace + ': ' + words.plural(u.keys, 'item') + ', ' + words.bytes(u.bytes) + ' of ' + words.bytes(u.maxBytes) }),
        el('div', { 'class': 'ph-meter', role: 'meter', 'aria-label': u.namespace + ' used', 'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-valuenow': String(pct) }, [
          el('span', { 'class': 'ph-meter-fill' + (pct > 90 ? ' ph-meter-high' : ''), 'data-pct': String(pct) })])
      ]);
    }));
    // The fill's width is set through the CSSOM (the page's policy).
    list.querySelectorAll('.ph-meter-fill').forEach(function (f) { f.style.width = f.getAttribute('data-pct') + '%'; });
    return section('data', 'Data', [
      el('p', { 'class': 'ph-setting-sub', text: t.keys ? words.plural(t.keys, 'item') + ', ' + words.bytes(t.bytes) + ' in all.' : 'It keeps nothing yet.' }),
      inst.usage.length ? list : null,
      row([text('Reset data', 'Deletes everything this Instance keeps. Its settings and connections stay.'),
        el('button', { type: 'button', 'class': 'ph-btn ph-btn-outlined-danger', disabled: busy.reset || !t.keys, 'data-ph-reset': '1', 'data-ph-focus': 'reset', text: 'Reset data…', onclick: reset }),
        note('reset')])
    ]);
  }
  function reset() {
    var t = totals(), instl = inst.installation;
    var spaces = inst.usage.filter(function (u) { return u.keys > 0; }).map(function (u) { return u.namespace; });
    confirm({
      title: 'Reset the data of ' + words.instanceName(instl.name, inst.name) + '?',
      text: 'All ' + words.plural(t.keys, 'item') + ' (' + words.bytes(t.bytes) + ') it keeps in ' + spaces.join(', ') + ' are deleted. This cannot be undone. Its settings, connections and other Instances are not touched.',
      yes: 'Delete ' + words.plural(t.keys, 'item'), danger: true
    }).then(function (ok) {
      if (!ok) return;
      busy.reset = true;
      render();
      fetch(location.origin + '/app/' + encodeURIComponent(inst.id) + '/-/storage', {
        method: 'DELETE', credentials: 'same-origin', cache: 'no-store', headers: { 'X-Pluginhost-App': '1' }
      }).then(function (resp) {
        return resp.json().catch(function () { return {}; }).then(function (b) {
          busy.reset = false;
          if (resp.ok) say('reset', 'Deleted ' + words.plural(b.deleted_items || 0, 'item') + '.');
          else say('reset', words.problem((b && b.error) || { code: 'HTTP_' + resp.status }).text, true);
        });
      }, function () {
        busy.reset = false;
        say('reset', words.problem({ code: 'UNREACHABLE' }).text, true);
      }).then(function () {
        return gql(opts.query, { i: opts.instance }).then(function (r2) {
          if (!r2.error && r2.data.instance) inst = r2.data.instance;
          render();
          var b = root.querySelector('[data-ph-reset]');
          if (b && !b.disabled) b.focus(); else { var n = root.querySelector('[data-ph-note="reset"]'); if (n) { n.tabIndex = -1; n.focus(); } }
        });
      });
    });
  }

  // ---- The Instance ---------------------------------------------------------------

  function instancePart(name) {
    return section('instance', 'Instance', [
      row([text('On', inst.enabled ? 'The plugin reads and writes its data.' : 'Off: its data is kept, and nothing can read or write it until you turn it on.'),
        toggle('ph-enabled', 'On', inst.enabled, busy.enabled, function (on) {
          change('enabled', 'mutation($i: ID!, $on: Boolean!) { setInstanceEnabled(instanceId: $i, enabled: $on) { id } }', { i: inst.id, on: on },
            function () { return on ? name + ' is on.' : name + ' is off.'; }).then(function () { opts.refreshInstances(); });
        }), note('enabled')]),
      row([text('Delete this Instance', 'Deletes it with everything it keeps, its connections and its notifications.'),
        el('button', { type: 'button', 'class': 'ph-btn ph-btn-danger', disabled: busy.del, 'data-ph-delete': '1', text: 'Delete…', onclick: function () {
          var t = totals();
          confirm({
            title: 'Delete ' + name + '?',
            text: 'Its ' + words.plural(t.keys, 'item') + ' (' + words.bytes(t.bytes) + '), its settings, connections and notifications are deleted. This cannot be undone. Other Instances of ' + inst.installation.name + ' are not touched.',
            yes: 'Delete ' + inst.name, danger: true
          }).then(function (ok) {
            if (!ok) return;
            busy.del = true;
            render();
            gql('mutation($i: ID!) { deleteInstance(instanceId: $i) }', { i: inst.id }).then(function (r) {
              busy.del = false;
              if (r.error) { say('delete', words.problem(r.error).text, true); render(); return; }
              announce(name + ' was deleted.');
              opts.refreshInstances();
              opts.go({ kind: 'home' }, 'replace');
            });
          });
        } }), note('delete')])
    ]);
  }

  load();
  return { destroy: function () { gone = true; } };
}
