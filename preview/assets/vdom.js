// vdom.js: the runtime's virtual DOM. h describes an element ({tag, a:
// attributes, k: children}); create makes it; patch and patchChildren bring a
// drawn element up to a new description, keeping the elements (and their
// input state) whose tag and key stay. Attribute values and text always
// reach the page as attributes and text nodes, never as HTML; style is set
// through the CSSOM; on: {type: fn} binds event handlers once per element,
// fn(event, element).

export function h(tag, a, kids) {
  var flat = [];
  (function add(k) {
    if (k === null || k === undefined || k === false) return;
    if (Array.isArray(k)) { k.forEach(add); return; }
    flat.push(typeof k === 'object' ? k : String(k));
  })(kids);
  return { tag: tag, a: a || {}, k: flat };
}
export function create(v) {
  if (typeof v === 'string') return document.createTextNode(v);
  var el = v.tag === 'svg' || v.svg ? document.createElementNS('http://www.w3.org/2000/svg', v.tag) : document.createElement(v.tag);
  el._v = { tag: v.tag, a: {}, k: [] };
  setAttrs(el, v.a, {});
  v.k.forEach(function (c) {
    if (typeof c === 'object' && (v.tag === 'svg' || v.svg)) c.svg = true;
    el.appendChild(create(c));
  });
  el._v = v;
  return el;
}
function setAttrs(el, a, old) {
  var keys = {};
  Object.keys(old).forEach(function (k) { keys[k] = true; });
  Object.keys(a).forEach(function (k) { keys[k] = true; });
  Object.keys(keys).forEach(function (k) {
    var v = a[k], o = old[k];
    if (k === 'key') return;
    if (k === 'on') {
      el._on = v || {};
      Object.keys(el._on).forEach(function (type) {
        if (!el._bound) el._bound = {};
        if (el._bound[type]) return;
        el._bound[type] = true;
        el.addEventListener(type, function (ev) { var f = el._on && el._on[type]; if (f) f(ev, el); });
      });
      return;
    }
    if (k === 'value') {
      if (el.value !== v && document.activeElement !== el) el.value = v === undefined ? '' : v;
      return;
    }
    if (k === 'checked') { el.checked = !!v; return; }
    // Styles go through the CSSOM: the web host's policy allows no style
    // attribute in markup, which setAttribute would be.
    if (k === 'style') { if (v !== o || el.style.cssText === '' && v) el.style.cssText = v || ''; return; }
    if (v === o && el.hasAttribute(k) === (v !== null && v !== undefined && v !== false)) return;
    if (v === null || v === undefined || v === false) el.removeAttribute(k);
    else el.setAttribute(k, v === true ? '' : String(v));
  });
}
export function patch(parent, el, v) {
  if (typeof v === 'string') {
    if (el.nodeType === 3) { if (el.data !== v) el.data = v; return; }
    parent.replaceChild(create(v), el);
    return;
  }
  if (el.nodeType !== 1 || !el._v || el._v.tag !== v.tag || el._v.a.key !== v.a.key) {
    if (el._v && el._v.svg) v.svg = true;
    parent.replaceChild(create(v), el);
    return;
  }
  setAttrs(el, v.a, el._v.a);
  var svg = v.tag === 'svg' || el._v.svg;
  v.svg = el._v.svg;
  patchChildren(el, v.k, svg);
  el._v = v;
}
export function patchChildren(el, kids, svg) {
  var nodes = el.childNodes;
  for (var i = 0; i < kids.length; i++) {
    if (svg && typeof kids[i] === 'object') kids[i].svg = true;
    if (i < nodes.length) patch(el, nodes[i], kids[i]);
    else el.appendChild(create(kids[i]));
  }
  while (nodes.length > kids.length) el.removeChild(nodes[nodes.length - 1]);
}
