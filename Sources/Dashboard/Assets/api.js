// APNs Sandbox dashboard — the one client of the REST API, the provider endpoint and the event stream.
// Every request the page makes goes through this file, to paths the OpenAPI document describes.

const TOKEN_KEY = 'apns-sandbox.admin-token';
const authListeners = new Set();

/** The admin token of this tab (sessionStorage: never in the URL, never in a cookie). */
export function adminToken() { return sessionStorage.getItem(TOKEN_KEY); }
export function setAdminToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token); else sessionStorage.removeItem(TOKEN_KEY);
}
/** Calls `listener()` whenever the API answers 401 (the token is missing or wrong). */
export function onAuthRequired(listener) { authListeners.add(listener); return () => authListeners.delete(listener); }

/** An answer other than 2xx: `status`, the API's `code` and `message` (its Problem JSON), the raw `body`. */
export class APIError extends Error {
  constructor(status, json, text) {
    const problem = json && typeof json === 'object' ? (json.error || json) : {};
    super(problem.message || problem.reason || text || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || problem.reason || null;
    this.json = json;
    this.body = text;
  }
}

function adminHeaders(extra = {}) {
  const headers = { accept: 'application/json', ...extra };
  const token = adminToken();
  if (token) headers.authorization = `Bearer ${token}`;
  return headers;
}

async function read(response) {
  const text = await response.text();
  let json = null;
  if (text && (response.headers.get('content-type') || '').includes('json')) {
    try { json = JSON.parse(text); } catch { json = null; }
  }
  return { text, json };
}

/**
 * An admin API call. `body` (an object, or a string sent as it is) goes as JSON.
 * Resolves with the parsed JSON (or text); rejects with APIError.
 */
export async function api(method, path, body, { signal, accept } = {}) {
  const init = { method, headers: adminHeaders(accept ? { accept } : {}), signal, cache: 'no-store' };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) authListeners.forEach((listener) => listener());
  const { text, json } = await read(response);
  if (!response.ok) throw new APIError(response.status, json, text);
  if (response.status === 204) return null;
  return json ?? text;
}

/** GET that resolves with a `blob:` URL (attachments: an <img> cannot send the admin token itself). */
export async function apiObjectURL(path, { signal } = {}) {
  const response = await fetch(path, { headers: adminHeaders({ accept: '*/*' }), signal, cache: 'no-store' });
  if (response.status === 401) authListeners.forEach((listener) => listener());
  if (!response.ok) { const { text, json } = await read(response); throw new APIError(response.status, json, text); }
  return URL.createObjectURL(await response.blob());
}

/**
 * A push through the real provider endpoint, `POST /3/device/<token>`, as a backend sends it: `headers`
 * are APNs' request headers (apns-topic, apns-push-type, …; `authorization: bearer <JWT>`), `payload` the
 * exact text. Resolves with Apple's answer: `{status, apnsId, uniqueId, reason, timestamp}`.
 */
export async function sendPush(deviceToken, headers, payload) {
  const response = await fetch(`/3/device/${encodeURIComponent(deviceToken)}`, {
    method: 'POST', headers, body: payload, cache: 'no-store',
  });
  const { json } = await read(response);
  return {
    status: response.status,
    apnsId: response.headers.get('apns-id'),
    uniqueId: response.headers.get('apns-unique-id'),
    reason: json && json.reason, timestamp: json && json.timestamp,
  };
}

/** Builds a query string from an object, leaving out empty values. */
export function query(parameters) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) {
    if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/**
 * Follows `GET /api/v1/events` (Server-Sent Events) with fetch, so the admin token goes in a header, not in
 * the URL as EventSource would need. Reconnects with Last-Event-ID: none missed, none repeated.
 * `onEvent(envelope)` gets each event's JSON (`{id, type, timestamp, data}`); `onState('live'|'connecting'|
 * 'offline'|'unauthorized', { resumed })` the connection's state; `resumed` is false on a live stream that started
 * without a Last-Event-ID (the first one), which has not seen what happened before it. Returns a function that
 * stops it.
 */
export function followEvents(onEvent, onState = () => {}) {
  let stopped = false;
  let lastEventId = null;
  let controller = null;
  let retryMs = 1000;

  async function run() {
    while (!stopped) {
      controller = new AbortController();
      onState('connecting');
      try {
        const headers = adminHeaders({ accept: 'text/event-stream' });
        if (lastEventId) headers['last-event-id'] = lastEventId;
        const response = await fetch('/api/v1/events', { headers, signal: controller.signal, cache: 'no-store' });
        if (response.status === 401) {
          onState('unauthorized');
          authListeners.forEach((listener) => listener());
          return;
        }
        if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
        onState('live', { resumed: Boolean(lastEventId) });
        retryMs = 1000;
        await readStream(response.body);
      } catch (error) {
        if (stopped) return;
      }
      if (stopped) return;
      onState('offline');
      await new Promise((resolve) => setTimeout(resolve, retryMs));
      retryMs = Math.min(retryMs * 2, 15000);
    }
  }

  async function readStream(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value.replace(/\r\n?/g, '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        dispatch(block);
      }
    }
  }

  function dispatch(block) {
    let id = null;
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
      else if (field === 'retry' && /^\d+$/.test(value)) retryMs = Number(value);
    }
    if (id !== null) lastEventId = id;
    if (data.length === 0) return;
    try { onEvent(JSON.parse(data.join('\n'))); } catch (error) { console.error('event', error); }
  }

  run();
  return () => { stopped = true; if (controller) controller.abort(); };
}
