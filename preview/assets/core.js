// core.js: the rules of the preview runtime that do not touch the page: the
// binding language, conditions, storage key rules, the in-page storage tools
// and the input validation rules. It mirrors the Go reference (packages
// binding, models and storage) and is checked against the same conformance
// corpora by preview/conformance_test.go, which runs it under node. It never
// evaluates plugin text as code: paths are parsed by hand and read member by
// member. An ES module: the page runs it bundled (package preview/assets).

// ---- Bindings (mirrors package binding) --------------------------------

var MAX_DEPTH = 12;
var MAX_INDEX_DIGITS = 9;

function BindingError(code, offset, message) {
  this.code = code;
  this.offset = offset;
  this.message = message;
}

function nameStart(c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}
function nameChar(c) {
  return nameStart(c) || (c >= '0' && c <= '9') || c === '-';
}

function syntaxHint(s, i, want) {
  if (i >= s.length) return 'path "' + s + '" ends early; expected ' + want;
  return 'unexpected "' + s[i] + '" in path "' + s + '"; expected ' + want + ' (no expressions, operators or spaces inside a path)';
}

// parsePath parses a bare path into segments: {name} or {index}.
function parsePathRaw(s) {
  if (s === '') throw new BindingError('binding_syntax', 0, 'empty path; a path is written like data.weather.data.city or state.tab');
  var p = [];
  var i = 0;
  for (;;) {
    var start = i;
    if (i >= s.length || !nameStart(s[i])) {
      throw new BindingError('binding_syntax', i, syntaxHint(s, i, 'a name (a letter or _, then letters, digits, _ or -)'));
    }
    while (i < s.length && nameChar(s[i])) i++;
    p.push({ name: s.slice(start, i) });
    while (i < s.length && s[i] === '[') {
      var k = i + 1;
      while (k < s.length && s[k] >= '0' && s[k] <= '9') k++;
      if (k === i + 1 || k >= s.length || s[k] !== ']') {
        throw new BindingError('binding_syntax', i, syntaxHint(s, i, 'an index: `[` digits `]`, such as [0]'));
      }
      if (k - (i + 1) > MAX_INDEX_DIGITS) {
        throw new BindingError('binding_syntax', i, 'index ' + s.slice(i + 1, k) + ' has more than ' + MAX_INDEX_DIGITS + ' digits');
      }
      p.push({ index: parseInt(s.slice(i + 1, k), 10) });
      i = k + 1;
    }
    if (p.length > MAX_DEPTH) {
      throw new BindingError('binding_depth', 0, 'path "' + s + '" has more than ' + MAX_DEPTH + ' segments');
    }
    if (i === s.length) return p;
    if (s[i] !== '.') throw new BindingError('binding_syntax', i, syntaxHint(s, i, '`.`, `[` or the end of the path'));
    i++;
  }
}

// The readable roots of the specification, as in binding/roots.go.
function sh(name, opts, children) {
  return { name: name, readable: !!(opts && opts.r), open: !!(opts && opts.o), children: children || [] };
}
var ROOTS = [
  sh('data', null, [sh('<source_id>', null, [sh('completed', { r: 1 }), sh('summary', { r: 1 }), sh('data', { r: 1, o: 1 })])]),
  sh('item', { r: 1, o: 1 }),
  sh('state', null, [sh('<key>', { r: 1, o: 1 })]),
  sh('context', null, [
    sh('platform', { r: 1 }),
    sh('screen', null, [sh('width', { r: 1 }), sh('height', { r: 1 }), sh('size_class', { r: 1 })]),
    sh('permissions', null, [sh('<permission>', { r: 1 })]),
    sh('connections', null, [sh('<connection>', { r: 1 }, [sh('connected', { r: 1 }), sh('label', { r: 1 }), sh('account', { r: 1 })])]),
    sh('connected', { r: 1 }),
    sh('loading', null, [sh('<source>', { r: 1 })]),
    sh('errors', null, [sh('<source>', { r: 1, o: 1 })]),
    sh('route', null, [sh('<parameter>', { r: 1, o: 1 })])
  ])
];

function pathString(p) {
  var out = '';
  for (var i = 0; i < p.length; i++) {
    if (p[i].name === undefined) out += '[' + p[i].index + ']';
    else out += (i === 0 ? '' : '.') + p[i].name;
  }
  return out;
}

function checkPath(p) {
  if (p.length > MAX_DEPTH) throw new BindingError('binding_depth', 0, 'path ' + pathString(p) + ' has ' + p.length + ' segments; a binding reads at most ' + MAX_DEPTH);
  if (p.length === 0 || p[0].name === undefined) throw new BindingError('binding_syntax', 0, 'a path starts with a root name');
  var level = ROOTS;
  var cur = null;
  for (var i = 0; i < p.length; i++) {
    if (cur && cur.open) return;
    var seg = p[i];
    var next = null;
    if (seg.name !== undefined) {
      for (var j = 0; j < level.length; j++) {
        if (level[j].name === seg.name || level[j].name[0] === '<') { next = level[j]; break; }
      }
    }
    if (!next) {
      if (i === 0) throw new BindingError('binding_root', 0, '"' + seg.name + '" is not a readable root; a path starts with data, item, state or context');
      throw new BindingError('binding_path', 0, 'in ' + pathString(p) + ': after ' + pathString(p.slice(0, i)) + ' comes ' + level.map(function (c) { return c.name; }).join(', ') + ', not ' + (seg.name === undefined ? '[' + seg.index + ']' : seg.name));
    }
    cur = next;
    level = next.children;
  }
  if (!cur.readable) throw new BindingError('binding_path', 0, pathString(p) + ' cannot be read as a whole');
}

