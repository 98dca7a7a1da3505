// APNs Sandbox dashboard — the Devices view: every simulated device drawn as a phone lock screen with what its
// user would see now (GET /api/v1/devices/{token}/notification-center), live from the event stream.
import { apiObjectURL, query } from './api.js';
import { h, replace, clockTime, ago, shortToken, pulse, debounce, errorBox, toast, field } from './ui.js';

const LOCALES = ['en_US', 'en_GB', 'fr_FR', 'de_DE', 'es_ES', 'it_IT', 'ja_JP', 'zh_CN', 'pt_BR', 'ar_SA'];
/** Groups drawn per lock screen (a phone shows the newest; the inbox has every one). */
const MAX_GROUPS = 40;
/** The newest notifications a lock screen fetches and keeps (the center's `total` counts the rest). */
const CENTER_LIMIT = 200;
const NOTIFICATION_EVENTS = new Set(['notification.displayed', 'notification.stored', 'notification.expired',
  'notification.discarded', 'notification.delivered-silent']);

/** "com.example.app" → "App". */
export function appName(bundleId) {
  const last = String(bundleId || '').split('.').filter(Boolean).pop() || bundleId || 'App';
  return last.charAt(0).toUpperCase() + last.slice(1);
}

function detailHash(apnsId, token) {
  return `#/notifications/${encodeURIComponent(apnsId)}${query({ device: token })}`;
}

/** Notifications grouped by app and thread id, newest group first (the center lists newest first). */
function groups(notifications) {
  const byKey = new Map();
  for (const notification of notifications) {
    const thread = notification.content && notification.content.threadId;
    const key = thread ? `${notification.bundleId}\u0000${thread}` : `\u0001${notification.apnsId}`;
    if (!byKey.has(key)) byKey.set(key, []);
    byKey.get(key).push(notification);
  }
  return [...byKey.values()];
}

/** Runs `f` once `milliseconds` after the first call of a burst (and again after, for calls meanwhile): unlike
 *  a debounce it never starves under a steady stream of events. `true` arguments win over `false`. */
function throttle(f, milliseconds) {
  let timer = null;
  let argument = false;
  return (value = false) => {
    argument = argument || value;
    if (timer) return;
    timer = setTimeout(() => { timer = null; const a = argument; argument = false; f(a); }, milliseconds);
  };
}

function stackKey(notification) {
  return `${notification.bundleId}\u0000${(notification.content && notification.content.threadId) || notification.apnsId}`;
}

