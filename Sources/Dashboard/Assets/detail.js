// APNs Sandbox dashboard — one notification's story: the request as sent, the displayed content beside the
// original, attachments, faults, and the timeline drawn against the extension's budget, with the outcome in words.
import { apiObjectURL, query } from './api.js';
import { h, replace, dateTime, shortToken, pulse, debounce, errorBox } from './ui.js';

/** The outcome in one sentence. `budgetMs`: the extension's budget as the record says it. */
export function outcomeSentence(record, budgetMs) {
  const seconds = `${Math.round(budgetMs / 100) / 10} s`;
  const outcomes = {
    processed: 'The service extension called the content handler in time; its content was shown.',
    'best-attempt': `The extension did not finish within ${seconds}; the content it handed over after serviceExtensionTimeWillExpire (its best attempt) was shown.`,
    'original-timeout': `The extension did not call the content handler within ${seconds}; the original was shown.`,
    'original-error': 'The extension failed (it could not start, broke the protocol or reported an error); the original was shown.',
    'original-crash': 'The extension crashed or went over its memory limit; the original was shown.',
    'original-no-alert': 'The extension handed over content without a title, subtitle or body; the original was shown.',
    direct: 'No service extension ran; the notification was shown as it was sent.',
  };
  const statuses = {
    stored: 'The device is offline; the notification is stored and will be delivered when the device comes online (unless it expires or a newer one with its collapse id replaces it).',
    accepted: 'APNs accepted the push; it is on its way to the device.',
    delivering: 'The notification is being delivered to the device.',
    'extension-running': 'The app\u2019s service extension is running on it now.',
    'delivered-silent': 'A background (silent) push: the app was woken with it; nothing was shown to the user.',
    expired: 'Its apns-expiration passed while the device was offline; it was never shown.',
    discarded: 'It was discarded before it was shown (replaced while stored, the app was uninstalled, or a fault rule lost it).',
  };
  if (record.status === 'displayed' && record.outcome) return outcomes[record.outcome] || `Shown (${record.outcome}).`;
  const sentence = statuses[record.status] || `Status: ${record.status}.`;
  return record.reason ? `${sentence} Reason: ${record.reason}.` : sentence;
}

/** The content the provider sent, in the shape of the displayed content. */
function originalContent(payload) {
  const aps = (payload && payload.aps) || {};
  const alert = typeof aps.alert === 'string' ? { body: aps.alert } : (aps.alert || {});
  const sound = typeof aps.sound === 'object' && aps.sound ? aps.sound.name : aps.sound;
  return { title: alert.title ?? alert['title-loc-key'], subtitle: alert.subtitle ?? alert['subtitle-loc-key'],
    body: alert.body ?? alert['loc-key'], badge: aps.badge, sound, threadId: aps['thread-id'], category: aps.category,
    interruptionLevel: aps['interruption-level'], targetContentId: aps['target-content-id'],
    relevanceScore: aps['relevance-score'] };
}

const FIELDS = [['title', 'Title'], ['subtitle', 'Subtitle'], ['body', 'Body'], ['badge', 'Badge'], ['sound', 'Sound'],
  ['threadId', 'Thread id'], ['category', 'Category'], ['interruptionLevel', 'Interruption level'],
  ['targetContentId', 'Target content id'], ['relevanceScore', 'Relevance score']];

function text(value) { return value === undefined || value === null ? '' : String(value); }

function comparison(record) {
  const original = originalContent(record.payload);
  const shown = record.displayed || {};
  const rows = FIELDS.filter(([key]) => text(original[key]) || text(shown[key])).map(([key, label]) => {
    const before = text(original[key]);
    const after = text(shown[key]);
    const changed = before !== after;
    return h('tr', { class: changed ? 'changed' : null },
      h('th', { scope: 'row' }, label),
      h('td', { class: changed && before ? 'was' : null }, before || h('span', { class: 'muted' }, '—')),
      h('td', { class: changed && after ? 'now' : null }, after || h('span', { class: 'muted' }, '—'),
        changed ? h('span', { class: 'change-tag' }, before ? (after ? ' changed' : ' removed') : ' added') : null));
  });
  if (!record.displayed) {
    return h('p', { class: 'muted' }, 'Not displayed (yet): only the original is known.');
  }
  return h('div', { class: 'table-scroll' }, h('table', { class: 'compare' },
    h('caption', { class: 'visually-hidden' }, 'Original content beside the displayed content'),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Field'), h('th', { scope: 'col' }, 'Original (sent)'),
      h('th', { scope: 'col' }, 'Displayed'))),
    h('tbody', {}, rows)));
}

const MARKS = {
  accepted: 'received', 'extension-started': 'didReceive', 'extension-handler-called': 'content handed over',
  'extension-time-will-expire': 'timeWillExpire', 'extension-killed': 'kill', 'extension-crashed': 'crash',
  'extension-error': 'error', 'extension-memory-exceeded': 'memory exceeded', displayed: 'display', stored: 'stored',
};

