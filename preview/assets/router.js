// router.js: the web host's addresses, without a page. Every view of the
// shell is a URL, and a URL is a view:
//
//   /app                                  the home
//   /app/{instance}/{extension}?p=v       a screen, with its parameters
//   /app/{instance}/-/settings            an Instance's settings
//   /dashboard                            the live storage dashboard
//
// The browser's history holds the rest: each entry's state is its view
// (viewState), with a screen's whole route stack, so that Back, Forward and
// a reload return to the same screen, its parameters and the screens it was
// opened from. A URL typed or shared has no state: it opens its screen
// alone, its parameters as text. ?debug=1 (an admin's debug view) is kept
// across the views of a page and is never a parameter.

// parse reads a URL's path and query: {kind: 'home' | 'screen' | 'settings'
// | 'dashboard', instance, extension, params} or null for an address that
// is not the shell's.
export function parse(pathname, search) {
  var parts = pathname.split('/').filter(function (p) { return p !== ''; });
  var dec;
  try {
    dec = parts.map(decodeURIComponent);
  } catch (e) {
    return null;
  }
  if (dec.length === 1 && dec[0] === 'dashboard') return { kind: 'dashboard' };
  if (dec[0] !== 'app') return null;
  if (dec.length === 1) return { kind: 'home' };
  if (dec.length === 3 && dec[2] !== '-' && dec[1] !== '-') return { kind: 'screen', instance: dec[1], extension: dec[2], params: paramsOf(search) };
  if (dec.length === 4 && dec[2] === '-' && dec[3] === 'settings') return { kind: 'settings', instance: dec[1] };
  return null;
}

// paramsOf reads a query into a screen's parameters (text), without debug.
export function paramsOf(search) {
  var out = {};
  new URLSearchParams(search || '').forEach(function (v, k) { if (k !== 'debug') out[k] = v; });
  return out;
}

// text is how a parameter reads in an address: a string as it is, any
// other JSON value as its JSON.
function text(v) { return typeof v === 'string' ? v : JSON.stringify(v === undefined ? null : v); }

// href is the address of a view; debug keeps the debug view.
export function href(view, debug) {
  var e = encodeURIComponent;
  var path, q = [];
  switch (view.kind) {
    case 'dashboard': path = '/dashboard'; break;
    case 'settings': path = '/app/' + e(view.instance) + '/-/settings'; break;
    case 'screen': {
      var top = view.stack ? view.stack[view.stack.length - 1] : { extension: view.extension, params: view.params };
      path = '/app/' + e(view.instance) + '/' + e(top.extension);
      Object.keys(top.params || {}).sort().forEach(function (k) { if (k !== 'debug') q.push(e(k) + '=' + e(text(top.params[k]))); });
      break;
    }
    default: path = '/app';
  }
  if (debug) q.push('debug=1');
  return path + (q.length ? '?' + q.join('&') : '');
}

// viewState is what a history entry keeps of a view: a screen's route
// stack, each route {extension, params, result_state}.
export function viewState(view) {
  var s = { ph: 1, kind: view.kind };
  if (view.instance) s.instance = view.instance;
  if (view.kind === 'screen') s.stack = view.stack ? view.stack.map(route) : [route(view)];
  return s;
}
function route(r) { return { extension: r.extension, params: r.params || {}, result_state: r.result_state || null }; }

// fromHistory is the view of the current entry: its state when it is the
// shell's and names the same address (a reload), else what the address
// says (a link typed or shared).
export function fromHistory(state, pathname, search) {
  var v = parse(pathname, search);
  if (!v) return null;
  if (!state || state.ph !== 1 || state.kind !== v.kind || state.instance !== v.instance) return v.kind === 'screen' ? withStack(v) : v;
  if (v.kind !== 'screen') return v;
  var top = state.stack && state.stack[state.stack.length - 1];
  if (!top || top.extension !== v.extension || !sameText(top.params, v.params)) return withStack(v);
  return { kind: 'screen', instance: v.instance, extension: v.extension, params: top.params, stack: state.stack.map(route) };
}
function withStack(v) { v.stack = [route(v)]; return v; }

// sameText reports whether typed parameters read as the text ones of an
// address.
function sameText(typed, plain) {
  var a = Object.keys(typed || {}), b = Object.keys(plain || {});
  if (a.length !== b.length) return false;
  return a.every(function (k) { return plain[k] === text(typed[k]); });
}

// sameRoute reports whether two routes are the same screen with the same
// parameters.
export function sameRoute(a, b) {
  return a.extension === b.extension && JSON.stringify(sorted(a.params || {})) === JSON.stringify(sorted(b.params || {}));
}
function sorted(v) {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === 'object') {
    var out = {};
    Object.keys(v).sort().forEach(function (k) { out[k] = sorted(v[k]); });
    return out;
  }
  return v;
}

// common is how many routes two stacks share from their start.
export function common(a, b) {
  var n = 0;
  while (n < a.length && n < b.length && sameRoute(a[n], b[n])) n++;
  return n;
}
