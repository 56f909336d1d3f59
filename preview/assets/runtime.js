// runtime.js: the UI Runtime of the host. It reads the node catalog and the
// page's bundle (themes, screen sizes) from the JSON blocks of the page, asks
// its host for the plugin and its configs, renders the first screen, and runs
// actions with the host's rules (core.js holds the rules shared with the Go
// side). It never evaluates plugin text as code and never inserts it as HTML:
// every string reaches the page as a text node or an attribute value. Every
// invoke, navigation, back, state change and validation failure is appended
// to the event log.
//
// Everything that depends on where the page runs goes through one host
// object, made by opts.makeHost(env) (fixtures.js for the preview, live.js
// for the server's web host):
//
//   kind, instance        the host's name; the Instance, for the host cache
//   load()                -> Promise of {plugin, extensions, start, generation,
//                            context, route, state, warnings} or {error}
//   run(capability, arguments, query, generation)
//                         -> Promise of {result} or {error}; {changed} after a
//                            storage write
//   persisted(extension)  -> the values kept for the extension
//   persist(extension, values) -> Promise of {ok} or {error}
//   image(url)            -> Promise of {src} or {error}; null: never loads
//   watch(listener)       listener({type: 'storage'|'package'|'blocked'|
//                            'unblocked'|'status', ...}) on changes
//
// The rules (the host cache, which sources refresh when, stale answers,
// retry states) are here and in hostcache.js, once, for every host.
import { core } from './core.js';
import * as hc from './hostcache.js';
import { h, patch, patchChildren } from './vdom.js';
import { contrast } from './theme.js';
import * as words from './words.js';

