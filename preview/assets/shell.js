// shell.js: the web host's app shell, one page for every view: the home
// (GET /app), a screen (GET /app/{instance_id}/{extension}), an Instance's
// settings (GET /app/{instance_id}/-/settings) and the storage dashboard
// (GET /dashboard). It draws the Material 3 shell around them: a top app
// bar (the Instance's plugin and name with a switcher, the bell, the
// account menu with the theme, the dashboard for admins and signing out),
// the navigation (a bar below 600 px, a rail below 1200 px, a drawer from
// there: the home and the Instance's screens by their placement, its
// settings), and the content area. Every view is an address (router.js):
// the browser's Back, Forward and reload return to it. Every surface of the
// page (home cards, responses, the screen) shares one host cache
// (hostcache.js) and one connection (live.js).
//
// window.pluginhostPreview is the open surface's page API (runtime.js;
// what reads the plugin's state and events is an admin's);
// window.pluginhostShell tells a test what the page shows.
import { Runtime } from './runtime.js';
import * as hc from './hostcache.js';
import { Connection, liveHost } from './live.js';
import { bell } from './bell.js';
import * as router from './router.js';
import * as words from './words.js';
import * as prefs from './prefs.js';
import { el, icon, popover, add } from './ui.js';
import { Home } from './home.js';
import { Settings } from './settings.js';
import { Dashboard } from './dashboard.js';

var bundle = JSON.parse(document.getElementById('ph-bundle').textContent);
var cfg = bundle.shell;
var cache = new hc.Cache();
var events = [];
var conn = Connection(cfg.graphql);
function makeHost(env) { return liveHost(conn, env); }

// ---- The viewer's Instances -------------------------------------------------

// instances indexes the answer to InstancesQuery (or HomeQuery): each
// Instance with its plugin, in the server's order.
var instances = { list: [], byID: {} };
function indexInstances(data) {
  instances = { list: [], byID: {} };
  ((data && data.installations) || []).forEach(function (instl) {
    var plugin = { id: instl.id, pluginId: instl.pluginId, name: instl.name, description: instl.description, version: instl.version, extensions: instl.extensions || [] };
    plugin.icon = null;
    plugin.extensions.forEach(function (e) { if (!plugin.icon && e.icon) plugin.icon = words.iconName(e.icon); });
    (instl.instances || []).forEach(function (inst) {
      var x = { id: inst.id, name: inst.name, enabled: inst.enabled, plugin: plugin };
      instances.list.push(x);
      instances.byID[inst.id] = x;
    });
  });
}
indexInstances(bundle.instances || bundle.home);

// nameOf names an Instance ("Notes · Work").
function nameOf(id) {
  var x = instances.byID[id];
  return x ? words.instanceName(x.plugin.name, x.name) : null;
}
// offers reports whether the shell offers an extension to open: a screen or
// home extension whose placement is not hidden (those open only from the
// plugin's own screens).
function offers(point, placement) { return (point === 'screen' || point === 'home') && placement !== 'hidden'; }
function placementOf(e) { return e.placement !== undefined ? e.placement : e.config && e.config.placement; }
// firstView is where an Instance opens: its first offered screen, else its
// settings.
function firstView(id) {
  var x = instances.byID[id];
  var first = x && x.plugin.extensions.filter(function (e) { return offers(e.point, placementOf(e)); })[0];
  return first ? screenView(id, first.id, {}) : { kind: 'settings', instance: id };
}
function screenView(instance, extension, params) {
  return { kind: 'screen', instance: instance, extension: extension, params: params || {}, stack: [{ extension: extension, params: params || {}, result_state: null }] };
}

// ---- The page -------------------------------------------------------------------

