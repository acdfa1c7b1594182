// The preStop hook of the Spindle chart (templates/statefulset.yaml runs it with `node`: the image
// has Node 20 and may have no curl). It asks this node to drain: POST <path> on its admin API
// (/api/cluster/drain), signed in by HTTP Basic as the admin user of the pod's
// environment (SPINDLE_ADMIN_USERNAME, SPINDLE_ADMIN_PASSWORD), with {"rate": N} when a rate is
// given. Then it reads spindle_connections_current from /prometheus every second until the node
// holds no MQTT connection or --timeout seconds pass; Kubernetes sends SIGTERM once it returns.
// Exits non-zero when the drain could not be started, so Kubernetes records a FailedPreStopHook
// event with the reason (the pod then stops as it would without the hook).
//
//   node drain.mjs --port 8080 --path /api/cluster/drain --rate 100 --timeout 45
import { appendFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8080' },
    path: { type: 'string', default: '/api/cluster/drain' },
    rate: { type: 'string', default: '0' },
    timeout: { type: 'string', default: '45' },
    // Where progress is written: the container's log (the stdout of its PID 1, the broker), or
    // '-' for the hook's own stdout.
    log: { type: 'string', default: '/proc/1/fd/1' },
  },
});
const base = `http://127.0.0.1:${values.port}`;
const rate = Number(values.rate);
const deadline = Date.now() + Number(values.timeout) * 1000;
const user = process.env.SPINDLE_ADMIN_USERNAME ?? 'admin';
const authorization = `Basic ${Buffer.from(`${user}:${process.env.SPINDLE_ADMIN_PASSWORD ?? ''}`).toString('base64')}`;

/** A line in the container's log (the hook's own output is shown only when it fails). */
function log(message) {
  const line = `${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: `preStop drain: ${message}` })}\n`;
  if (values.log !== '-') {
    try {
      appendFileSync(values.log, line);
      return;
    } catch {
      // not writable: the hook's own output below
    }
  }
  process.stdout.write(line);
}

async function request(method, path, body) {
  const left = Math.max(deadline - Date.now(), 1000);
  return fetch(base + path, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(Math.min(left, 10_000)),
  });
}

/** Open MQTT connections of this node: the sum of spindle_connections_current's samples. */
async function connections() {
  const res = await request('GET', '/prometheus');
  if (!res.ok) throw new Error(`GET /prometheus: HTTP ${res.status}`);
  let sum = 0;
  for (const m of (await res.text()).matchAll(/^spindle_connections_current(?:\{[^}]*\})? ([0-9.e+]+)$/gm)) sum += Number(m[1]);
  return sum;
}

const started = await request('POST', values.path, rate > 0 ? { rate } : undefined);
if (!started.ok) {
  const text = (await started.text()).slice(0, 500);
  log(`POST ${values.path} refused: HTTP ${started.status} ${text}`);
  console.error(`POST ${values.path}: HTTP ${started.status} ${text}`);
  process.exit(1);
}
log(`started (${rate > 0 ? `${rate} clients/s` : "the endpoint's rate"}); waiting up to ${values.timeout} s for the connections to go`);
let left = -1;
while (Date.now() < deadline) {
  try {
    left = await connections();
    if (left === 0) break;
  } catch (err) {
    log(`reading the connections: ${err.message}`);
  }
  await new Promise((r) => setTimeout(r, 1000));
}
log(left === 0 ? 'done: no connection left' : `time is up with ${left} connection(s) left; stopping anyway`);
