// APNs Sandbox dashboard — the Inbox (#/inbox?…): every notification (GET /api/v1/notifications) and every
// rejected push (GET /api/v1/pushes?status=rejected) merged newest first, with filters kept in the URL hash,
// paging by time (`until`), and live rows from the event stream.
import { query } from './api.js';
import { h, replace, field, debounce, pulse, errorBox, ago, dateTime, shortToken } from './ui.js';

const PAGE = 50;
const FILTERS = ['q', 'show', 'device', 'topic', 'pushType', 'status', 'outcome', 'reason', 'since', 'until'];
const PUSH_TYPES = ['alert', 'background', 'voip', 'location', 'complication', 'fileprovider', 'mdm', 'liveactivity',
  'pushtotalk', 'widgets', 'controls'];
const STATUSES = ['accepted', 'stored', 'delivering', 'extension-running', 'displayed', 'delivered-silent', 'expired', 'discarded'];
const LIVE_TYPES = /^(push\.accepted|push\.rejected|notification\.)/;

/** `datetime-local` text ↔ milliseconds since the epoch (local time). */
function toLocalInput(milliseconds) {
  if (!milliseconds) return '';
  const date = new Date(Number(milliseconds));
  const pad = (n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}
function fromLocalInput(text) { const value = text ? new Date(text).getTime() : NaN; return Number.isFinite(value) ? String(value) : ''; }

function title(notification) {
  const shown = notification.displayed || {};
  const text = [shown.title, shown.subtitle, shown.body].filter(Boolean).join(' — ');
  if (text) return text;
  const alert = notification.payload && notification.payload.aps && notification.payload.aps.alert;
  if (typeof alert === 'string') return alert;
  if (alert && typeof alert === 'object') return [alert.title, alert.body].filter(Boolean).join(' — ');
  return notification.pushType === 'background' ? 'Silent (background)' : '';
}

export default {
  title: 'Inbox',
  async mount(main, context, route) {
    const filters = Object.fromEntries(FILTERS.map((name) => [name, route.params.get(name) || '']));
    let rows = [];
    let seen = new Set();
    let older = null;
    let loading = false;
    let drawn = false;
    let controller = null;

    // ---- filter controls ----
    const deviceList = h('datalist', { id: 'inbox-devices' });
    context.api('GET', '/api/v1/devices?limit=500').then((answer) => {
      replace(deviceList, (answer.devices || []).map((device) => h('option', { value: device.token })));
    }, () => {});
    const control = {
      q: h('input', { type: 'search', name: 'q', value: filters.q, placeholder: 'title, body, token, apns-id…' }),
      show: h('select', { name: 'show' }, [['', 'Notifications and rejected pushes'], ['notifications', 'Notifications only'],
        ['rejected', 'Rejected pushes only']].map(([value, label]) => h('option', { value, selected: filters.show === value }, label))),
      device: h('input', { name: 'device', class: 'mono', value: filters.device, spellcheck: 'false', placeholder: 'token',
        list: 'inbox-devices', autocomplete: 'off' }),
      topic: h('input', { name: 'topic', value: filters.topic, spellcheck: 'false' }),
      pushType: h('select', { name: 'pushType' }, h('option', { value: '' }, 'any'),
        PUSH_TYPES.map((type) => h('option', { value: type, selected: filters.pushType === type }, type))),
      status: h('select', { name: 'status' }, h('option', { value: '' }, 'any'),
        STATUSES.map((status) => h('option', { value: status, selected: filters.status === status }, status))),
      outcome: h('input', { name: 'outcome', value: filters.outcome, spellcheck: 'false', placeholder: 'direct, extension-timeout…' }),
      reason: h('input', { name: 'reason', value: filters.reason, spellcheck: 'false', placeholder: 'BadDeviceToken…' }),
      since: h('input', { type: 'datetime-local', name: 'since', value: toLocalInput(filters.since) }),
      until: h('input', { type: 'datetime-local', name: 'until', value: toLocalInput(filters.until) }),
    };
    const form = h('form', { class: 'inbox-filters', role: 'search', 'aria-label': 'Filter the inbox' },
      field('Search', control.q), field('Show', control.show), field('Device', control.device, 'Its whole token'), deviceList, field('Topic', control.topic),
      field('Push type', control.pushType), field('Status', control.status, 'Of notifications'),
      field('Outcome', control.outcome), field('Reason', control.reason, 'Of rejected pushes'),
      field('Received after', control.since), field('Received before', control.until),
      h('div', { class: 'row inbox-filter-buttons' }, h('button', { type: 'submit', class: 'button primary' }, 'Apply'),
        h('button', { type: 'button', class: 'button quiet', onclick: clear }, 'Clear')));
    form.addEventListener('submit', (event) => { event.preventDefault(); apply(); });
    for (const name of ['show', 'pushType', 'status', 'since', 'until']) control[name].addEventListener('change', apply);
    const applySoon = debounce(apply, 400);
    for (const name of ['q', 'device', 'topic', 'outcome', 'reason']) control[name].addEventListener('input', applySoon);

    const summary = h('p', { class: 'muted inbox-summary', role: 'status', 'aria-live': 'polite' });
    const body = h('tbody');
    const table = h('table', { class: 'inbox-table' },
      h('caption', { class: 'visually-hidden' }, 'Notifications and rejected pushes, newest first'),
      h('thead', {}, h('tr', {}, ['Received', 'Result', 'Device', 'Topic', 'Type', 'Content or reason', ''].map((label) =>
        h('th', { scope: 'col' }, label)))), body);
    const moreButton = h('button', { type: 'button', class: 'button', onclick: () => load(true) }, 'Older');
    const newestButton = h('button', { type: 'button', class: 'button quiet', onclick: () => { control.until.value = ''; apply(); } }, 'Newest');
    const problem = h('div');
    main.append(h('div', { class: 'inbox' }, h('h1', {}, 'Inbox'), form, problem, summary,
      h('div', { class: 'table-scroll' }, table), h('div', { class: 'row inbox-paging' }, newestButton, moreButton)));

    function read() {
      const next = {};
      for (const name of FILTERS) {
        const value = name === 'since' || name === 'until' ? fromLocalInput(control[name].value) : control[name].value.trim();
        if (value) next[name] = value;
      }
      return next;
    }
    function apply() {
      const next = read();
      const hash = `#/inbox${query(next)}`;
      Object.assign(filters, Object.fromEntries(FILTERS.map((name) => [name, next[name] || ''])));
      if (location.hash !== hash) history.replaceState(null, '', hash);
      load(false);
    }
    function clear() {
      for (const name of FILTERS) control[name].value = '';
      apply();
    }

    function notificationQuery(until) {
      return query({ limit: PAGE, device: filters.device, topic: filters.topic, pushType: filters.pushType,
        status: filters.status, outcome: filters.outcome, q: filters.q, since: filters.since, until });
    }
    function pushQuery(until) {
      return query({ limit: PAGE, status: 'rejected', device: filters.device, topic: filters.topic, pushType: filters.pushType,
        reason: filters.reason, q: filters.q, since: filters.since, until });
    }

    /** Rejected pushes; a sandbox without the push log's filters gets `?limit=` and is filtered here. */
    async function rejectedPushes(until, signal) {
      try {
        return await context.api('GET', `/api/v1/pushes${pushQuery(until)}`, undefined, { signal });
      } catch (error) {
        if (error.status !== 400 || filters.device || filters.topic || filters.pushType || filters.reason || filters.q || filters.since || until) throw error;
        return context.api('GET', `/api/v1/pushes${query({ limit: PAGE })}`, undefined, { signal });
      }
    }

    /** Loads the first page (or, with `more`, the page before the oldest row shown). */
    async function load(more) {
      if (controller) controller.abort();
      controller = new AbortController();
      const until = more ? older : (filters.until || '');
      const wantNotifications = filters.show !== 'rejected' && !filters.reason;
      const wantRejected = filters.show !== 'notifications' && !filters.status && !filters.outcome;
      loading = true;
      try {
        const [notifications, pushes] = await Promise.all([
          wantNotifications ? context.api('GET', `/api/v1/notifications${notificationQuery(until)}`, undefined, { signal: controller.signal }) : { notifications: [] },
          wantRejected ? rejectedPushes(until, controller.signal) : { pushes: [] },
        ]);
        const merged = [
          ...(notifications.notifications || []).map((record) => ({ kind: 'notification', record })),
          ...(pushes.pushes || []).filter((push) => push.status !== 200).map((record) => ({ kind: 'rejected', record })),
        ].sort((a, b) => b.record.receivedAt - a.record.receivedAt).slice(0, PAGE);
        const fresh = merged;
        rows = more ? rows.concat(fresh) : fresh;
        older = rows.length ? rows[rows.length - 1].record.receivedAt : null;
        moreButton.disabled = merged.length < PAGE;
        newestButton.hidden = !more && !filters.until;
        replace(problem);
        draw(more ? fresh : null);
      } catch (error) {
        if (error.name === 'AbortError') return;
        replace(problem, errorBox(error));
      } finally {
        loading = false;
      }
    }

    function key(row) { return `${row.kind}:${row.record.apnsId}:${row.record.deviceToken}:${row.record.receivedAt}`; }

    function drawRow(row) {
      const record = row.record;
      const now = context.now();
      const when = h('td', { 'data-label': 'Received' }, h('time', { datetime: new Date(record.receivedAt).toISOString(), title: dateTime(record.receivedAt) }, ago(record.receivedAt, now)));
      const device = h('td', { 'data-label': 'Device', class: 'mono', title: record.deviceToken }, shortToken(record.deviceToken));
      const topic = h('td', { 'data-label': 'Topic' }, record.topic || '—');
      const type = h('td', { 'data-label': 'Type' }, record.pushType || '—');
      if (row.kind === 'rejected') {
        return h('tr', { class: 'inbox-row rejected', dataset: { kind: 'rejected', apnsId: record.apnsId || '' } }, when,
          h('td', { 'data-label': 'Result' }, h('span', { class: 'badge error' }, `Rejected ${record.status}`)),
          device, topic, type,
          h('td', { 'data-label': 'Reason' }, h('span', { class: 'inbox-reason' }, record.reason || '—'),
            // Why a token or certificate was refused: the sandbox knows, APNs' answer does not say.
            record.cause ? h('span', { class: 'inbox-cause muted' }, record.cause) : null),
          h('td', {}, ''));
      }
      const detail = `#/notifications/${encodeURIComponent(record.apnsId)}?device=${encodeURIComponent(record.deviceToken)}`;
      const good = record.status === 'displayed' || record.status === 'delivered-silent';
      const bad = record.status === 'expired' || record.status === 'discarded';
      return h('tr', { class: 'inbox-row notification', dataset: { kind: 'notification', apnsId: record.apnsId } }, when,
        h('td', { 'data-label': 'Result' }, h('span', { class: `badge ${good ? 'ok' : bad ? 'error' : 'warn'}` }, record.status),
          record.outcome && record.outcome !== 'direct' ? h('span', { class: 'muted' }, ` ${record.outcome}`) : null),
        device, topic, type,
        h('td', { 'data-label': 'Content' }, title(record) || h('span', { class: 'muted' }, '(no text)')),
        h('td', {}, h('a', { href: detail, 'aria-label': `Details of ${record.apnsId}` }, 'Details')));
    }

    function draw(appended) {
      const before = seen;
      seen = new Set(rows.map(key));
      const elements = (appended || rows).map((row) => {
        const element = drawRow(row);
        if (!appended && drawn && !before.has(key(row))) requestAnimationFrame(() => pulse(element));
        return element;
      });
      drawn = true;
      if (appended) body.append(...elements); else replace(body, elements);
      if (rows.length === 0) replace(body, h('tr', {}, h('td', { colspan: '7', class: 'muted' }, 'Nothing matches.')));
      summary.textContent = `${rows.length} shown${moreButton.disabled ? '' : ', more older'}.`;
    }

    // Live: reload the first page when something arrives (bursts coalesced), unless paging back in time.
    // A throttle, not a debounce: under a steady stream (1,000 a second) the list still moves every 300 ms.
    let reloadTimer = null;
    function reloadSoon() {
      if (reloadTimer) return;
      reloadTimer = setTimeout(() => {
        reloadTimer = null;
        if (!filters.until && rows.length <= PAGE) { if (loading) reloadSoon(); else load(false); }
      }, 300);
    }
    await load(false);
    return {
      resync: reloadSoon,
      onEvent(event) { if (LIVE_TYPES.test(event.type)) reloadSoon(); },
      unmount() { clearTimeout(reloadTimer); if (controller) controller.abort(); },
    };
  },
};