var shellEl = document.getElementById('ph-shell');
shellEl.textContent = '';
shellEl.removeAttribute('aria-busy');
var skip = el('a', { 'class': 'ph-skip', href: '#ph-main', text: 'Skip to content' });
var topbar = el('header', { 'class': 'ph-topbar' });
var navEl = el('nav', { 'class': 'ph-sn', id: 'ph-nav', 'aria-label': 'Main' });
var mainEl = el('main', { 'class': 'ph-main', id: 'ph-main', tabindex: '-1' });
var bannersEl = el('div', { 'class': 'ph-banners' });
var homeEl = el('div', { 'class': 'ph-view ph-home', id: 'ph-home', hidden: true });
var appEl = el('div', { 'class': 'ph-view ph-screen-view', id: 'ph-app', hidden: true });
var pageEl = el('div', { 'class': 'ph-view ph-page-view', hidden: true });
add(mainEl, [bannersEl, homeEl, appEl, pageEl]);
add(shellEl, [skip, topbar, navEl, mainEl]);
skip.addEventListener('click', function (ev) { ev.preventDefault(); mainEl.focus(); });

// ---- Views and the address -------------------------------------------------------

var current = null; // the view shown
var screen = null; // {runtime, instance}
var page = null; // the settings or the dashboard: {destroy}
var home = null; // the home, made on its first showing
var pendingResult; // the result of a back action, for the entry it goes to
var ownScreen = bundle.live; // the server's start of the page's own screen

// go shows a view: push adds an entry to the browser's history, replace
// replaces the current one, pop follows the history.
function go(view, how) {
  if (how === 'push') history.pushState(router.viewState(view), '', router.href(view, bundle.debug));
  else if (how === 'replace') history.replaceState(router.viewState(view), '', router.href(view, bundle.debug));
  show(view, how);
}

function show(view, how) {
  var was = current;
  current = view;
  // A screen of the open screen's Instance that shares its first route
  // (back, forward, the plugin's own navigation) keeps the surface.
  if (view.kind === 'screen' && screen && screen.instance === view.instance && router.common(screen.runtime.stack(), view.stack) > 0) {
    var result = pendingResult;
    pendingResult = undefined;
    screen.runtime.setStack(view.stack, result);
    chrome();
    return;
  }
  pendingResult = undefined;
  if (view.kind !== 'screen') closeScreen();
  if (page) { page.destroy(); page = null; }
  homeEl.hidden = view.kind !== 'home';
  appEl.hidden = view.kind !== 'screen';
  pageEl.hidden = view.kind !== 'settings' && view.kind !== 'dashboard';
  pageEl.textContent = '';
  // The settings and the dashboard wait for nothing the page does later.
  if (view.kind === 'settings' || view.kind === 'dashboard') conn.settled();
  switch (view.kind) {
    case 'home': showHome(); break;
    case 'screen': openScreen(view); break;
    case 'settings':
      page = Settings({ root: pageEl, conn: conn, instance: view.instance, query: cfg.settings_query, preload: takePreload('settings', view.instance), debug: bundle.debug,
        name: nameOf, refreshInstances: refreshInstances, go: go, open: function (v) { go(v, 'push'); },
        extensions: function (exts) { screenExts[view.instance] = exts; chrome(); } });
      window.pluginhostPreview = idleAPI;
      break;
    case 'dashboard':
      page = Dashboard({ root: pageEl, conn: conn, viewer: bundle.viewer });
      window.pluginhostPreview = idleAPI;
      break;
  }
  chrome();
  // A view opened in the page takes the focus, for screen readers and
  // the keyboard, and starts at its top.
  if (was && how !== 'initial') {
    window.scrollTo(0, 0);
    mainEl.focus({ preventScroll: true });
  }
}

// takePreload hands out the server's answer for the page's own view once.
function takePreload(kind, instance) {
  if (bundle.view !== kind || bundle.instance_id !== instance || !bundle.preload) return null;
  var p = bundle.preload;
  bundle.preload = null;
  return p;
}

var idleAPI = { idle: function () { return Promise.resolve(true); }, inspector: function () { return null; } };

window.addEventListener('popstate', function (ev) {
  var v = router.fromHistory(ev.state, location.pathname, location.search);
  if (v) show(v, 'pop');
});

// ---- Screens ----------------------------------------------------------------------