function parsePath(s) {
  var p = parsePathRaw(s);
  checkPath(p);
  return p;
}

// parseTemplate returns {parts: [{text} | {path}]}; it throws BindingError.
function parseTemplate(s) {
  var parts = [];
  var text = '';
  var hasText = false;
  function addText(t) { if (t !== '') { text += t; hasText = true; } }
  function flush() { if (hasText) { parts.push({ text: text }); text = ''; hasText = false; } }
  var i = 0;
  while (i < s.length) {
    var j = s.indexOf('{{', i);
    if (j < 0) { addText(s.slice(i)); break; }
    if (j > i && s[j - 1] === '\\') {
      addText(s.slice(i, j - 1));
      addText('{{');
      i = j + 2;
      continue;
    }
    addText(s.slice(i, j));
    var end = s.indexOf('}}', j + 2);
    if (end < 0) throw new BindingError('binding_syntax', j, '`{{` is not closed by `}}`; write `\\{{` for a literal `{{`');
    var inner = s.slice(j + 2, end);
    var body = inner.replace(/^[ \t]+/, '').replace(/[ \t]+$/, '');
    var lead = inner.length - inner.replace(/^[ \t]+/, '').length;
    if (body === '') throw new BindingError('binding_syntax', j, 'empty binding `{{}}`; a binding holds a path such as state.query');
    var p;
    try {
      p = parsePath(body);
    } catch (e) {
      if (e instanceof BindingError) e.offset += j + 2 + lead;
      throw e;
    }
    flush();
    parts.push({ path: p });
    i = end + 2;
  }
  flush();
  return { parts: parts };
}

function isObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
var hasOwn = Object.prototype.hasOwnProperty;

// resolve reads p from ctx: {ok, value}.
function resolve(ctx, p) {
  var cur = ctx;
  for (var i = 0; i < p.length; i++) {
    var s = p[i];
    if (s.name === undefined) {
      if (!Array.isArray(cur) || s.index >= cur.length) return { ok: false, value: null };
      cur = cur[s.index];
      continue;
    }
    if (!isObject(cur) || !hasOwn.call(cur, s.name)) return { ok: false, value: null };
    cur = cur[s.name];
  }
  if (cur === undefined) return { ok: false, value: null };
  return { ok: true, value: cur };
}

function isWhole(t) { return t.parts.length === 1 && t.parts[0].path !== undefined; }

function evalTemplate(t, ctx) {
  if (isWhole(t)) return resolve(ctx, t.parts[0].path).value;
  var out = '';
  for (var i = 0; i < t.parts.length; i++) {
    var part = t.parts[i];
    out += part.path === undefined ? part.text : text(resolve(ctx, part.path).value);
  }
  return out;
}

// cmpCodePoints orders strings by Unicode code point, as Go's sort.Strings
// orders UTF-8 bytes (JavaScript's < compares UTF-16 code units).
function cmpCodePoints(a, b) {
  var i = 0, j = 0;
  while (i < a.length && j < b.length) {
    var ca = a.codePointAt(i), cb = b.codePointAt(j);
    if (ca !== cb) return ca < cb ? -1 : 1;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  if (i < a.length) return 1;
  if (j < b.length) return -1;
  return 0;
}

function formatNumber(n) {
  if (n === 0) return '0';
  return String(n);
}

function writeJSON(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return isFinite(v) ? formatNumber(v) : 'null';
  if (Array.isArray(v)) return '[' + v.map(writeJSON).join(',') + ']';
  if (typeof v === 'object') {
    var keys = Object.keys(v).sort(cmpCodePoints);
    return '{' + keys.map(function (k) { return JSON.stringify(k) + ':' + writeJSON(v[k]); }).join(',') + '}';
  }
  return 'null';
}

// text is how a value reads inside a text template (binding.Text).
function text(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return formatNumber(v);
  return writeJSON(v);
}

// equal compares JSON values without type coercion (binding.Equal).
function equal(a, b) {
  if (a === undefined) a = null;
  if (b === undefined) b = null;
  if (typeof a === 'number') return typeof b === 'number' && a === b;
  if (a === null) return b === null;
  if (typeof a === 'string' || typeof a === 'boolean') return typeof b === typeof a && a === b;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (var i = 0; i < a.length; i++) if (!equal(a[i], b[i])) return false;
    return true;
  }
  if (isObject(a)) {
    if (!isObject(b)) return false;
    var ka = Object.keys(a), kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    for (var j = 0; j < ka.length; j++) {
      if (!hasOwn.call(b, ka[j]) || !equal(a[ka[j]], b[ka[j]])) return false;
    }
    return true;
  }
  return false;
}

// ---- Conditions (mirrors binding/condition.go) -------------------------

var MAX_CONDITION_DEPTH = 4;
var SINGLE = ['path', 'equals', 'not_equals', 'exists'];
var COMBINATORS = ['all', 'any', 'not'];

function jsonType(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return 'a boolean';
  if (typeof v === 'string') return 'a string';
  if (typeof v === 'number') return 'a number';
  if (Array.isArray(v)) return 'an array';
  return 'an object';
}

