// Runs the preview's JavaScript rules (assets/core.js) against the shared
// conformance corpora and prints one JSON object: per corpus, how many cases
// passed and every failure. conformance_test.go runs it with node and compares
// the counts with the corpora it reads itself, so that no case can be skipped.
//
// usage: node conformance.js CORE_JS BINDING_JSON KEYS_JSON STORAGE_JSON INPUT_JSON
'use strict';
const fs = require('fs');
const [coreFile, bindingFile, keysFile, storageFile, inputFile] = process.argv.slice(2);
const { pathToFileURL } = require('url');
import(pathToFileURL(require('path').resolve(coreFile)).href).then(({ core }) => {
const read = (f) => JSON.parse(fs.readFileSync(f, 'utf8'));
const out = {};

function section(name) {
  out[name] = { passed: 0, failures: [] };
  return {
    check(caseName, ok, detail) {
      if (ok) out[name].passed++;
      else out[name].failures.push({ case: caseName, detail });
    },
  };
}

// Binding language: templates, invalid templates, conditions, invalid conditions.
{
  const c = read(bindingFile);
  const ctx = (v) => (typeof v === 'string' ? c.contexts[v] : v);
  const t = section('templates');
  for (const tc of c.templates) {
    let got;
    try {
      got = core.evalTemplate(core.parseTemplate(tc.template), ctx(tc.context));
    } catch (e) {
      t.check(tc.name, false, 'parse error: ' + JSON.stringify(e));
      continue;
    }
    const ok = core.equal(got, tc.want) && typeof got === typeof tc.want;
    t.check(tc.name, ok, { got, want: tc.want });
  }
  const it = section('invalid_templates');
  for (const tc of c.invalid_templates) {
    try {
      core.parseTemplate(tc.template);
      it.check(tc.name, false, 'parsed without error');
    } catch (e) {
      const ok = e instanceof core.BindingError && e.code === tc.code && e.message !== '' &&
        e.offset >= 0 && e.offset <= tc.template.length;
      it.check(tc.name, ok, { got: e.code, message: e.message, want: tc.code });
    }
  }
  const cs = section('conditions');
  for (const tc of c.conditions) {
    const r = core.parseCondition(tc.condition);
    if (r.problems.length > 0) {
      cs.check(tc.name, false, { problems: r.problems });
      continue;
    }
    const got = core.evalCondition(r.condition, ctx(tc.context));
    cs.check(tc.name, got === tc.want, { got, want: tc.want });
  }
  const ic = section('invalid_conditions');
  for (const tc of c.invalid_conditions) {
    const r = core.parseCondition(tc.condition);
    const ok = r.problems.length === tc.problems.length &&
      tc.problems.every((w, i) => r.problems[i].path === w.path && r.problems[i].code === w.code && r.problems[i].message !== '');
    ic.check(tc.name, ok, { got: r.problems, want: tc.problems });
  }
}

// Storage keys and credential families.
{
  const c = read(keysFile);
  const s = section('keys');
  for (const tc of c.cases) {
    const family = core.credentialFamily(tc.key);
    const valid = core.validateKey(tc.key) === null;
    s.check(JSON.stringify(tc.key), family === tc.family && valid === tc.valid, { family, valid, want: tc });
  }
  const r = section('redaction');
  for (const tc of c.redaction) {
    const got = core.redact(tc.value);
    r.check(tc.name, core.equal(got, tc.want), { got, want: tc.want });
  }
}

// Storage tools, scenario by scenario on a fresh store.
{
  const c = read(storageFile);
  const s = section('storage');
  for (const sc of c.scenarios) {
    const store = new core.Store({ namespaces: sc.namespaces });
    sc.steps.forEach((step, i) => {
      const name = sc.name + ' / step ' + i;
      if (step.fill) {
        let ok = true;
        for (let k = 0; k < step.fill.count; k++) {
          const r = store.invoke('host.storage.create', { namespace: step.fill.namespace, key: step.fill.prefix + String(k).padStart(3, '0'), value: step.fill.value });
          if (r.error) { ok = false; break; }
        }
        s.check(name, ok, 'fill failed');
        return;
      }
      const r = store.invoke(step.tool, step.arguments);
      s.check(name, judgeStorage(r, step.want), { got: r, want: step.want });
    });
  }
}

function judgeStorage(r, want) {
  if (want.code) return !!r.error && r.error.code === want.code && r.error.message !== '';
  if (r.error) return false;
  const d = r.result.data;
  if (want.namespace !== undefined && d.namespace !== want.namespace) return false;
  if (want.item) {
    const it = d.item;
    if (!it || it.key !== want.item.key || it.revision !== want.item.revision) return false;
    if ('value' in want.item && !core.equal(it.value, want.item.value)) return false;
    if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/.test(it.created_at)) return false;
    if (r.result.evidence.length !== 1 || r.result.evidence[0].revision !== it.revision) return false;
  }
  if (want.keys) {
    if (!Array.isArray(d.items) || d.items.length !== want.keys.length) return false;
    if (!want.keys.every((k, i) => d.items[i].key === k)) return false;
    if (d.has_more !== want.has_more) return false;
  }
  return typeof r.result.summary === 'string' && r.result.summary !== '';
}

// Input validation rules of field, select and switch.
{
  const c = read(inputFile);
  const s = section('input');
  for (const tc of c.cases) {
    const value = 'text' in tc ? core.inputValue(tc.props, tc.text) : tc.value;
    if ('committed' in tc && !(core.equal(value, tc.committed) && typeof value === typeof tc.committed)) {
      s.check(tc.name, false, { committed: value, want: tc.committed });
      continue;
    }
    const rules = core.checkInput(tc.type, tc.props, value).map((p) => p.rule);
    s.check(tc.name, JSON.stringify(rules) === JSON.stringify(tc.want), { got: rules, want: tc.want });
  }
}

process.stdout.write(JSON.stringify(out));
});
