// A new app developer's journey with Apollo Client and with urql, each with
// its default normalised cache, against a server with two plugins that give
// the same ids to their extensions, capabilities, namespaces, connection and
// notification actions. Every check is that each plugin shows its own data.
// Each check prints one JSON line {client, check, ok, detail}; the Go test
// (e2e/appclients_e2e_test.go) reads them.
//
//   node journey.mjs SETUP_JSON
//
// SETUP_JSON: {url, token, twins: [{key, title, pluginId, installation,
// instance, access, connected, description, capabilityDescription,
// undoLabel, openLabel}]}
import { gql as apolloGql } from '@apollo/client';
import { gql as urqlGql } from '@urql/core';
import WebSocket from 'ws';

import { createApollo, pagingCache as apolloPaging } from './apollo.mjs';
import { createUrql, pagingCache as urqlPaging } from './urql.mjs';

const setup = JSON.parse(process.argv[2]);
const { url, token, twins } = setup;
const byPlugin = Object.fromEntries(twins.map((w) => [w.pluginId, w]));
const byInstance = Object.fromEntries(twins.map((w) => [w.instance, w]));

let failed = 0;
function report(client, check, ok, detail) {
  if (!ok) failed++;
  console.log(JSON.stringify({ client, check, ok, detail: detail === undefined ? '' : detail }));
}
function expect(cond, what) {
  if (!cond) throw new Error(what);
}

