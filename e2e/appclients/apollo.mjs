// The Apollo Client set-up that the README's "Building an app" shows, as the
// tests run it: the part between the README markers is copied there as is.

// README:apollo:start
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition, relayStylePagination } from '@apollo/client/utilities';
import { createClient } from 'graphql-ws';

// createApollo returns an Apollo Client for the pluginhost server at url
// (such as https://ph.example.com) that acts as the user of a bearer token:
// queries and mutations over HTTP, subscriptions over graphql-ws. The cache
// is InMemoryCache's default: global ids keep every object apart, with no
// type policies. webSocketImpl is for Node.js (the ws package's WebSocket);
// browsers have their own.
export function createApollo({ url, token, cache = new InMemoryCache(), webSocketImpl }) {
  const http = new HttpLink({ uri: `${url}/graphql`, headers: { Authorization: `Bearer ${token}` } });
  const ws = new GraphQLWsLink(createClient({
    url: `${url.replace(/^http/, 'ws')}/graphql`,
    connectionParams: { Authorization: `Bearer ${token}` },
    webSocketImpl,
  }));
  const link = ApolloLink.split(({ query }) => {
    const op = getMainDefinition(query);
    return op.kind === 'OperationDefinition' && op.operation === 'subscription';
  }, ws, http);
  return new ApolloClient({ link, cache });
}

// pagingCache merges the pages of the lists an app scrolls through
// (fetchMore with after: pageInfo.endCursor); read their edges, since nodes
// holds the last page only.
export function pagingCache() {
  return new InMemoryCache({
    typePolicies: {
      Query: {
        fields: {
          notifications: relayStylePagination(['unreadOnly']),
          storageAudit: relayStylePagination(['instanceId', 'actor']),
          savedEntities: relayStylePagination(['instanceId', 'favoritesOnly']),
          renderedResponses: relayStylePagination(),
        },
      },
    },
  });
}
// README:apollo:end
