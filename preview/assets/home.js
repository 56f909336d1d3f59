// home.js: the web host's home (GET /app): the responses the viewer's AI
// assistant chose to show (selectResponseUi), live, then one card per
// Instance: its plugin and name, its home extensions drawn live, and the
// way into it. The server embeds the answer to HomeQuery and the cards'
// starts, so that the home draws without a request; each card's sources
// then load, once per key of the page's host cache.
import { Runtime } from './runtime.js';
import { el, icon } from './ui.js';
import * as words from './words.js';

// Home draws the home into opts.root the first time, and keeps its
// surfaces while the page shows other views (their timers run only while
// the home is shown).
export function Home(opts) {
  var root = opts.root;
  var cards = []; // {runtime, instance, extension}
  var responses = []; // newest first: {runtime, instance, extension, message, box}
  var responsesEl = null, listEl = null;
  var mode = opts.mode;
  var state = null; // null, 'loading', 'built'

  function embed(box, surface, live) {
    return Runtime({
      makeHost: opts.makeHost,
      root: box, bundle: opts.bundleFor(live, false), cache: opts.cache, events: opts.events, surface: surface,
      shown: opts.shown, mode: mode, onReady: opts.onReady,
      onNavigate: function (target, params) { opts.open(live.instance_id, target, params); }
    });
  }

  function build(data) {
    state = 'loading';
    root.textContent = '';
    root.appendChild(el('h1', { 'class': 'ph-page-title', text: 'Your plugins' }));
    responsesEl = el('section', { 'class': 'ph-home-responses', 'aria-labelledby': 'ph-responses-title', hidden: true }, [
      el('h2', { 'class': 'ph-h2', id: 'ph-responses-title', text: 'From your assistant' })]);
    root.appendChild(responsesEl);
    listEl = el('div', { 'class': 'ph-home-list', 'aria-busy': 'true' }, [0, 1].map(function () { return el('div', { 'class': 'ph-skeleton ph-skeleton-card', 'aria-hidden': 'true' }); }));
    root.appendChild(listEl);
    var first = data ? Promise.resolve({ data: data }) : opts.conn.gql(opts.cfg.home_query);
    first.then(function (r) {
      listEl.textContent = '';
      listEl.removeAttribute('aria-busy');
      if (r.error) {
        listEl.appendChild(el('div', { 'class': 'ph-empty-state', role: 'alert' }, [icon('cloud_off'),
          el('p', { text: 'Your plugins cannot be listed now. ' + words.problem(r.error).text }),
          el('button', { type: 'button', 'class': 'ph-btn ph-btn-tonal', text: 'Try again', onclick: function () { state = null; build(null); } })]));
        state = null;
        return;
      }
      state = 'built';
      opts.onData(r.data);
      var preloads = {};
      (opts.cards || []).forEach(function (c) { preloads[c.instance_id + '/' + c.extension] = c.preload; });
      opts.cards = null;
      var n = 0;
      r.data.installations.forEach(function (instl) {
        instl.instances.forEach(function (inst) {
          n++;
          listEl.appendChild(instanceCard(instl, inst, preloads));
        });
      });
      if (!n) {
        listEl.appendChild(el('div', { 'class': 'ph-empty-state' }, [icon('extension'),
          el('h2', { 'class': 'ph-h2', text: 'No plugins yet' }),
          el('p', { text: 'Plugins you install show here, each with what it has for you. A plugin is installed from its signed package (installPlugin).' })]));
      }
      ((r.data.renderedResponses || {}).nodes || []).slice().reverse().forEach(showResponse);
      opts.conn.watchResponses(opts.cfg.response_fields, showResponse);
    });
  }

  // showResponse draws a response the assistant chose, newest first; the
  // home keeps the newest five.
  function showResponse(rr) {
    if (responses.some(function (x) { return x.message === rr.messageId; })) return;
    var box = el('div', { 'class': 'ph-card-surface ph-home-response', 'data-response': rr.messageId });
    var name = el('div', { 'class': 'ph-card-overline', text: opts.instances().byID[rr.instanceId] ? words.instanceName(opts.instances().byID[rr.instanceId].plugin.name, opts.instances().byID[rr.instanceId].name) : '' });
    var wrap = el('article', { 'class': 'ph-home-card' }, [name, box]);
    responsesEl.insertBefore(wrap, responsesEl.children[1] || null);
    responsesEl.hidden = false;
    var live = opts.liveFor(rr.instanceId, rr.extension, {}, null);
    live.response = { capability: rr.capability, generation: rr.generation, data: rr.data };
    var runtime = embed(box, 'response', live);
    responses.unshift({ runtime: runtime, instance: rr.instanceId, extension: rr.extension, message: rr.messageId, box: wrap });
    while (responses.length > 5) {
      var old = responses.pop();
      old.runtime.destroy();
      old.box.remove();
    }
  }

  // instanceCard is one Instance on the home: its plugin and name, its
  // home extensions drawn live (or what the plugin does), and the links
  // into it.
  function instanceCard(instl, inst, preloads) {
    var iconName = null;
    instl.extensions.forEach(function (e) { if (!iconName && e.icon) iconName = words.iconName(e.icon); });
    var titleID = 'ph-inst-' + inst.id.replace(/[^A-Za-z0-9_-]/g, '_');
    var openView = opts.firstView(inst.id);
    var card = el('article', { 'class': 'ph-home-card' + (inst.enabled ? '' : ' ph-home-off'), 'data-instance': inst.id, 'aria-labelledby': titleID }, [
      el('header', { 'class': 'ph-home-card-head' }, [
        el('span', { 'class': 'ph-home-card-icon' }, [icon(iconName || 'extension')]),
        el('div', { 'class': 'ph-home-card-names' }, [
          el('h2', { 'class': 'ph-home-card-title', id: titleID, text: inst.name }),
          el('span', { 'class': 'ph-home-card-plugin', text: instl.name + (inst.enabled ? '' : ' · disabled') })
        ]),
        link(el('a', { 'class': 'ph-icon-btn', 'aria-label': 'Settings of ' + words.instanceName(instl.name, inst.name), 'data-ph-settings-link': inst.id }, [icon('settings')]),
          { kind: 'settings', instance: inst.id })
      ])
    ]);
    var homes = instl.extensions.filter(function (e) { return e.point === 'home' && e.placement !== 'hidden'; });
    if (!inst.enabled) {
      card.appendChild(el('p', { 'class': 'ph-home-card-text', text: 'This Instance is disabled: its data is kept, and nothing can read or write it until you enable it in its settings.' }));
    } else if (!homes.length) {
      card.appendChild(el('p', { 'class': 'ph-home-card-text', text: instl.description || 'Open it to see what it has for you.' }));
    }
    if (inst.enabled) {
      homes.forEach(function (e) {
        var box = el('div', { 'class': 'ph-card-surface', 'data-home-card': inst.id + '/' + e.id });
        card.appendChild(box);
        var runtime = embed(box, 'home', opts.liveFor(inst.id, e.id, {}, preloads[inst.id + '/' + e.id]));
        cards.push({ runtime: runtime, instance: inst.id, extension: e.id });
      });
    }
    var actions = el('div', { 'class': 'ph-home-card-actions' });
    if (openView.kind === 'screen') {
      actions.appendChild(link(el('a', { 'class': 'ph-btn ph-btn-tonal', 'data-ph-open': inst.id, 'data-extension': openView.extension, 'aria-label': 'Open ' + words.instanceName(instl.name, inst.name) }, [
        el('span', { text: 'Open' }), icon('arrow_forward')]), openView));
    }
    card.appendChild(actions);
    return card;
  }

  // link makes a link's plain click show its view in the page.
  function link(a, view) {
    a.href = opts.href(view);
    a.addEventListener('click', function (ev) {
      if (ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
      ev.preventDefault();
      opts.view(view);
    });
    return a;
  }

  function idleOf(list) {
    return Promise.all(list.map(function (r) { return r.api.idle(); })).then(function () { return true; });
  }

  // The home's page API: idle when every card is, and for an admin the
  // page's events (as every surface's page API has them).
  var api = {
    idle: function () { return idleOf(cards.concat(responses).map(function (c) { return c.runtime; })); },
    inspector: function () { return null; }
  };
  if (opts.bundleFor(null, false).debug_api) {
    api.events = function () { return JSON.parse(JSON.stringify(opts.events)); };
    api.clearEvents = function () { opts.events.length = 0; };
  }

  build(opts.data);
  opts.data = null;

  return {
    api: api,
    surfaces: function () {
      var shown = opts.shown();
      var out = cards.map(function (c) { return { surface: 'home', instance: c.instance, extension: c.extension, shown: shown }; });
      responses.forEach(function (c) { out.push({ surface: 'response', instance: c.instance, extension: c.extension, message: c.message, shown: shown }); });
      return out;
    },
    setMode: function (m) {
      mode = m;
      cards.concat(responses).forEach(function (c) { c.runtime.setMode(m); });
    },
    // stale: the Instances changed (a settings change); the home is drawn
    // again the next time it shows.
    stale: function () {
      if (state !== 'built') return;
      cards.concat(responses).forEach(function (c) { c.runtime.destroy(); });
      cards = [];
      responses = [];
      build(null);
    }
  };
}
