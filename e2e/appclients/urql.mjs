// The urql set-up that the README's "Building an app" shows, as the tests
// run it: the part between the README markers is copied there as is.

// README:urql:start
import { Client, fetchExchange, subscriptionExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import { createClient } from 'graphql-ws';

// createUrql returns an urql client for the pluginhost server at url that
// acts as the user of a bearer token, with Graphcache's defaults: global
// ids keep every object apart. Subscriptions go over graphql-ws;
// webSocketImpl is for Node.js (the ws package's WebSocket).
export function createUrql({ url, token, cache = cacheExchange(), webSocketImpl }) {
  const ws = createClient({
    url: `${url.replace(/^http/, 'ws')}/graphql`,
    connectionParams: { Authorization: `Bearer ${token}` },
    webSocketImpl,
  });
  return new Client({
    url: `${url}/graphql`,
    fetchOptions: { headers: { Authorization: `Bearer ${token}` } },
    exchanges: [cache, fetchExchange, subscriptionExchange({
      forwardSubscription(request) {
        const input = { ...request, query: request.query || '' };
        return { subscribe: (sink) => ({ unsubscribe: ws.subscribe(input, sink) }) };
      },
    })],
  });
}

// pagingCache merges the pages of the lists an app scrolls through (the
// same query again with after: pageInfo.endCursor).
export function pagingCache() {
  return cacheExchange({
    resolvers: {
      Query: {
        notifications: relayPagination(),
        storageAudit: relayPagination(),
        savedEntities: relayPagination(),
        renderedResponses: relayPagination(),
      },
    },
  });
}
// README:urql:end