function escapePointer(s) { return s.replace(/~/g, '~0').replace(/\//g, '~1'); }

// parseCondition returns {condition, problems: [{path, code, message}]}.
function parseCondition(v) {
  var ps = [];
  var c = parseCond(v, '', 1, ps);
  return { condition: c, problems: ps };
}

function parseCond(v, ptr, depth, ps) {
  function add(p, code, msg) { ps.push({ path: p, code: code, message: msg }); }
  if (!isObject(v)) {
    add(ptr, 'type', 'a condition is an object: {path, equals|not_equals|exists} or {all: [...]}, {any: [...]}, {not: {...}}, not ' + jsonType(v));
    return null;
  }
  if (depth > MAX_CONDITION_DEPTH) {
    add(ptr, 'condition_depth', 'this condition is at depth ' + depth + '; conditions nest at most ' + MAX_CONDITION_DEPTH + ' deep (the outermost counts as 1)');
    return null;
  }
  var combinators = [], singles = [], known = 0, i;
  for (i = 0; i < COMBINATORS.length; i++) if (hasOwn.call(v, COMBINATORS[i])) { combinators.push(COMBINATORS[i]); known++; }
  for (i = 0; i < SINGLE.length; i++) {
    if (hasOwn.call(v, SINGLE[i])) { known++; if (combinators.length > 0) singles.push(SINGLE[i]); }
  }
  var keys = Object.keys(v);
  if (known < keys.length) {
    var unknown = keys.filter(function (k) { return SINGLE.indexOf(k) < 0 && COMBINATORS.indexOf(k) < 0; }).sort(cmpCodePoints);
    unknown.forEach(function (k) {
      add(ptr + '/' + escapePointer(k), 'unknown_field', 'unknown member "' + k + '"; a condition has path with one of equals, not_equals, exists, or one of all, any, not');
    });
  }
  if (combinators.length > 0) {
    if (combinators.length > 1 || singles.length > 0) {
      add(ptr, 'condition_form', 'this object mixes ' + combinators.concat(singles).join(', ') + '; a condition object is either {path, operator} or holds exactly one of all, any, not');
      return null;
    }
    var op = combinators[0];
    var c = { op: op, items: [] };
    var p = ptr + '/' + op;
    if (op === 'not') {
      if (!isObject(v.not)) { add(p, 'type', 'not holds one condition object, not ' + jsonType(v.not)); return c; }
      var sub = parseCond(v.not, p, depth + 1, ps);
      if (sub) c.items = [sub];
      return c;
    }
    if (!Array.isArray(v[op])) { add(p, 'type', op + ' holds an array of conditions, not ' + jsonType(v[op])); return c; }
    if (v[op].length === 0) add(p, 'count', op + ' is empty; it holds at least one condition');
    for (i = 0; i < v[op].length; i++) {
      var s = parseCond(v[op][i], p + '/' + i, depth + 1, ps);
      if (s) c.items.push(s);
    }
    return c;
  }
  var single = { op: '', path: null, value: null };
  if (!hasOwn.call(v, 'path')) {
    add(ptr + '/path', 'required', 'path is required: the value to test, such as state.tab or data.weather.completed');
  } else if (typeof v.path !== 'string') {
    add(ptr + '/path', 'type', 'path is a string such as state.tab, not ' + jsonType(v.path));
  } else {
    try {
      single.path = parsePath(v.path);
    } catch (e) {
      if (!(e instanceof BindingError)) throw e;
      add(ptr + '/path', e.code, e.message + (v.path.indexOf('{{') >= 0 ? '; a condition path is written without {{ }}' : ''));
    }
  }
  var ops = SINGLE.slice(1).filter(function (k) { return hasOwn.call(v, k); });
  if (ops.length === 0) {
    add(ptr, 'condition_operator', 'a single condition needs exactly one of equals, not_equals, exists; it has none');
  } else if (ops.length === 1) {
    single.op = ops[0];
    single.value = v[ops[0]];
    if (single.op === 'exists' && typeof single.value !== 'boolean') {
      add(ptr + '/exists', 'type', 'exists is true or false, not ' + jsonType(single.value));
      single.op = '';
    }
  } else {
    add(ptr, 'condition_operator', 'a single condition needs exactly one of equals, not_equals, exists; it has ' + ops.join(', '));
  }
  return single;
}

function evalCondition(c, ctx) {
  if (!c) return false;
  var i;
  switch (c.op) {
    case 'all':
      if (c.items.length === 0) return false;
      for (i = 0; i < c.items.length; i++) if (!evalCondition(c.items[i], ctx)) return false;
      return true;
    case 'any':
      for (i = 0; i < c.items.length; i++) if (evalCondition(c.items[i], ctx)) return true;
      return false;
    case 'not':
      return c.items.length === 1 && !evalCondition(c.items[0], ctx);
  }
  if (!c.path) return false;
  var r = resolve(ctx, c.path);
  switch (c.op) {
    case 'equals': return equal(r.value, c.value);
    case 'not_equals': return !equal(r.value, c.value);
    case 'exists': return (r.ok && r.value !== null) === c.value;
  }
  return false;
}

// ---- Storage keys (mirrors models/keys.go) -----------------------------

var MAX_KEY_LENGTH = 80;
// Credential words by family, in the order a joined word's ending is tried.
var CREDENTIAL_WORDS = [
  ['credentials', 'credential'], ['credential', 'credential'], ['creds', 'credential'],
  ['passwords', 'password'], ['password', 'password'], ['passwd', 'password'],
  ['passphrases', 'password'], ['passphrase', 'password'],
  ['secrets', 'secret'], ['secret', 'secret'],
  ['tokens', 'token'], ['token', 'token']
];
// Two-word names that denote a credential, also caught written together.
var CREDENTIAL_PAIRS = [
  ['api', 'key', 'API key'], ['api', 'keys', 'API key'],
  ['private', 'key', 'private key'], ['private', 'keys', 'private key'],
  ['access', 'key', 'API key'], ['access', 'keys', 'API key'],
  ['secret', 'key', 'secret'], ['secret', 'keys', 'secret']
];

var reLetter = /^\p{L}$/u, reUpper = /^\p{Lu}$/u, reLower = /^\p{Ll}$/u, reControl = /^\p{Cc}$/u,
  reFormat = /^\p{Cf}$/u, reIgnorable = /\p{Default_Ignorable_Code_Point}/gu;

// lowerRune lower-cases one code point with the simple mapping Go's
// unicode.ToLower uses (İ becomes i, not i + combining dot).
function lowerRune(ch) {
  if (ch === '\u0130') return 'i';
  var l = ch.toLowerCase();
  return Array.from(l).length === 1 ? l : ch;
}

// foldWord case folds a word: each character's lower case, and ß as ss.
function foldWord(rs) {
  return rs.map(function (r) { var l = lowerRune(r); return l === '\u00df' ? 'ss' : l; }).join('');
}

// normalizeName: NFKC, without default ignorable code points.
function normalizeName(s) {
  return s.normalize('NFKC').replace(reIgnorable, '');
}

function splitWords(s) {
  var words = [], cur = [];
  function flush() { if (cur.length) { words.push(foldWord(cur)); cur = []; } }
  var rs = Array.from(s);
  for (var i = 0; i < rs.length; i++) {
    var r = rs[i];
    if (!reLetter.test(r)) { flush(); continue; }
    if (cur.length > 0 && reUpper.test(r)) {
      var prev = cur[cur.length - 1];
      var nextLower = i + 1 < rs.length && reLower.test(rs[i + 1]);
      if (reLower.test(prev) || (reUpper.test(prev) && nextLower)) flush();
    }
    cur.push(r);
  }
  flush();
  return words;
}

function endsWith(w, suffix) {
  return w.length >= suffix.length && w.slice(w.length - suffix.length) === suffix;
}

// joinedCredential recognises a word that ends in a credential word or pair
// written together: "mypassword", "accesstoken", "githubapikey".
function joinedCredential(w) {
  var i;
  for (i = 0; i < CREDENTIAL_PAIRS.length; i++) {
    if (endsWith(w, CREDENTIAL_PAIRS[i][0] + CREDENTIAL_PAIRS[i][1])) return CREDENTIAL_PAIRS[i][2];
  }
  for (i = 0; i < CREDENTIAL_WORDS.length; i++) {
    var c = CREDENTIAL_WORDS[i][0];
    if (w.length > c.length && endsWith(w, c)) return CREDENTIAL_WORDS[i][1];
  }
  return '';
}

// letterRuns splits a name at non-letters, each run case folded whole.
function letterRuns(s) {
  var runs = [], cur = [];
  Array.from(s).forEach(function (r) {
    if (reLetter.test(r)) { cur.push(r); return; }
    if (cur.length) { runs.push(foldWord(cur)); cur = []; }
  });
  if (cur.length) runs.push(foldWord(cur));
  return runs;
}

// credentialFamily names the credential family a key denotes, or '' (the
// rule of models.CredentialFamily: normalise; each run of letters folded
// whole, then the folded words of the camel-case split; a credential word,
// a pair, or a joined word ending in one).
function credentialFamily(key) {
  var name = normalizeName(String(key));
  var runs = letterRuns(name);
  for (var r = 0; r < runs.length; r++) {
    for (var k = 0; k < CREDENTIAL_WORDS.length; k++) if (runs[r] === CREDENTIAL_WORDS[k][0]) return CREDENTIAL_WORDS[k][1];
    var jf = joinedCredential(runs[r]);
    if (jf) return jf;
  }
  var words = splitWords(name);
  for (var i = 0; i < words.length; i++) {
    var w = words[i], j;
    for (j = 0; j < CREDENTIAL_WORDS.length; j++) if (w === CREDENTIAL_WORDS[j][0]) return CREDENTIAL_WORDS[j][1];
    if (i + 1 < words.length) {
      for (j = 0; j < CREDENTIAL_PAIRS.length; j++) {
        if (w === CREDENTIAL_PAIRS[j][0] && words[i + 1] === CREDENTIAL_PAIRS[j][1]) return CREDENTIAL_PAIRS[j][2];
      }
    }
    var f = joinedCredential(w);
    if (f) return f;
  }
  return '';
}

function storageError(code, message) { return { code: code, message: message }; }

// validateKey returns null or a PLUGIN_STORAGE_INVALID error: the form of
// validateKeyFormat, and not a credential name (the rule of writes).
function validateKey(key) {
  var err = validateKeyFormat(key);
  if (err) return err;
  var family = credentialFamily(key);
  if (family) return storageError('PLUGIN_STORAGE_INVALID', 'key ' + JSON.stringify(key) + ' names a credential (' + family + ' family); credentials may not be kept in plugin storage');
  return null;
}

// validateKeyFormat checks the form of a key: 1 to 80 characters, no
// control characters, no format characters (Cf: bidi controls, zero-width
// characters, the soft hyphen).
function validateKeyFormat(key) {
  if (key === '') return storageError('PLUGIN_STORAGE_INVALID', 'key is empty; a key has 1 to ' + MAX_KEY_LENGTH + ' characters');
  if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(key)) return storageError('PLUGIN_STORAGE_INVALID', 'key is not valid UTF-8');
  var rs = Array.from(key);
  if (rs.length > MAX_KEY_LENGTH) return storageError('PLUGIN_STORAGE_INVALID', 'key has ' + rs.length + ' characters; a key has at most ' + MAX_KEY_LENGTH);
  for (var i = 0; i < rs.length; i++) {
    if (reControl.test(rs[i]) || rs[i] === '\u2028' || rs[i] === '\u2029') {
      return storageError('PLUGIN_STORAGE_INVALID', 'key ' + JSON.stringify(key) + ' has a control character; keys may not contain control characters');
    }
    if (reFormat.test(rs[i])) {
      return storageError('PLUGIN_STORAGE_INVALID', 'key ' + JSON.stringify(key) + ' has an invisible format or bidirectional control character; keys may not contain them');
    }
  }
  return null;
}

// redact returns a copy of v in which every member whose name denotes a
// credential holds "[redacted]" instead of its value.
function redact(v, depth) {
  depth = depth || 0;
  if (depth > 64) return '[too deep]';
  if (Array.isArray(v)) return v.map(function (e) { return redact(e, depth + 1); });
  if (isObject(v)) {
    var out = {};
    Object.keys(v).forEach(function (k) {
      out[k] = credentialFamily(k) ? '[redacted]' : redact(v[k], depth + 1);
    });
    return out;
  }
  return v;
}

// ---- In-page storage (mirrors package storage) ------------------------

var LIMITS = {
  keysPerNamespace: 256, valueBytes: 32 * 1024, installationBytes: 512 * 1024,
  minList: 1, maxList: 100, defaultList: 100, listResponseBytes: 128 * 1024, queryLength: 200
};
var TOOL_ARGS = {
  'host.storage.list': ['namespace', 'query', 'limit', 'cursor'],
  'host.storage.get': ['namespace', 'key'],
  'host.storage.create': ['namespace', 'key', 'value'],
  'host.storage.update': ['namespace', 'key', 'value', 'revision'],
  'host.storage.delete': ['namespace', 'key', 'revision']
};
var SCOPE_ARGS = ['instance_id', 'instanceId', 'installation_id', 'installationId', 'user_id', 'userId', 'plugin_id', 'pluginId', 'generation', 'handle'];

function utf8Length(s) {
  var n = 0;
  for (var i = 0; i < s.length; i++) {
    var c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) { n += 4; i++; }
    else n += 3;
  }
  return n;
}

