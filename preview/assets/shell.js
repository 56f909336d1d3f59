// shell.js: the web host's shell, one page for every surface (GET /app and
// GET /app/{instance_id}/{extension}). The home shows the responses the
// viewer's AI assistant chose to show (selectResponseUi), live, and lists the
// viewer's Instances, each with its screens and its home extensions drawn
// live as cards; a screen opens in the same page (the address follows, and
// the browser's back returns), so the responses, the home cards and the
// screen share one host cache (hostcache.js) and one connection (live.js): a
// source shown on two surfaces is called once.
//
// window.pluginhostPreview is the open screen's page API, or on the home the
// page's event log and idle; window.pluginhostShell opens and lists surfaces.
import { Runtime } from './runtime.js';
import { Cache } from './hostcache.js';
import { Connection, liveHost } from './live.js';
import { bell } from './bell.js';

var bundle = JSON.parse(document.getElementById('ph-bundle').textContent);
var cfg = bundle.shell;
var cache = new Cache();
var events = [];
var homeEl = document.getElementById('ph-home');
var appEl = document.getElementById('ph-app');
// The plugin's bar: above the screen, the Instance's other screens where
// their placement offers them.
var barEl = el('nav', 'ph-plugin-bar');
barEl.setAttribute('aria-label', 'Screens of this plugin');
barEl.hidden = true;
appEl.parentNode.insertBefore(barEl, appEl);
var conn = Connection(bundle.live ? bundle.live.graphql : cfg.graphql);
bell(conn.notifications);
function makeHost(env) { return liveHost(conn, env); }
var cards = [];
var responses = []; // newest first
var responsesEl = null;
var screen = null;
var homeState = null; // null, 'loading', 'built'