// Runtime mounts one surface and returns its handle ({api, destroy}).
// opts.makeHost(env) makes its host; the rest is optional:
//   root       the element it draws in (#ph-app)
//   bundle     the page's bundle (the ph-bundle block)
//   cache      the host cache it shares (a PluginhostCache.Cache)
//   events     the event log it appends to, shared by a page's surfaces
//   surface    what it is on the page: 'screen' (the default), 'home'
//              (a home card) or 'response' (a response the AI chose)
//   shown      () -> whether it is on screen now (auto refresh only then)
//   onNavigate (target, parameters) on a navigate from a home card or a
//              response: the page opens the screen
//   onExit     () on back from its first screen: the page closes it
//   onLoad     (plugin, extensions, current) when it loaded the plugin's
//              configs, and when it shows another extension
//   api        true: it is window.pluginhostPreview
//   t0         when the page opened it (performance.now()), for its metrics
//   stack      the routes to open ([{extension, params, result_state}]),
//              the last one shown; default: the host's start
//   history    the page's history, for a screen whose routes are addresses:
//              push(stack) and replace(stack) after a navigate, back(result)
//              instead of closing the route itself (the page then calls
//              setStack with the stack of the entry it went back to)
//   mode       'light' or 'dark' (default: the host's or light)
//   onReady    () when the first screen shows the data it loads itself
//   onAction   (kind) for what the page does on an error's behalf:
//              'settings' (the Instance's settings), 'sign_in'
// The handle's setStack(stack, result) shows the routes of an address
// (closing, keeping and opening routes), setMode(mode) the theme.
export function Runtime(opts) {
  // T0, the start of the metrics: when the page opened the surface
  // (opts.t0), else the standalone page's first script, else the
  // navigation's start (the time origin of performance.now()).
  var T0 = typeof opts.t0 === 'number' ? opts.t0 : typeof window.pluginhostStart === 'number' ? window.pluginhostStart : 0;
  var T1 = performance.now();
  // The catalog: a static script of the web host's, or the standalone
  // page's own block.
  var catalog = window.pluginhostCatalog || JSON.parse(document.getElementById('ph-catalog').textContent);
  var bundle = opts.bundle || JSON.parse(document.getElementById('ph-bundle').textContent);
  // The host's themes: the standalone page's bundle, or the web host's
  // static script.
  var hostThemes = bundle.themes || window.pluginhostThemes;
  var surface = opts.surface || 'screen';
  // A home card or a response is drawn inside the page, as tall as what
  // it shows; its navigate opens the page's screen.
  var embedded = surface === 'home' || surface === 'response';
  var cache = opts.cache || new hc.Cache();
  // plugin, fctx and startState come from the host's load.
  var plugin = { id: '', name: '', version: '', permissions: [], capabilities: [] };
  var fctx = {};
  var startState = null;
  // responseSample: a tool result the host renders in a response extension,
  // with the verdict of its checks (the preview's fixtures), or null.
  var responseSample = null;
  var loadWarnings = [];

  // ---- Catalog ------------------------------------------------------------

  var nodeTypes = {};
  catalog.nodes.forEach(function (n) {
    var props = {};
    catalog.common_props.concat(n.props || []).forEach(function (p) { props[p.name] = p; });
    nodeTypes[n.type] = { type: n.type, props: props, repeats: !!n.repeats };
  });
  var colorRoles = {};
  catalog.color_roles.forEach(function (r) { colorRoles[r] = true; });
  var typography = {};
  catalog.typography.forEach(function (t) { typography[t] = true; });
  var fontWeights = {};
  catalog.font_weights.forEach(function (w) { fontWeights[w.name] = w.weight; });

  // ---- Events -------------------------------------------------------------

  var events = opts.events || [];
  var runtimeWarnings = [];
  function currentRoute() { return app.stack[app.stack.length - 1]; }
  function emit(type, detail) {
    var r = currentRoute();
    var e = { seq: (events.seq = (events.seq || 0) + 1), type: type, extension: r ? r.ext.id : null };
    if (opts.surface) { e.surface = surface; e.instance = host ? host.instance : null; }
    var d = core.redact(detail || {});
    Object.keys(d).forEach(function (k) { if (!(k in e)) e[k] = d[k]; });
    events.push(e);
    pendingRows.push(e);
    schedulePanels();
    return e;
  }
  function warn(kind, message, detail) {
    var w = { kind: kind, message: message };
    runtimeWarnings.push(w);
    var d = detail || {};
    d.message = message;
    emit(kind, d);
  }
  function clone(v) { return v === undefined ? undefined : JSON.parse(JSON.stringify(v)); }

  // ---- Persisted state (kept by the host) ----------------------------------

  function loadPersisted(extID) { return host.persisted(extID) || {}; }
  // savePersisted asks the host to keep values; it resolves to whether the
  // host kept them.
  function savePersisted(extID, values) {
    app.busy++;
    return Promise.resolve(host.persist(extID, values)).then(function (r) {
      app.busy--;
      if (r && r.error) {
        warn('persist_unavailable', 'persisted state was not kept: ' + r.error.code + (r.error.message ? ' – ' + r.error.message : ''), { error: r.error });
        return false;
      }
      return true;
    });
  }

  // ---- App ----------------------------------------------------------------

  var extensions = {};
  var app = {
    mode: 'light',
    connecting: null,
    checking: null,
    size: 'compact',
    stack: [],
    generation: 0,
    blocked: null,
    notice: null,
    toast: null,
    live: null,
    lastAction: null,
    pendingFocus: null,
    busy: 0,
    metrics: {}
  };
  var routeSeq = 0;

  function Route(ext, params, resultState, first) {
    this.seq = ++routeSeq;
    this.ext = ext;
    this.config = ext.config;
    this.params = params || {};
    this.resultState = resultState || null;
    this.alive = true;
    this.declared = {};
    var init = this.config.initial_state || {};
    var state = {};
    var self = this;
    Object.keys(init).forEach(function (k) { self.declared[k] = true; state[k] = clone(init[k]); });
    var persisted = loadPersisted(ext.id);
    Object.keys(persisted).forEach(function (k) { if (self.declared[k]) state[k] = persisted[k]; });
    if (first && startState) {
      Object.keys(startState).forEach(function (k) { if (k !== '$comment' && self.declared[k]) state[k] = clone(startState[k]); });
    }
    this.state = state;
    this.sources = {};
    (this.config.data_sources || []).forEach(function (s) { self.sources[s.id] = s; });
    this.data = {};
    this.loading = {};
    this.errors = {};
    this.good = {};
    this.loadSeq = {};
    this.keys = {};
    this.loadedAt = {};
    this.timers = [];
    this.inputs = [];
    this.touched = {};
    this.shownErrors = {};
    this.validation = [];
    this.ui = { collapsed: {}, select: null, filter: {}, focused: null, nav: 0, drawer: false, overflow: false };
    // A response extension opened with the fixtures' sample tool result shows
    // it as the host does when every check passes: as the result of each of
    // its data sources of that capability, without a new call.
    this.prefilled = {};
    var sample = responseSample;
    if (first && sample && ext.point === 'response' && sample.verdict.renders) {
      Object.keys(this.sources).forEach(function (id) {
        if (self.sources[id].capability !== sample.capability) return;
        var res = core.isObject(sample.result) ? sample.result : {};
        self.data[id] = { completed: true, summary: res.summary, data: clone(res.data) };
        self.good[id] = true;
        self.prefilled[id] = true;
      });
    }
    var nav = this.config.navigation;
    if (nav && !nav.selected_state_key && nav.persist) {
      var saved = persisted['$navigation'];
      if (typeof saved === 'number') this.ui.nav = saved;
    }
  }

  // ---- Context of bindings ------------------------------------------------

  // screenInfo is the screen the extension is shown on: in the web host the
  // window (the app fills it), in the preview the chosen size.
  function screenInfo() {
    var w, ht;
    if (bundle.live) {
      w = Math.round(window.innerWidth);
      ht = Math.round(window.innerHeight);
    } else {
      var s = bundle.screens[app.size];
      w = s[0];
      ht = s[1];
    }
    return { width: w, height: ht, size_class: w < 600 ? 'compact' : w < 840 ? 'medium' : 'expanded' };
  }

  function permissionsOf() {
    var p = { storage: false, ai_storage: false, network: false };
    plugin.permissions.forEach(function (n) { p[n] = true; });
    var given = fctx.permissions || {};
    Object.keys(given).forEach(function (k) { p[k] = given[k] && plugin.permissions.indexOf(k) >= 0; });
    return p;
  }

  function ctxOf(route, scope) {
    var data = {}, loading = {}, errors = {};
    Object.keys(route.sources).forEach(function (id) {
      data[id] = route.data[id] || { completed: false, summary: '', data: null };
      loading[id] = !!route.loading[id];
      errors[id] = route.errors[id] || null;
    });
    var c = {
      data: data,
      state: route.state,
      context: {
        platform: fctx.platform || 'android',
        screen: screenInfo(),
        permissions: permissionsOf(),
        connections: fctx.connections || {},
        connected: fctx.connected === undefined ? true : fctx.connected,
        loading: loading,
        errors: errors,
        route: route.params
      }
    };
    if (scope && scope.hasItem) c.item = scope.item;
    return c;
  }

  var templates = new Map();
  function template(s) {
    var t = templates.get(s);
    if (!t) {
      try {
        t = core.parseTemplate(s);
      } catch (e) {
        // The validator refuses these; a runtime payload may still carry one.
        warn('binding_error', 'cannot read ' + JSON.stringify(s) + ': ' + e.message, { template: s });
        t = { parts: [{ text: s }] };
      }
      templates.set(s, t);
    }
    return t;
  }
  function bindString(s, ctx) { return s.indexOf('{{') < 0 ? s : core.evalTemplate(template(s), ctx); }
  // resolveValue resolves every string inside a JSON value (arguments, values,
  // parameters, results); a string that is one whole binding keeps its type.
  function resolveValue(v, ctx) {
    if (typeof v === 'string') return bindString(v, ctx);
    if (Array.isArray(v)) return v.map(function (e) { return resolveValue(e, ctx); });
    if (core.isObject(v)) {
      var out = {};
      Object.keys(v).forEach(function (k) { out[k] = resolveValue(v[k], ctx); });
      return out;
    }
    return v;
  }

  // Conditions are parsed once per condition object of the config.
  var conditions = new WeakMap();
  function condition(c, ctx) {
    var parsed = core.isObject(c) ? conditions.get(c) : undefined;
    if (!parsed) {
      parsed = core.parseCondition(c);
      if (parsed.problems.length) warn('condition_error', 'a condition breaks a rule: ' + parsed.problems[0].message, { condition: c });
      if (core.isObject(c)) conditions.set(c, parsed);
    }
    return parsed.problems.length === 0 && core.evalCondition(parsed.condition, ctx);
  }

  // ---- Theme ---------------------------------------------------------------

  function themeGroups(mode) {
    var t = (currentRoute() && currentRoute().config.theme) || {};
    var out = {};
    Object.keys(t).forEach(function (k) { if (k !== 'light' && k !== 'dark') out[k] = t[k]; });
    var v = t[mode] || {};
    Object.keys(v).forEach(function (k) {
      if (core.isObject(v[k]) && core.isObject(out[k])) {
        var merged = {};
        Object.keys(out[k]).forEach(function (m) { merged[m] = out[k][m]; });
        Object.keys(v[k]).forEach(function (m) { merged[m] = v[k][m]; });
        out[k] = merged;
      } else {
        out[k] = v[k];
      }
    });
    return out;
  }

  var contrastSeen = {};
  function scheme(mode, groups) {
    var base = hostThemes[mode];
    var given = groups.color_scheme || {};
    var out = {};
    function resolveRole(role, depth) {
      var v = given[role];
      if (v === undefined) return base[role];
      if (typeof v === 'string' && v[0] === '#') return v;
      if (depth > catalog.color_roles.length || !colorRoles[v]) {
        warn('theme_warning', 'colour role ' + role + ' names ' + JSON.stringify(v) + ' in a cycle; the host fills it from its theme', { role: role });
        return base[role];
      }
      return resolveRole(v, depth + 1);
    }
    catalog.color_roles.forEach(function (r) { out[r] = resolveRole(r, 0); });
    // Contrast the validator could not judge statically is judged here.
    catalog.contrast_pairs.forEach(function (p) {
      var ratio = contrast(out[p.foreground], out[p.background]);
      var key = mode + ':' + p.foreground + ':' + p.background;
      if (ratio !== null && ratio < 4.5 && !contrastSeen[key]) {
        contrastSeen[key] = true;
        warn('contrast_warning', p.foreground + ' on ' + p.background + ' has a contrast of ' + ratio.toFixed(2) + ':1 in ' + mode + ' mode; at least 4.5:1 is needed', { mode: mode, foreground: p.foreground, background: p.background, ratio: Math.round(ratio * 100) / 100 });
      }
    });
    return out;
  }
  function themeStyle() {
    var g = themeGroups(app.mode);
    var s = scheme(app.mode, g);
    var css = '';
    Object.keys(s).forEach(function (r) { css += '--ph-' + r.replace(/_/g, '-') + ':' + s[r] + ';'; });
    var typo = g.typography || {};
    css += '--ph-type-scale:' + (typo.scale || 1) + ';';
    if (typo.body_weight !== undefined) css += '--ph-body-weight:' + weight(typo.body_weight) + ';';
    if (typo.title_weight !== undefined) css += '--ph-title-weight:' + weight(typo.title_weight) + ';';
    if (g.radius !== undefined) css += '--ph-radius:' + g.radius + 'px;';
    if (g.border && g.border.radius !== undefined) css += '--ph-radius:' + g.border.radius + 'px;';
    if (g.border && g.border.width !== undefined) css += '--ph-border-width:' + g.border.width + 'px;';
    if (g.icon && g.icon.size !== undefined) css += '--ph-icon-size:' + g.icon.size + 'px;';
    if (g.states && g.states.disabled_opacity !== undefined) css += '--ph-disabled-opacity:' + g.states.disabled_opacity + ';';
    if (g.states && g.states.selected_color !== undefined) css += '--ph-selected:' + color(g.states.selected_color) + ';';
    if (g.spacing !== undefined) css += '--ph-spacing:' + g.spacing + 'px;';
    if (g.surface && g.surface.elevation !== undefined) css += '--ph-elevation:' + g.surface.elevation + ';';
    return css;
  }
  function weight(w) { return typeof w === 'number' ? w : (fontWeights[w] || 400); }
  function color(v) {
    if (typeof v !== 'string') return null;
    if (v[0] === '#') return v;
    if (colorRoles[v]) return 'var(--ph-' + v.replace(/_/g, '-') + ')';
    return null;
  }
  function inset(v) {
    if (typeof v === 'number') return v + 'px';
    if (!core.isObject(v)) return null;
    if ('horizontal' in v || 'vertical' in v) {
      var hz = v.horizontal || 0, vt = v.vertical || 0;
      return vt + 'px ' + hz + 'px';
    }
    return (v.top || 0) + 'px ' + (v.right || 0) + 'px ' + (v.bottom || 0) + 'px ' + (v.left || 0) + 'px';
  }
  function shadow(e) {
    if (!e) return 'none';
    return '0 ' + Math.min(e, 24) / 2 + 'px ' + Math.min(e, 24) + 'px rgba(0,0,0,' + (0.12 + Math.min(e, 24) * 0.01) + ')';
  }

  // ---- Props --------------------------------------------------------------

  function propOf(node, name, scope) {
    var props = node.props || {};
    var spec = nodeTypes[node.type] && nodeTypes[node.type].props[name];
    var v = props[name];
    if (v === undefined) return spec ? spec['default'] : undefined;
    if (spec && (spec.bindable || spec.type === 'binding') && typeof v === 'string') return bindString(v, scope.ctx);
    return v;
  }
  function str(v) { return v === null || v === undefined ? '' : typeof v === 'string' ? v : core.text(v); }

  function commonStyle(node, scope) {
    var s = '';
    ['width', 'height', 'min_width', 'max_width', 'min_height', 'max_height'].forEach(function (k) {
      var v = propOf(node, k, scope);
      if (typeof v === 'number') s += k.replace('_', '-') + ':' + v + 'px;';
    });
    var m = propOf(node, 'margin', scope);
    if (m !== undefined) s += 'margin:' + inset(m) + ';';
    var o = propOf(node, 'opacity', scope);
    if (typeof o === 'number' && o !== 1) s += 'opacity:' + o + ';';
    return s;
  }

  // ---- Rendering ----------------------------------------------------------

  var renderers = {};
  var nodeCount = 0;

  function renderNode(node, path, scope, parentType) {
    var type = nodeTypes[node.type];
    if (!type) {
      warn('unknown_node', 'node type ' + JSON.stringify(node.type) + ' is not in the catalog', { path: path });
      return h('div', { 'class': 'ph-error', 'data-ph-path': path }, 'Unknown node type ' + node.type);
    }
    var vis = (node.props || {}).visible_when;
    if (vis !== undefined && !condition(vis, scope.ctx)) return null;
    nodeCount++;
    var r = renderers[node.type];
    var v = r(node, path, scope, parentType);
    v.a['data-ph-type'] = node.type;
    v.a['data-ph-path'] = path;
    var cs = commonStyle(node, scope);
    if (cs) v.a.style = (v.a.style || '') + cs;
    var sem = propOf(node, 'semantics_label', scope);
    if (sem) v.a['aria-label'] = str(sem);
    return v;
  }
  function children(node, path, scope) {
    return (node.children || []).map(function (c, i) { return renderNode(c, path + '/children/' + i, scope, node.type); });
  }
  function withItem(scope, item, index) {
    var s = Object.create(scope);
    s.item = item;
    s.hasItem = true;
    s.itemIndex = index;
    s.ctx = ctxOf(scope.route, s);
    return s;
  }
  // repeated renders a repeating node's template once per entry of
  // items_source, or its static children.
  function repeated(node, path, scope, wrap) {
    var src = (node.props || {}).items_source;
    if (src === undefined) return children(node, path, scope).map(function (c) { return c && wrap(c); });
    var items = propOf(node, 'items_source', scope);
    // Before its first answer a list shows where its items will be.
    if ((items === null || items === undefined) && firstLoad(scope.route)) {
      return [0, 1, 2].map(function (i) { return wrap(h('div', { 'class': 'ph-skeleton ph-skeleton-row', 'aria-hidden': 'true', 'data-ph-skeleton': i })); });
    }
    if (items === null || items === undefined) return [];
    if (!Array.isArray(items)) {
      warn('binding_type', 'items_source of ' + path + ' read ' + core.text(items) + ', not an array', { path: path });
      return [];
    }
    var tpl = node.children && node.children[0];
    if (!tpl) return [];
    if (items.length === 0) {
      var empty = propOf(node, 'empty_text', scope);
      return empty ? [h('div', { 'class': 'ph-empty-text' }, str(empty))] : [];
    }
    return items.map(function (it, i) {
      var c = renderNode(tpl, path + '/children/0', withItem(scope, it, i));
      if (c) c.a['data-ph-item'] = i;
      return c && wrap(c);
    });
  }
  // firstLoad reports whether a source of the route is loading and has
  // never answered.
  function firstLoad(route) {
    return Object.keys(route.sources).some(function (id) { return route.loading[id] && !route.good[id] && !route.errors[id]; }) ||
      Object.keys(route.sources).some(function (id) { return route.sources[id].trigger !== 'manual' && !route.good[id] && !route.errors[id] && !route.loadSeq[id]; });
  }
  var axis = { start: 'flex-start', center: 'center', end: 'flex-end', space_between: 'space-between', space_around: 'space-around', space_evenly: 'space-evenly', stretch: 'stretch' };
  function flexBox(dir) {
    return function (node, path, scope) {
      var s = 'display:flex;flex-direction:' + dir + ';gap:' + (propOf(node, 'spacing', scope) || 0) + 'px;';
      var p = propOf(node, 'padding', scope);
      if (p !== undefined) s += 'padding:' + inset(p) + ';';
      s += 'justify-content:' + axis[propOf(node, 'main_axis_alignment', scope) || 'start'] + ';';
      s += 'align-items:' + axis[propOf(node, 'cross_axis_alignment', scope) || 'start'] + ';';
      return h('div', { 'class': 'ph-' + dir, style: s }, children(node, path, scope));
    };
  }
  renderers.column = flexBox('column');
  renderers.row = flexBox('row');
  renderers.wrap = function (node, path, scope) {
    var s = 'display:flex;flex-wrap:wrap;column-gap:' + (propOf(node, 'spacing', scope) || 0) + 'px;row-gap:' + (propOf(node, 'run_spacing', scope) || 0) + 'px;justify-content:' + axis[propOf(node, 'alignment', scope) || 'start'] + ';';
    var p = propOf(node, 'padding', scope);
    if (p !== undefined) s += 'padding:' + inset(p) + ';';
    return h('div', { 'class': 'ph-wrap', style: s }, children(node, path, scope));
  };
  renderers.grid = function (node, path, scope) {
    var props = node.props || {};
    var cols = props.min_column_width !== undefined ? 'repeat(auto-fill,minmax(' + props.min_column_width + 'px,1fr))' : 'repeat(' + propOf(node, 'columns', scope) + ',minmax(0,1fr))';
    var s = 'display:grid;grid-template-columns:' + cols + ';gap:' + (propOf(node, 'spacing', scope) || 0) + 'px;';
    var p = propOf(node, 'padding', scope);
    if (p !== undefined) s += 'padding:' + inset(p) + ';';
    var ratio = propOf(node, 'child_aspect_ratio', scope);
    return h('div', { 'class': 'ph-grid', style: s }, repeated(node, path, scope, function (c) {
      return h('div', { 'class': 'ph-cell', style: 'aspect-ratio:' + ratio + ';' }, c);
    }));
  };
  var stackAlign = { top_start: 'start start', top_center: 'start center', top_end: 'start end', center_start: 'center start', center: 'center center', center_end: 'center end', bottom_start: 'end start', bottom_center: 'end center', bottom_end: 'end end' };
  renderers.stack = function (node, path, scope) {
    var place = stackAlign[propOf(node, 'alignment', scope)] || 'start start';
    var fit = propOf(node, 'fit', scope) === 'expand';
    var kids = children(node, path, scope).map(function (c) {
      if (!c || c.a['data-ph-type'] === 'positioned') return c;
      return h('div', { 'class': 'ph-stack-child', style: 'grid-area:1/1;place-self:' + (fit ? 'stretch' : place) + ';' }, c);
    });
    return h('div', { 'class': 'ph-stack', style: 'display:grid;position:relative;' + (propOf(node, 'clip', scope) === false ? '' : 'overflow:hidden;') }, kids);
  };
  renderers.positioned = function (node, path, scope) {
    var s = 'position:absolute;';
    ['left', 'top', 'right', 'bottom'].forEach(function (k) {
      var v = propOf(node, k, scope);
      if (typeof v === 'number') s += k + ':' + v + 'px;';
    });
    return h('div', { 'class': 'ph-positioned', style: s }, children(node, path, scope));
  };
  renderers.scroll = function (node, path, scope) {
    var dir = propOf(node, 'direction', scope);
    var s = dir === 'horizontal' ? 'overflow-x:auto;overflow-y:hidden;display:flex;' : 'overflow-y:auto;overflow-x:hidden;min-height:0;';
    var p = propOf(node, 'padding', scope);
    if (p !== undefined) s += 'padding:' + inset(p) + ';';
    return h('div', { 'class': 'ph-scroll', style: s }, children(node, path, scope));
  };
  renderers.padding = function (node, path, scope) {
    return h('div', { 'class': 'ph-padding', style: 'padding:' + inset(propOf(node, 'padding', scope)) + ';' }, children(node, path, scope));
  };
  renderers.center = function (node, path, scope) {
    return h('div', { 'class': 'ph-center', style: 'display:flex;align-items:center;justify-content:center;' }, children(node, path, scope));
  };
  renderers.expanded = function (node, path, scope) {
    return h('div', { 'class': 'ph-expanded', style: 'flex:' + propOf(node, 'flex', scope) + ' 1 0;min-width:0;min-height:0;display:flex;flex-direction:column;' }, children(node, path, scope));
  };
  renderers.surface = function (node, path, scope) {
    var s = 'background:' + color(propOf(node, 'color', scope)) + ';';
    var r = propOf(node, 'border_radius', scope);
    if (r !== undefined) s += 'border-radius:' + r + 'px;';
    var bw = propOf(node, 'border_width', scope);
    if (bw) s += 'border:' + bw + 'px solid ' + color(propOf(node, 'border_color', scope)) + ';';
    s += 'box-shadow:' + shadow(propOf(node, 'elevation', scope)) + ';';
    var p = propOf(node, 'padding', scope);
    if (p !== undefined) s += 'padding:' + inset(p) + ';';
    return h('div', { 'class': 'ph-surface', style: s }, children(node, path, scope));
  };
  renderers.card = function (node, path, scope) {
    var variant = propOf(node, 'variant', scope);
    var s = '';
    var c = color(propOf(node, 'color', scope));
    if (c) s += 'background:' + c + ';';
    var r = propOf(node, 'border_radius', scope);
    if (r !== undefined) s += 'border-radius:' + r + 'px;';
    var e = propOf(node, 'elevation', scope);
    if (e !== undefined) s += 'box-shadow:' + shadow(e) + ';';
    var p = propOf(node, 'padding', scope);
    s += 'padding:' + (p !== undefined ? inset(p) : '12px') + ';';
    var action = (node.props || {}).action;
    var kids = children(node, path, scope);
    if (!action) return h('div', { 'class': 'ph-card ph-card-' + variant, style: s }, kids);
    // A card that acts is a button laid over the card, named by the card's
    // text, so that the buttons inside it stay buttons of their own (never
    // one interactive element inside another).
    var name = str(propOf(node, 'semantics_label', scope)) || textOf(kids).trim().slice(0, 120);
    return h('div', { 'class': 'ph-card ph-card-' + variant + ' ph-card-action', style: s }, [
      h('button', { 'class': 'ph-card-hit', type: 'button', 'aria-label': name || 'Open', 'data-ph-card-hit': '1',
        on: { click: function (ev) { ev.stopPropagation(); trigger(action, scope, path); } } })
    ].concat(kids));
  };
  // textOf is the text a description of elements holds.
  function textOf(v) {
    if (v === null || v === undefined || v === false) return '';
    if (typeof v === 'string') return v;
    if (Array.isArray(v)) return v.map(textOf).join(' ');
    if (v.a && v.a['aria-hidden']) return '';
    return textOf(v.k);
  }
  renderers.section = function (node, path, scope) {
    var route = scope.route;
    var collapsible = propOf(node, 'collapsible', scope);
    var key = path + (scope.hasItem ? '#' + scope.itemIndex : '');
    if (collapsible && route.ui.collapsed[key] === undefined) route.ui.collapsed[key] = !!propOf(node, 'initially_collapsed', scope);
    var folded = collapsible && route.ui.collapsed[key];
    var title = propOf(node, 'title', scope), sub = propOf(node, 'subtitle', scope);
    var head = h('div', { 'class': 'ph-section-head' }, [
      h('div', null, [title !== undefined ? h('div', { 'class': 'ph-t-title_medium ph-section-title' }, str(title)) : null,
        sub !== undefined ? h('div', { 'class': 'ph-t-body_small ph-muted' }, str(sub)) : null]),
      collapsible ? h('button', { 'class': 'ph-icon-button', 'aria-expanded': String(!folded), 'aria-label': folded ? 'Expand' : 'Collapse',
        on: { click: function () { route.ui.collapsed[key] = !folded; render(); } } }, folded ? '▸' : '▾') : null
    ]);
    var p = propOf(node, 'padding', scope);
    var body = folded ? null : h('div', { 'class': 'ph-section-body', style: 'display:flex;flex-direction:column;gap:' + (propOf(node, 'spacing', scope) || 0) + 'px;' + (p !== undefined ? 'padding:' + inset(p) + ';' : '') }, children(node, path, scope));
    return h('section', { 'class': 'ph-section' }, [head, body]);
  };
  renderers.text = function (node, path, scope) {
    var style = propOf(node, 'style', scope);
    var s = 'color:' + color(propOf(node, 'color', scope)) + ';text-align:' + ({ start: 'start', center: 'center', end: 'end', justify: 'justify' })[propOf(node, 'align', scope)] + ';';
    var w = propOf(node, 'weight', scope);
    if (w !== undefined) s += 'font-weight:' + weight(w) + ';';
    var lines = propOf(node, 'max_lines', scope);
    if (lines) {
      var ov = propOf(node, 'overflow', scope);
      s += 'display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:' + lines + ';overflow:hidden;' + (ov === 'visible' ? 'overflow:visible;' : '');
    }
    var cls = 'ph-text ' + (typography[style] ? 'ph-t-' + style : 'ph-t-body_medium') + (propOf(node, 'selectable', scope) ? ' ph-selectable' : '');
    return h('div', { 'class': cls, style: s }, str(propOf(node, 'text', scope)));
  };

  var glyphs = { add: '+', close: '✕', arrow_back: '←', arrow_forward: '→', menu: '☰', more_vert: '⋮', refresh: '↻', search: '⌕', star: '★', check: '✓', home: '⌂', settings: '⚙', edit: '✎', 'delete': '⌫', north: '↑', south: '↓', east: '→', west: '←', save: '⤓', today: '◷', event: '▦', notes: '≣', mail: '✉', info: 'ℹ', warning: '⚠', error: '⊘', inbox: '⊟', favorite: '♥', person: '◉', cloud: '☁', history: '⟲', broken_image: '▨', expand_more: '▾', chevron_right: '›' };
  // iconGlyph draws an icon by its Material Symbols name: with the host's
  // icon font (the web host), the font's ligature draws any name; without
  // it (the standalone preview), a glyph of the host's own short list, or
  // the name's initials. A screen reader skips it: its meaning is the text
  // or label beside it, or an icon node's semantics_label.
  var iconFont = !!bundle.icon_font;
  // The web host loads a subset of the font first (window.pluginhostIcons
  // names its icons); any other name is drawn with the whole font, which
  // the browser loads only when a page shows one.
  var subsetIcons = null;
  if (iconFont && window.pluginhostIcons) {
    subsetIcons = {};
    window.pluginhostIcons.forEach(function (n) { subsetIcons[n] = true; });
  }
  function iconGlyph(name, size, colorValue, extraClass) {
    var n = str(name);
    var px = size || 24;
    var s = 'width:' + px + 'px;height:' + px + 'px;';
    if (colorValue) s += 'color:' + colorValue + ';';
    if (iconFont && /^[a-z0-9_]{1,64}$/.test(n)) {
      return h('span', { 'class': 'ph-icon ph-symbol' + (subsetIcons && !subsetIcons[n] ? ' ph-symbol-full' : '') + (extraClass ? ' ' + extraClass : ''), 'data-icon': n, 'aria-hidden': 'true', style: s + 'font-size:' + px + 'px;' }, n);
    }
    var g = glyphs[n] || n.replace(/_/g, ' ').split(' ').map(function (w) { return w[0] || ''; }).join('').slice(0, 2).toUpperCase();
    return h('span', { 'class': 'ph-icon' + (extraClass ? ' ' + extraClass : ''), 'data-icon': n, title: n, 'aria-hidden': 'true', style: s + 'font-size:' + Math.round(px * 0.66) + 'px;' }, g);
  }
  renderers.icon = function (node, path, scope) {
    var v = iconGlyph(propOf(node, 'name', scope), propOf(node, 'size', scope), color(propOf(node, 'color', scope)));
    // An icon with a semantics_label is an image with that name.
    if (propOf(node, 'semantics_label', scope)) { delete v.a['aria-hidden']; v.a.role = 'img'; }
    return v;
  };

  // imageFetch records what the host fetches for an image or avatar node and
  // returns the image when the host has it. Only the host's image function
  // (the server's image proxy) is ever asked; the page never loads the URL
  // itself. A host without one (the preview) draws placeholders.
  var imagesSeen = {};
  var images = new Map();
  function imageFetch(scope, path, url) {
    var perms = permissionsOf();
    var allowed = plugin.permissions.indexOf('network') >= 0 && perms.network;
    var key = scope.route.seq + ' ' + path + ' ' + (scope.hasItem ? scope.itemIndex : '') + ' ' + url;
    var has = url !== null && url !== undefined && url !== '';
    if (!imagesSeen[key]) {
      imagesSeen[key] = true;
      if (!has) emit('image_fetch', { node: path, url: null, fetched: false, reason: 'no URL yet' });
      else emit('image_fetch', { node: path, url: url, fetched: !!host.image && allowed, reason: allowed ? (host.image ? 'through the image proxy' : host.imageNote) : 'network permission not granted' });
    }
    if (!has || !allowed || !host.image || typeof url !== 'string') return null;
    var img = images.get(url);
    if (!img) {
      img = { state: 'loading' };
      images.set(url, img);
      app.busy++;
      host.image(url).then(function (r) {
        app.busy--;
        if (r.error) { img.state = 'failed'; img.error = r.error; emit('image_refused', { node: path, url: url, error: r.error }); }
        else { img.state = 'ok'; img.src = r.src; emit('image_loaded', { node: path, url: url }); }
        render();
      });
    }
    return img;
  }
  // imageNote is the text of an image's placeholder: the URL in the preview,
  // why it shows no image in the host (never the URL: a refused image's URL
  // and response are not rendered).
  function imageNote(img, url, allowed) {
    if (!host.image) return url ? str(url) : 'no image URL';
    if (!url) return 'no image yet';
    if (!allowed) return 'Images are off: this Instance has no network permission';
    if (!img || img.state === 'loading') return 'Loading image…';
    return 'Image unavailable (' + (img.error.reason || img.error.code) + ')';
  }
  renderers.image = function (node, path, scope) {
    var url = propOf(node, 'url', scope);
    var img = imageFetch(scope, path, url);
    var ratio = propOf(node, 'aspect_ratio', scope);
    var r = propOf(node, 'border_radius', scope);
    var s = (ratio ? 'aspect-ratio:' + ratio + ';' : '') + (r !== undefined ? 'border-radius:' + r + 'px;' : '');
    var alt = propOf(node, 'alt', scope);
    if (img && img.state === 'ok') {
      return h('img', { 'class': 'ph-image ph-image-loaded', src: img.src, alt: str(alt), 'data-ph-image': 'loaded', style: s + 'object-fit:' + (propOf(node, 'fit', scope) || 'cover') + ';' });
    }
    var allowed = plugin.permissions.indexOf('network') >= 0 && permissionsOf().network;
    var a = { 'class': 'ph-image', role: 'img', 'aria-label': str(alt), style: s, 'data-ph-image': img ? img.state : 'placeholder' };
    if (!host.image) { a.title = str(url); a['data-url'] = str(url); }
    return h('div', a, [
      iconGlyph(propOf(node, 'fallback_icon', scope), 20),
      h('span', { 'class': 'ph-image-url' }, imageNote(img, url, allowed))
    ]);
  };
  renderers.avatar = function (node, path, scope) {
    var size = propOf(node, 'size', scope);
    var url = propOf(node, 'url', scope);
    var label = str(propOf(node, 'label', scope));
    var icon = propOf(node, 'icon', scope);
    var s = 'width:' + size + 'px;height:' + size + 'px;background:' + color(propOf(node, 'color', scope)) + ';font-size:' + Math.round(size * 0.4) + 'px;';
    var a = { 'class': 'ph-avatar', style: s, title: label };
    var img = null;
    if ((node.props || {}).url !== undefined) {
      img = imageFetch(scope, path, url);
      if (!host.image) {
        a['data-url'] = str(url);
        if (url) a.title = str(url);
      }
    }
    var initials = label.split(/\s+/).filter(Boolean).map(function (w) { return Array.from(w)[0]; }).join('').slice(0, 2).toUpperCase();
    if (img && img.state === 'ok') return h('div', a, h('img', { src: img.src, alt: label, 'data-ph-image': 'loaded', style: 'width:100%;height:100%;border-radius:50%;object-fit:cover;' }));
    return h('div', a, icon ? iconGlyph(icon, Math.round(size * 0.6)) : initials);
  };
  renderers.badge = function (node, path, scope) {
    var label = propOf(node, 'label', scope);
    var dot = label === undefined || label === null || label === '';
    return h('div', { 'class': 'ph-badge-host' }, [children(node, path, scope),
      h('span', { 'class': 'ph-badge' + (dot ? ' ph-badge-dot' : ''), style: 'background:' + color(propOf(node, 'color', scope)) + ';color:' + color(propOf(node, 'text_color', scope)) + ';' }, dot ? '' : str(label))]);
  };
  renderers.divider = function (node, path, scope) {
    var vertical = propOf(node, 'axis', scope) === 'vertical';
    var t = propOf(node, 'thickness', scope), c = color(propOf(node, 'color', scope));
    var i = propOf(node, 'indent', scope), e = propOf(node, 'end_indent', scope);
    var s = vertical ? 'width:' + t + 'px;align-self:stretch;margin:' + i + 'px 0 ' + e + 'px 0;background:' + c + ';'
      : 'height:' + t + 'px;margin:0 ' + e + 'px 0 ' + i + 'px;background:' + c + ';';
    return h('div', { 'class': 'ph-divider', role: 'separator', style: s });
  };
  renderers.spacer = function (node, path, scope, parentType) {
    var size = propOf(node, 'size', scope), flex = propOf(node, 'flex', scope);
    var s = flex ? 'flex:' + flex + ' 1 0;' : typeof size === 'number' ? (parentType === 'row' ? 'width:' : 'height:') + size + 'px;flex:none;' + (parentType === 'row' ? '' : 'width:' + size + 'px;') : '';
    return h('div', { 'class': 'ph-spacer', style: s });
  };
  function disabledBy(node, scope) {
    var c = (node.props || {}).disabled_when;
    return c !== undefined && condition(c, scope.ctx);
  }
  renderers.button = function (node, path, scope) {
    var label = propOf(node, 'label', scope), icon = propOf(node, 'icon', scope);
    var disabled = disabledBy(node, scope);
    var action = node.props.action;
    return h('button', { 'class': 'ph-button ph-button-' + propOf(node, 'variant', scope), disabled: disabled, type: 'button',
      on: { click: function () { if (!disabled) trigger(action, scope, path); } } },
    [icon ? iconGlyph(icon, 18) : null, label !== undefined ? h('span', null, str(label)) : null]);
  };
  renderers.chip = function (node, path, scope) {
    var selected = propOf(node, 'selected', scope) === true;
    var disabled = disabledBy(node, scope);
    var action = (node.props || {}).action;
    var icon = propOf(node, 'icon', scope);
    return h('button', { 'class': 'ph-chip ph-chip-' + propOf(node, 'variant', scope) + (selected ? ' ph-selected' : ''), type: 'button', 'aria-pressed': String(selected), disabled: disabled,
      on: { click: function () { if (action && !disabled) trigger(action, scope, path); } } },
    [selected ? h('span', { 'class': 'ph-check' }, '✓') : null, icon ? iconGlyph(icon, 16) : null, h('span', null, str(propOf(node, 'label', scope)))]);
  };
  renderers.metric = function (node, path, scope) {
    var trend = propOf(node, 'trend', scope), icon = propOf(node, 'icon', scope), unit = propOf(node, 'unit', scope), caption = propOf(node, 'caption', scope);
    return h('div', { 'class': 'ph-metric' }, [
      h('div', { 'class': 'ph-t-label_medium ph-muted' }, [icon ? iconGlyph(icon, 16) : null, ' ', str(propOf(node, 'label', scope))]),
      h('div', { 'class': 'ph-t-headline_small' }, [str(propOf(node, 'value', scope)), unit ? h('span', { 'class': 'ph-t-body_medium' }, ' ' + str(unit)) : null]),
      caption !== undefined || trend ? h('div', { 'class': 'ph-t-body_small ph-muted' }, [trend ? ({ up: '▲ ', down: '▼ ', flat: '▶ ' })[trend] || '' : '', str(caption)]) : null
    ]);
  };
  renderers.progress = function (node, path, scope) {
    var v = propOf(node, 'value', scope);
    var c = color(propOf(node, 'color', scope));
    var label = propOf(node, 'label', scope);
    var det = typeof v === 'number';
    var bar = propOf(node, 'variant', scope) === 'circular'
      ? h('div', { 'class': 'ph-spinner' + (det ? '' : ' ph-indeterminate'), style: 'border-top-color:' + c + ';' })
      : h('div', { 'class': 'ph-track' }, h('div', { 'class': 'ph-bar' + (det ? '' : ' ph-indeterminate'), style: 'background:' + c + ';' + (det ? 'width:' + Math.max(0, Math.min(1, v)) * 100 + '%;' : '') }));
    return h('div', { 'class': 'ph-progress', role: 'progressbar', 'aria-valuenow': det ? String(v) : null }, [label !== undefined ? h('div', { 'class': 'ph-t-label_medium' }, str(label)) : null, bar]);
  };
  renderers.list = function (node, path, scope) {
    var p = propOf(node, 'padding', scope);
    var dividers = propOf(node, 'dividers', scope);
    var s = 'display:flex;flex-direction:column;gap:' + (propOf(node, 'spacing', scope) || 0) + 'px;' + (p !== undefined ? 'padding:' + inset(p) + ';' : '');
    return h('div', { 'class': 'ph-list' + (dividers ? ' ph-dividers' : ''), role: 'list', style: s }, repeated(node, path, scope, function (c) { return h('div', { 'class': 'ph-list-entry', role: 'listitem' }, c); }));
  };
  renderers.timeline = function (node, path, scope) {
    var p = propOf(node, 'padding', scope);
    var s = 'display:flex;flex-direction:column;gap:' + (propOf(node, 'spacing', scope) || 0) + 'px;' + (p !== undefined ? 'padding:' + inset(p) + ';' : '');
    return h('div', { 'class': 'ph-timeline', style: s }, repeated(node, path, scope, function (c) {
      return h('div', { 'class': 'ph-timeline-entry' }, [h('span', { 'class': 'ph-timeline-dot' }), c]);
    }));
  };
  renderers.calendar = function (node, path, scope) {
    var items = propOf(node, 'items_source', scope);
    if (!Array.isArray(items)) items = [];
    var df = propOf(node, 'date_field', scope), tf = propOf(node, 'title_field', scope), view = propOf(node, 'view', scope);
    var action = (node.props || {}).action;
    var entries = items.map(function (it, i) {
      var d = core.isObject(it) ? it[df] : null;
      return { item: it, index: i, date: typeof d === 'string' ? d.slice(0, 10) : '', title: core.isObject(it) ? str(it[tf]) : str(it) };
    }).sort(function (a, b) { return a.date < b.date ? -1 : a.date > b.date ? 1 : a.index - b.index; });
    function entryButton(e) {
      return h('button', { 'class': 'ph-cal-entry', type: 'button', 'data-ph-item': e.index,
        on: { click: function () { if (action) trigger(action, withItem(scope, e.item, e.index), path); } } }, (view === 'agenda' ? e.date + ' ' : '') + e.title);
    }
    if (view === 'agenda') return h('div', { 'class': 'ph-calendar ph-agenda' }, entries.length ? entries.map(entryButton) : h('div', { 'class': 'ph-muted' }, 'No entries'));
    var first = entries.length && /^\d{4}-\d\d-\d\d$/.test(entries[0].date) ? new Date(entries[0].date + 'T00:00:00Z') : new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1));
    var fdw = { monday: 1, sunday: 0, saturday: 6, locale: 1 }[propOf(node, 'first_day_of_week', scope)];
    var start, days;
    if (view === 'week') {
      start = new Date(first);
      start.setUTCDate(start.getUTCDate() - ((start.getUTCDay() - fdw + 7) % 7));
      days = 7;
    } else {
      var m1 = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), 1));
      start = new Date(m1);
      start.setUTCDate(1 - ((m1.getUTCDay() - fdw + 7) % 7));
      days = 42;
    }
    var names = ['Su', 'Mo', 'Tu', 'We', 'Th', 'Fr', 'Sa'];
    var head = [];
    for (var d = 0; d < 7; d++) head.push(h('div', { 'class': 'ph-cal-head' }, names[(fdw + d) % 7]));
    var cells = [];
    for (var i = 0; i < days; i++) {
      var day = new Date(start);
      day.setUTCDate(start.getUTCDate() + i);
      var iso = day.toISOString().slice(0, 10);
      var out = view !== 'week' && day.getUTCMonth() !== first.getUTCMonth();
      cells.push(h('div', { 'class': 'ph-cal-day' + (out ? ' ph-cal-out' : ''), 'data-date': iso }, [h('div', { 'class': 'ph-cal-num' }, String(day.getUTCDate())),
        entries.filter(function (e) { return e.date === iso; }).map(entryButton)]));
    }
    var title = first.toISOString().slice(0, 7);
    return h('div', { 'class': 'ph-calendar' }, [h('div', { 'class': 'ph-t-title_small' }, title), h('div', { 'class': 'ph-cal-grid' }, head.concat(cells))]);
  };
  renderers.chart = function (node, path, scope) {
    var items = propOf(node, 'items_source', scope);
    if (!Array.isArray(items)) items = [];
    var xf = propOf(node, 'x_field', scope), yf = propOf(node, 'y_field', scope), sf = propOf(node, 'series_field', scope);
    var variant = propOf(node, 'variant', scope);
    var palette = [color(propOf(node, 'color', scope)), 'var(--ph-tertiary)', 'var(--ph-secondary)', 'var(--ph-error)', 'var(--ph-outline)'];
    var pts = items.filter(core.isObject).map(function (it) { return { x: str(it[xf]), y: typeof it[yf] === 'number' ? it[yf] : 0, s: sf ? str(it[sf]) : '' }; });
    var xs = [], series = [];
    pts.forEach(function (p) { if (xs.indexOf(p.x) < 0) xs.push(p.x); if (series.indexOf(p.s) < 0) series.push(p.s); });
    var ys = pts.map(function (p) { return p.y; });
    var ymin = propOf(node, 'y_min', scope), ymax = propOf(node, 'y_max', scope);
    if (typeof ymin !== 'number') ymin = Math.min.apply(null, [0].concat(ys));
    if (typeof ymax !== 'number') ymax = Math.max.apply(null, [1].concat(ys));
    if (ymax === ymin) ymax = ymin + 1;
    var W = 300, H = 150, L = 28, B = 18;
    var kids = [];
    if (propOf(node, 'show_grid', scope) && variant !== 'pie' && variant !== 'donut') {
      for (var g = 0; g <= 4; g++) { var gy = (H - B) * g / 4; kids.push(h('line', { x1: L, x2: W, y1: gy, y2: gy, stroke: 'var(--ph-outline-variant)', 'stroke-width': 0.5 })); }
    }
    function X(i) { return L + (xs.length <= 1 ? (W - L) / 2 : (W - L) * i / (xs.length - 1)); }
    function Y(v) { return (H - B) * (1 - (v - ymin) / (ymax - ymin)); }
    if (variant === 'pie' || variant === 'donut') {
      var total = ys.reduce(function (a, b) { return a + Math.max(b, 0); }, 0) || 1, ang = -Math.PI / 2;
      pts.forEach(function (p, i) {
        var a2 = ang + 2 * Math.PI * Math.max(p.y, 0) / total;
        var r = 60, cx = W / 2, cy = H / 2 - 5;
        var large = a2 - ang > Math.PI ? 1 : 0;
        kids.push(h('path', { d: 'M' + cx + ' ' + cy + ' L' + (cx + r * Math.cos(ang)) + ' ' + (cy + r * Math.sin(ang)) + ' A' + r + ' ' + r + ' 0 ' + large + ' 1 ' + (cx + r * Math.cos(a2)) + ' ' + (cy + r * Math.sin(a2)) + ' Z', fill: palette[i % palette.length], opacity: 0.85 }));
        ang = a2;
      });
      if (variant === 'donut') kids.push(h('circle', { cx: W / 2, cy: H / 2 - 5, r: 30, fill: 'var(--ph-surface)' }));
    } else {
      series.forEach(function (s, si) {
        var sp = pts.filter(function (p) { return p.s === s; });
        var c = palette[si % palette.length];
        if (variant === 'bar') {
          var bw = (W - L) / Math.max(xs.length, 1) / (series.length + 1);
          sp.forEach(function (p) {
            var i = xs.indexOf(p.x);
            var x0 = L + (W - L) * i / Math.max(xs.length, 1) + bw * (si + 0.5);
            kids.push(h('rect', { x: x0, y: Y(Math.max(p.y, ymin)), width: bw, height: Math.max(0, (H - B) - Y(Math.max(p.y, ymin))), fill: c }));
          });
        } else {
          var d = sp.map(function (p, i) { return (i ? 'L' : 'M') + X(xs.indexOf(p.x)) + ' ' + Y(p.y); }).join(' ');
          if (variant === 'area' && sp.length) kids.push(h('path', { d: d + ' L' + X(xs.indexOf(sp[sp.length - 1].x)) + ' ' + (H - B) + ' L' + X(xs.indexOf(sp[0].x)) + ' ' + (H - B) + ' Z', fill: c, opacity: 0.25 }));
          kids.push(h('path', { d: d, fill: 'none', stroke: c, 'stroke-width': 2 }));
        }
      });
      xs.forEach(function (x, i) { kids.push(h('text', { x: variant === 'bar' ? L + (W - L) * (i + 0.5) / xs.length : X(i), y: H - 4, 'font-size': 8, 'text-anchor': 'middle', fill: 'var(--ph-on-surface-variant)' }, x)); });
      kids.push(h('text', { x: 2, y: 8, 'font-size': 8, fill: 'var(--ph-on-surface-variant)' }, core.text(ymax)));
      kids.push(h('text', { x: 2, y: H - B, 'font-size': 8, fill: 'var(--ph-on-surface-variant)' }, core.text(ymin)));
    }
    var title = propOf(node, 'title', scope);
    var legend = propOf(node, 'show_legend', scope) ? h('div', { 'class': 'ph-legend' }, (variant === 'pie' || variant === 'donut' ? pts.map(function (p) { return p.x; }) : series).map(function (s, i) {
      return h('span', null, [h('span', { 'class': 'ph-swatch', style: 'background:' + palette[i % palette.length] + ';' }), s || 'series']);
    })) : null;
    return h('figure', { 'class': 'ph-chart' }, [title !== undefined ? h('figcaption', { 'class': 'ph-t-title_small' }, str(title)) : null,
      h('svg', { viewBox: '0 0 ' + W + ' ' + H, 'class': 'ph-chart-svg', role: 'img', 'aria-label': str(title) || 'chart' }, kids), legend]);
  };
  renderers.form = function (node, path, scope) {
    var s = Object.create(scope);
    s.form = path;
    var p = propOf(node, 'padding', scope);
    return h('form', { 'class': 'ph-form', novalidate: true, style: 'display:flex;flex-direction:column;gap:' + (propOf(node, 'spacing', scope) || 0) + 'px;' + (p !== undefined ? 'padding:' + inset(p) + ';' : ''),
      on: { submit: function (ev) { ev.preventDefault(); } } }, children(node, path, s));
  };
  function overlay(kind) {
    return function (node, path, scope) {
      var title = propOf(node, 'title', scope);
      var dismissible = propOf(node, 'dismissible', scope);
      var onDismiss = (node.props || {}).on_dismiss;
      function dismiss() {
        emit('dismiss', { node: path, kind: kind, dismissible: dismissible });
        if (onDismiss) trigger(onDismiss, scope, path);
      }
      if (dismissible) scope.route.ui.escape = dismiss;
      return h('div', { 'class': 'ph-overlay ph-' + kind + '-overlay' }, [
        h('div', { 'class': 'ph-scrim', on: { click: function () { if (dismissible) dismiss(); } } }),
        h('div', { 'class': 'ph-' + kind, role: 'dialog', 'aria-modal': 'true', 'aria-label': str(title) }, [
          title !== undefined ? h('div', { 'class': 'ph-t-headline_small ph-overlay-title' }, str(title)) : null,
          h('div', { 'class': 'ph-overlay-body' }, children(node, path, scope))
        ])
      ]);
    };
  }
  renderers.dialog = overlay('dialog');
  renderers.sheet = overlay('sheet');

  // Inputs register themselves at each render, for validation.
  function registerInput(scope, path, node, props) {
    var entry = { path: path, type: node.type, key: node.props.state_key, props: props, form: scope.form || null };
    scope.route.inputs.push(entry);
    return entry;
  }
  function resolvedRules(node) {
    var p = {};
    ['required', 'min_length', 'max_length', 'minimum', 'maximum', 'keyboard'].forEach(function (k) {
      var v = (node.props || {})[k];
      if (v !== undefined) p[k] = v;
    });
    return p;
  }
  function inputErrors(route, entry) {
    return core.checkInput(entry.type, entry.props, route.state[entry.key]);
  }
  function errorLine(route, entry, node, scope) {
    if (!route.shownErrors[entry.path] && !route.touched[entry.path]) return null;
    var errs = inputErrors(route, entry);
    if (!errs.length) return null;
    var custom = propOf(node, 'error_text', scope);
    return h('div', { 'class': 'ph-input-error', role: 'alert' }, custom !== undefined ? str(custom) : errs.map(function (e) { return e.message; }).join('; '));
  }
  function valueText(v) { return v === null || v === undefined ? '' : typeof v === 'string' ? v : core.text(v); }

  renderers.field = function (node, path, scope) {
    var route = scope.route;
    var key = node.props.state_key;
    var entry = registerInput(scope, path, node, resolvedRules(node, scope));
    var kb = propOf(node, 'keyboard', scope);
    var multiline = kb === 'multiline';
    var disabled = disabledBy(node, scope);
    var label = propOf(node, 'label', scope), helper = propOf(node, 'helper_text', scope);
    var lead = propOf(node, 'leading_icon', scope);
    var onSubmit = node.props.on_submit;
    var errs = errorLine(route, entry, node, scope);
    var input = h(multiline ? 'textarea' : 'input', {
      'class': 'ph-input', id: 'in' + path.replace(/\W/g, '_') + (scope.hasItem ? '_' + scope.itemIndex : ''),
      type: multiline ? null : ({ number: 'text', email: 'email', url: 'url', phone: 'tel', search: 'search' })[kb] || 'text',
      inputmode: ({ number: 'decimal', email: 'email', url: 'url', phone: 'tel', search: 'search' })[kb] || null,
      rows: multiline ? (propOf(node, 'max_lines', scope) || 3) : null,
      placeholder: str(propOf(node, 'placeholder', scope)) || null,
      disabled: disabled, 'data-ph-commit': '1', 'data-state-key': key, 'data-ph-input': path,
      'aria-invalid': errs ? 'true' : null,
      value: valueText(route.state[key]),
      on: {
        input: function (ev, el) { if (!ev.isComposing && !el._composing) commitInput(el, 'typing'); },
        compositionstart: function (ev, el) { el._composing = true; },
        compositionend: function (ev, el) { el._composing = false; commitInput(el, 'composition_end'); },
        focus: function () { route.ui.focused = path; render(); },
        blur: function (ev, el) {
          commitInput(el, 'blur');
          route.touched[path] = true;
          setTimeout(function () { if (route.ui.focused === path && document.activeElement !== el) { route.ui.focused = null; render(); } }, 0);
        },
        keydown: function (ev, el) {
          if (ev.key === 'Enter' && !multiline && !ev.isComposing) {
            ev.preventDefault();
            commitInput(el, 'submit');
            if (onSubmit) trigger(onSubmit, scope, path);
          }
        }
      }
    });
    inputMeta[path] = { route: route, key: key, props: entry.props, node: node };
    var sugg = null;
    if (route.ui.focused === path && !disabled) {
      var list = (node.props || {}).suggestions_source !== undefined ? propOf(node, 'suggestions_source', scope) : propOf(node, 'suggestions', scope);
      if (Array.isArray(list)) {
        var cur = valueText(route.state[key]).toLowerCase();
        var shown = list.map(valueText).filter(function (s) { return s.toLowerCase().indexOf(cur) >= 0 && s.toLowerCase() !== cur; }).slice(0, 8);
        if (shown.length) {
          sugg = h('div', { 'class': 'ph-suggestions', role: 'listbox' }, shown.map(function (s) {
            return h('div', { 'class': 'ph-suggestion', role: 'option', 'data-value': s, on: {
              mousedown: function (ev) { ev.preventDefault(); },
              click: function () {
                var el = root.querySelector('[data-ph-input="' + path + '"]');
                if (el) el.value = s;
                setStateKey(route, key, core.inputValue(entry.props, s), 'suggestion');
                render();
              } } }, s);
          }));
        }
      }
    }
    return h('div', { 'class': 'ph-field' + (disabled ? ' ph-disabled' : '') + (errs ? ' ph-invalid' : '') }, [
      label !== undefined ? h('label', { 'class': 'ph-t-label_medium', 'for': input.a.id }, str(label)) : null,
      h('div', { 'class': 'ph-input-row' }, [lead ? iconGlyph(lead, 18) : null, input]),
      sugg,
      errs || (helper !== undefined ? h('div', { 'class': 'ph-t-body_small ph-muted' }, str(helper)) : null)
    ]);
  };
  var inputMeta = {};
  function commitInput(el, how) {
    var meta = inputMeta[el.getAttribute('data-ph-input')];
    if (!meta || !meta.route.alive) return;
    var v = core.inputValue(meta.props, el.value);
    if (!core.equal(meta.route.state[meta.key], v) || typeof meta.route.state[meta.key] !== typeof v) {
      setStateKey(meta.route, meta.key, v, 'field', { how: how, composing: !!el._composing });
      render();
    }
  }
  // commitFocused commits the focused input, including text still being
  // composed by an input method, before an action runs.
  function commitFocused() {
    var el = app.pendingFocus || document.activeElement;
    app.pendingFocus = null;
    if (el && el.getAttribute && el.getAttribute('data-ph-commit')) commitInput(el, el._composing ? 'composition' : 'action');
  }

  function optionsOf(node, scope) {
    var props = node.props || {};
    var list = props.options_source !== undefined ? propOf(node, 'options_source', scope) : props.options;
    if (!Array.isArray(list)) return [];
    var vf = propOf(node, 'option_value_field', scope) || 'value', lf = propOf(node, 'option_label_field', scope) || 'label';
    return list.map(function (o) {
      if (core.isObject(o)) return { value: o[vf] === undefined ? null : o[vf], label: valueText(o[lf] === undefined ? o[vf] : o[lf]) };
      return { value: o, label: valueText(o) };
    });
  }
  renderers.select = function (node, path, scope) {
    var route = scope.route;
    var key = node.props.state_key;
    var entry = registerInput(scope, path, node, resolvedRules(node, scope));
    var opts = optionsOf(node, scope);
    var searchable = propOf(node, 'searchable', scope) === true;
    var disabled = disabledBy(node, scope);
    var cur = route.state[key];
    var chosen = opts.filter(function (o) { return core.equal(o.value, cur); })[0];
    var open = route.ui.select === path && !disabled;
    var label = propOf(node, 'label', scope), helper = propOf(node, 'helper_text', scope);
    var errs = errorLine(route, entry, node, scope);
    var filter = route.ui.filter[path] || '';
    var list = null;
    if (open) {
      var shown = opts.filter(function (o) { return !searchable || o.label.toLowerCase().indexOf(filter.toLowerCase()) >= 0; });
      list = h('div', { 'class': 'ph-select-menu' }, [
        searchable ? h('input', { 'class': 'ph-input ph-select-search', type: 'search', placeholder: 'Search', 'aria-label': 'Search options', value: filter,
          on: { input: function (ev, el) { route.ui.filter[path] = el.value; render(); } } }) : null,
        h('div', { role: 'listbox', 'class': 'ph-options' }, shown.length ? shown.map(function (o, i) {
          return h('div', { role: 'option', 'class': 'ph-option' + (core.equal(o.value, cur) ? ' ph-selected' : ''), 'aria-selected': String(core.equal(o.value, cur)), 'data-index': i,
            on: { click: function () {
              route.ui.select = null;
              route.ui.filter[path] = '';
              route.touched[path] = true;
              setStateKey(route, key, clone(o.value), 'select');
              render();
            } } }, o.label);
        }) : h('div', { 'class': 'ph-muted ph-option-none' }, opts.length ? 'No option matches' : 'No options yet'))
      ]);
    }
    return h('div', { 'class': 'ph-select-field' + (errs ? ' ph-invalid' : '') }, [
      label !== undefined ? h('div', { 'class': 'ph-t-label_medium' }, str(label)) : null,
      h('button', { 'class': 'ph-select', type: 'button', 'aria-haspopup': 'listbox', 'aria-expanded': String(open), disabled: disabled, 'data-state-key': key,
        on: { click: function () { route.ui.select = open ? null : path; render(); } } },
      [h('span', null, chosen ? chosen.label : (cur !== null && cur !== undefined ? valueText(cur) : str(propOf(node, 'placeholder', scope)) || 'Choose…')), h('span', { 'class': 'ph-caret' }, '▾')]),
      list,
      errs || (helper !== undefined ? h('div', { 'class': 'ph-t-body_small ph-muted' }, str(helper)) : null)
    ]);
  };
  renderers['switch'] = function (node, path, scope) {
    var route = scope.route;
    var key = node.props.state_key;
    var entry = registerInput(scope, path, node, resolvedRules(node, scope));
    var disabled = disabledBy(node, scope);
    var errs = errorLine(route, entry, node, scope);
    var on = route.state[key] === true;
    return h('div', { 'class': 'ph-switch-field' }, [h('label', { 'class': 'ph-switch-row' }, [
      h('span', { 'class': 'ph-t-body_large' }, str(propOf(node, 'label', scope))),
      h('input', { type: 'checkbox', role: 'switch', 'class': 'ph-switch', checked: on, 'aria-checked': String(on), disabled: disabled, 'data-state-key': key,
        on: { change: function (ev, el) { route.touched[path] = true; setStateKey(route, key, el.checked, 'switch'); render(); } } })
    ]), errs]);
  };
  renderers.empty = function (node, path, scope) {
    var title = propOf(node, 'title', scope), msg = propOf(node, 'message', scope);
    var action = (node.props || {}).action;
    return h('div', { 'class': 'ph-empty' }, [iconGlyph(propOf(node, 'icon', scope), 40),
      title !== undefined ? h('div', { 'class': 'ph-t-title_medium' }, str(title)) : null,
      msg !== undefined ? h('div', { 'class': 'ph-t-body_medium ph-muted' }, str(msg)) : null,
      action ? h('button', { 'class': 'ph-button ph-button-tonal', type: 'button', on: { click: function () { trigger(action, scope, path); } } }, str(propOf(node, 'action_label', scope))) : null]);
  };

  // ---- State --------------------------------------------------------------

  // setStateKey writes one key; only declared keys may change.
  function setStateKey(route, key, value, from, extra) {
    if (!route.declared[key]) {
      emit('state_refused', { key: key, value: value, from: from, reason: 'not declared in initial_state' });
      return false;
    }
    var before = route.state[key];
    route.state[key] = value;
    var d = { key: key, value: value, previous: before, from: from };
    if (extra) Object.keys(extra).forEach(function (k) { d[k] = extra[k]; });
    emit('state_change', d);
    return true;
  }

  // ---- Data ---------------------------------------------------------------

  // call runs a capability through the host, at the page's package
  // generation.
  function call(capability, args, query) {
    return host.run(capability, args, query, app.generation).then(function (r) {
      if (r && r.error && r.error.code === 'PLUGIN_STORAGE_CONFLICT' && r.error.stale_generation) packageChanged(null);
      return r;
    });
  }

  // ---- Host cache -----------------------------------------------------------
  //
  // The host cache (hostcache.js) is the page's, shared by every surface it
  // shows (home cards, the screen, responses): opening a source whose result
  // is cached reuses it without a call, a load under way for the same key is
  // shared, and a fresh result reaches every open surface showing the key.

  // sourceKey resolves a data source's arguments and query in ctx, with the
  // cache key of the call they make.
  function sourceKey(decl, ctx) {
    var args = resolveValue(decl.arguments || {}, ctx);
    var query = decl.query === undefined || decl.query === null ? null : bindString(decl.query, ctx);
    return { args: args, query: query, key: hc.key(host.instance, decl.capability, query, args) };
  }

  // apply writes a result (or an error) into one source of one route.
  function apply(route, id, r, cached) {
    var decl = route.sources[id];
    if (r.error) {
      route.errors[id] = r.error;
      emit('source_error', { source: id, capability: decl.capability, error: r.error, kept_previous: !!route.good[id] });
      connectionProblem(r.error);
      return;
    }
    route.data[id] = { completed: true, summary: r.result.summary, data: r.result.data };
    route.errors[id] = null;
    route.good[id] = true;
    route.loadedAt[id] = Date.now();
    // first_data_ms: from the first script to the first screen with every
    // source it loads by itself answered.
    if (app.metrics.first_data_ms === undefined && route === currentRoute() && Object.keys(route.sources).every(function (s) { return route.sources[s].trigger === 'manual' || route.good[s]; })) {
      app.metrics.first_data_ms = Math.round((performance.now() - T0) * 100) / 100;
      if (opts.onReady) opts.onReady();
    }
    var d = { source: id, capability: decl.capability, summary: r.result.summary };
    if (cached) d.cached = cached;
    emit('source_result', d);
  }

  // shared: a fresh result of key (another surface's load, an invoke's
  // stored result) reaches every source of this surface's open routes that
  // shows key and is not loading it itself.
  var unsubscribe = cache.subscribe(function (key, r, origin) {
    var hit = false;
    app.stack.forEach(function (route) {
      if (!route.alive || route === origin) return;
      Object.keys(route.keys).forEach(function (id) {
        if (route.keys[id] === key && !route.loading[id]) { apply(route, id, r, 'shared'); hit = true; }
      });
    });
    if (hit) render();
  });

  // loadSource loads one source of a route; revision, after a storage
  // change, is the storage revision the answer must be at least as new as.
  function loadSource(route, id, reason, revision) {
    var decl = route.sources[id];
    if (!decl) { emit('refresh_refused', { source: id, reason: 'no such data source' }); return Promise.resolve(false); }
    var sk = sourceKey(decl, ctxOf(route));
    var args = sk.args, query = sk.query, key = sk.key;
    route.keys[id] = key;
    var good = cache.result(key);
    if (reason === 'load' && good) {
      apply(route, id, good, 'cache');
      render();
      return Promise.resolve(true);
    }
    var token = (route.loadSeq[id] || 0) + 1;
    route.loadSeq[id] = token;
    route.loading[id] = true;
    var epoch = cache.epoch(host.instance);
    app.busy++;
    var l = cache.load(key, host.instance, decl.capability, function () { return call(decl.capability, args, query); },
      { revision: revision, fresh: reason === 'refresh' || reason === 'retry' || reason === 'refresh_seconds', origin: route });
    var d = { source: id, capability: decl.capability, arguments: args, query: query, reason: reason };
    if (l.shared) d.shared = true;
    emit('source_load', d);
    render();
    return l.promise.then(function (r) {
      app.busy--;
      var why = hc.discardReason({ stale: r.stale, epoch: epoch, currentEpoch: cache.epoch(host.instance), alive: route.alive && !destroyed, token: token, currentToken: route.loadSeq[id] });
      if (why) {
        emit('discarded', { source: id, reason: why });
        return false;
      }
      route.loading[id] = false;
      apply(route, id, r, l.shared ? 'shared' : null);
      render();
      return !r.error;
    });
  }

  // After a storage change (a write from the UI, a storageChanged event from
  // anywhere, a return to the foreground) the host re-reads only the storage
  // sources: those of every open surface, each key once. Cached storage
  // results no surface shows are dropped, so that opening them reads again.
  function refreshStorageSources(reason, revision) {
    cache.dropStorage(host.instance);
    var open = app.stack.filter(function (r) { return r.alive; }).reverse();
    hc.storagePlan(open).forEach(function (p) { loadSource(p.surface, p.id, reason, revision); });
  }

  // refresh_seconds timers load only while the page is visible and the
  // surface shows the route.
  function startTimers(route) {
    Object.keys(route.sources).forEach(function (id) {
      var s = route.sources[id];
      if (!s.refresh_seconds) return;
      route.timers.push(setInterval(function () {
        if (hc.autoRefresh(document.visibilityState, route === currentRoute() && shown())) loadSource(route, id, 'refresh_seconds');
      }, s.refresh_seconds * 1000));
    });
  }
  function stopTimers(route) {
    route.timers.forEach(clearInterval);
    route.timers = [];
  }
  function shown() { return opts.shown ? opts.shown() : true; }

  function startSources(route) {
    Object.keys(route.sources).forEach(function (id) {
      if (route.prefilled[id]) {
        // A result the host rendered already (a response's tool result)
        // fills the cache, so that other surfaces reuse it.
        var decl = route.sources[id], key = sourceKey(decl, ctxOf(route)).key;
        route.keys[id] = key;
        cache.put(key, host.instance, decl.capability, { summary: route.data[id].summary, data: route.data[id].data }, route);
      } else if (route.sources[id].trigger !== 'manual') loadSource(route, id, 'load');
    });
    if (document.visibilityState !== 'hidden') startTimers(route);
  }

  // foreground: the timers stopped while the page was hidden start again; the
  // storage sources are re-read, and a refresh_seconds source whose period
  // passed while hidden loads once.
  function foreground() {
    var r = currentRoute();
    if (!r || destroyed) return;
    stopTimers(r);
    startTimers(r);
    refreshStorageSources('foreground');
    hc.dueOnResume(r, Date.now()).forEach(function (id) { loadSource(r, id, 'foreground'); });
  }

  // ---- Actions ------------------------------------------------------------

  function describe(action) {
    var a = {};
    Object.keys(action).forEach(function (k) { if (k !== 'actions') a[k] = action[k]; });
    if (action.actions) a.actions = action.actions.length;
    return a;
  }

  // trigger runs an action the user started: the focused input is committed
  // first, so that the action reads the latest value.
  function trigger(action, scope, origin) {
    commitFocused();
    var route = scope.route;
    app.lastAction = { action: describe(action), node: origin, extension: route.ext.id, status: 'running' };
    app.busy++;
    var scope2 = Object.create(scope);
    return run(action, scope2, route, 1).then(function (ok) {
      app.busy--;
      app.lastAction.status = ok ? 'done' : 'failed';
      render();
      return ok;
    }, function (err) {
      app.busy--;
      app.lastAction.status = 'failed';
      warn('runtime_error', 'the preview failed running an action: ' + err, {});
      render();
      return false;
    });
  }

  function validateScope(route, form) {
    var failures = [];
    route.inputs.forEach(function (entry) {
      if (form && entry.form !== form) return;
      var errs = inputErrors(route, entry);
      if (errs.length) {
        route.shownErrors[entry.path] = true;
        failures.push({ node: entry.path, state_key: entry.key, value: route.state[entry.key], rules: errs.map(function (e) { return e.rule; }) });
      }
    });
    return failures;
  }

  function run(action, scope, route, depth) {
    if (!route.alive) return Promise.resolve(false);
    var ctx = ctxOf(route, scope);
    switch (action.type) {
      case 'invoke': {
        var args = resolveValue(action.arguments || {}, ctx);
        var query = action.query === undefined || action.query === null ? null : bindString(action.query, ctx);
        emit('invoke', { capability: action.capability, arguments: args, query: query, store: action.store || null });
        app.busy++;
        return call(action.capability, args, query).then(function (r) {
          app.busy--;
          if (!route.alive) { emit('discarded', { capability: action.capability, reason: 'the screen was closed' }); return false; }
          if (r.error) {
            emit('invoke_result', { capability: action.capability, ok: false, error: r.error });
            app.notice = { error: r.error, capability: action.capability };
            connectionProblem(r.error);
            if (action.store) route.errors[action.store] = r.error;
            render();
            return false;
          }
          emit('invoke_result', { capability: action.capability, ok: true, summary: r.result.summary, store: action.store || null });
          app.notice = null;
          if (action.store) {
            route.data[action.store] = { completed: true, summary: r.result.summary, data: r.result.data };
            route.errors[action.store] = null;
            route.good[action.store] = true;
            // The stored result is the source's: other surfaces showing the
            // same source see it too.
            var storeDecl = route.sources[action.store];
            if (storeDecl) {
              var sk = sourceKey(storeDecl, ctxOf(route));
              route.keys[action.store] = sk.key;
              cache.put(sk.key, host.instance, storeDecl.capability, r.result, route);
            }
          }
          if (r.changed) refreshStorageSources('storage_changed');
          render();
          return true;
        });
      }
      case 'flow': {
        var mode = action.mode || 'sequential';
        if (action.validate) {
          var failures = validateScope(route, scope.form || null);
          route.validation = failures;
          if (failures.length) {
            emit('validation_failed', { form: scope.form || null, errors: failures });
            render();
            return Promise.resolve(false);
          }
        }
        emit('flow', { mode: mode, validate: !!action.validate, continue_on_error: !!action.continue_on_error, actions: action.actions.length, depth: depth });
        if (mode === 'parallel') {
          return Promise.all(action.actions.map(function (a) { return run(a, scope, route, depth + 1); })).then(function (oks) {
            var failed = oks.filter(function (x) { return !x; }).length;
            emit('flow_done', { mode: mode, failed: failed });
            return failed === 0 || !!action.continue_on_error;
          });
        }
        var i = 0, failed = 0;
        var step = function () {
          if (i >= action.actions.length) {
            emit('flow_done', { mode: mode, failed: failed });
            return Promise.resolve(failed === 0 || !!action.continue_on_error);
          }
          var a = action.actions[i++];
          return run(a, scope, route, depth + 1).then(function (ok) {
            if (ok) return step();
            failed++;
            if (action.continue_on_error) return step();
            emit('flow_stopped', { mode: mode, at: i - 1, remaining: action.actions.length - i });
            return false;
          });
        };
        return step();
      }
      case 'set_state': {
        var values = resolveValue(action.values || {}, ctx);
        emit('set_state', { values: values, persist: !!action.persist });
        var ok = true, saved = {};
        Object.keys(values).forEach(function (k) {
          if (setStateKey(route, k, values[k], 'set_state')) saved[k] = values[k];
          else ok = false;
        });
        render();
        if (action.persist && Object.keys(saved).length) {
          return savePersisted(route.ext.id, saved).then(function (kept) {
            if (kept) emit('state_persisted', { keys: Object.keys(saved) });
            return ok;
          });
        }
        return Promise.resolve(ok);
      }
      case 'refresh':
        emit('refresh', { source: action.source });
        return loadSource(route, action.source, 'refresh');
      case 'navigate': {
        var params = resolveValue(action.parameters || {}, ctx);
        emit('navigate', { target: action.target, parameters: params, replace: !!action.replace, result_state: action.result_state || null, transition: action.transition || 'platform' });
        var ext = extensions[action.target];
        if (!ext) {
          warn('navigate_unavailable', 'extension ' + action.target + ' is not part of this preview (preview the plugin folder with --dir to open it)', { target: action.target });
          return Promise.resolve(true);
        }
        // A home card opens a screen as the page's own screen.
        if (embedded && opts.onNavigate) {
          opts.onNavigate(action.target, params);
          return Promise.resolve(true);
        }
        var resultState = action.result_state || null;
        if (action.replace) {
          var old = app.stack.pop();
          closeRoute(old);
          resultState = old.resultState;
        }
        openRoute(new Route(ext, params, resultState, false));
        // The address follows: a new entry of the page's history, or the
        // same one replaced.
        if (opts.history) opts.history[action.replace ? 'replace' : 'push'](stackOf());
        return Promise.resolve(true);
      }
      case 'back': {
        var result = action.result === undefined ? undefined : resolveValue(action.result, ctx);
        emit('back', { result: result === undefined ? null : result });
        goBack(result);
        return Promise.resolve(true);
      }
    }
    warn('unknown_action', 'action type ' + JSON.stringify(action.type) + ' is not in the catalog', { action: action });
    return Promise.resolve(false);
  }

  function closeRoute(r) {
    r.alive = false;
    stopTimers(r);
  }
  function openRoute(r) {
    app.stack.push(r);
    loaded();
    render();
    startSources(r);
  }
  // stackOf describes the open routes, as the page's history keeps them.
  function stackOf() {
    return app.stack.map(function (r) { return { extension: r.ext.id, params: clone(r.params), result_state: r.resultState }; });
  }
  // goBack closes the current route and writes its result into the opener's
  // result_state key (null when the route closed without a result). In a
  // page whose routes are addresses, the page's history goes back, and the
  // page closes the route (setStack).
  function goBack(result) {
    if (opts.history && app.stack.length > 1) { opts.history.back(result); return; }
    if (app.stack.length <= 1) {
      if (opts.onExit) { emit('back_at_root', { reason: 'the first screen has no opener; the page closes it' }); opts.onExit(); return; }
      emit('back_at_root', { reason: 'the first screen has no opener; the host would close the plugin screen' });
      return;
    }
    var closed = app.stack.pop();
    closeRoute(closed);
    loaded();
    var opener = currentRoute();
    if (closed.resultState) setStateKey(opener, closed.resultState, result === undefined ? null : result, 'back');
    render();
  }

  // setStack shows the routes of an address (after Back, Forward or a
  // link): the routes it shares with the open ones stay as they are, the
  // others close, its own open. A route closed by going back one step
  // writes result into its opener's result_state key (null without one).
  function setStack(stack, result) {
    if (!app.stack.length || app.blocked) { pendingStack = stack; return; }
    var routes = stack.filter(function (r) { return extensions[r.extension]; });
    if (!routes.length) return;
    var keep = 0;
    while (keep < app.stack.length && keep < routes.length && app.stack[keep].ext.id === routes[keep].extension &&
      core.equal(app.stack[keep].params, routes[keep].params || {})) keep++;
    var closing = app.stack.slice(keep);
    if (keep === app.stack.length && keep === routes.length) return;
    closing.forEach(closeRoute);
    app.stack = app.stack.slice(0, keep);
    if (keep > 0 && closing.length === 1 && keep === routes.length && closing[0].resultState) {
      setStateKey(currentRoute(), closing[0].resultState, result === undefined ? null : result, 'back');
    }
    routes.slice(keep).forEach(function (r) {
      var route = new Route(extensions[r.extension], r.params || {}, r.result_state || null, false);
      app.stack.push(route);
      startSources(route);
    });
    emit('route_stack', { depth: app.stack.length, extension: currentRoute().ext.id });
    loaded();
    render();
  }
  var pendingStack = null;

  // ---- Screen, app bar and navigation --------------------------------------

  function appBar(route, scope) {
    var bar = route.config.app_bar;
    var nav = route.config.navigation;
    var navType = navTypeOf(nav);
    var showBack = app.stack.length > 1;
    // The web host's screen always has its header: the page's heading.
    var head = !!bundle.live && surface === 'screen';
    if (!bar && !showBack && navType !== 'drawer' && !head) return null;
    bar = bar || {};
    var inBar = [], overflow = [];
    var autoRoom = screenInfo().size_class === 'compact' ? 2 : 4;
    (bar.actions || []).forEach(function (a) {
      var place = a.show_as || 'auto';
      if (place === 'always' || (place === 'auto' && a.icon && autoRoom-- > 0)) inBar.push(a);
      else overflow.push(a);
    });
    function actionButton(a, inMenu) {
      return h('button', { 'class': inMenu ? 'ph-menu-item' : 'ph-icon-button', type: 'button', role: inMenu ? 'menuitem' : null, title: a.label, 'aria-label': a.label, 'data-ph-appbar-action': a.id,
        on: { click: function () { route.ui.overflow = false; trigger(a.action, scope, '/app_bar/actions/' + a.id); } } },
      inMenu ? a.label : (a.icon ? iconGlyph(a.icon, 20) : a.label));
    }
    var title = bar.title !== undefined ? str(bindString(bar.title, scope.ctx)) : head ? words.screenLabel(route.ext) : '';
    return h('header', { 'class': (head ? 'ph-screen-head' : 'ph-app-bar') + (bar.pinned ? ' ph-pinned' : ''), 'data-ph-path': '/app_bar' }, [
      showBack ? h('button', { 'class': 'ph-icon-button', type: 'button', 'aria-label': 'Back', 'data-ph-host-back': '1',
        on: { click: function () { commitFocused(); emit('back', { result: null, from: 'app_bar' }); goBack(undefined); } } }, iconGlyph('arrow_back', 20)) : null,
      navType === 'drawer' ? h('button', { 'class': 'ph-icon-button', type: 'button', 'aria-label': 'Menu', 'data-ph-drawer-toggle': '1',
        on: { click: function () { route.ui.drawer = !route.ui.drawer; render(); } } }, iconGlyph('menu', 20)) : null,
      h('div', { 'class': 'ph-app-bar-titles' }, [
        h(head ? 'h1' : 'div', { 'class': (head ? 'ph-t-headline_small' : 'ph-t-title_large') + ' ph-app-bar-title' }, title),
        bar.subtitle !== undefined ? h('div', { 'class': 'ph-t-body_small ph-muted' }, str(bindString(bar.subtitle, scope.ctx))) : null
      ]),
      inBar.map(function (a) { return actionButton(a, false); }),
      overflow.length ? h('div', { 'class': 'ph-overflow' }, [
        h('button', { 'class': 'ph-icon-button', type: 'button', 'aria-label': 'More', 'data-ph-overflow': '1', 'aria-expanded': String(route.ui.overflow),
          on: { click: function () { route.ui.overflow = !route.ui.overflow; render(); } } }, iconGlyph('more_vert', 20)),
        route.ui.overflow ? h('div', { 'class': 'ph-menu', role: 'menu', 'aria-label': 'More actions' }, overflow.map(function (a) { return actionButton(a, true); })) : null
      ]) : null
    ]);
  }

  function navTypeOf(nav) {
    if (!nav) return null;
    var t = nav.type || 'adaptive';
    if (t === 'adaptive') t = screenInfo().width >= (nav.rail_breakpoint || 600) ? 'rail' : 'bar';
    // In the web host the page's own navigation bar is at the bottom of a
    // narrow window: the plugin's bar shows as tabs above its screen.
    if (bundle.live && t === 'bar') t = 'tabs';
    return t;
  }
  function selectedNav(route) {
    var nav = route.config.navigation;
    if (nav.selected_state_key) {
      for (var i = 0; i < nav.items.length; i++) if (core.equal(nav.items[i].value, route.state[nav.selected_state_key])) return i;
      return -1;
    }
    return route.ui.nav;
  }
  function navigation(route, scope) {
    var nav = route.config.navigation;
    if (!nav) return null;
    var type = navTypeOf(nav);
    if (type === 'drawer' && !route.ui.drawer) return null;
    var sel = selectedNav(route);
    var lb = nav.label_behavior || 'auto';
    var items = nav.items.map(function (it, i) {
      var selected = i === sel;
      var showLabel = lb === 'always' || (lb === 'auto') || (lb === 'selected' && selected);
      return h('button', { 'class': 'ph-nav-item' + (selected ? ' ph-selected' : ''), type: 'button', role: type === 'tabs' ? 'tab' : null,
        'aria-selected': type === 'tabs' ? String(selected) : null, 'aria-current': type !== 'tabs' && selected ? 'true' : null, 'aria-label': it.label, 'data-ph-nav-item': it.id,
        on: { click: function () { selectNav(route, scope, i); } } },
      [it.icon ? iconGlyph(selected && it.selected_icon ? it.selected_icon : it.icon, 20) : null, showLabel || !it.icon ? h('span', { 'class': 'ph-nav-label' }, it.label) : null]);
    });
    return h(type === 'tabs' ? 'div' : 'nav', { 'class': 'ph-nav ph-nav-' + type, 'data-ph-path': '/navigation', 'data-ph-nav-type': type, role: type === 'tabs' ? 'tablist' : null, 'aria-label': route.ext.id === 'main' ? 'Sections' : words.screenLabel(route.ext) + ' sections' }, items);
  }
  function selectNav(route, scope, i) {
    commitFocused();
    var nav = route.config.navigation;
    var it = nav.items[i];
    emit('navigation_select', { item: it.id, value: it.value === undefined ? null : it.value, nav_type: navTypeOf(nav) });
    if (nav.selected_state_key) {
      setStateKey(route, nav.selected_state_key, clone(it.value), 'navigation');
      if (nav.persist) {
        var v = {};
        v[nav.selected_state_key] = it.value;
        savePersisted(route.ext.id, v);
      }
    } else {
      route.ui.nav = i;
      if (nav.persist) savePersisted(route.ext.id, { $navigation: i });
    }
    route.ui.drawer = false;
    render();
    trigger(it.action, scope, '/navigation/items/' + i);
  }

  // A toast tells a page, quietly, what changed under it: a new version of
  // the plugin, or why the author's latest change was not installed
  // (pluginhost dev). The first goes after a few seconds; the second stays
  // until the next version or until dismissed. Home cards show none.
  var toastTimer = null;
  function toast(kind, text, stay) {
    if (embedded) return;
    clearTimeout(toastTimer);
    app.toast = { kind: kind, text: text };
    emit('toast', { kind: kind, text: text });
    if (!stay) toastTimer = setTimeout(function () { app.toast = null; render(); }, 5000);
    render();
  }
  function toastView() {
    if (!app.toast) return null;
    return h('div', { 'class': 'ph-toast', role: 'status', 'aria-live': 'polite', 'data-ph-toast': app.toast.kind }, [
      h('span', null, app.toast.text),
      h('button', { 'class': 'ph-button ph-button-text', type: 'button', on: { click: function () { clearTimeout(toastTimer); app.toast = null; render(); } } }, 'Dismiss')
    ]);
  }

  // problemOf says what an error means to a person, with the action that
  // fixes it (words.js); the refusal of a connection's key, which the host
  // records, is the connection's state.
  function problemOf(e) {
    var st = fctx.connection_state || {};
    var x = e;
    if (e && e.connection && st[e.connection] && st[e.connection].refused) {
      x = {};
      Object.keys(e).forEach(function (k) { x[k] = e[k]; });
      x.refused = st[e.connection].refused;
    }
    return words.problem(x, { plugin: plugin.name ? plugin.name.split(' · ')[0] : '', connection: function (id) { var c = (fctx.connections || {})[id]; return c && c.label; } });
  }
  // errorText says what failed, in words; the admin's debug view (and the
  // standalone preview) adds the code, a failed run's reason and the
  // message.
  function errorText(e) {
    var text = problemOf(e).text;
    return bundle.live && !bundle.inspector ? text : text + ' [' + words.codeOf(e) + ']';
  }
  // fixButton is the button that does what a problem asks, or null.
  function fixButton(e, retry) {
    var p = problemOf(e);
    var b = function (label, fn, extra) {
      var a = { 'class': 'ph-button ph-button-text', type: 'button', 'data-ph-fix': p.action, on: { click: fn } };
      Object.keys(extra || {}).forEach(function (k) { a[k] = extra[k]; });
      return h('button', a, label);
    };
    switch (p.action) {
      case 'retry': return retry ? b('Try again', retry) : null;
      case 'connect':
      case 'fix_key':
        // The connection's own banner, on this screen, takes the key.
        return b(p.action === 'connect' ? 'Connect' : 'Change key', function () {
          var f = root.querySelector('[data-ph-connection="' + p.connection + '"] input, [data-ph-connection="' + p.connection + '"] button');
          if (f) f.focus();
        }, { 'data-ph-fix-connection': p.connection || '' });
      case 'grant':
        return host.grant ? b('Allow network', function () {
          host.grant('network').then(function (r) {
            if (r.error) { app.notice = { error: r.error }; render(); return; }
            fctx.permissions = r.permissions;
            app.notice = null;
            retryFailed('granted');
            render();
          });
        }) : null;
      case 'settings': return opts.onAction ? b('Open settings', function () { opts.onAction('settings'); }) : null;
      case 'sign_in': return opts.onAction ? b('Sign in', function () { opts.onAction('sign_in'); }) : null;
    }
    return null;
  }
  // retryFailed loads again every source of the screen whose load failed.
  function retryFailed(reason) {
    var route = currentRoute();
    if (!route) return Promise.resolve();
    return Promise.all(Object.keys(route.errors).filter(function (sid) { return route.errors[sid]; }).map(function (sid) { return loadSource(route, sid, reason); }));
  }
  function hostBanners(route) {
    var out = [];
    if (app.notice) {
      var n = app.notice;
      out.push(h('div', { 'class': 'ph-retry ph-notice', role: 'alert', 'data-ph-notice': n.error ? n.error.code : n.code }, [
        h('span', null, n.error ? (n.capability && !bundle.live ? n.capability + ' failed: ' : '') + errorText(n.error) : n.text),
        h('span', { 'class': 'ph-banner-actions' }, [
          n.error ? fixButton(n.error, null) : null,
          h('button', { 'class': 'ph-button ph-button-text', type: 'button', on: { click: function () { app.notice = null; render(); } } }, 'Dismiss')
        ])
      ]));
    }
    connectBanners().forEach(function (b) { out.push(b); });
    var loading = Object.keys(route.loading).filter(function (id) { return route.loading[id]; });
    if (loading.length) out.push(h('div', { 'class': 'ph-host-loading', role: 'progressbar', 'aria-label': 'Loading', 'data-ph-loading': loading.join(' ') }, h('div', { 'class': 'ph-bar ph-indeterminate' })));
    var asked = {}; // connections a banner above asks for
    connectBannerIDs().forEach(function (id) { asked[id] = true; });
    Object.keys(route.errors).forEach(function (id) {
      var e = route.errors[id];
      if (!hc.retryState(route.good[id], e) || route.loading[id]) return;
      // A source that failed for want of a connection the banner above
      // asks for says nothing more: the banner is where it is fixed.
      var p = problemOf(e);
      if ((p.action === 'connect' || p.action === 'fix_key') && asked[p.connection]) return;
      var retry = function () { emit('retry', { source: id }); loadSource(route, id, 'retry'); };
      out.push(h('div', { 'class': 'ph-retry', role: 'alert', 'data-ph-retry': id }, [
        h('span', null, (bundle.live ? '' : 'Could not load ' + id + ': ') + errorText(e)),
        h('span', { 'class': 'ph-banner-actions' }, [fixButton(e, retry) || (problemOf(e).action === 'retry' ? null : h('button', { 'class': 'ph-button ph-button-text', type: 'button', on: { click: retry } }, 'Try again'))])
      ]));
    });
    return out;
  }

  // connectBanners ask the user to connect each account the plugin declares
  // and this Instance has not connected, or whose key the provider refused
  // (live host only): an API key typed into the host's own field, or the
  // provider's page for OAuth. The key goes to the server and is not kept
  // by the page. After a key is saved the banner stays, checking, until
  // the sources that failed answered again: a key the provider refuses is
  // said here, where it was typed.
  var keyDrafts = {}; // keys being typed, by connection: never rendered back
  function connectBannerIDs() {
    if (!host.connectKey) return [];
    var conns = fctx.connections || {}, st = fctx.connection_state || {};
    return Object.keys(conns).filter(function (id) { return !conns[id].connected || (st[id] && st[id].refused) || app.checking === id; });
  }
  function connectBanners() {
    var conns = fctx.connections || {}, kinds = fctx.connection_kinds || {}, st = fctx.connection_state || {};
    return connectBannerIDs().map(function (id) {
      var c = conns[id], busy = app.connecting === id || app.checking === id, refused = st[id] && st[id].refused;
      var say = app.checking === id ? 'Checking the key with ' + c.label + '…'
        : refused ? c.label + ' refused ' + (kinds[id] === 'api_key' ? 'the key' : 'the connection') + ' (HTTP ' + refused + '). ' + (kinds[id] === 'api_key' ? 'Enter a new key.' : 'Connect again.')
          : 'Connect ' + c.label + ' to use everything this plugin offers.';
      var parts = [h('span', { 'class': 'ph-connect-text', id: 'ph-connect-' + id, role: refused ? 'alert' : null }, say)];
      if (kinds[id] === 'api_key') {
        parts.push(h('input', { 'class': 'ph-input', type: 'password', autocomplete: 'off', 'aria-label': c.label + ' key', 'aria-describedby': 'ph-connect-' + id,
          'aria-invalid': refused ? 'true' : null, 'data-ph-connect-key': id, placeholder: 'Key', disabled: busy,
          on: {
            input: function (ev) { keyDrafts[id] = ev.target.value; },
            keydown: function (ev) { if (ev.key === 'Enter') { ev.preventDefault(); saveKey(id); } }
          } }));
        parts.push(h('button', { 'class': 'ph-button ph-button-tonal', type: 'button', disabled: busy, 'data-ph-connect': id, on: { click: function () { saveKey(id); } } }, 'Save key'));
        if (conns[id].connected && !busy) {
          parts.push(h('button', { 'class': 'ph-button ph-button-text', type: 'button', 'data-ph-disconnect': id, on: { click: function () { connectWith(id, host.disconnect(id), false); } } }, 'Remove key'));
        }
      } else {
        parts.push(h('button', { 'class': 'ph-button ph-button-tonal', type: 'button', disabled: busy, 'data-ph-connect': id, on: { click: function () {
          app.connecting = id;
          render();
          host.startOAuth(id).then(function (r) {
            app.connecting = null;
            if (r.error) { app.notice = { error: r.error }; render(); return; }
            emit('connect', { connection: id, kind: 'oauth2' });
            location.assign(r.url);
          });
        } } }, refused || conns[id].connected ? 'Reconnect' : 'Connect'));
      }
      return h('div', { 'class': 'ph-retry ph-connect' + (refused ? ' ph-connect-refused' : ''), role: 'region', 'aria-label': 'Connect ' + c.label, 'data-ph-connection': id }, parts);
    });
  }
  function saveKey(id) {
    var key = keyDrafts[id] || '';
    delete keyDrafts[id];
    var input = root.querySelector('[data-ph-connect-key="' + id + '"]');
    if (input) input.value = '';
    connectWith(id, host.connectKey(id, key), true);
  }

  // connectWith applies a connect or disconnect answer: the context's
  // connections change, and the sources that failed run again; check keeps
  // the banner until they answered and the connections were read again.
  function connectWith(id, pending, check) {
    app.connecting = id;
    render();
    pending.then(function (r) {
      app.connecting = null;
      if (r.error) { app.notice = { error: r.error }; render(); return; }
      setConnections(r);
      emit('connect', { connection: id, connected: !!(r.connections[id] && r.connections[id].connected) });
      if (!check) { render(); return; }
      app.checking = id;
      render();
      retryFailed('connected').then(function () { return host.connections(); }).then(function (r2) {
        app.checking = null;
        if (r2 && !r2.error) setConnections(r2);
        render();
        // A refused key: the focus goes back to where it is typed, once
        // the banner is drawn with the field enabled again.
        setTimeout(function () {
          var input = root.querySelector('[data-ph-connect-key="' + id + '"]');
          if (input && (fctx.connection_state[id] || {}).refused) input.focus();
        }, 0);
      });
    });
  }
  function setConnections(r) {
    fctx.connections = r.connections;
    fctx.connected = r.connected;
    fctx.connection_state = r.state || {};
  }
  // A failed run that names a connection may mean the provider refused its
  // key: the connections are read again (once at a time).
  var readingConnections = null;
  function connectionProblem(e) {
    if (!e || !e.connection || !host.connections || readingConnections || app.checking) return;
    readingConnections = host.connections().then(function (r) {
      readingConnections = null;
      if (r && !r.error) { setConnections(r); render(); }
    });
  }

  // blockedScreen says why the page shows nothing of the plugin: a disabled
  // Instance, a package that cannot be read, a lost connection.
  function blockedScreen() {
    var head = bundle.live && surface === 'screen';
    var kind = app.blocked.kind;
    var act = function (label, what) {
      return opts.onAction ? h('button', { 'class': 'ph-button ph-button-tonal', type: 'button', 'data-ph-blocked-action': what, on: { click: function () { opts.onAction(what); } } }, label) : null;
    };
    return h('div', { 'class': 'ph-screen ph-blocked', 'data-ph-blocked': kind, key: 'blocked' }, [
      h('div', { 'class': 'ph-empty', role: 'alert' }, [
        iconGlyph(kind === 'disabled' ? 'power_settings_new' : 'warning', 40),
        h(head ? 'h1' : 'div', { 'class': 'ph-t-title_large' }, app.blocked.title || 'This plugin cannot be shown'),
        h('div', { 'class': 'ph-t-body_medium' }, app.blocked.message),
        kind === 'disabled' ? act('Open settings', 'settings') : kind === 'denied' || kind === 'not_found' ? act('Go to your plugins', 'home') : null
      ])
    ]);
  }
  // loadingScreen shows where the screen will be while its plugin loads.
  function loadingScreen() {
    return h('div', { 'class': 'ph-screen ph-skeleton-screen', 'data-ph-starting': '1', key: 'starting', 'aria-busy': 'true' }, [
      h('div', { 'class': 'ph-host-loading', role: 'progressbar', 'aria-label': 'Loading' }, h('div', { 'class': 'ph-bar ph-indeterminate' })),
      h('div', { 'class': 'ph-skeleton ph-skeleton-title', 'aria-hidden': 'true' }),
      [0, 1, 2].map(function (i) { return h('div', { 'class': 'ph-skeleton ph-skeleton-row', 'aria-hidden': 'true', key: 'sk' + i }); })
    ]);
  }

  function screen(route) {
    route.inputs = [];
    route.ui.escape = null;
    nodeCount = 0;
    var scope = { route: route, ctx: ctxOf(route), hasItem: false, form: null };
    var body = renderNode(route.config.view, '/view', scope, null);
    var type = navTypeOf(route.config.navigation);
    var nav = navigation(route, scope);
    // In the web host the page has the main landmark; the plugin's body is
    // inside it.
    var main = h(bundle.live ? 'div' : 'main', { 'class': 'ph-body', key: 'body' + route.seq }, [hostBanners(route), body]);
    var inner;
    if (type === 'rail' || type === 'drawer') inner = h('div', { 'class': 'ph-with-side' }, [nav, main]);
    else if (type === 'tabs') inner = h('div', { 'class': 'ph-column' }, [nav, main]);
    else inner = h('div', { 'class': 'ph-column' }, [main, nav]);
    return h('div', { 'class': 'ph-screen', 'data-ph-extension': route.ext.id, 'data-ph-point': route.ext.point, key: 'screen' + route.seq }, [appBar(route, scope), inner, toastView()]);
  }

  // ---- Page chrome, inspector and event log --------------------------------

  var root = opts.root || document.getElementById('ph-app');
  var frame, eventsPanel, inspectorPre, chromeBar;

  function chrome() {
    // The web host's page names the plugin itself; the preview's strip
    // (version, routes, theme) is for the preview and the admin's debug
    // view.
    if (embedded && bundle.live) return '';
    if (embedded) return h('div', { 'class': 'ph-chrome ph-card-head' }, h('strong', null, plugin.name));
    if (bundle.live && !bundle.inspector) return '';
    return h('div', { 'class': 'ph-chrome' }, [
      h('strong', null, plugin.name + (plugin.version ? ' ' + plugin.version : '')),
      h('span', { 'class': 'ph-crumbs', 'data-ph-crumbs': '1' }, app.stack.map(function (r) { return r.ext.id; }).join(' › ')),
      h('span', { 'class': 'ph-spacer-flex' }),
      h('div', { 'class': 'ph-seg', role: 'group', 'aria-label': 'Theme' }, ['light', 'dark'].map(function (m) {
        return h('button', { type: 'button', 'data-ph-mode': m, 'aria-pressed': String(app.mode === m), on: { click: function () { setMode(m); } } }, m === 'light' ? 'Light' : 'Dark');
      })),
      // The web host's screen is the window.
      bundle.live ? null : h('div', { 'class': 'ph-seg', role: 'group', 'aria-label': 'Screen size' }, ['compact', 'medium', 'expanded'].map(function (s) {
        return h('button', { type: 'button', 'data-ph-size': s, 'aria-pressed': String(app.size === s), on: { click: function () { setSize(s); } } }, s[0].toUpperCase() + s.slice(1));
      }))
    ]);
  }

  function inspectorData() {
    var r = currentRoute();
    if (!r) return core.redact({ blocked: app.blocked, live: app.live });
    var ctx = ctxOf(r);
    var connections = {};
    Object.keys(ctx.context.connections).forEach(function (k) { connections[k] = '[hidden]'; });
    return core.redact({
      extension: r.ext.id,
      route: { depth: app.stack.length, parameters: r.params, result_state: r.resultState },
      state: r.state,
      data: ctx.data,
      context: {
        platform: ctx.context.platform, screen: ctx.context.screen, permissions: ctx.context.permissions,
        connections: connections, connected: ctx.context.connected, route: r.params
      },
      loading: ctx.context.loading,
      errors: ctx.context.errors,
      last_action: app.lastAction,
      validation_errors: r.validation,
      response: r.ext.point === 'response' && responseSample ? { capability: responseSample.capability, verdict: responseSample.verdict } : undefined,
      live: app.live,
      blocked: app.blocked,
      generation: app.generation,
      warnings: loadWarnings.map(function (w) { return (w.file ? w.file + ' ' : '') + (w.path || '/') + ' [' + w.code + '] ' + w.message; })
        .concat(runtimeWarnings.map(function (w) { return '[' + w.kind + '] ' + w.message; }))
    });
  }

  // The inspector and the event panel are outside the screen: they are
  // brought up to date once per frame, and only after the first paint.
  var pendingRows = [], panelsQueued = false, firstPainted = false;
  function schedulePanels() {
    if (panelsQueued || !firstPainted) return;
    panelsQueued = true;
    requestAnimationFrame(flushPanels);
  }
  function flushPanels() {
    panelsQueued = false;
    if (!eventsPanel) return;
    var rows = pendingRows;
    pendingRows = [];
    rows.forEach(appendEventRow);
    inspectorPre.textContent = JSON.stringify(inspectorData(), null, 2);
    eventsPanel.scrollTop = eventsPanel.scrollHeight;
  }

  function appendEventRow(e) {
    var row = document.createElement('div');
    row.className = 'ph-event ph-event-' + e.type;
    row.setAttribute('data-event', e.type);
    var d = {};
    Object.keys(e).forEach(function (k) { if (k !== 'seq' && k !== 'type') d[k] = e[k]; });
    row.textContent = e.seq + ' ' + e.type + ' ' + JSON.stringify(d);
    eventsPanel.appendChild(row);
    while (eventsPanel.childNodes.length > 500) eventsPanel.removeChild(eventsPanel.firstChild);
  }

  // listeners are the page's events the surface listens to, removed when
  // it is destroyed.
  var listeners = [];
  function listen(target, type, fn, capture) {
    target.addEventListener(type, fn, capture);
    listeners.push([target, type, fn, capture]);
  }

  function mount() {
    root.textContent = '';
    chromeBar = document.createElement('div');
    root.appendChild(chromeBar);
    var stage = document.createElement('div');
    stage.className = 'ph-stage';
    root.appendChild(stage);
    var device = document.createElement('div');
    device.className = 'ph-device';
    stage.appendChild(device);
    frame = document.createElement('div');
    frame.className = 'ph-frame';
    frame.setAttribute('data-ph-frame', '1');
    device.appendChild(frame);
    frame.appendChild(document.createElement('div'));
    var side = document.createElement('aside');
    side.className = 'ph-side';
    if (bundle.inspector !== false) stage.appendChild(side);
    var ih = document.createElement('h2');
    ih.textContent = 'Runtime Inspector';
    side.appendChild(ih);
    inspectorPre = document.createElement('pre');
    inspectorPre.className = 'ph-inspector';
    inspectorPre.id = 'ph-inspector';
    side.appendChild(inspectorPre);
    var eh = document.createElement('h2');
    eh.textContent = 'Host events';
    side.appendChild(eh);
    eventsPanel = document.createElement('div');
    eventsPanel.className = 'ph-events';
    eventsPanel.id = 'ph-events';
    side.appendChild(eventsPanel);
    // Remember the focused input when a pointer goes down elsewhere, so that
    // the action the pointer starts commits it (focus moves before click).
    listen(document, 'pointerdown', function () {
      var a = document.activeElement;
      app.pendingFocus = a && a.getAttribute && a.getAttribute('data-ph-commit') && root.contains(a) ? a : null;
    }, true);
    listen(document, 'click', function (ev) {
      var r = currentRoute();
      if (!r) return;
      if (r.ui.select && !(ev.target.closest && ev.target.closest('.ph-select-field'))) { r.ui.select = null; render(); }
      if (r.ui.overflow && !(ev.target.closest && ev.target.closest('.ph-overflow'))) { r.ui.overflow = false; render(); }
    });
    // Escape closes what is open: a menu, a select, a dismissible dialog
    // or sheet.
    listen(document, 'keydown', function (ev) {
      var r = currentRoute();
      if (ev.key !== 'Escape' || !r || !root.contains(document.activeElement) && document.activeElement !== document.body) return;
      if (r.ui.overflow || r.ui.select) {
        r.ui.overflow = false;
        r.ui.select = null;
        ev.preventDefault();
        render();
      } else if (r.ui.escape) {
        ev.preventDefault();
        r.ui.escape();
      }
    });
    // In the web host the screen is the window: a resize renders again,
    // and a new size class is a screen_size event as in the preview.
    if (bundle.live) {
      var lastClass = null, resizeQueued = false;
      listen(window, 'resize', function () {
        if (resizeQueued) return;
        resizeQueued = true;
        requestAnimationFrame(function () {
          resizeQueued = false;
          var si = screenInfo();
          if (si.size_class !== lastClass) { lastClass = si.size_class; emit('screen_size', { size: si.size_class, screen: si }); }
          render();
        });
      });
    }
    listen(document, 'visibilitychange', function () {
      if (document.visibilityState === 'visible') foreground();
      else app.stack.forEach(stopTimers);
    });
  }

  // render draws the current screen once the code that changed something is
  // done: changes in one task are drawn together.
  var queued = false;
  function render() {
    if (queued || !frame) return;
    queued = true;
    queueMicrotask(renderNow);
  }
  var rendering = false, again = false, lastFrameStyle = '';
  function renderNow() {
    queued = false;
    if (!frame) return;
    if (rendering) { again = true; return; }
    rendering = true;
    var t = performance.now();
    try {
      do {
        again = false;
        var r = currentRoute();
        var s = screenInfo();
        var view = app.blocked ? blockedScreen() : r ? screen(r) : loadingScreen();
        // The web host's screen is as tall as what it shows (the page
        // scrolls), as a home card is; the preview's is the chosen size.
        var fs = themeStyle() + (embedded || bundle.live ? '' : 'width:' + s.width + 'px;height:' + s.height + 'px;');
        if (fs !== lastFrameStyle) { frame.style.cssText = fs; lastFrameStyle = fs; }
        frame.setAttribute('data-mode', app.mode);
        frame.setAttribute('data-size', bundle.live ? s.size_class : app.size);
        frame.className = 'ph-frame ph-mode-' + app.mode;
        patch(frame, frame.firstChild, view);
        patchChildren(chromeBar, [chrome()]);
      } while (again);
      schedulePanels();
      app.metrics.last_render_ms = Math.round((performance.now() - t) * 100) / 100;
    } finally {
      rendering = false;
    }
  }

  function setMode(m) { app.mode = m; emit('theme', { mode: m }); render(); }
  function setSize(s) { app.size = s; emit('screen_size', { size: s, screen: screenInfo() }); render(); }

  // ---- Page API for tests ---------------------------------------------------

  function idle() {
    return new Promise(function (resolve) {
      (function wait() { if (app.busy === 0 && firstPainted && !panelsQueued && !queued) resolve(true); else setTimeout(wait, 10); })();
    });
  }

  var api = {
    events: function () { return clone(events); },
    clearEvents: function () { events.length = 0; pendingRows = []; if (eventsPanel) eventsPanel.textContent = ''; },
    state: function () { return currentRoute() ? clone(currentRoute().state) : null; },
    blocked: function () { return clone(app.blocked); },
    live: function () { return app.live; },
    data: function () { return clone(ctxOf(currentRoute()).data); },
    context: function () { return clone(ctxOf(currentRoute()).context); },
    route: function () { var r = currentRoute(); return { extension: r.ext.id, parameters: clone(r.params), depth: app.stack.length }; },
    // The inspector's data is for the preview, and in the web host for an
    // admin who asked for it (?debug=1): nobody else gets it, here either.
    inspector: function () { return bundle.inspector === false ? null : inspectorData(); },
    metrics: function () { return clone(app.metrics); },
    // setState writes state as a host payload would: declared keys only.
    setState: function (values) {
      var r = currentRoute(), refused = [];
      Object.keys(values).forEach(function (k) { if (!setStateKey(r, k, clone(values[k]), 'page_api')) refused.push(k); });
      render();
      return { ok: refused.length === 0, refused: refused };
    },
    // runAction runs an action as if a node of the current screen started it.
    runAction: function (action) { return trigger(action, { route: currentRoute(), ctx: ctxOf(currentRoute()), hasItem: false, form: null }, 'page_api'); },
    setMode: setMode,
    setSize: setSize,
    idle: idle,
    catalogTypes: function () { return catalog.nodes.map(function (n) { return n.type; }); },
    rendererTypes: function () { return Object.keys(renderers); }
  };

  // Every node type of the catalog has a renderer; say so if one is missing.
  catalog.nodes.forEach(function (n) { if (!renderers[n.type]) warn('renderer_missing', 'node type ' + n.type + ' has no renderer in this preview', {}); });

  // ---- Package generation, blocked states and changes -------------------------

  // setConfig takes what the host loaded.
  function setConfig(cfg) {
    plugin = cfg.plugin;
    fctx = cfg.context || {};
    extensions = {};
    cfg.extensions.forEach(function (e) { extensions[e.id] = e; });
    app.generation = cfg.generation;
    cache.generation(host.instance, cfg.generation);
    loadWarnings = cfg.warnings || [];
    responseSample = cfg.response || null;
  }
  // loaded tells the page what the surface shows.
  function loaded() {
    if (opts.onLoad) opts.onLoad(plugin, Object.keys(extensions).map(function (k) { return extensions[k]; }), currentRoute() ? currentRoute().ext.id : null);
  }
  function block(kind, message, title) {
    app.blocked = { kind: kind, message: message, title: title || null };
    emit('blocked', { kind: kind, message: message });
    render();
  }

  // packageChanged reloads the configs after a package update: answers of
  // the old generation are discarded, the cache is emptied, and every open
  // route opens again with its new config and its parameters.
  var reloading = null;
  function packageChanged(generation) {
    if (reloading) return reloading;
    cache.generation(host.instance, generation === undefined ? null : generation);
    var old = app.stack.slice();
    old.forEach(closeRoute);
    emit('package_changed', { generation: generation, previous: app.generation });
    reloading = host.load().then(function (cfg) {
      reloading = null;
      if (cfg.error) { block(cfg.blocked || 'unavailable', cfg.error.message || cfg.error.code); return; }
      setConfig(cfg);
      app.blocked = null;
      app.stack = [];
      old.forEach(function (r) {
        var ext = extensions[r.ext.id];
        if (ext) app.stack.push(reopened(new Route(ext, r.params, r.resultState, false), r));
      });
      if (!app.stack.length) app.stack.push(new Route(extensions[cfg.start], cfg.route || {}, null, true));
      emit('config_reloaded', { generation: app.generation, extension: currentRoute().ext.id });
      loaded();
      toast('updated', 'The plugin was updated' + (plugin.version ? ' to version ' + plugin.version : '') + (bundle.live && !bundle.inspector ? '' : ' (generation ' + app.generation + ')') + '.', false);
      app.stack.forEach(startSources);
    });
    return reloading;
  }

  // reopened keeps what the user had on a route across a package update:
  // the values of state keys the new config still declares with the same
  // type, what the host's own controls show, and the route's place on the
  // page (its scroll and focus), so that an author's change shows in place.
  function reopened(route, old) {
    Object.keys(route.state).forEach(function (k) {
      if (!Object.prototype.hasOwnProperty.call(old.state, k)) return;
      var was = old.state[k], init = route.state[k];
      if (init === null || was === null || typeOf(was) === typeOf(init)) route.state[k] = was;
    });
    route.ui.collapsed = old.ui.collapsed;
    route.ui.filter = old.ui.filter;
    route.ui.nav = old.ui.nav;
    route.seq = old.seq;
    return route;
  }
  function typeOf(v) { return Array.isArray(v) ? 'array' : typeof v; }

  function onHostChange(c) {
    switch (c.type) {
      case 'development':
        emit('development', { message: c.message });
        toast('not_installed', 'Your latest change was not installed; this page still shows ' + (plugin && plugin.version ? 'version ' + plugin.version : 'the last good version') + '. ' + c.message, true);
        break;
      case 'storage':
        emit('storage_changed', { namespace: c.namespace || null, operation: c.operation || null, revision: c.revision === undefined ? null : c.revision });
        if (!app.blocked) refreshStorageSources('storage_changed', c.revision);
        break;
      case 'package':
        if (c.generation !== app.generation) packageChanged(c.generation);
        break;
      case 'blocked':
        block(c.kind, c.message, c.title);
        break;
      case 'unblocked':
        if (app.blocked) { app.blocked = null; packageChanged(app.generation); }
        break;
      case 'status':
        app.live = c.status;
        emit('live_status', { status: c.status, message: c.message || null });
        render();
        break;
    }
  }

  var host = opts.makeHost({ core: core, bundle: bundle, emit: emit, warn: warn });
  var destroyed = false;

  // destroy closes the surface: its routes, timers, listeners, its part of
  // the host's subscription; the cache keeps its results.
  function destroy() {
    if (destroyed) return;
    destroyed = true;
    clearTimeout(toastTimer);
    app.stack.forEach(closeRoute);
    unsubscribe();
    listeners.forEach(function (l) { l[0].removeEventListener(l[1], l[2], l[3]); });
    listeners = [];
    if (host.close) host.close();
    root.textContent = '';
  }

  app.metrics.scripts_loaded_ms = Math.round((T1 - T0) * 100) / 100;
  app.metrics.parsed_ms = Math.round((performance.now() - T0) * 100) / 100;
  mount();
  host.load().then(function (cfg) {
    if (destroyed) return;
    if (cfg.error) {
      block(cfg.blocked || 'unavailable', cfg.error.message || cfg.error.code, cfg.title);
      host.watch(onHostChange);
      firstPainted = true;
      schedulePanels();
      return;
    }
    setConfig(cfg);
    app.mode = opts.mode || fctx.theme || 'light';
    app.size = fctx.screen || 'compact';
    startState = cfg.state;
    var start = extensions[cfg.start];
    // The routes of the page's address (a reload keeps the screens a
    // screen was opened from), the last the one the host started.
    var routes = (opts.stack || []).filter(function (r) { return extensions[r.extension]; });
    if (!routes.length || routes[routes.length - 1].extension !== start.id) routes = [{ extension: start.id, params: cfg.route || {}, result_state: null }];
    routes.forEach(function (r, i) { app.stack.push(new Route(extensions[r.extension], r.params || {}, r.result_state || null, i === routes.length - 1)); });
    var first = currentRoute();
    loaded();
    emit('open', { extension: start.id, point: start.point, parameters: first.params });
    if (responseSample && start.point === 'response') {
      emit('response_verdict', { capability: responseSample.capability, renders: responseSample.verdict.renders, checks: clone(responseSample.verdict.checks) });
    }
    var T2 = performance.now();
    renderNow();
    app.metrics.mounted_ms = Math.round((T2 - T0) * 100) / 100;
    app.metrics.first_render_ms = Math.round((performance.now() - T0) * 100) / 100;
    app.metrics.nodes = nodeCount;
    host.watch(onHostChange);
    // The first frame shows the screen as the host opens it; its data sources
    // start loading right after it is painted (in the web host at once: the
    // page's cache may hold their answers, and a request is on its way
    // while the frame paints).
    var started = false;
    function startFirst() {
      if (started || destroyed) return;
      started = true;
      startSources(first);
      app.stack.forEach(function (r) { if (r !== first) startSources(r); });
      if (pendingStack) { var ps = pendingStack; pendingStack = null; setStack(ps); }
    }
    if (bundle.live) startFirst();
    requestAnimationFrame(function () {
      setTimeout(function () {
        app.metrics.first_paint_ms = Math.round((performance.now() - T0) * 100) / 100;
        firstPainted = true;
        schedulePanels();
        startFirst();
      }, 0);
    });
  });

  // In the web host, the page API that reads the plugin's state, data,
  // context and events is an admin's (bundle.debug_api), as the inspector
  // is: anyone else's page has only what it says about itself.
  var pageAPI = !bundle.live || bundle.debug_api ? api : { live: api.live, blocked: api.blocked, route: api.route, metrics: api.metrics, idle: api.idle };
  if (opts.api) window.pluginhostPreview = pageAPI;
  return {
    api: pageAPI, destroy: destroy, setStack: setStack,
    setMode: function (m) { if (m !== app.mode) setMode(m); },
    // stack is what the surface shows, as an address keeps it.
    stack: stackOf
  };
}