function quote(s) { return JSON.stringify(s); }

function toBase64URL(s) {
  var bytes = unescape(encodeURIComponent(s));
  var b64 = btoa(bytes);
  return b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
function fromBase64URL(c) {
  if (!/^[A-Za-z0-9_-]*$/.test(c) || c.length % 4 === 1) return null;
  var b64 = c.replace(/-/g, '+').replace(/_/g, '/');
  try {
    var bytes = atob(b64 + '==='.slice((b64.length + 3) % 4));
    return decodeURIComponent(escape(bytes));
  } catch (e) {
    return null;
  }
}

function timestamp(ms) {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000+00:00');
}

// Store is the in-page Plugin Local Storage of one Instance. decl is the
// manifest's effective storage {namespaces: [{id, max_bytes}]} or null.
function Store(decl, opts) {
  this.decl = decl;
  this.instanceID = (opts && opts.instanceID) || 'preview-instance';
  this.now = (opts && opts.now) || function () { return Date.now(); };
  this.items = {}; // namespace -> key -> {key, value, json, size, revision, created, updated}
  this.usedBytes = 0;
}

Store.prototype.defaultNamespace = function () {
  var ns = this.decl.namespaces;
  for (var i = 0; i < ns.length; i++) if (ns[i].id === 'default') return 'default';
  return ns[0].id;
};

Store.prototype.namespace = function (id) {
  if (!this.decl || !this.decl.namespaces || this.decl.namespaces.length === 0) {
    return { error: storageError('PLUGIN_STORAGE_PERMISSION_DENIED', 'the plugin does not request the storage permission') };
  }
  if (id === '') id = this.defaultNamespace();
  var ns = this.decl.namespaces;
  for (var i = 0; i < ns.length; i++) if (ns[i].id === id) return { ns: ns[i] };
  return { error: storageError('PLUGIN_STORAGE_PERMISSION_DENIED', 'namespace ' + quote(id) + ' is not declared by the plugin (declared: ' + ns.map(function (n) { return n.id; }).join(', ') + ')') };
};

function wire(it) {
  return { key: it.key, value: JSON.parse(it.json), revision: it.revision, created_at: timestamp(it.created), updated_at: timestamp(it.updated) };
}

Store.prototype.evidence = function (ns, key, revision) {
  return { type: 'plugin_storage', instance_id: this.instanceID, namespace: ns, key: key, revision: revision };
};

Store.prototype.itemResult = function (ns, it, summary) {
  return { summary: summary, data: { namespace: ns, item: wire(it) }, evidence: [this.evidence(ns, it.key, it.revision)] };
};

// parseArgs checks the arguments of a tool as storage.parseArgs does.
function parseArgs(tool, args, allowed) {
  var m = args === undefined || args === null ? {} : args;
  if (!isObject(m)) return { error: storageError('PLUGIN_STORAGE_INVALID', 'arguments of ' + tool + ' must be a JSON object') };
  var names = Object.keys(m);
  for (var i = 0; i < names.length; i++) {
    if (SCOPE_ARGS.indexOf(names[i]) >= 0) return { error: storageError('PLUGIN_STORAGE_INVALID', 'argument ' + quote(names[i]) + ' is not accepted: the scope of a call comes from the call, never from its arguments') };
    if (allowed.indexOf(names[i]) < 0) return { error: storageError('PLUGIN_STORAGE_INVALID', 'unknown argument ' + quote(names[i]) + '; ' + tool + ' takes ' + allowed.join(', ')) };
  }
  function given(name) { return hasOwn.call(m, name) && m[name] !== null && m[name] !== undefined; }
  function str(name, required) {
    if (!given(name)) {
      if (required) throw storageError('PLUGIN_STORAGE_INVALID', 'argument ' + quote(name) + ' is required by ' + tool);
      return '';
    }
    if (typeof m[name] !== 'string') throw storageError('PLUGIN_STORAGE_INVALID', 'argument ' + quote(name) + ' must be a string');
    return m[name];
  }
  function integer(name, required) {
    if (!given(name)) {
      if (required) throw storageError('PLUGIN_STORAGE_INVALID', 'argument ' + quote(name) + ' is required by ' + tool);
      return 0;
    }
    var f = m[name];
    if (typeof f !== 'number' || !isFinite(f) || Math.trunc(f) !== f || Math.abs(f) > 9007199254740992) {
      throw storageError('PLUGIN_STORAGE_INVALID', 'argument ' + quote(name) + ' must be an integer, not ' + JSON.stringify(f));
    }
    return f;
  }
  var a = { namespace: '', key: '', query: '', cursor: '', limit: null, revision: 0, value: undefined };
  try {
    a.namespace = str('namespace', false);
    if (allowed.indexOf('key') >= 0) a.key = str('key', tool !== 'host.storage.list');
    if (allowed.indexOf('query') >= 0) {
      a.query = str('query', false);
      a.cursor = str('cursor', false);
      var l = integer('limit', false);
      if (given('limit')) a.limit = Math.max(Math.min(l, 2147483647), -2147483648);
    }
    if (allowed.indexOf('revision') >= 0) a.revision = integer('revision', true);
    if (allowed.indexOf('value') >= 0) {
      if (!hasOwn.call(m, 'value') || m.value === undefined) throw storageError('PLUGIN_STORAGE_INVALID', 'argument "value" is required by ' + tool);
      a.value = m.value;
    }
  } catch (e) {
    return { error: e };
  }
  if (a.namespace === '' && given('namespace')) return { error: storageError('PLUGIN_STORAGE_INVALID', 'argument "namespace" is empty; omit it to use the default namespace') };
  return { args: a };
}

function finiteJSON(v) {
  if (typeof v === 'number') return isFinite(v);
  if (Array.isArray(v)) return v.every(finiteJSON);
  if (isObject(v)) return Object.keys(v).every(function (k) { return finiteJSON(v[k]); });
  return true;
}

function checkValue(v) {
  if (v === undefined) return { error: storageError('PLUGIN_STORAGE_INVALID', 'value is required: a string, finite number, boolean, null, object or list') };
  if (!finiteJSON(v)) return { error: storageError('PLUGIN_STORAGE_INVALID', 'value holds a number that is not finite') };
  var s = JSON.stringify(v);
  var n = utf8Length(s);
  if (n > LIMITS.valueBytes) return { error: storageError('PLUGIN_STORAGE_QUOTA_EXCEEDED', 'value has ' + n + ' bytes of UTF-8 JSON; a value may have at most ' + LIMITS.valueBytes + ' (32 KiB)') };
  return { json: s };
}

function checkRevision(r) {
  if (r < 1) return storageError('PLUGIN_STORAGE_INVALID', 'revision is ' + r + '; it must be the positive revision of the latest read');
  return null;
}

// checkReadKey checks the key of a read: its form only, since a credential
// name can never have been stored (reading one is NOT_FOUND).
function checkReadKey(key) { return validateKeyFormat(key); }

function checkQuery(q) {
  var rs = Array.from(q);
  if (rs.length > LIMITS.queryLength) return { error: storageError('PLUGIN_STORAGE_INVALID', 'query has ' + rs.length + ' characters; at most ' + LIMITS.queryLength + ' are allowed') };
  for (var i = 0; i < rs.length; i++) {
    var c = rs[i].codePointAt(0);
    if (c < 0x20 || c === 0x7f) return { error: storageError('PLUGIN_STORAGE_INVALID', 'query may not contain control characters') };
  }
  return { folded: lowerString(q) };
}

function lowerString(s) { return Array.from(s).map(lowerRune).join(''); }

// matches: the folded query is a substring of the key, of a string, number
// or boolean in the value, or of a member name in the value.
function matches(key, value, folded) {
  if (folded === '' || lowerString(key).indexOf(folded) >= 0) return true;
  var found = false;
  (function walk(v) {
    if (found) return;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      if (lowerString(typeof v === 'number' ? formatNumber(v) : String(v)).indexOf(folded) >= 0) found = true;
    } else if (Array.isArray(v)) {
      v.forEach(walk);
    } else if (isObject(v)) {
      Object.keys(v).forEach(function (k) {
        if (lowerString(k).indexOf(folded) >= 0) found = true;
        walk(v[k]);
      });
    }
  })(value);
  return found;
}

