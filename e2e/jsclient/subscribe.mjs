// Subscribes to storageChanged with the reference graphql-ws client and prints
// each event as one JSON line; exits after COUNT events or on an error.
//
//   node subscribe.mjs URL TOKEN INSTANCE COUNT
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [url, token, instance, count] = process.argv.slice(2);
const client = createClient({
  url: url.replace(/^http/, 'ws') + '/graphql',
  webSocketImpl: WebSocket,
  connectionParams: { Authorization: `Bearer ${token}` },
  retryAttempts: 0,
});
let seen = 0;
const done = (code) => { client.dispose(); process.exit(code); };
client.subscribe(
  {
    query: `subscription($i: ID!) { storageChanged(instanceId: $i) { instanceId storageRevision namespace key operation itemRevision } }`,
    variables: { i: instance },
  },
  {
    next: (result) => {
      console.log(JSON.stringify(result));
      if (result.errors || ++seen >= Number(count)) done(result.errors ? 1 : 0);
    },
    error: (err) => { console.log(JSON.stringify({ clientError: String(err?.message ?? err?.reason ?? err) })); done(1); },
    complete: () => done(0),
  },
);
setTimeout(() => { console.log(JSON.stringify({ clientError: 'timeout' })); done(1); }, 30000);