function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function enc(s) { return encodeURIComponent(s); }
function imagesOf(instanceID) { return '/app/' + enc(instanceID) + '/-/ui-images:fetch'; }
function bundleFor(live, inspector) {
  return { icon_font: bundle.icon_font, inspector: !!inspector, debug_api: bundle.debug_api, live: live };
}
// offers reports whether the page offers an extension to open: a screen or
// home extension whose placement is not hidden (those open only from the
// plugin's own screens).
function offers(point, placement) { return (point === 'screen' || point === 'home') && placement !== 'hidden'; }
// liveFor is what a surface's host needs to open extension of an Instance
// on this page.
function liveFor(instanceID, extension, route, preload) {
  return {
    instance_id: instanceID, extension: extension, graphql: cfg.graphql, images: imagesOf(instanceID),
    route: route || {}, start_query: cfg.start_query, preload: preload || null
  };
}
// embed draws a surface of the home (a card, a response) in root; its
// navigate opens the page's screen.
function embed(root, surface, live) {
  return Runtime({
    makeHost: makeHost,
    root: root, bundle: bundleFor(live, false), cache: cache, events: events, surface: surface,
    shown: function () { return !homeEl.hidden; },
    onNavigate: function (target, params) { openScreen(live.instance_id, target, params, true); }
  });
}
// inPage makes a link's plain click open its target in the page (open);
// a click that asks for a new tab or window does what the browser does.
function inPage(a, open) {
  a.addEventListener('click', function (ev) {
    if (ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    ev.preventDefault();
    open();
  });
}
function idleOf(list) {
  return Promise.all(list.map(function (r) { return r.api.idle(); })).then(function () { return true; });
}

// The home's page API: the page's events, and idle when every card is.
var homeAPI = {
  idle: function () { return idleOf(cards.concat(responses).map(function (c) { return c.runtime; })); },
  inspector: function () { return null; }
};
// The page's events are an admin's, as every surface's page API is.
if (bundle.debug_api) {
  homeAPI.events = function () { return JSON.parse(JSON.stringify(events)); };
  homeAPI.clearEvents = function () { events.length = 0; };
}

// ---- Screens ------------------------------------------------------------

// openScreen shows one extension of one Instance as the page's screen;
// live, when given, is the server's start for it (the page's own).
function openScreen(instanceID, extension, params, push, live) {
  closeScreen();
  live = live || liveFor(instanceID, extension, params, null);
  homeEl.hidden = true;
  appEl.hidden = false;
  appEl.textContent = '';
  barEl.textContent = '';
  document.title = extension + ' · pluginhost';
  if (push) {
    var q = Object.keys(params || {}).map(function (k) { return enc(k) + '=' + enc(String(params[k])); }).join('&');
    history.pushState({ screen: true }, '', '/app/' + enc(instanceID) + '/' + enc(extension) + (q ? '?' + q : ''));
  }
  var runtime = Runtime({
    makeHost: makeHost,
    // The page's own screen is timed from the navigation's start.
    t0: live === bundle.live ? undefined : performance.now(),
    root: appEl, bundle: bundleFor(live, live === bundle.live && bundle.inspector), cache: cache, events: events,
    surface: 'screen', api: true, shown: function () { return !appEl.hidden; },
    onExit: function () { goHome(true); },
    onLoad: function (plugin, exts, current) { pluginBar(instanceID, exts, current); }
  });
  screen = { runtime: runtime, instance: instanceID, extension: extension };
  window.pluginhostPreview = runtime.api;
}
// pluginBar offers the Instance's screens by their placement: auto and
// navigation in the bar, menu under More, hidden nowhere (they open only
// from the plugin's own screens).
function pluginBar(instanceID, exts, current) {
  barEl.textContent = '';
  var offered = exts.filter(function (e) { return offers(e.point, e.config && e.config.placement); });
  barEl.hidden = offered.length < 2;
  var more = null;
  offered.forEach(function (e) {
    var a = el('a', null, (e.config && e.config.description) || e.id);
    a.href = '/app/' + enc(instanceID) + '/' + enc(e.id);
    a.setAttribute('data-placement', (e.config && e.config.placement) || 'auto');
    a.setAttribute('data-extension', e.id);
    if (e.id === current) a.setAttribute('aria-current', 'page');
    inPage(a, function () { openScreen(instanceID, e.id, {}, true); });
    if (e.config && e.config.placement === 'menu') {
      if (!more) {
        more = el('details', 'ph-plugin-more');
        more.appendChild(el('summary', null, 'More'));
      }
      more.appendChild(a);
    } else barEl.appendChild(a);
  });
  if (more) barEl.appendChild(more);
}

function closeScreen() {
  barEl.hidden = true;
  if (!screen) return;
  screen.runtime.destroy();
  screen = null;
}

// ---- Home ---------------------------------------------------------------

function goHome(push) {
  closeScreen();
  appEl.hidden = true;
  homeEl.hidden = false;
  document.title = 'pluginhost';
  if (push) history.pushState({ home: true }, '', '/app');
  window.pluginhostPreview = homeAPI;
  if (!homeState) buildHome();
}

function buildHome() {
  homeState = 'loading';
  homeEl.textContent = '';
  responsesEl = el('section', 'ph-home-responses');
  responsesEl.hidden = true;
  responsesEl.appendChild(el('h1', 'ph-home-title', 'From your assistant'));
  homeEl.appendChild(responsesEl);
  homeEl.appendChild(el('h1', 'ph-home-title', 'Your plugins'));
  var list = el('div', 'ph-home-list', 'Loading…');
  list.setAttribute('aria-live', 'polite');
  homeEl.appendChild(list);
  var first = cfg.home ? Promise.resolve({ data: cfg.home }) : conn.gql(cfg.home_query);
  cfg.home = null;
  first.then(function (r) {
    list.textContent = '';
    if (r.error) {
      list.appendChild(el('p', 'ph-home-error', 'Could not list your plugins: ' + r.error.message));
      homeState = null;
      return;
    }
    homeState = 'built';
    var preloads = {};
    (cfg.cards || []).forEach(function (c) { preloads[c.instance_id + '/' + c.extension] = c.preload; });
    cfg.cards = null;
    var n = 0;
    r.data.installations.forEach(function (instl) {
      instl.instances.forEach(function (inst) {
        n++;
        list.appendChild(instanceBox(instl, inst, preloads));
      });
    });
    if (!n) list.appendChild(el('p', null, 'You have no plugin Instances yet.'));
    ((r.data.renderedResponses || {}).nodes || []).slice().reverse().forEach(showResponse);
    conn.watchResponses(cfg.response_fields, showResponse);
  });
}

// showResponse draws a response the assistant chose, newest first; the
// home keeps the newest five.
function showResponse(rr) {
  if (responses.some(function (x) { return x.message === rr.messageId; })) return;
  var box = el('div', 'ph-home-card ph-home-response');
  box.setAttribute('data-response', rr.messageId);
  responsesEl.insertBefore(box, responsesEl.children[1] || null);
  responsesEl.hidden = false;
  var live = liveFor(rr.instanceId, rr.extension, {}, null);
  live.response = { capability: rr.capability, generation: rr.generation, data: rr.data };
  var runtime = embed(box, 'response', live);
  responses.unshift({ runtime: runtime, instance: rr.instanceId, extension: rr.extension, message: rr.messageId, box: box });
  while (responses.length > 5) {
    var old = responses.pop();
    old.runtime.destroy();
    old.box.remove();
  }
}

function iconOf(icon) {
  var name = typeof icon === 'string' ? icon : icon && typeof icon.name === 'string' ? icon.name : null;
  if (!name) return null;
  var i = el('span', 'ph-symbol ph-home-icon', name);
  i.setAttribute('aria-hidden', 'true');
  return i;
}

// instanceBox is one Instance on the home: its name, description, the
// screens to open, and its home extensions drawn live.
function instanceBox(instl, inst, preloads) {
  var box = el('section', 'ph-home-instance');
  box.setAttribute('data-instance', inst.id);
  var head = el('h2', null);
  // The plugin's icon: its first extension's that has one, else the
  // symbol of a plugin.
  var icon = null;
  instl.extensions.forEach(function (e) { if (!icon && e.icon) icon = iconOf(e.icon); });
  head.appendChild(icon || iconOf('extension'));
  head.appendChild(document.createTextNode(instl.name + ' · ' + inst.name));
  box.appendChild(head);
  if (instl.description) box.appendChild(el('p', 'ph-home-desc', instl.description));
  box.appendChild(el('div', 'ph-home-meta' + (inst.enabled ? '' : ' ph-home-off'), 'version ' + instl.version + (inst.enabled ? '' : ' · disabled')));
  var links = el('div', 'ph-home-links');
  instl.extensions.forEach(function (e) {
    if (!offers(e.point, e.placement)) return;
    var a = el('a', null);
    var ic = iconOf(e.icon);
    if (ic) a.appendChild(ic);
    a.appendChild(document.createTextNode(e.description || e.id));
    a.title = e.id + ' (' + e.point + ')';
    a.setAttribute('data-extension', e.id);
    a.href = '/app/' + enc(inst.id) + '/' + enc(e.id);
    inPage(a, function () { openScreen(inst.id, e.id, {}, true); });
    links.appendChild(a);
  });
  box.appendChild(links);
  if (!inst.enabled) return box;
  instl.extensions.forEach(function (e) {
    if (e.point !== 'home' || e.placement === 'hidden') return;
    var card = el('div', 'ph-home-card');
    card.setAttribute('data-home-card', inst.id + '/' + e.id);
    box.appendChild(card);
    var runtime = embed(card, 'home', liveFor(inst.id, e.id, {}, preloads[inst.id + '/' + e.id]));
    cards.push({ runtime: runtime, instance: inst.id, extension: e.id });
  });
  return box;
}

// ---- The address --------------------------------------------------------

function follow() {
  var parts = location.pathname.split('/').filter(function (p) { return p; }).map(decodeURIComponent);
  if (parts.length === 3 && parts[0] === 'app') {
    var params = {};
    new URLSearchParams(location.search).forEach(function (v, k) { if (k !== 'debug') params[k] = v; });
    openScreen(parts[1], parts[2], params, false);
  } else goHome(false);
}
window.addEventListener('popstate', follow);

// The bar's link to the home stays in the page.
var homeLink = document.querySelector('[data-ph-home-link]');
if (homeLink) {
  inPage(homeLink, function () { if (screen || homeEl.hidden) goHome(true); });
}

window.pluginhostShell = {
  home: function () { goHome(true); },
  open: function (instanceID, extension, params) { openScreen(instanceID, extension, params || {}, true); },
  // surfaces lists what the page shows: its home cards and its screen.
  surfaces: function () {
    var out = cards.map(function (c) { return { surface: 'home', instance: c.instance, extension: c.extension, shown: !homeEl.hidden }; });
    responses.forEach(function (c) { out.push({ surface: 'response', instance: c.instance, extension: c.extension, message: c.message, shown: !homeEl.hidden }); });
    if (screen) out.push({ surface: 'screen', instance: screen.instance, extension: screen.extension, shown: !appEl.hidden });
    return out;
  },
  // connected reports whether the page's socket is up.
  connected: function () { return conn.connected(); },
  // calls is how many calls the host cache made: a source shown on
  // several surfaces counts once.
  calls: function () { return cache.calls; }
};

if (bundle.live) openScreen(bundle.live.instance_id, bundle.live.extension, bundle.live.route, false, bundle.live);
else goHome(false);