Store.prototype.nsItems = function (ns) {
  if (!this.items[ns]) this.items[ns] = {};
  return this.items[ns];
};

Store.prototype.usage = function (ns) {
  var items = this.nsItems(ns), keys = 0, bytes = 0;
  Object.keys(items).forEach(function (k) { keys++; bytes += items[k].size; });
  return { keys: keys, bytes: bytes };
};

Store.prototype.checkQuota = function (ns, addBytes, addKeys) {
  var u = this.usage(ns.id);
  if (addKeys > 0 && u.keys + addKeys > LIMITS.keysPerNamespace) {
    return storageError('PLUGIN_STORAGE_QUOTA_EXCEEDED', 'namespace ' + quote(ns.id) + ' already holds ' + u.keys + ' keys; a namespace may hold at most ' + LIMITS.keysPerNamespace);
  }
  if (u.bytes + addBytes > ns.max_bytes) {
    return storageError('PLUGIN_STORAGE_QUOTA_EXCEEDED', 'namespace ' + quote(ns.id) + ' would hold ' + (u.bytes + addBytes) + ' bytes, over its max_bytes of ' + ns.max_bytes + ' (now ' + u.bytes + ' bytes in ' + u.keys + ' keys; an item counts its key and its value as compact JSON)');
  }
  if (this.usedBytes + addBytes > LIMITS.installationBytes) {
    return storageError('PLUGIN_STORAGE_QUOTA_EXCEEDED', 'the Installation would hold ' + (this.usedBytes + addBytes) + ' bytes, over the limit of ' + LIMITS.installationBytes + ' (512 KiB)');
  }
  return null;
};

