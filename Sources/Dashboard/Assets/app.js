// APNs Sandbox dashboard — the shell: navigation, sign-in, theme, the sandbox clock and the one event stream
// every view listens to. Views are modules of their own (devices.js, detail.js, inbox.js, send.js, manage.js,
// steer.js), loaded when first shown.
import { api, followEvents, onAuthRequired, setAdminToken, adminToken } from './api.js';
import { h, replace, clockTime, errorBox } from './ui.js';

// Route name → module. A view module's default export: `{ title, mount(main, context, route) }`, where `mount`
// draws into `main` and returns `{ onEvent(event), resync(), unmount() }` (all optional). `resync` runs when the
// event stream goes live without resuming (on the first connection): events between the view's first fetch
// and that moment were never seen, so the view fetches again.
const views = {
  devices: './devices.js',
  notification: './detail.js',
  inbox: './inbox.js',
  send: './send.js',
  manage: './manage.js',
  steer: './steer.js',
};

const main = document.getElementById('main');
let current = null;
let mountSerial = 0;
/** While a view mounts (current is null): the events it has not seen yet, and whether a fresh stream went live. */
let missed = null;
const MAX_MISSED = 1000;

/** The sandbox's clock, as last read (`GET /api/v1/clock`) and moved on locally while it runs. */
const clock = { nowMilliseconds: Date.now(), readAt: performance.now(), mode: 'real', virtual: false };
function sandboxNow() {
  return clock.mode === 'frozen' ? clock.nowMilliseconds : clock.nowMilliseconds + (performance.now() - clock.readAt);
}
function setClock(state) {
  Object.assign(clock, state, { readAt: performance.now() });
  drawClock();
}
function drawClock() {
  const element = document.getElementById('clock');
  if (!clock.virtual && clock.mode === 'real') { element.textContent = ''; element.hidden = true; return; }
  element.hidden = false;
  element.textContent = `${clock.mode === 'frozen' ? 'Frozen' : 'Virtual'} ${clockTime(sandboxNow())}`;
}

/** Parses `#/name/arg?x=y` into `{name, arg, params}`. */
function parseRoute() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, search = ''] = hash.split('?');
  const [name = 'devices', ...rest] = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { name: name in views ? name : (name === 'notifications' ? 'notification' : 'devices'), args: rest,
    params: new URLSearchParams(search) };
}

const subscribers = new Set();
const context = {
  api,
  /** The sandbox's time now (milliseconds since the epoch): virtual when the clock is. */
  now: sandboxNow,
  clock: () => ({ ...clock }),
  /** Goes to another view: `navigate('#/notifications/<apnsId>?device=<token>')`. */
  navigate(hash) { location.hash = hash; },
  /** Extra listeners of the event stream (a view's own onEvent is called anyway). */
  subscribe(listener) { subscribers.add(listener); return () => subscribers.delete(listener); },
  /** Tells the shell the view changed the clock (so the top bar shows it at once). */
  setClock,
};

async function show() {
  const route = parseRoute();
  const serial = ++mountSerial;
  if (current && current.unmount) { try { current.unmount(); } catch (error) { console.error(error); } }
  current = null;
  for (const link of document.querySelectorAll('[data-nav]')) {
    const active = link.dataset.nav === route.name || (route.name === 'notification' && link.dataset.nav === 'inbox');
    if (active) link.setAttribute('aria-current', 'page'); else link.removeAttribute('aria-current');
  }
  replace(main, h('p', { class: 'muted' }, 'Loading…'));
  try {
    const module = await import(views[route.name]);
    if (serial !== mountSerial) return;
    const view = module.default;
    document.title = `${view.title} · APNs Sandbox`;
    main.replaceChildren();
    main.dataset.view = route.name;
    missed = { serial, events: [], fresh: false };
    const mounted = (await view.mount(main, context, route)) || {};
    if (serial !== mountSerial) {  // another route was shown meanwhile: this view never becomes current
      if (mounted.unmount) { try { mounted.unmount(); } catch (error) { console.error(error); } }
      return;
    }
    current = mounted;
    // What happened while it fetched and drew: the events in order, or a fetch again when some were lost.
    const seen = missed;
    missed = null;
    for (const event of seen.events) toView(event);
    if (seen.fresh && current.resync) current.resync();
  } catch (error) {
    if (serial !== mountSerial) return;
    missed = null;
    console.error(error);
    replace(main, errorBox(error));
  }
}

