// bell.js: the web host's notification bell, in the shell's top app bar.
// live.js hands it the viewer's notifications (list, markRead, run,
// watch); the bell shows the unread count, live, and a list whose actions
// run on the person's word: host actions (the open screen re-reads its
// storage on the change they make), open (the extension, in the page),
// invoke (the capability's summary is shown). Each notification names the
// plugin and Instance that sent it (names), never their ids. The list is a
// popover: Escape and a click outside close it.
import { el, icon, popover } from './ui.js';
import * as words from './words.js';

// bell draws the bell into slot. names(instanceId) names an Instance
// ("Notes · Work"); open(instanceId, extension, parameters) opens a screen;
// later(fn) runs fn when the page's first screen showed its data (the
// bell's first read waits until then).
export function bell(slot, api, names, open, later) {
  var state = { unread: 0, list: [], notes: {}, error: null };
  var loading = null;

  var count = el('span', { 'class': 'ph-bell-count', 'data-ph-unread': '0', 'aria-hidden': 'true', hidden: true });
  var button = el('button', { type: 'button', 'class': 'ph-icon-btn ph-bell', 'aria-haspopup': 'dialog', 'aria-label': 'Notifications' }, [icon('notifications'), count]);
  var panel = el('div', { 'class': 'ph-popover ph-bell-panel', role: 'dialog', 'aria-label': 'Notifications' });
  slot.appendChild(button);
  slot.appendChild(panel);
  var pop = popover(button, panel, function () { load(); });

  function render() {
    count.textContent = state.unread > 99 ? '99+' : String(state.unread);
    count.setAttribute('data-ph-unread', String(state.unread));
    count.hidden = state.unread === 0;
    button.setAttribute('aria-label', 'Notifications, ' + state.unread + ' unread');
    var focused = panel.contains(document.activeElement) ? document.activeElement.getAttribute('data-ph-focus-key') : null;
    panel.textContent = '';
    var head = el('div', { 'class': 'ph-bell-head' }, [el('h2', { 'class': 'ph-popover-title', text: 'Notifications' })]);
    var unread = state.list.filter(function (n) { return !n.read; }).map(function (n) { return n.id; });
    if (unread.length) {
      head.appendChild(el('button', { type: 'button', 'class': 'ph-btn ph-btn-text', 'data-ph-mark-all': '1', 'data-ph-focus-key': 'all', text: 'Mark all read', onclick: function () {
        api.markRead(unread).then(load);
      } }));
    }
    panel.appendChild(head);
    if (state.error) panel.appendChild(el('p', { 'class': 'ph-bell-error', role: 'alert', text: state.error }));
    if (!state.list.length && !state.error) {
      panel.appendChild(el('div', { 'class': 'ph-bell-empty' }, [icon('notifications_off'), el('p', { text: 'No notifications yet. Plugins you allow to notify you will show theirs here.' })]));
    }
    var ul = el('ul', { 'class': 'ph-bell-list' });
    state.list.forEach(function (n) {
      var li = el('li', { 'class': 'ph-bell-item ph-sev-' + n.severity + (n.read ? '' : ' ph-unread'), 'data-ph-notification': n.id }, [
        el('div', { 'class': 'ph-bell-title', text: n.title }),
        n.body ? el('div', { 'class': 'ph-bell-body', text: n.body }) : null,
        el('div', { 'class': 'ph-bell-meta', text: (names(n.instanceId) || 'A plugin') + ' · ' + words.when(n.createdAt, Date.now()) + (n.read ? '' : ' · unread') })
      ]);
      if (n.actions.length) {
        li.appendChild(el('div', { 'class': 'ph-bell-actions' }, n.actions.map(function (a) {
          return el('button', { type: 'button', 'class': 'ph-btn ph-btn-tonal', 'data-ph-notification-action': n.id + '/' + a.id, 'data-ph-focus-key': n.id + '/' + a.id, text: a.label,
            onclick: function (ev) { take(n, a, ev.currentTarget); } });
        })));
      }
      var note = state.notes[n.id];
      if (note) li.appendChild(el('div', { 'class': 'ph-bell-note' + (note.error ? ' ph-bell-error' : ''), role: 'status', text: note.text }));
      ul.appendChild(li);
    });
    panel.appendChild(ul);
    // The focus stays where it was across a redraw.
    if (focused) {
      var again = panel.querySelector('[data-ph-focus-key="' + focused + '"]');
      if (again) again.focus();
    }
  }

  function take(n, a, btn) {
    btn.disabled = true;
    api.run(n.id, a.id).then(function (r) {
      if (r.error) {
        state.notes[n.id] = { error: true, text: r.error.code === 'PLUGIN_STORAGE_CONFLICT' ? 'This can no longer be done: the plugin was updated since.' : words.problem(r.error).text };
      } else if (r.type === 'open') {
        pop.close();
        open(r.instanceId, r.extension, r.parameters || {});
        load();
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
      if (r.error) state.error = 'Your notifications cannot be read now. ' + words.problem(r.error).text;
      else { state.error = null; state.unread = r.unread; state.list = r.notifications; }
      render();
      if (again) { again = false; load(); }
    });
    return loading;
  }

  // Each new notification, or a reconnected socket, reads the list again.
  api.watch(function () { load(); });
  render();
  (later || function (fn) { fn(); })(load);
  return { close: pop.close };
}