export default {
  title: 'Devices',
  async mount(main, context) {
    const live = h('p', { class: 'visually-hidden', 'aria-live': 'polite', id: 'devices-live' });
    const grid = h('div', { class: 'lock-grid' });
    main.append(
      h('div', { class: 'view-header' }, h('h1', {}, 'Devices'),
        h('p', { class: 'muted' }, 'Each simulated device as its lock screen: what its user sees now. Live.')),
      live, grid);

    const phones = new Map(); // token → { device, card, screen, known:Set, urls:[], refresh }
    let unmounted = false;

    function announce(text) { live.textContent = text; }

    async function loadAll() {
      let list;
      try { list = await context.api('GET', '/api/v1/devices'); } catch (error) { replace(grid, errorBox(error)); return; }
      if (unmounted) return;
      const devices = (list && list.devices) || [];
      for (const phone of phones.values()) phone.urls.forEach((url) => URL.revokeObjectURL(url));
      phones.clear();
      if (devices.length === 0) {
        replace(grid, h('div', { class: 'card empty' },
          h('h2', {}, 'No devices'),
          h('p', {}, 'No devices. Create one in ', h('a', { href: '#/manage' }, 'Apps & devices'),
            ', or push to any token: auto-registration makes a device of the first push to an unknown token.'),
          h('p', {}, h('a', { href: '#/send' }, 'Send a push'))));
        return;
      }
      replace(grid, ...devices.map((device) => makePhone(device)));
      await Promise.all([...phones.values()].map((phone) => phone.load(false)));
    }

    function makePhone(device) {
      const token = device.token;
      const phone = { device, known: null, urls: [], openStacks: new Set() }; // openStacks: stacks the user opened stay open
      const headingId = `device-${token.slice(0, 16)}`;
      const time = h('p', { class: 'phone-time', 'aria-hidden': 'true' });
      const date = h('p', { class: 'phone-date', 'aria-hidden': 'true' });
      const badges = h('ul', { class: 'phone-badges', 'aria-label': 'Badges' });
      const list = h('div', { class: 'phone-notifications', 'aria-live': 'polite', 'aria-label': 'Notifications' });
      const stored = h('p', { class: 'phone-stored', hidden: true });
      const screen = h('div', { class: 'phone-screen' }, h('div', { class: 'phone-notch', 'aria-hidden': 'true' }),
        time, date, stored, list, badges);
      const toggle = h('button', { type: 'button', class: 'button online-toggle', 'aria-pressed': 'true',
        onclick: () => patch({ online: toggle.getAttribute('aria-pressed') !== 'true' }) });
      const locale = h('select', { onchange: () => patch({ locale: locale.value }) });
      const facts = h('p', { class: 'phone-facts muted' });
      const card = h('section', { class: 'phone-card', 'aria-labelledby': headingId, dataset: { token } },
        h('h2', { id: headingId, class: 'phone-title' }, h('span', { class: 'visually-hidden' }, 'Device '),
          h('code', { title: token }, shortToken(token))),
        facts,
        h('div', { class: 'phone-controls' }, toggle, field('Locale', locale),
          h('a', { class: 'button', href: `#/send${query({ device: token })}` }, 'Send a push')),
        h('div', { class: 'phone', role: 'group', 'aria-label': `Lock screen of ${shortToken(token)}` }, screen));

      function drawDevice() {
        const d = phone.device;
        toggle.setAttribute('aria-pressed', String(Boolean(d.online)));
        toggle.textContent = d.online ? 'Online' : 'Offline';
        toggle.title = d.online ? 'Online: pushes are delivered. Press to take it offline.' : 'Offline: pushes are stored. Press to bring it online.';
        card.dataset.online = String(Boolean(d.online));
        const locales = LOCALES.includes(d.locale) ? LOCALES : [d.locale, ...LOCALES];
        replace(locale, ...locales.map((code) => h('option', { value: code, selected: code === d.locale }, code)));
        locale.value = d.locale;
        const apps = (d.apps || []).map((app) => app.bundleId);
        replace(facts, `${d.environment} · ${d.online ? 'online' : 'offline'} · ${apps.length} app${apps.length === 1 ? '' : 's'}`,
          d.autoRegistered ? ' · auto-registered' : '');
      }

      async function patch(body) {
        try {
          phone.device = await context.api('PATCH', `/api/v1/devices/${encodeURIComponent(token)}`, body);
          drawDevice();
          pulse(card);
          announce(`Device ${shortToken(token)}: ${body.online === undefined ? `locale ${body.locale}` : (body.online ? 'online' : 'offline')}.`);
          await phone.load(true);
        } catch (error) {
          toast(`Could not change the device: ${error.message}`, 'error');
        }
      }

      function drawClock() {
        const now = context.now();
        time.textContent = clockTime(now).slice(0, 5);
        date.textContent = new Date(now).toLocaleDateString([], { weekday: 'long', month: 'long', day: 'numeric' });
      }

      function bubble(notification, extra) {
        const content = notification.content || {};
        const image = (content.attachments || []).find((a) => a.href && /^image\//.test(a.type || '')) ||
          (content.attachments || []).find((a) => a.href);
        const thumb = image ? h('img', { class: 'bubble-thumb', alt: `Attachment ${image.identifier || ''}`.trim() }) : null;
        if (thumb) {
          apiObjectURL(image.href).then((url) => { phone.urls.push(url); thumb.src = url; })
            .catch(() => thumb.replaceWith(h('span', { class: 'bubble-thumb missing' }, 'image')));
        }
        const link = h('a', { class: 'bubble', href: detailHash(notification.apnsId, token),
          dataset: { apnsId: notification.apnsId } },
          h('span', { class: 'bubble-head' },
            h('span', { class: 'bubble-app' }, appName(notification.bundleId)),
            h('time', { class: 'bubble-time', datetime: new Date(notification.displayedAt).toISOString(),
              title: new Date(notification.displayedAt).toLocaleString() }, ago(notification.displayedAt, context.now()))),
          h('span', { class: 'bubble-main' },
            h('span', { class: 'bubble-text' },
              content.title ? h('strong', { class: 'bubble-title' }, content.title) : null,
              content.subtitle ? h('span', { class: 'bubble-subtitle' }, content.subtitle) : null,
              content.body ? h('span', { class: 'bubble-body' }, content.body) : null),
            thumb),
          extra);
        return link;
      }

      function drawCenter(center) {
        phone.center = center;
        const notifications = (center && center.notifications) || [];
        const fresh = [];
        const ids = new Set(notifications.map((n) => `${n.apnsId}|${n.identifier}`));
        if (notifications.length === 0) {
          replace(list, h('p', { class: 'phone-empty' }, 'No notifications'));
        } else {
          const all = groups(notifications);
          const shown = all.slice(0, MAX_GROUPS);
          replace(list, ...shown.map((group) => {
            const [first, ...rest] = group;
            const count = group.length > 1
              ? h('span', { class: 'stack-count' }, `${group.length} notifications`) : null;
            const top = bubble(first, count);
            const stack = h('div', { class: `stack${rest.length ? ' stacked' : ''}`,
              dataset: { thread: (first.content && first.content.threadId) || '' } }, top,
              rest.length ? h('details', { class: 'stack-more', open: phone.openStacks.has(stackKey(first)),
                ontoggle: (event) => { if (event.target.open) phone.openStacks.add(stackKey(first)); else phone.openStacks.delete(stackKey(first)); } },
                h('summary', {}, `${rest.length} more in this thread`), ...rest.map((n) => bubble(n))) : null);
            return stack;
          }), older(center, shown));
          if (phone.known) {
            for (const element of list.querySelectorAll('.bubble')) {
              const n = notifications.find((x) => x.apnsId === element.dataset.apnsId);
              if (n && !phone.known.has(`${n.apnsId}|${n.identifier}`)) fresh.push(element);
            }
          }
        }
        phone.known = ids;
        const badgeEntries = Object.entries((center && center.badges) || {});
        replace(badges, ...badgeEntries.map(([bundleId, count]) =>
          h('li', { class: 'phone-badge' }, h('span', {}, appName(bundleId)), ' ',
            h('span', { class: 'badge-count', 'aria-label': `badge ${count}` }, String(count)))));
        badges.hidden = badgeEntries.length === 0;
        fresh.forEach((element) => pulse(element));
        if (fresh.length) announce(`${fresh.length} new notification${fresh.length === 1 ? '' : 's'} on ${shortToken(token)}.`);
      }

      /** "N older not drawn here" when the groups drawn leave notifications out, else null. */
      function older(center, shown) {
        const drawn = shown.reduce((sum, group) => sum + group.length, 0);
        const total = typeof center.total === 'number' ? center.total : center.notifications.length;
        if (total <= drawn) return null;
        return h('p', { class: 'phone-empty' }, `${total - drawn} older not drawn here; see the `,
          h('a', { href: `#/inbox${query({ device: token })}` }, 'Inbox'));
      }

      async function drawStored() {
        if (phone.device.online) { stored.hidden = true; return; }
        try {
          const answer = await context.api('GET', `/api/v1/notifications${query({ device: token, status: 'stored', limit: 1 })}`);
          const total = answer && typeof answer.total === 'number' ? answer.total : 0;
          stored.hidden = false;
          stored.textContent = total ? `Offline · stored ${total}` : 'Offline · nothing stored';
        } catch { stored.hidden = true; }
      }

      phone.load = async (withDevice) => {
        try {
          if (withDevice) phone.device = await context.api('GET', `/api/v1/devices/${encodeURIComponent(token)}`);
          drawDevice();
          const center = await context.api('GET', `/api/v1/devices/${encodeURIComponent(token)}/notification-center${query({ limit: CENTER_LIMIT })}`);
          if (unmounted) return;
          drawCenter(center);
          await drawStored();
        } catch (error) {
          if (error.status === 404) { scheduleReload(); return; }
          replace(list, errorBox(error));
        }
      };
      /**
       * Draws displayed notifications from their events at once (batched: at most one redraw per frame, so a
       * burst of pushes does not freeze the page); the refetch that follows is the truth.
       */
      let pending = [];
      phone.showFromEvent = (data) => {
        if (!phone.center || !data.displayed) return;
        pending.push(data);
        if (pending.length > 1) return;
        setTimeout(() => {
          const batch = pending;
          pending = [];
          let notifications = phone.center.notifications || [];
          const badges = { ...(phone.center.badges || {}) };
          for (const item of batch) {
            const identifier = item.collapseId || item.apnsId;
            const entry = { apnsId: item.apnsId, bundleId: item.bundleId || item.topic, identifier, content: item.displayed,
              displayedAt: (item.timings && item.timings.at) || context.now() };
            notifications = [entry, ...notifications.filter((n) => n.identifier !== identifier || n.bundleId !== entry.bundleId)];
            if (typeof item.displayed.badge === 'number') badges[entry.bundleId] = item.displayed.badge;
          }
          const before = (phone.center.notifications || []).length;
          const total = (phone.center.total || before) + notifications.length - before;
          drawCenter({ ...phone.center, notifications: notifications.slice(0, CENTER_LIMIT), total, badges });
        }, 16);
      };
      phone.refresh = throttle((withDevice) => phone.load(withDevice), 100);
      phone.drawClock = drawClock;
      drawDevice();
      drawClock();
      phones.set(token, phone);
      return card;
    }

    const scheduleReload = debounce(() => loadAll(), 100);
    const ticker = setInterval(() => { for (const phone of phones.values()) phone.drawClock(); }, 1000);
    await loadAll();

    return {
      resync: scheduleReload,
      onEvent(event) {
        const data = event.data || {};
        if (event.type === 'sandbox.reset' || event.type === 'clock.changed') { scheduleReload(); return; }
        if (event.type === 'device.updated') {
          const phone = phones.get(data.token);
          if (!phone || data.change === 'created' || data.change === 'deleted' || data.change === 'auto-registered') scheduleReload();
          else phone.refresh(true);
          return;
        }
        if (NOTIFICATION_EVENTS.has(event.type)) {
          const phone = phones.get(data.deviceToken);
          if (!phone) { scheduleReload(); return; }
          if (event.type === 'notification.displayed') phone.showFromEvent(data);
          phone.refresh(false);
        }
      },
      unmount() {
        unmounted = true;
        clearInterval(ticker);
        for (const phone of phones.values()) phone.urls.forEach((url) => URL.revokeObjectURL(url));
      },
    };
  },
};
