// ui.js: the web host's own widgets, shared by the shell, the settings, the
// dashboard and the bell: elements from descriptions (el), icons a screen
// reader skips (icon), popovers that close on Escape and on a click outside
// (popover), and confirmations (confirm). Every text reaches the page as
// text, never as HTML.

// el makes an element: attrs are attributes but text (its text), on<type>
// (a listener), hidden and disabled (set when true); kids are elements,
// strings or nothing.
export function el(tag, attrs, kids) {
  var e = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (k) {
    var v = attrs[k];
    if (v === null || v === undefined || v === false) return;
    if (k === 'text') e.textContent = v;
    else if (k.slice(0, 2) === 'on' && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  });
  add(e, kids);
  return e;
}

// add appends kids (elements, strings, arrays of them, nothing) to e.
export function add(e, kids) {
  (Array.isArray(kids) ? kids : [kids]).forEach(function (k) {
    if (k === null || k === undefined || k === false) return;
    if (Array.isArray(k)) add(e, k);
    else e.appendChild(typeof k === 'string' ? document.createTextNode(k) : k);
  });
  return e;
}

// icon is a Material Symbols icon that a screen reader skips: what it
// means is said by the text or the label beside it.
export function icon(name, cls) {
  return el('span', { 'class': 'ph-symbol ph-ui-icon' + (subset && !subset[name] ? ' ph-symbol-full' : '') + (cls ? ' ' + cls : ''), 'aria-hidden': 'true', 'data-icon': name, text: name });
}
// subset names the icons the font subset draws (catalog.js); any other is
// drawn with the whole font.
var subset = null;
if (window.pluginhostIcons) {
  subset = {};
  window.pluginhostIcons.forEach(function (n) { subset[n] = true; });
}

// popover makes button open and close panel: open moves the focus into it
// (to its first item), Escape and a click outside close it (Escape gives
// the focus back to the button), arrow keys move between the items of a
// menu. onOpen runs when it opens. It returns {open, close, isOpen}.
export function popover(button, panel, onOpen) {
  var openNow = false;
  panel.hidden = true;
  button.setAttribute('aria-expanded', 'false');
  if (!panel.id) panel.id = 'ph-pop-' + Math.random().toString(36).slice(2, 9);
  button.setAttribute('aria-controls', panel.id);
  function items() {
    return Array.prototype.filter.call(panel.querySelectorAll('a[href], button:not([disabled]), input:not([disabled]), [tabindex="0"]'),
      function (x) { return x.offsetParent !== null || x === document.activeElement; });
  }
  function onKey(ev) {
    if (ev.key === 'Escape') {
      ev.preventDefault();
      close();
      button.focus();
      return;
    }
    // Arrow keys move between the items, but within a group of radio
    // buttons, which they choose among.
    if ((ev.key === 'ArrowDown' || ev.key === 'ArrowUp') && panel.contains(document.activeElement) && document.activeElement.type !== 'radio') {
      var list = items(), i = list.indexOf(document.activeElement);
      if (i < 0) return;
      ev.preventDefault();
      list[(i + (ev.key === 'ArrowDown' ? 1 : list.length - 1)) % list.length].focus();
    }
  }
  function onPointer(ev) {
    if (!panel.contains(ev.target) && !button.contains(ev.target)) close();
  }
  function onFocus(ev) {
    if (!panel.contains(ev.target) && !button.contains(ev.target)) close();
  }
  function open() {
    if (openNow) return;
    openNow = true;
    panel.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    document.addEventListener('keydown', onKey, true);
    document.addEventListener('pointerdown', onPointer, true);
    document.addEventListener('focusin', onFocus, true);
    if (onOpen) onOpen();
    var first = items()[0];
    if (first) first.focus();
  }
  function close() {
    if (!openNow) return;
    openNow = false;
    panel.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    document.removeEventListener('keydown', onKey, true);
    document.removeEventListener('pointerdown', onPointer, true);
    document.removeEventListener('focusin', onFocus, true);
  }
  button.addEventListener('click', function () { if (openNow) close(); else open(); });
  return { open: open, close: close, isOpen: function () { return openNow; } };
}

// confirm asks before something that cannot be undone: a modal dialog with
// its title, what is lost (text), and the button that does it (yes), which
// is never the default. It resolves to true when the person confirmed.
export function confirm(opts) {
  return new Promise(function (resolve) {
    var dialog = el('dialog', { 'class': 'ph-dialog-box', 'aria-labelledby': 'ph-confirm-title', 'aria-describedby': 'ph-confirm-text' });
    var done = function (ok) {
      if (dialog.open) dialog.close();
      dialog.remove();
      resolve(ok);
    };
    add(dialog, [
      el('h2', { id: 'ph-confirm-title', 'class': 'ph-dialog-title', text: opts.title }),
      el('p', { id: 'ph-confirm-text', 'class': 'ph-dialog-text', text: opts.text }),
      el('div', { 'class': 'ph-dialog-actions' }, [
        el('button', { type: 'button', 'class': 'ph-btn ph-btn-text', 'data-ph-confirm': 'no', text: opts.no || 'Cancel', onclick: function () { done(false); } }),
        el('button', { type: 'button', 'class': 'ph-btn ' + (opts.danger ? 'ph-btn-danger' : 'ph-btn-filled'), 'data-ph-confirm': 'yes', text: opts.yes, onclick: function () { done(true); } })
      ])
    ]);
    dialog.addEventListener('cancel', function (ev) { ev.preventDefault(); done(false); });
    dialog.addEventListener('click', function (ev) { if (ev.target === dialog) done(false); });
    document.body.appendChild(dialog);
    dialog.showModal();
    dialog.querySelector('[data-ph-confirm="no"]').focus();
  });
}

// announce says a short text to screen readers (a polite live region).
export function announce(text) {
  var r = document.getElementById('ph-announce');
  if (!r) {
    r = el('div', { id: 'ph-announce', 'class': 'ph-visually-hidden', role: 'status', 'aria-live': 'polite' });
    document.body.appendChild(r);
  }
  r.textContent = '';
  setTimeout(function () { r.textContent = text; }, 50);
}
