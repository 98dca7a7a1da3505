// APNs Sandbox dashboard — small DOM helpers shared by the views. Data is only ever put into the page as text
// (textContent, attributes), never as HTML: a payload cannot inject markup.

/**
 * Makes an element: `h('button', {class: 'button', onclick: f, 'aria-label': 'x'}, 'text', child, …)`.
 * Attributes: `class`, `dataset` (object), `on<event>` (listeners), booleans (true: present, false/null: absent),
 * anything else as an attribute. Children: strings (text), nodes, arrays, null/false (skipped).
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'dataset') Object.assign(element.dataset, value);
    else if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (name === 'value' && 'value' in element) element.value = value;
    else if (name === 'checked' || name === 'selected') element[name] = Boolean(value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

/** `HH:MM:SS` (24 h, local time) of milliseconds since the epoch. */
export function clockTime(milliseconds) {
  if (milliseconds === undefined || milliseconds === null) return '';
  return new Date(milliseconds).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
}

/** Date and time with milliseconds, for records. */
export function dateTime(milliseconds) {
  if (milliseconds === undefined || milliseconds === null) return '';
  const date = new Date(milliseconds);
  return `${date.toLocaleDateString()} ${clockTime(milliseconds)}.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

/** "now", "5 s ago", "3 min ago", … relative to `now` (the sandbox's clock, milliseconds). */
export function ago(milliseconds, now = Date.now()) {
  const seconds = Math.round((now - milliseconds) / 1000);
  if (seconds < 5) return 'now';
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(milliseconds).toLocaleDateString();
}

/** A device token shortened for display: first 8 and last 4 hex digits. */
export function shortToken(token) {
  return token && token.length > 16 ? `${token.slice(0, 8)}…${token.slice(-4)}` : token || '';
}

/** A short message that goes away by itself (announced to screen readers). */
export function toast(message, kind = 'info') {
  const region = document.getElementById('toasts');
  const item = h('div', { class: `toast ${kind}` }, message);
  region.append(item);
  setTimeout(() => item.remove(), kind === 'error' ? 8000 : 4000);
}

/** Briefly marks an element as just changed (the pulse of a new notification); respects reduced motion by CSS. */
export function pulse(element) {
  element.classList.remove('pulse');
  void element.offsetWidth;
  element.classList.add('pulse');
}

/** Copies text to the clipboard; falls back to selecting a hidden textarea where the API is not allowed. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h('textarea', { class: 'visually-hidden', 'aria-hidden': 'true' });
    area.value = text;
    document.body.append(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    return ok;
  }
}

/** Runs `f` at most once every `milliseconds`, with the latest arguments (for keystrokes and event bursts). */
export function debounce(f, milliseconds) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => f(...args), milliseconds);
  };
}

/** A labelled form field: `field('Topic', input)` — a <label for> bound to the control, and an optional hint. */
let fieldCounter = 0;
export function field(label, control, hint) {
  if (!control.id) control.id = `field-${++fieldCounter}`;
  const hintElement = hint ? h('small', { class: 'hint', id: `${control.id}-hint` }, hint) : null;
  if (hintElement) control.setAttribute('aria-describedby', hintElement.id);
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintElement);
}

/** An error box for a failed request, in words. */
export function errorBox(error) {
  const status = error && error.status ? ` (HTTP ${error.status}${error.code ? `, ${error.code}` : ''})` : '';
  return h('p', { class: 'error', role: 'alert' }, `${(error && error.message) || error}${status}`);
}