function budgetOf(record) {
  const started = (record.timeline || []).find((step) => step.step === 'extension-started');
  const match = started && /budget (\d+) ms, grace (\d+) ms/.exec(started.detail || '');
  return match ? { budget: Number(match[1]), grace: Number(match[2]), ran: true }
    : { budget: 30000, grace: 1000, ran: Boolean(started) };
}

/** Positions by the CSSOM (the page's Content-Security-Policy allows no style attributes). */
function styled(element, properties) { Object.assign(element.style, properties); return element; }

function timeline(record) {
  const steps = record.timeline || [];
  if (steps.length === 0) return h('p', { class: 'muted' }, 'No timeline.');
  const { budget, grace, ran } = budgetOf(record);
  const origin = steps[0].monotonic;
  const ms = (step) => (step.monotonic - origin) / 1e6;
  const started = steps.find((step) => step.step === 'extension-started');
  const didReceive = started ? ms(started) : 0;
  const last = ms(steps[steps.length - 1]);
  const span = Math.max(last, ran ? didReceive + budget + grace : 0, 1);
  const left = (value) => `${Math.min(100, (value / span) * 100).toFixed(2)}%`;
  const width = (from, to) => `${Math.max(0.4, ((to - from) / span) * 100).toFixed(2)}%`;
  const end = steps.find((step) => step.step === 'displayed') || steps[steps.length - 1];
  // Labels go into lanes above and below the bar so close marks do not overlap (the step list has them all).
  const lanes = [];
  const mark = (name, at, label) => {
    const percent = Math.min(100, (at / span) * 100);
    let lane = lanes.findIndex((last) => percent - last > 22);
    if (lane < 0) lane = lanes.length < 4 ? lanes.length : 3;
    lanes[lane] = percent;
    const edge = percent < 12 ? ' edge-start' : (percent > 88 ? ' edge-end' : '');
    return styled(h('div', { class: `timeline-mark mark-${name} lane-${lane}${edge}`, title: `${label} +${at.toFixed(1)} ms` },
      h('span', {}, label)), { left: `${percent.toFixed(2)}%` });
  };
  const marks = steps.filter((step) => MARKS[step.step]).map((step) => ({ name: step.step, at: ms(step), label: MARKS[step.step] }));
  if (ran) marks.push({ name: 'grace-end', at: didReceive + budget + grace, label: 'grace ends' });
  marks.sort((a, b) => a.at - b.at);
  const bar = h('div', { class: 'timeline-bar', 'aria-hidden': 'true' },
    ran ? styled(h('div', { class: 'timeline-budget' }), { left: left(didReceive), width: width(didReceive, didReceive + budget) }) : null,
    ran ? styled(h('div', { class: 'timeline-grace' }), { left: left(didReceive + budget), width: width(didReceive + budget, didReceive + budget + grace) }) : null,
    styled(h('div', { class: 'timeline-run' }), { left: '0', width: width(0, ms(end)) }),
    ...marks.map((item) => mark(item.name, item.at, item.label)));
  const scale = h('div', { class: 'timeline-scale', 'aria-hidden': 'true' },
    h('span', {}, '0'), h('span', {}, `${(span / 1000).toFixed(span < 10000 ? 2 : 1)} s`));
  const list = h('ol', { class: 'timeline-steps' }, ...steps.map((step) =>
    h('li', { dataset: { step: step.step } },
      h('span', { class: 'step-offset' }, `+${ms(step).toFixed(1)} ms`), ' ',
      h('code', {}, step.step), MARKS[step.step] ? ` (${MARKS[step.step]})` : '',
      step.detail ? h('span', { class: 'muted' }, ` — ${step.detail}`) : null)));
  const legend = ran
    ? h('p', { class: 'hint' }, `Budget ${budget} ms from didReceive, then ${grace} ms of grace. `,
      `Displayed ${ms(end).toFixed(1)} ms after receipt.`)
    : h('p', { class: 'hint' }, `No service extension ran. ${end.step === 'displayed' ? `Displayed ${ms(end).toFixed(1)} ms after receipt.` : ''}`);
  return h('div', { class: 'timeline' }, bar, scale, legend, h('h3', {}, 'Steps'), list);
}

function keyValues(pairs) {
  return h('dl', { class: 'facts' }, ...pairs.filter(([, value]) => value !== undefined && value !== null && value !== '')
    .map(([key, value]) => [h('dt', {}, key), h('dd', {}, String(value))]));
}

