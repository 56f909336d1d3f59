// Runs the graphql-http server audits against a running pluginhost and
// prints one JSON line per audit: {id, name, status, reason}. Usage:
//   node audit.mjs URL TOKEN
// The token is sent as a bearer header with every request of the audits.
import { auditServer } from 'graphql-http';

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  console.error('usage: node audit.mjs URL TOKEN');
  process.exit(2);
}

const fetchFn = (input, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set('authorization', `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};

const results = await auditServer({ url: `${url}/graphql`, fetchFn });
for (const r of results) {
  const line = { id: r.id, name: r.name, status: r.status };
  if (r.status !== 'ok') {
    line.reason = r.reason;
    line.httpStatus = r.response?.status;
  }
  console.log(JSON.stringify(line));
}