// invoke runs a standard storage tool: {result} or {error: {code, message}}.
Store.prototype.invoke = function (tool, args) {
  var allowed = TOOL_ARGS[tool];
  if (!allowed) return { error: storageError('PLUGIN_STORAGE_INVALID', 'unknown storage tool ' + quote(tool) + '; the standard tools are ' + Object.keys(TOOL_ARGS).join(', ')) };
  var pa = parseArgs(tool, args, allowed);
  if (pa.error) return pa;
  var a = pa.args;
  switch (tool) {
    case 'host.storage.list': return this.list(a);
    case 'host.storage.get': return this.get(a);
    case 'host.storage.create': return this.create(a);
    case 'host.storage.update': return this.update(a);
    default: return this.remove(a);
  }
};

Store.prototype.list = function (a) {
  var limit = a.limit === null ? LIMITS.defaultList : a.limit;
  if (limit < LIMITS.minList || limit > LIMITS.maxList) return { error: storageError('PLUGIN_STORAGE_INVALID', 'limit is ' + limit + '; it must be from ' + LIMITS.minList + ' to ' + LIMITS.maxList) };
  var q = checkQuery(a.query);
  if (q.error) return q;
  var after = '';
  if (a.cursor !== '') {
    after = fromBase64URL(a.cursor);
    if (after === null || after === '' || Array.from(after).length > MAX_KEY_LENGTH) return { error: storageError('PLUGIN_STORAGE_INVALID', 'cursor ' + quote(a.cursor) + ' is not a cursor returned by host.storage.list') };
  }
  var r = this.namespace(a.namespace);
  if (r.error) return r;
  var items = this.nsItems(r.ns.id);
  var keys = Object.keys(items).filter(function (k) { return cmpCodePoints(k, after) > 0; }).sort(cmpCodePoints);
  var out = [], evidence = [], bytes = 0, hasMore = false, self = this;
  for (var i = 0; i < keys.length; i++) {
    var it = items[keys[i]];
    if (!matches(it.key, JSON.parse(it.json), q.folded)) continue;
    if (out.length === limit || (out.length > 0 && bytes + it.size > LIMITS.listResponseBytes)) { hasMore = true; break; }
    bytes += it.size;
    out.push(wire(it));
    evidence.push(self.evidence(r.ns.id, it.key, it.revision));
  }
  var data = { namespace: r.ns.id, items: out, has_more: hasMore };
  if (hasMore) data.next_cursor = toBase64URL(out[out.length - 1].key);
  return { result: { summary: 'Listed ' + out.length + ' item(s) of namespace ' + quote(r.ns.id) + (hasMore ? '; more are available' : ''), data: data, evidence: evidence } };
};