export default {
  title: 'Notification',
  async mount(main, context, route) {
    const apnsId = route.args[0] || '';
    const device = route.params.get('device') || '';
    const urls = [];
    const body = h('div', { class: 'detail' });
    const live = h('p', { class: 'visually-hidden', 'aria-live': 'polite' });
    main.append(h('p', {}, h('a', { href: '#/devices' }, '← Devices'), ' · ', h('a', { href: '#/inbox' }, 'Inbox')),
      h('h1', {}, 'Notification ', h('code', { class: 'detail-id' }, apnsId)), live, body);
    let lastStatus = null;
    let lastJSON = null;

    function attachments(record) {
      const items = (record.displayed && record.displayed.attachments) || [];
      if (items.length === 0) return h('p', { class: 'muted' }, 'None.');
      return h('ul', { class: 'attachments' }, ...items.map((item) => {
        const image = h('img', { class: 'attachment-thumb', alt: `Attachment ${item.identifier}` });
        if (item.href && /^image\//.test(item.type || '')) {
          apiObjectURL(item.href).then((url) => { urls.push(url); image.src = url; }).catch(() => image.remove());
        } else image.hidden = true;
        return h('li', {}, image, h('span', {}, h('code', {}, item.identifier), ` · ${item.type} · ${item.size} bytes`));
      }));
    }

    function draw(record) {
      const { budget } = budgetOf(record);
      const sentence = outcomeSentence(record, budget);
      const headers = record.headers || [];
      const auth = record.jwt
        ? keyValues([['Authentication', record.authentication], ['Team (iss)', record.jwt.teamId],
          ['Key (kid)', record.jwt.keyId], ['Issued at (iat)', record.jwt.issuedAt ? `${record.jwt.issuedAt} (${dateTime(record.jwt.issuedAt * 1000)})` : '']])
        : keyValues([['Authentication', record.authentication], ['Certificate subject', record.certificateSubject || record.certificate]]);
      const faults = record.faults || [];
      replace(body,
        h('section', { class: 'card detail-outcome', 'aria-labelledby': 'outcome-h' },
          h('h2', { id: 'outcome-h' }, 'Outcome'),
          h('p', {}, h('span', { class: 'badge' }, record.status), ' ',
            record.outcome ? h('span', { class: `badge ${record.outcome === 'processed' || record.outcome === 'direct' ? 'ok' : 'warn'}` }, record.outcome) : null),
          h('p', { class: 'outcome-sentence' }, sentence),
          keyValues([['Device', record.deviceToken], ['App', record.bundleId], ['Topic', record.topic],
            ['Push type', record.pushType], ['Priority', record.priority], ['Environment', record.environment],
            ['Collapse id', record.collapseId], ['Expiration', record.expiration],
            ['Received', dateTime(record.receivedAt)], ['apns-unique-id', record.uniqueId]])),
        h('section', { class: 'card', 'aria-labelledby': 'timeline-h' },
          h('h2', { id: 'timeline-h' }, 'Timeline'), timeline(record)),
        h('section', { class: 'card', 'aria-labelledby': 'content-h' },
          h('h2', { id: 'content-h' }, 'Displayed and original content'), comparison(record),
          h('h3', {}, 'Attachments'), attachments(record)),
        h('section', { class: 'card', 'aria-labelledby': 'faults-h' },
          h('h2', { id: 'faults-h' }, 'Faults applied'),
          faults.length ? h('ul', {}, ...faults.map((fault) => h('li', {}, h('code', {}, fault.action), ' ',
            fault.name || fault.ruleId, fault.detail ? ` — ${fault.detail}` : ''))) : h('p', { class: 'muted' }, 'None.')),
        h('section', { class: 'card', 'aria-labelledby': 'request-h' },
          h('h2', { id: 'request-h' }, 'The request as sent'), auth,
          h('h3', {}, 'Headers'),
          h('div', { class: 'table-scroll' }, h('table', {}, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Value'))),
            h('tbody', {}, ...headers.map((header) => h('tr', {}, h('td', {}, h('code', {}, header.name)), h('td', {}, header.value)))))),
          h('h3', {}, 'Payload'), h('pre', { class: 'payload' }, JSON.stringify(record.payload, null, 2))));
      if (lastStatus !== null && lastStatus !== `${record.status}/${record.outcome}`) {
        pulse(body.querySelector('.detail-outcome'));
        live.textContent = sentence;
      }
      lastStatus = `${record.status}/${record.outcome}`;
    }

    async function load() {
      try {
        const record = await context.api('GET', `/api/v1/notifications/${encodeURIComponent(apnsId)}${query({ device })}`);
        const json = JSON.stringify(record);
        if (json === lastJSON) return; // unchanged: keep the page (and the reader's focus) as it is
        lastJSON = json;
        draw(record);
      } catch (error) {
        replace(body, errorBox(error), h('p', {}, 'Device ', shortToken(device)));
      }
    }
    const refresh = debounce(load, 80);
    await load();
    return {
      resync: refresh,
      onEvent(event) {
        const data = event.data || {};
        if (event.type === 'sandbox.reset' || (data.apnsId === apnsId && (!device || !data.deviceToken || data.deviceToken === device))) refresh();
      },
      unmount() { urls.forEach((url) => URL.revokeObjectURL(url)); },
    };
  },
};