function imagesOf(instanceID) { return '/app/' + encodeURIComponent(instanceID) + '/-/ui-images:fetch'; }
function bundleFor(live, inspector) {
  return { icon_font: bundle.icon_font, inspector: !!inspector, debug_api: bundle.debug_api, live: live };
}
// liveFor is what a surface's host needs to open extension of an Instance.
function liveFor(instanceID, extension, route, preload) {
  return {
    instance_id: instanceID, extension: extension, graphql: cfg.graphql, images: imagesOf(instanceID),
    route: route || {}, start_query: cfg.start_query, preload: preload || null
  };
}

function openScreen(view) {
  closeScreen();
  var top = view.stack[view.stack.length - 1];
  var live = ownScreen && ownScreen.instance_id === view.instance && ownScreen.extension === top.extension ? ownScreen : liveFor(view.instance, top.extension, top.params, null);
  var own = live === ownScreen;
  ownScreen = null;
  appEl.textContent = '';
  var instance = view.instance;
  // The first screen's storage reads the server ran are the cache's: the
  // screen shows them without a request.
  if (own && live.sources && live.sources.length) {
    cache.generation(instance, live.generation);
    live.sources.forEach(function (s) { cache.put(hc.key(instance, s.capability, s.query, s.arguments), instance, s.capability, s.result); });
  }
  var runtime = Runtime({
    makeHost: makeHost,
    // The page's own screen is timed from the navigation's start.
    t0: own ? undefined : performance.now(),
    root: appEl, bundle: bundleFor(live, own && bundle.inspector), cache: cache, events: events,
    surface: 'screen', api: true, shown: function () { return !appEl.hidden; },
    stack: view.stack, mode: prefs.themeMode(),
    history: {
      push: function (stack) { current = screenOf(instance, stack); history.pushState(router.viewState(current), '', router.href(current, bundle.debug)); chrome(); },
      replace: function (stack) { current = screenOf(instance, stack); history.replaceState(router.viewState(current), '', router.href(current, bundle.debug)); chrome(); },
      back: function (result) {
        var s = history.state;
        if (s && s.ph === 1 && s.kind === 'screen' && s.instance === instance && s.stack && s.stack.length > 1) {
          pendingResult = result;
          history.back();
        } else {
          // No entry of ours behind (a link opened a deep screen): the
          // route closes here, and the address follows.
          var stack = runtime.stack().slice(0, -1);
          go(screenOf(instance, stack), 'replace');
          runtime.setStack(stack, result);
        }
      }
    },
    onExit: function () { go({ kind: 'home' }, 'push'); },
    onReady: conn.settled,
    onLoad: function (plugin, exts) { screenExts[instance] = exts; chrome(); },
    onAction: function (what) {
      if (what === 'settings') go({ kind: 'settings', instance: instance }, 'push');
      else if (what === 'home') go({ kind: 'home' }, 'push');
      else if (what === 'sign_in') location.assign('/app/login?next=' + encodeURIComponent(location.pathname + location.search));
    }
  });
  screen = { runtime: runtime, instance: instance };
  window.pluginhostPreview = runtime.api;
}
function screenOf(instance, stack) {
  var top = stack[stack.length - 1];
  return { kind: 'screen', instance: instance, extension: top.extension, params: top.params, stack: stack };
}
// screenExts are the extensions (with their configs) of the Instances whose
// screens the page opened: the navigation names them.
var screenExts = {};

function closeScreen() {
  if (!screen) return;
  screen.runtime.destroy();
  screen = null;
}

// ---- The home ------------------------------------------------------------------------

function showHome() {
  if (!home) {
    home = Home({
      root: homeEl, conn: conn, cache: cache, events: events, makeHost: makeHost, cfg: cfg,
      data: bundle.home || null, cards: bundle.cards || [], bundleFor: bundleFor, liveFor: liveFor,
      shown: function () { return !homeEl.hidden; }, mode: prefs.themeMode(), onReady: conn.settled,
      instances: function () { return instances; },
      onData: function (data) { indexInstances(data); chrome(); },
      open: function (instanceID, extension, params) { go(screenView(instanceID, extension, params), 'push'); },
      view: function (v) { go(v, 'push'); },
      firstView: firstView,
      href: function (v) { return router.href(v, bundle.debug); }
    });
    bundle.home = null;
    bundle.cards = null;
  }
  window.pluginhostPreview = home.api;
}