Store.prototype.read = function (ns, key) {
  var it = this.nsItems(ns)[key];
  if (!it || !hasOwn.call(this.nsItems(ns), key)) return { error: storageError('PLUGIN_STORAGE_NOT_FOUND', 'key ' + quote(key) + ' does not exist in namespace ' + quote(ns)) };
  return { item: it };
};

Store.prototype.get = function (a) {
  var err = checkReadKey(a.key);
  if (err) return { error: err };
  var r = this.namespace(a.namespace);
  if (r.error) return r;
  var rd = this.read(r.ns.id, a.key);
  if (rd.error) return rd;
  return { result: this.itemResult(r.ns.id, rd.item, 'Read ' + quote(a.key) + ' of namespace ' + quote(r.ns.id) + ' at revision ' + rd.item.revision) };
};

Store.prototype.create = function (a) {
  var err = validateKey(a.key);
  if (err) return { error: err };
  var v = checkValue(a.value);
  if (v.error) return v;
  var r = this.namespace(a.namespace);
  if (r.error) return r;
  if (!this.read(r.ns.id, a.key).error) {
    return { error: storageError('PLUGIN_STORAGE_CONFLICT', 'key ' + quote(a.key) + ' already exists in namespace ' + quote(r.ns.id) + '; create never overwrites: get it and update it with its revision') };
  }
  var size = utf8Length(a.key) + utf8Length(v.json);
  err = this.checkQuota(r.ns, size, 1);
  if (err) return { error: err };
  var t = this.now();
  var it = { key: a.key, json: v.json, size: size, revision: 1, created: t, updated: t };
  this.nsItems(r.ns.id)[a.key] = it;
  this.usedBytes += size;
  return { result: this.itemResult(r.ns.id, it, 'Created ' + quote(a.key) + ' in namespace ' + quote(r.ns.id) + ' at revision 1'), changed: r.ns.id };
};