// A queue of a subscription's results: next() waits for the next one.
function queue() {
  const items = [], waiters = [];
  return {
    push(v) { const w = waiters.shift(); if (w) w(v); else items.push(v); },
    next(ms = 20000) {
      if (items.length) return Promise.resolve(items.shift());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no message within ${ms} ms`)), ms);
        waiters.push((v) => { clearTimeout(timer); resolve(v); });
      });
    },
  };
}

// The two clients behind one small interface.
function apolloAdapter(cache) {
  const client = createApollo({ url, token, cache, webSocketImpl: WebSocket });
  return {
    name: 'apollo',
    client,
    async query(doc, variables) {
      return (await client.query({ query: apolloGql(doc), variables })).data;
    },
    async mutate(doc, variables) {
      return (await client.mutate({ mutation: apolloGql(doc), variables })).data;
    },
    subscribe(doc, variables) {
      const q = queue();
      const sub = client.subscribe({ query: apolloGql(doc), variables }).subscribe({
        next: (r) => q.push(r.error ? { error: r.error } : r.data),
        error: (e) => q.push({ error: e }),
      });
      return { next: q.next, close: () => sub.unsubscribe() };
    },
    // pages reads a list one page at a time (fetchMore) and returns the
    // merged edges as the cache holds them.
    async pages(doc, variables, field, between) {
      const query = apolloGql(doc);
      const watched = client.watchQuery({ query, variables });
      let result = await new Promise((resolve, reject) => {
        const s = watched.subscribe({ next: (r) => { if (r.data) { s.unsubscribe(); resolve(r.data); } }, error: reject });
      });
      for (let i = 0; result[field].pageInfo.hasNextPage; i++) {
        expect(i < 20, 'still paging after 20 pages');
        await between(i);
        await watched.fetchMore({ variables: { after: result[field].pageInfo.endCursor } });
        result = client.readQuery({ query, variables });
      }
      return result[field].edges;
    },
    close() { client.stop(); },
  };
}

function urqlAdapter(cache) {
  const client = createUrql({ url, token, cache, webSocketImpl: WebSocket });
  const unwrap = (r) => {
    if (r.error) throw r.error;
    return r.data;
  };
  return {
    name: 'urql',
    client,
    async query(doc, variables) {
      return unwrap(await client.query(urqlGql(doc), variables).toPromise());
    },
    async mutate(doc, variables) {
      return unwrap(await client.mutation(urqlGql(doc), variables).toPromise());
    },
    subscribe(doc, variables) {
      const q = queue();
      const sub = client.subscription(urqlGql(doc), variables).subscribe((r) => q.push(r.error ? { error: r.error } : r.data));
      return { next: q.next, close: () => sub.unsubscribe() };
    },
    // pages asks for each next page with the same query and after: the
    // cache's relayPagination answers all pages so far.
    async pages(doc, variables, field, between) {
      const query = urqlGql(doc);
      let result = unwrap(await client.query(query, variables).toPromise());
      for (let i = 0; result[field].pageInfo.hasNextPage; i++) {
        expect(i < 20, 'still paging after 20 pages');
        await between(i);
        result = unwrap(await client.query(query, { ...variables, after: result[field].pageInfo.endCursor }).toPromise());
      }
      return result[field].edges;
    },
    close() {},
  };
}

const installationsQ = `query {
  installations {
    id pluginId name description
    extensions { id manifestId point description config }
    capabilities { id manifestId kind description }
    namespaces { id manifestId aiAccess }
    instances { id name connections { id manifestId label connected } }
  }
}`;
const aiToolsQ = `query { aiTools { handle capability instanceId namespaces { id manifestId access } } }`;
const uiConfigQ = `query($i: ID!) { uiConfig(instanceId: $i, extension: "main") { id instanceId extension generation config } }`;
const storageChangedS = `subscription($i: ID!) { storageChanged(instanceId: $i) { instanceId storageRevision namespace key operation } }`;
const storageCreateM = `mutation($i: ID!, $k: String!, $v: JSON!) { storageCreate(instanceId: $i, namespace: "notes", key: $k, value: $v) { summary } }`;
const storageItemQ = `query($i: ID!, $k: String!) { storageItem(instanceId: $i, namespace: "notes", key: $k) { data } }`;
const notificationAddedS = `subscription { notificationAdded { id pluginId instanceId title actions { id actionId label type } } }`;
const notifyM = `mutation($i: ID!, $a: JSON) { invoke(instanceId: $i, capability: "notes.request", arguments: $a) { summary } }`;
const notificationsQ = `query($first: Int) { notifications(first: $first) { unread nodes { id pluginId title actions { id actionId label type } } } }`;
const runActionM = `mutation($n: ID!, $a: String!) { runNotificationAction(notificationId: $n, actionId: $a) { type instanceId extension result { summary } } }`;
const pageQ = `query($first: Int, $after: String) {
  notifications(first: $first, after: $after) {
    edges { cursor node { id pluginId title actions { id actionId label } } }
    pageInfo { hasNextPage endCursor }
  }
}`;
const nodeQ = `query($id: ID!) { node(id: $id) { id ... on Extension { manifestId description } } }`;

function notice(w, id) {
  return {
    id, title: `${w.title} import ${id}`, body: '', severity: 'info',
    actions: [
      { id: 'undo', label: w.undoLabel, action: { type: 'host_actions', host_actions: [
        { type: 'plugin_storage_set', namespace: 'notes', key: `undone-${id}`, value: { text: `undone by ${w.key}` } }] } },
      { id: 'open', label: w.openLabel, action: { type: 'open', extension: 'main', parameters: {} } },
    ],
  };
}

// ownActions checks that a notification's buttons are its own plugin's.
function ownActions(n) {
  const w = byPlugin[n.pluginId];
  expect(w, `a notification of an unknown plugin ${n.pluginId}`);
  const labels = n.actions.map((a) => `${a.actionId}:${a.label}`).join(', ');
  expect(labels === `undo:${w.undoLabel}, open:${w.openLabel}`, `${w.key}'s notification "${n.title}" shows the buttons ${labels}`);
}

async function journey(c) {
  const check = async (name, fn) => {
    try {
      report(c.name, name, true, await fn());
    } catch (e) {
      report(c.name, name, false, String(e?.message ?? e));
    }
  };

  await check('installations', async () => {
    const d = await c.query(installationsQ);
    expect(d.installations.length === twins.length, `${d.installations.length} installations`);
    for (const instl of d.installations) {
      const w = byPlugin[instl.pluginId];
      const main = instl.extensions.find((e) => e.manifestId === 'main');
      expect(main && main.description === w.description, `${w.key}'s main extension says "${main?.description}", want "${w.description}"`);
      expect(main.config.description === w.description, `${w.key}'s main config is another plugin's: ${JSON.stringify(main.config).slice(0, 80)}`);
      const cap = instl.capabilities.find((x) => x.manifestId === 'notes.request');
      expect(cap && cap.description === w.capabilityDescription, `${w.key}'s notes.request says "${cap?.description}"`);
      const ns = instl.namespaces.find((x) => x.manifestId === 'notes');
      expect(ns && ns.aiAccess === w.access, `${w.key}'s notes namespace has AI access ${ns?.aiAccess}, want ${w.access}`);
      const conn = instl.instances[0].connections.find((x) => x.manifestId === 'account');
      expect(conn && conn.connected === w.connected && conn.label === `${w.title} account`,
        `${w.key}'s account connection: connected ${conn?.connected} "${conn?.label}", want ${w.connected}`);
    }
    const ids = d.installations.flatMap((i) => i.extensions.map((e) => e.id));
    expect(new Set(ids).size === ids.length, `extension ids repeat: ${ids}`);
  });

  await check('aiTools namespaces', async () => {
    const d = await c.query(aiToolsQ);
    let seen = 0;
    for (const tool of d.aiTools) {
      const w = byInstance[tool.instanceId];
      for (const ns of tool.namespaces.filter((n) => n.manifestId === 'notes')) {
        seen++;
        expect(ns.access === w.access, `${w.key}'s tool ${tool.capability} shows notes as ${ns.access}, want ${w.access}`);
      }
    }
    expect(seen >= twins.length, `only ${seen} notes namespaces among the tools`);
  });

  await check('uiConfig', async () => {
    for (const w of twins) {
      const d = await c.query(uiConfigQ, { i: w.instance });
      expect(d.uiConfig.instanceId === w.instance && d.uiConfig.config.description === w.description,
        `${w.key}'s uiConfig is ${d.uiConfig.instanceId} "${d.uiConfig.config.description}"`);
    }
  });

  await check('node', async () => {
    const d = await c.query(installationsQ);
    for (const instl of d.installations) {
      const w = byPlugin[instl.pluginId];
      const main = instl.extensions.find((e) => e.manifestId === 'main');
      const n = await c.query(nodeQ, { id: main.id });
      expect(n.node.id === main.id && n.node.description === w.description, `node(${main.id}) = ${JSON.stringify(n.node)}`);
    }
  });

  await check('storage subscription', async () => {
    const subs = twins.map((w) => c.subscribe(storageChangedS, { i: w.instance }));
    try {
      for (const [i, w] of twins.entries()) {
        const snap = await subs[i].next();
        expect(!snap.error, `${w.key}'s subscription: ${snap.error}`);
        expect(snap.storageChanged.operation === 'snapshot' && snap.storageChanged.instanceId === w.instance,
          `${w.key}'s first message: ${JSON.stringify(snap.storageChanged)}`);
      }
      for (const [i, w] of twins.entries()) {
        const key = `${c.name}-${w.key}`;
        await c.mutate(storageCreateM, { i: w.instance, k: key, v: { text: `${w.title}'s note` } });
        const change = (await subs[i].next()).storageChanged;
        expect(change.instanceId === w.instance && change.operation === 'create' && change.key === key,
          `${w.key}'s subscription heard ${JSON.stringify(change)}`);
        const item = await c.query(storageItemQ, { i: w.instance, k: key });
        expect(item.storageItem.data.item.value.text === `${w.title}'s note`, `${w.key}'s item reads ${JSON.stringify(item.storageItem.data)}`);
      }
    } finally {
      subs.forEach((s) => s.close());
    }
  });

  await check('notification and its action', async () => {
    const sub = c.subscribe(notificationAddedS);
    const id = `${c.name}-journey`;
    let added = [];
    try {
      // The subscription is open once a message could arrive: send until
      // the first one does.
      await new Promise((r) => setTimeout(r, 300));
      for (const w of twins) {
        await c.mutate(notifyM, { i: w.instance, a: { notifications: [notice(w, id)] } });
      }
      for (let i = 0; i < twins.length; i++) {
        const m = await sub.next();
        expect(!m.error, `notificationAdded: ${m.error}`);
        added.push(m.notificationAdded);
      }
    } finally {
      sub.close();
    }
    added.forEach(ownActions);
    const list = await c.query(notificationsQ, { first: 20 });
    const mine = list.notifications.nodes.filter((n) => n.title.endsWith(id));
    expect(mine.length === twins.length, `${mine.length} of the journey's notifications listed`);
    list.notifications.nodes.forEach(ownActions);
    const alpha = twins[0], beta = twins[1];
    const ofAlpha = mine.find((n) => n.pluginId === alpha.pluginId);
    const ran = await c.mutate(runActionM, { n: ofAlpha.id, a: 'undo' });
    expect(ran.runNotificationAction.type === 'host_actions' && ran.runNotificationAction.instanceId === alpha.instance,
      `undo answered ${JSON.stringify(ran.runNotificationAction)}`);
    const undone = await c.query(storageItemQ, { i: alpha.instance, k: `undone-${id}` });
    expect(undone.storageItem.data.item.value.text === `undone by ${alpha.key}`, `alpha's undo wrote ${JSON.stringify(undone.storageItem.data)}`);
    let betaWritten = true;
    try {
      await c.query(storageItemQ, { i: beta.instance, k: `undone-${id}` });
    } catch (e) {
      betaWritten = !/PLUGIN_STORAGE_NOT_FOUND|does not exist/.test(String(e?.message ?? e) + JSON.stringify(e?.graphQLErrors ?? e?.errors ?? ''));
    }
    expect(!betaWritten, "alpha's undo wrote into beta's storage, or beta's item could not be read");
    const ofBeta = mine.find((n) => n.pluginId === beta.pluginId);
    const opened = await c.mutate(runActionM, { n: ofBeta.id, a: 'open' });
    expect(opened.runNotificationAction.type === 'open' && opened.runNotificationAction.instanceId === beta.instance &&
      opened.runNotificationAction.extension === 'main', `open answered ${JSON.stringify(opened.runNotificationAction)}`);
  });
}

async function paging(c, plain) {
  const check = async (name, fn) => {
    try {
      report(c.name, name, true, await fn());
    } catch (e) {
      report(c.name, name, false, String(e?.message ?? e));
    }
  };
  await check('paging', async () => {
    const all = (await plain.query(notificationsQ, { first: 100 })).notifications.nodes.map((n) => n.id);
    expect(all.length >= 6, `${all.length} notifications to page through`);
    const edges = await c.pages(pageQ, { first: 2 }, 'notifications', async (i) => {
      const w = twins[i % twins.length];
      await c.mutate(notifyM, { i: w.instance, a: { notifications: [notice(w, `${c.name}-page-${i}`)] } });
    });
    const ids = edges.map((e) => e.node.id);
    expect(JSON.stringify(ids) === JSON.stringify(all), `paged ${ids.length} notifications: ${ids.join(' ')}; want ${all.join(' ')}`);
    expect(edges.every((e) => typeof e.cursor === 'string' && e.cursor !== ''), 'an edge without its cursor');
    edges.forEach((e) => ownActions(e.node));
    return `${ids.length} notifications in ${Math.ceil(ids.length / 2)} pages`;
  });
}

const apollo = apolloAdapter();
await journey(apollo);
await paging(apolloAdapter(apolloPaging()), apollo);
apollo.close();
const urql = urqlAdapter();
await journey(urql);
await paging(urqlAdapter(urqlPaging()), urql);
process.exit(failed ? 1 : 0);