// refreshInstances reads the viewer's Instances again (after a settings
// change: a name, enabled, a deleted Instance).
function refreshInstances() {
  return conn.gql(cfg.instances_query).then(function (r) {
    if (!r.error) { indexInstances(r.data); chrome(); }
    if (home) home.stale();
    return r;
  });
}

// ---- The shell's chrome: top app bar and navigation ------------------------------

var navMode = null;
function modeOfWidth() { var w = window.innerWidth; return w < 600 ? 'bar' : w < 1200 ? 'rail' : 'drawer'; }

// inPage makes a link's plain click show its view in the page; a click
// that asks for a new tab or window does what the browser does.
function inPage(a, view) {
  a.href = router.href(view, bundle.debug);
  a.addEventListener('click', function (ev) {
    if (ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    ev.preventDefault();
    if (menus.switcher) menus.switcher.close();
    if (menus.more) menus.more.close();
    go(view, 'push');
  });
  return a;
}

var menus = {};
var bellSlot = el('div', { 'class': 'ph-bell-slot', id: 'ph-bell' });
var accountSlot = el('div', { 'class': 'ph-account-slot' });
var titleSlot = el('div', { 'class': 'ph-topbar-title' });
add(topbar, [
  inPage(el('a', { 'class': 'ph-icon-btn ph-brand', 'aria-label': 'Home', 'data-ph-home-link': '1' }, [icon('apps')]), { kind: 'home' }),
  titleSlot,
  el('div', { 'class': 'ph-topbar-actions' }, [bellSlot, accountSlot])
]);
bell(bellSlot, conn.notifications, nameOf, function (instanceID, extension, params) { go(screenView(instanceID, extension, params), 'push'); }, conn.later);
accountMenu();

// chrome brings the top app bar's title, the navigation and the page's
// title up to date with the view.
function chrome() {
  navMode = modeOfWidth();
  shellEl.setAttribute('data-nav', navMode);
  var v = current;
  var inst = v && v.instance ? instances.byID[v.instance] : null;
  titleBar(inst);
  renderNav(v, inst);
  var title = 'pluginhost';
  if (v && v.kind === 'home') title = 'Your plugins · pluginhost';
  else if (v && v.kind === 'dashboard') title = 'Storage dashboard · pluginhost';
  else if (inst && v.kind === 'settings') title = 'Settings · ' + nameOf(inst.id);
  else if (inst && v.kind === 'screen') {
    var ext = (screenExts[inst.id] || []).filter(function (e) { return e.id === v.extension; })[0];
    title = (ext ? words.screenLabel(ext) : words.idWords(v.extension)) + ' · ' + nameOf(inst.id);
  }
  document.title = title;
}

// titleBar shows the Instance's plugin and name, which open the Instance
// switcher; elsewhere the product's name.
function titleBar(inst) {
  titleSlot.textContent = '';
  if (menus.switcher) { menus.switcher.close(); menus.switcher = null; }
  if (!inst) {
    titleSlot.appendChild(el('span', { 'class': 'ph-brand-name', text: 'pluginhost' }));
    return;
  }
  var button = el('button', { type: 'button', 'class': 'ph-switcher', 'aria-haspopup': 'dialog', 'data-ph-switcher': '1' }, [
    icon(inst.plugin.icon || 'extension', 'ph-switcher-icon'),
    el('span', { 'class': 'ph-switcher-names' }, [
      el('span', { 'class': 'ph-switcher-plugin', text: inst.plugin.name }),
      el('span', { 'class': 'ph-switcher-instance', text: inst.name })
    ]),
    el('span', { 'class': 'ph-visually-hidden', text: ', switch Instance' }),
    icon('expand_more')
  ]);
  var panel = el('div', { 'class': 'ph-popover ph-switcher-panel', role: 'dialog', 'aria-label': 'Your Instances' });
  var list = el('ul', { 'class': 'ph-menu-list' });
  instances.list.forEach(function (x) {
    var a = inPage(el('a', { 'class': 'ph-menu-link', 'data-ph-switch': x.id, 'aria-current': x.id === inst.id ? 'true' : null }, [
      icon(x.plugin.icon || 'extension'),
      el('span', { 'class': 'ph-menu-text' }, [el('span', { text: x.name }), el('span', { 'class': 'ph-menu-sub', text: x.plugin.name + (x.enabled ? '' : ' · disabled') })])
    ]), firstView(x.id));
    list.appendChild(el('li', null, [a]));
  });
  add(panel, [el('h2', { 'class': 'ph-popover-title', text: 'Your Instances' }), list,
    inPage(el('a', { 'class': 'ph-menu-link ph-menu-footer' }, [icon('apps'), el('span', { text: 'All your plugins' })]), { kind: 'home' })]);
  titleSlot.appendChild(el('div', { 'class': 'ph-popover-anchor' }, [button, panel]));
  menus.switcher = popover(button, panel);
}

// destinations are the navigation's: on an Instance's views the home, its
// screens by placement (auto and navigation in the navigation, menu under
// More, hidden nowhere) and its settings; elsewhere the home and the
// Instances.
function destinations(v, inst) {
  var out = { items: [], more: [] };
  out.items.push({ key: 'home', label: 'Home', icon: 'home', view: { kind: 'home' } });
  if (inst) {
    var exts = screenExts[inst.id] || inst.plugin.extensions.map(function (e) { return { id: e.id, point: e.point, config: { placement: e.placement, icon: e.icon } }; });
    // The plugin's home extensions are on the home; the navigation offers
    // them only to a plugin that has no screen.
    var screens = exts.some(function (e) { return e.point === 'screen' && offers(e.point, placementOf(e)); });
    exts.forEach(function (e) {
      var placement = placementOf(e);
      if (!offers(e.point, placement) || (screens && e.point === 'home')) return;
      var d = { key: 'screen:' + e.id, label: words.screenLabel(e), icon: words.iconName(e.config && e.config.icon) || (e.point === 'home' ? 'dashboard' : 'extension'), view: screenView(inst.id, e.id, {}), extension: e.id, placement: placement || 'auto' };
      (placement === 'menu' ? out.more : out.items).push(d);
    });
    out.items.push({ key: 'settings', label: 'Settings', icon: 'settings', view: { kind: 'settings', instance: inst.id } });
  } else {
    instances.list.forEach(function (x) {
      out.items.push({ key: 'instance:' + x.id, label: x.name, sub: x.plugin.name, icon: x.plugin.icon || 'extension', view: firstView(x.id), instance: x.id });
    });
  }
  return out;
}
function currentKey(v) {
  if (!v) return null;
  if (v.kind === 'home') return 'home';
  if (v.kind === 'settings') return 'settings';
  if (v.kind === 'screen') return 'screen:' + v.stack[0].extension;
  return null;
}

function renderNav(v, inst) {
  if (menus.more) { menus.more.close(); menus.more = null; }
  navEl.textContent = '';
  var d = destinations(v, inst);
  var items = d.items, more = d.more.slice();
  // A bar has room for five.
  if (navMode === 'bar' && items.length + (more.length ? 1 : 0) > 5) {
    var last = inst ? items.pop() : null; // the settings stay in sight
    more = items.splice(3).concat(more);
    if (last) items.push(last);
  }
  var key = currentKey(v);
  var ul = el('ul', { 'class': 'ph-sn-list' });
  items.forEach(function (it) { ul.appendChild(el('li', null, [destination(it, key)])); });
  if (more.length) {
    var button = el('button', { type: 'button', 'class': 'ph-sn-dest ph-sn-more', 'aria-haspopup': 'dialog', 'data-ph-nav-more': '1',
      'aria-current': more.some(function (it) { return it.key === key; }) ? 'page' : null }, [
      el('span', { 'class': 'ph-sn-icon' }, [icon('more_horiz')]), el('span', { 'class': 'ph-sn-label', text: 'More' })]);
    var panel = el('div', { 'class': 'ph-popover ph-more-panel', role: 'dialog', 'aria-label': 'More' });
    var list = el('ul', { 'class': 'ph-menu-list' });
    more.forEach(function (it) { list.appendChild(el('li', null, [destination(it, key, true)])); });
    panel.appendChild(list);
    ul.appendChild(el('li', { 'class': 'ph-popover-anchor' }, [button, panel]));
    menus.more = popover(button, panel);
  }
  navEl.appendChild(ul);
}

function destination(it, key, inMenu) {
  var a = el('a', { 'class': inMenu ? 'ph-menu-link' : 'ph-sn-dest', 'data-ph-dest': it.key, 'aria-current': it.key === key ? 'page' : null,
    'data-extension': it.extension || null, 'data-placement': it.placement || null, 'data-instance-dest': it.instance || null }, [
    el('span', { 'class': 'ph-sn-icon' }, [icon(it.icon)]),
    el('span', { 'class': 'ph-sn-label' }, [el('span', { 'class': 'ph-sn-main', text: it.label }), it.sub ? el('span', { 'class': 'ph-sn-sub', text: it.sub }) : null])
  ]);
  return inPage(a, it.view);
}

var resizeQueued = false;
window.addEventListener('resize', function () {
  if (resizeQueued) return;
  resizeQueued = true;
  requestAnimationFrame(function () {
    resizeQueued = false;
    if (modeOfWidth() !== navMode) chrome();
  });
});

// ---- The account menu: the theme, the dashboard, the debug view, signing out ----

function accountMenu() {
  var viewer = bundle.viewer || { name: '' };
  var initial = Array.from(viewer.name || '?')[0].toUpperCase();
  var button = el('button', { type: 'button', 'class': 'ph-avatar-btn', 'aria-haspopup': 'dialog', 'aria-label': 'Account: ' + viewer.name, 'data-ph-account': '1' }, [
    el('span', { 'class': 'ph-avatar-circle', 'aria-hidden': 'true', text: initial })]);
  var panel = el('div', { 'class': 'ph-popover ph-account-panel', role: 'dialog', 'aria-label': 'Account' });
  var choice = prefs.themeChoice();
  var themes = el('fieldset', { 'class': 'ph-theme-choice' }, [el('legend', { text: 'Theme' })]);
  [['system', 'Device', 'brightness_auto'], ['light', 'Light', 'light_mode'], ['dark', 'Dark', 'dark_mode']].forEach(function (t) {
    var id = 'ph-theme-' + t[0];
    var input = el('input', { type: 'radio', name: 'ph-theme', id: id, value: t[0], 'data-ph-theme': t[0], checked: choice === t[0] });
    input.addEventListener('change', function () { if (input.checked) setTheme(t[0]); });
    themes.appendChild(el('label', { 'class': 'ph-theme-option', 'for': id }, [input, icon(t[2]), el('span', { text: t[1] })]));
  });
  var signOut = el('form', { method: 'post', action: '/app/logout', 'class': 'ph-signout' }, [
    el('button', { type: 'submit', 'class': 'ph-menu-link', 'data-ph-signout': '1' }, [icon('logout'), el('span', { text: 'Sign out' })])]);
  var links = el('div', { 'class': 'ph-account-links' });
  if (viewer.admin) {
    links.appendChild(inPage(el('a', { 'class': 'ph-menu-link', 'data-ph-dashboard-link': '1' }, [icon('dashboard'), el('span', { text: 'Storage dashboard' })]), { kind: 'dashboard' }));
    // The debug view (the inspector, the event log, the codes of errors)
    // is the server's to give: it opens as a page of its own.
    var debugLink = el('a', { 'class': 'ph-menu-link', 'data-ph-debug-link': '1' }, [icon('code'), el('span', { text: bundle.debug ? 'Leave the debug view' : 'Open the debug view' })]);
    debugLink.addEventListener('click', function () { debugLink.href = debugHref(); });
    debugLink.addEventListener('focus', function () { debugLink.href = debugHref(); });
    debugLink.href = '#';
    links.appendChild(debugLink);
  }
  add(panel, [
    el('div', { 'class': 'ph-account-who' }, [el('span', { 'class': 'ph-avatar-circle ph-avatar-large', 'aria-hidden': 'true', text: initial }),
      el('span', null, [el('span', { 'class': 'ph-account-name', text: viewer.name }), el('span', { 'class': 'ph-menu-sub', text: viewer.admin ? 'Administrator' : 'Signed in' })])]),
    themes, links, signOut
  ]);
  accountSlot.appendChild(el('div', { 'class': 'ph-popover-anchor' }, [button, panel]));
  menus.account = popover(button, panel);
}
function debugHref() {
  var u = new URL(location.href);
  if (bundle.debug) u.searchParams.delete('debug'); else u.searchParams.set('debug', '1');
  return u.pathname + u.search;
}

// setTheme keeps the person's pick and redraws every surface in it.
function setTheme(choice) {
  prefs.setThemeChoice(choice);
  applyMode();
}
function applyMode() {
  var mode = prefs.themeMode();
  if (screen) screen.runtime.setMode(mode);
  if (home) home.setMode(mode);
}
prefs.watchTheme(applyMode);

// ---- The connection's state: offline and reconnecting ----------------------------

var downSince = null, downTimer = null, everLive = false;
function connectionBanner() {
  var offline = navigator.onLine === false;
  var reconnecting = !offline && everLive && downSince !== null && Date.now() - downSince >= 1500;
  bannersEl.textContent = '';
  if (!offline && !reconnecting) return;
  bannersEl.appendChild(el('div', { 'class': 'ph-offline', role: 'status', 'data-ph-offline': offline ? 'offline' : 'reconnecting' }, [
    icon(offline ? 'wifi_off' : 'sync_problem'),
    el('span', { text: offline ? 'You are offline. What you see may be out of date; it updates when you are back online.'
      : 'The connection to the server was lost. Reconnecting… What you see may be out of date.' })
  ]));
}
conn.onStatus(function (s) {
  clearTimeout(downTimer);
  if (s === 'live') { everLive = true; downSince = null; }
  else if (downSince === null) {
    downSince = Date.now();
    downTimer = setTimeout(connectionBanner, 1600);
  }
  connectionBanner();
});
window.addEventListener('online', connectionBanner);
window.addEventListener('offline', connectionBanner);

// ---- The page's test hooks ---------------------------------------------------------

window.pluginhostShell = {
  home: function () { go({ kind: 'home' }, 'push'); },
  open: function (instanceID, extension, params) { go(screenView(instanceID, extension, params), 'push'); },
  view: function () { return current ? JSON.parse(JSON.stringify(current)) : null; },
  // surfaces lists what the page shows: its home cards, responses and
  // screen.
  surfaces: function () {
    var out = home ? home.surfaces() : [];
    if (screen) out.push({ surface: 'screen', instance: screen.instance, extension: screen.runtime.stack().slice(-1)[0].extension, shown: !appEl.hidden });
    return out;
  },
  // connected reports whether the page's socket is up.
  connected: function () { return conn.connected(); },
  // offline says what the connection banner says: 'offline',
  // 'reconnecting' or null.
  offline: function () { var b = bannersEl.querySelector('[data-ph-offline]'); return b ? b.getAttribute('data-ph-offline') : null; },
  // calls is how many calls the host cache made: a source shown on
  // several surfaces counts once.
  calls: function () { return cache.calls; }
};

// ---- Start ----------------------------------------------------------------------------

var start = router.fromHistory(history.state, location.pathname, location.search) || { kind: 'home' };
history.replaceState(router.viewState(start), '', location.pathname + location.search + location.hash);
show(start, 'initial');