Store.prototype.update = function (a) {
  var err = validateKey(a.key) || checkRevision(a.revision);
  if (err) return { error: err };
  var v = checkValue(a.value);
  if (v.error) return v;
  var r = this.namespace(a.namespace);
  if (r.error) return r;
  var rd = this.read(r.ns.id, a.key);
  if (rd.error) return rd;
  var it = rd.item;
  if (it.revision !== a.revision) {
    return { error: storageError('PLUGIN_STORAGE_CONFLICT', 'stale revision for ' + quote(a.key) + ' in namespace ' + quote(r.ns.id) + ': given ' + a.revision + ', current ' + it.revision + '; read it again and retry') };
  }
  var size = utf8Length(a.key) + utf8Length(v.json);
  if (size - it.size > 0) {
    err = this.checkQuota(r.ns, size - it.size, 0);
    if (err) return { error: err };
  }
  this.usedBytes += size - it.size;
  var next = { key: it.key, json: v.json, size: size, revision: it.revision + 1, created: it.created, updated: this.now() };
  this.nsItems(r.ns.id)[a.key] = next;
  return { result: this.itemResult(r.ns.id, next, 'Updated ' + quote(a.key) + ' in namespace ' + quote(r.ns.id) + ' to revision ' + next.revision), changed: r.ns.id };
};

Store.prototype.remove = function (a) {
  var err = validateKey(a.key) || checkRevision(a.revision);
  if (err) return { error: err };
  var r = this.namespace(a.namespace);
  if (r.error) return r;
  var rd = this.read(r.ns.id, a.key);
  if (rd.error) return rd;
  if (rd.item.revision !== a.revision) {
    return { error: storageError('PLUGIN_STORAGE_CONFLICT', 'stale revision for ' + quote(a.key) + ' in namespace ' + quote(r.ns.id) + ': given ' + a.revision + ', current ' + rd.item.revision + '; read it again and retry') };
  }
  delete this.nsItems(r.ns.id)[a.key];
  this.usedBytes -= rd.item.size;
  return { result: this.itemResult(r.ns.id, rd.item, 'Deleted ' + quote(a.key) + ' (revision ' + rd.item.revision + ') from namespace ' + quote(r.ns.id)), changed: r.ns.id };
};

// seed puts an item at a revision without the tools (fixtures were checked
// by the Go side before the page was written).
Store.prototype.seed = function (ns, key, value, revision) {
  var json = JSON.stringify(value);
  var size = utf8Length(key) + utf8Length(json);
  var t = this.now();
  this.nsItems(ns)[key] = { key: key, json: json, size: size, revision: revision || 1, created: t, updated: t };
  this.usedBytes += size;
};

// ---- Input validation (field, select, switch) ---------------------------

// inputValue turns the text of a field into the value it commits: a field
// with keyboard number commits a number when the text is one, null when it
// is empty, and the text otherwise (which the rules then refuse).
function inputValue(props, textValue) {
  if (props.keyboard !== 'number') return textValue;
  var t = textValue.trim();
  if (t === '') return null;
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) {
    var n = Number(t);
    if (isFinite(n)) return n;
  }
  return textValue;
}

// checkInput applies required, min_length, max_length, minimum and maximum
// to a committed value. It returns the broken rules in that order, each
// {rule, message}; error_text replaces the messages when set.
function checkInput(type, props, value) {
  var out = [];
  function add(rule, msg) { out.push({ rule: rule, message: msg }); }
  var missing = value === null || value === undefined || value === '' ||
    (type === 'switch' && value !== true);
  if (props.required === true && missing) {
    add('required', type === 'switch' ? 'must be on' : 'is required');
    return out;
  }
  if (missing) return out;
  if (type === 'field' && props.keyboard === 'number' && typeof value !== 'number') {
    add('number', 'must be a number');
    return out;
  }
  if (typeof value === 'string') {
    var n = Array.from(value).length;
    if (typeof props.min_length === 'number' && n < props.min_length) add('min_length', 'needs at least ' + props.min_length + ' characters');
    if (typeof props.max_length === 'number' && n > props.max_length) add('max_length', 'allows at most ' + props.max_length + ' characters');
  }
  var num = typeof value === 'number' ? value : null;
  if (num === null && typeof value === 'string' && (typeof props.minimum === 'number' || typeof props.maximum === 'number')) {
    var parsed = inputValue({ keyboard: 'number' }, value);
    if (typeof parsed === 'number') num = parsed;
    else add('number', 'must be a number');
  }
  if (num !== null) {
    if (typeof props.minimum === 'number' && num < props.minimum) add('minimum', 'must be at least ' + formatNumber(props.minimum));
    if (typeof props.maximum === 'number' && num > props.maximum) add('maximum', 'must be at most ' + formatNumber(props.maximum));
  }
  return out;
}

export var core = {
  BindingError: BindingError,
  parseTemplate: parseTemplate,
  parsePath: parsePath,
  pathString: pathString,
  isWhole: isWhole,
  resolve: resolve,
  evalTemplate: evalTemplate,
  text: text,
  equal: equal,
  writeJSON: writeJSON,
  cmpCodePoints: cmpCodePoints,
  parseCondition: parseCondition,
  evalCondition: evalCondition,
  credentialFamily: credentialFamily,
  validateKey: validateKey,
  redact: redact,
  utf8Length: utf8Length,
  Store: Store,
  inputValue: inputValue,
  checkInput: checkInput,
  isObject: isObject
};
