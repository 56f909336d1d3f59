// bell.js: the web host's notification bell, in the page's navigation bar
// (#ph-bell). live.js hands it the viewer's notifications (list, markRead,
// run, watch); the bell shows the unread count, live, and a list whose
// actions run on the user's word: host actions (the open screen re-reads
// its storage on the change they make), open (the extension's page), invoke
// (the capability's summary is shown).
export function bell(api) {
  var slot = document.getElementById('ph-bell');
  if (!slot) return;
  var state = { unread: 0, list: [], open: false, notes: {} };
  var loading = null;

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'onclick') e.addEventListener('click', attrs[k]);
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function icon() {
    var ns = 'http://www.w3.org/2000/svg';
    var svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('aria-hidden', 'true');
    var path = document.createElementNS(ns, 'path');
    path.setAttribute('d', 'M12 22a2 2 0 0 0 2-2h-4a2 2 0 0 0 2 2zm6-6V11c0-3.07-1.64-5.64-4.5-6.32V4a1.5 1.5 0 0 0-3 0v.68C7.63 5.36 6 7.92 6 11v5l-2 2v1h16v-1l-2-2z');
    svg.appendChild(path);
    return svg;
  }

  var count = el('span', { 'class': 'ph-bell-count', 'data-ph-unread': '0', hidden: '' });
  var button = el('button', { type: 'button', 'class': 'ph-bell', 'aria-haspopup': 'true', 'aria-expanded': 'false', 'aria-label': 'Notifications' }, [icon(), count]);
  var panel = el('div', { 'class': 'ph-bell-panel', role: 'region', 'aria-label': 'Notifications', hidden: '' });
  slot.appendChild(button);
  slot.appendChild(panel);
  button.addEventListener('click', function () {
    state.open = !state.open;
    button.setAttribute('aria-expanded', String(state.open));
    if (state.open) panel.removeAttribute('hidden'); else panel.setAttribute('hidden', '');
    if (state.open) load();
  });

  function when(iso) {
    var t = Date.parse(iso);
    if (isNaN(t)) return '';
    var s = Math.max(0, Math.round((Date.now() - t) / 1000));
    if (s < 60) return 'just now';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    if (s < 86400) return Math.round(s / 3600) + ' h ago';
    return new Date(t).toLocaleDateString();
  }

  function render() {
    count.textContent = state.unread > 99 ? '99+' : String(state.unread);
    count.setAttribute('data-ph-unread', String(state.unread));
    if (state.unread > 0) count.removeAttribute('hidden'); else count.setAttribute('hidden', '');
    button.setAttribute('aria-label', 'Notifications, ' + state.unread + ' unread');
    panel.textContent = '';
    var head = el('div', { 'class': 'ph-bell-head' }, [el('strong', { text: 'Notifications' })]);
    var unread = state.list.filter(function (n) { return !n.read; }).map(function (n) { return n.id; });
    if (unread.length) {
      head.appendChild(el('button', { type: 'button', 'class': 'ph-bell-all', 'data-ph-mark-all': '1', text: 'Mark all read', onclick: function () {
        api.markRead(unread).then(load);
      } }));
    }
    panel.appendChild(head);
    if (state.error) panel.appendChild(el('p', { 'class': 'ph-bell-error', text: state.error }));
    if (!state.list.length && !state.error) panel.appendChild(el('p', { 'class': 'ph-bell-empty', text: 'Nothing new.' }));
    var ul = el('ul', { 'class': 'ph-bell-list' });
    state.list.forEach(function (n) {
      var li = el('li', { 'class': 'ph-bell-item ph-sev-' + n.severity + (n.read ? '' : ' ph-unread'), 'data-ph-notification': n.id }, [
        el('div', { 'class': 'ph-bell-title', text: n.title }),
        n.body ? el('div', { 'class': 'ph-bell-body', text: n.body }) : null,
        el('div', { 'class': 'ph-bell-meta', text: n.pluginId + ' · ' + when(n.createdAt) })
      ]);
      if (n.actions.length) {
        li.appendChild(el('div', { 'class': 'ph-bell-actions' }, n.actions.map(function (a) {
          return el('button', { type: 'button', 'data-ph-notification-action': n.id + '/' + a.id, text: a.label, onclick: function (ev) { take(n, a, ev.target); } });
        })));
      }
      var note = state.notes[n.id];
      if (note) li.appendChild(el('div', { 'class': 'ph-bell-note' + (note.error ? ' ph-bell-error' : ''), role: 'status', text: note.text }));
      ul.appendChild(li);
    });
    panel.appendChild(ul);
  }

  function take(n, a, btn) {
    btn.disabled = true;
    api.run(n.id, a.id).then(function (r) {
      if (r.error) {
        state.notes[n.id] = { error: true, text: r.error.code === 'PLUGIN_STORAGE_CONFLICT' ? 'This can no longer be done: ' + r.error.message : r.error.message || r.error.code };
      } else if (r.type === 'open') {
        var q = Object.keys(r.parameters || {}).map(function (k) { return encodeURIComponent(k) + '=' + encodeURIComponent(String(r.parameters[k])); }).join('&');
        location.href = '/app/' + encodeURIComponent(r.instanceId) + '/' + encodeURIComponent(r.extension) + (q ? '?' + q : '');
        return;
      } else {
        state.notes[n.id] = { text: (r.result && r.result.summary) || 'Done.' };
      }
      load();
    });
  }

  // load reads the list; asked again while reading, it reads once more
  // after, so that nothing sent meanwhile is missed.
  var again = false;
  function load() {
    if (loading) { again = true; return loading; }
    loading = api.list().then(function (r) {
      loading = null;
      if (r.error) state.error = 'Notifications cannot be read: ' + (r.error.message || r.error.code);
      else { state.error = null; state.unread = r.unread; state.list = r.notifications; }
      render();
      if (again) { again = false; load(); }
    });
    return loading;
  }

  // Each new notification, or a reconnected socket, reads the list again.
  api.watch(function () { load(); });
  render();
  load();
}