function toView(event) {
  if (!current.onEvent) return;
  try { current.onEvent(event); } catch (error) { console.error('view event', error); }
}

function dispatch(event) {
  if (event.type === 'clock.changed' && event.data) {
    setClock({ nowMilliseconds: event.data.nowMilliseconds, mode: event.data.mode, virtual: true });
  }
  if (current) toView(event);
  else if (missed && missed.events.length < MAX_MISSED) missed.events.push(event);
  else if (missed) missed.fresh = true;
  for (const listener of subscribers) {
    try { listener(event); } catch (error) { console.error('event listener', error); }
  }
}

// ---- connection state, sign-in --------------------------------------------------------------------------------

const connection = document.getElementById('connection');
const stateWords = { live: 'Live', connecting: 'Connecting…', offline: 'Reconnecting…', unauthorized: 'Signed out' };
let stopEvents = null;
function startEvents() {
  if (stopEvents) stopEvents();
  stopEvents = followEvents(dispatch, (state, { resumed } = {}) => {
    connection.dataset.state = state;
    connection.textContent = stateWords[state] || state;
    if (state === 'live') refreshClock();
    if (state !== 'live' || resumed) return;
    if (missed) missed.fresh = true;
    else if (current && current.resync) {
      try { current.resync(); } catch (error) { console.error('view resync', error); }
    }
  });
}

const login = document.getElementById('login');
const signOut = document.getElementById('sign-out');
let asking = false;
function askForToken(message) {
  if (asking) return;
  asking = true;
  const error = document.getElementById('login-error');
  error.hidden = !message;
  error.textContent = message || '';
  if (!login.open) login.showModal();
  const input = document.getElementById('login-token');
  input.focus();
  input.select();
}
onAuthRequired(() => askForToken(adminToken() ? 'That token was not accepted.' : null));
document.getElementById('login-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = document.getElementById('login-token');
  setAdminToken(input.value.trim());
  try {
    await api('GET', '/api/v1/clock');
  } catch (error) {
    asking = false;
    askForToken(error.status === 401 ? 'That token was not accepted.' : error.message);
    return;
  }
  input.value = '';
  asking = false;
  login.close();
  signOut.hidden = false;
  startEvents();
  show();
});
login.addEventListener('cancel', (event) => event.preventDefault());
signOut.addEventListener('click', () => {
  setAdminToken(null);
  signOut.hidden = true;
  if (stopEvents) stopEvents();
  location.reload();
});

async function refreshClock() {
  try { setClock(await api('GET', '/api/v1/clock')); } catch { /* shown by the views */ }
}

// ---- theme ----------------------------------------------------------------------------------------------------

const THEME_KEY = 'apns-sandbox.theme';
const themeToggle = document.getElementById('theme-toggle');
function applyTheme(theme) {
  const dark = theme ? theme === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
  themeToggle.setAttribute('aria-pressed', String(dark));
  themeToggle.textContent = dark ? 'Light theme' : 'Dark theme';
}
themeToggle.addEventListener('click', () => {
  const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
  localStorage.setItem(THEME_KEY, next);
  applyTheme(next);
});
applyTheme(localStorage.getItem(THEME_KEY));

// ---- start ----------------------------------------------------------------------------------------------------

window.addEventListener('hashchange', show);
setInterval(drawClock, 1000);
signOut.hidden = !adminToken();
startEvents();
show();
