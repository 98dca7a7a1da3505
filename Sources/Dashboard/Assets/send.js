// APNs Sandbox dashboard — the Send a push view (#/send?device=&topic=), like Apple's Push Notifications Console:
// a form for APNs' request headers and the payload, validated as you type with the sandbox's own rules
// (POST /api/v1/pushes/validate), sent through the real provider endpoint (POST /3/device/<token>) with a
// provider token the sandbox mints (POST /api/v1/provider-tokens) or one pasted in, and "copy as curl".
import { sendPush, adminToken } from './api.js';
import { h, replace, field, debounce, copyText, toast, errorBox } from './ui.js';

/** APNs' push types (APNsProtocol.PushType) with the suffix `apns-topic` needs after the bundle ID. */
const PUSH_TYPES = {
  alert: '', background: '', voip: '.voip', location: '.location-query', complication: '.complication',
  fileprovider: '.pushkit.fileprovider', mdm: '', liveactivity: '.push-type.liveactivity', pushtotalk: '.voip-ptt',
  widgets: '.push-type.widgets', controls: '.push-type.controls',
};
const SUFFIXES = Object.values(PUSH_TYPES).filter(Boolean).sort((a, b) => b.length - a.length);

function samplePayload(pushType) {
  switch (pushType) {
    case 'alert': return { aps: { alert: { title: 'Hello', body: 'Sent from the dashboard' }, sound: 'default' } };
    case 'liveactivity': return { aps: { timestamp: Math.floor(Date.now() / 1000), event: 'update', 'content-state': {} } };
    case 'background': case 'widgets': case 'controls': case 'fileprovider': case 'complication':
      return { aps: { 'content-available': 1 } };
    default: return { aps: {} };
  }
}

/** Quotes a word for a POSIX shell: single quotes, a single quote as '\''. */
export function shellQuote(text) { return `'${String(text).replace(/'/g, "'\\''")}'`; }

/** A heredoc delimiter that no line of `text` equals. */
function delimiter(text) {
  const lines = new Set(text.split('\n'));
  let word = 'JSON';
  for (let n = 2; lines.has(word); n += 1) word = `JSON${n}`;
  return word;
}

/**
 * The curl command that sends this push as printed: the provider token minted by an inner curl (or the pasted
 * one), the admin token only as `$APNS_SANDBOX_ADMIN_TOKEN` (never its value), the payload in a quoted heredoc.
 */
export function curlCommand({ origin, deviceToken, headers, payload, pastedJWT, needsAdmin, mintBody }) {
  const tls = origin.startsWith('https:');
  const insecure = tls ? ' -k' : '';
  let auth;
  if (pastedJWT) {
    auth = shellQuote(`authorization: bearer ${pastedJWT}`);
  } else {
    const admin = needsAdmin ? ' -H "authorization: Bearer $APNS_SANDBOX_ADMIN_TOKEN"' : '';
    // Inside the double quotes of "$(…)": single-quoted words stay literal, so shellQuote still holds.
    const key = mintBody ? ` -H 'content-type: application/json' -d ${shellQuote(JSON.stringify(mintBody))}` : '';
    auth = `"authorization: bearer $(curl -sf${insecure} -X POST -H 'accept: application/jwt'${admin}${key} ${shellQuote(`${origin}/api/v1/provider-tokens`)})"`;
  }
  const lines = [`curl -si${insecure} ${tls ? '--http2' : '--http2-prior-knowledge'} -X POST ${shellQuote(`${origin}/3/device/${deviceToken}`)}`,
    `  -H ${auth}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`  -H ${shellQuote(`${name}: ${value}`)}`);
  const body = payload.endsWith('\n') ? payload : `${payload}\n`;
  const end = delimiter(body);
  lines.push(`  --data-binary @- <<'${end}'`);
  // The heredoc adds the final newline; APNs ignores trailing whitespace after the JSON.
  return `${lines.join(' \\\n')}\n${body}${end}\n`;
}

/** Checks the payload in the page when the sandbox has no validate endpoint: JSON, an `aps` object, the size. */
function localValidation(payload, pushType) {
  const bytes = new TextEncoder().encode(payload).length;
  const max = pushType === 'voip' ? 5120 : 4096;
  const answer = { payloadBytes: bytes, maxPayloadBytes: max, valid: true, reason: null, message: null };
  let json;
  try { json = JSON.parse(payload); } catch (error) {
    return { ...answer, valid: false, status: 400, reason: 'BadPayload', message: `Not JSON: ${error.message}` };
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    return { ...answer, valid: false, status: 400, reason: 'BadPayload', message: 'The payload must be a JSON object.' };
  }
  if (bytes > max) {
    return { ...answer, valid: false, status: 413, reason: 'PayloadTooLarge', message: `${bytes} bytes; at most ${max}.` };
  }
  return answer;
}

export default {
  title: 'Send a push',
  async mount(main, context, route) {
    let devices = [];
    try { devices = (await context.api('GET', '/api/v1/devices?limit=500')).devices || []; } catch (error) {
      main.append(errorBox(error));
    }
    const wanted = route.params.get('device') || '';
    const wantedTopic = route.params.get('topic') || '';

    // ---- controls ----
    const deviceSelect = h('select', { name: 'device' },
      devices.map((device) => h('option', { value: device.token, selected: device.token === wanted },
        `${device.token.slice(0, 12)}… · ${device.environment}${device.online ? '' : ' · offline'} · ${(device.apps || []).map((app) => app.bundleId).join(', ') || 'no apps'}`)),
      h('option', { value: '', selected: !!wanted && !devices.some((device) => device.token === wanted) || devices.length === 0 }, 'Type a token…'));
    const tokenInput = h('input', { name: 'deviceToken', class: 'mono', spellcheck: 'false', autocomplete: 'off',
      value: devices.some((device) => device.token === wanted) ? '' : wanted, placeholder: '64 hex digits' });
    const tokenField = field('Device token', tokenInput);
    const topicList = h('datalist', { id: 'send-topics' });
    const topicInput = h('input', { name: 'topic', list: 'send-topics', spellcheck: 'false', autocomplete: 'off', value: wantedTopic });
    const typeSelect = h('select', { name: 'pushType' }, Object.keys(PUSH_TYPES).map((type) => h('option', { value: type }, type)));
    const prioritySelect = h('select', { name: 'priority' },
      h('option', { value: '10' }, '10 — immediately'), h('option', { value: '5' }, '5 — power considerate'),
      h('option', { value: '1' }, '1 — lowest'));
    const expirationInput = h('input', { name: 'expiration', inputmode: 'numeric', placeholder: 'none', autocomplete: 'off' });
    const collapseInput = h('input', { name: 'collapseId', autocomplete: 'off', maxlength: '64' });
    const apnsIdInput = h('input', { name: 'apnsId', class: 'mono', autocomplete: 'off', placeholder: 'chosen by the sandbox' });
    const payloadArea = h('textarea', { name: 'payload', rows: '12', spellcheck: 'false', 'aria-describedby': 'send-validation' });
    payloadArea.value = JSON.stringify(samplePayload('alert'), null, 2);
    const validation = h('p', { id: 'send-validation', class: 'send-validation', 'aria-live': 'polite', role: 'status' });

    const authMint = h('input', { type: 'radio', name: 'auth', value: 'mint', checked: true, id: 'send-auth-mint' });
    const authPaste = h('input', { type: 'radio', name: 'auth', value: 'paste', id: 'send-auth-paste' });
    const jwtArea = h('textarea', { name: 'jwt', rows: '3', spellcheck: 'false', autocomplete: 'off',
      placeholder: 'eyJhbGciOiJFUzI1NiIs… (apns-sandbox token --config config/sandbox.json)' });
    const jwtField = field('Provider token (JWT)', jwtArea);
    const keySelect = h('select', { name: 'key' });
    const keyField = field('Signing key', keySelect);

    const sendButton = h('button', { type: 'submit', class: 'button primary' }, 'Send');
    const curlButton = h('button', { type: 'button', class: 'button' }, 'Copy as curl');
    const curlText = h('pre', { id: 'send-curl', class: 'send-curl', 'aria-label': 'curl command' });
    const answer = h('div', { id: 'send-answer', class: 'send-answer', 'aria-live': 'polite' });

    // ---- behaviour ----
    function deviceToken() { return (deviceSelect.value || tokenInput.value).trim(); }
    function selectedDevice() { return devices.find((device) => device.token === deviceSelect.value); }
    function baseTopic(topic) {
      for (const suffix of SUFFIXES) if (topic.endsWith(suffix)) return topic.slice(0, -suffix.length);
      return topic;
    }
    function refreshTopics(keep) {
      const device = selectedDevice();
      const suffix = PUSH_TYPES[typeSelect.value];
      const bundles = device ? (device.apps || []).map((app) => app.bundleId) : [];
      replace(topicList, bundles.map((bundle) => h('option', { value: bundle + suffix })));
      let base = baseTopic(topicInput.value.trim());
      if (!keep || !base) base = bundles[0] || base;
      topicInput.value = base ? base + suffix : '';
    }
    function headers() {
      const list = { 'apns-topic': topicInput.value.trim(), 'apns-push-type': typeSelect.value, 'apns-priority': prioritySelect.value };
      if (expirationInput.value.trim()) list['apns-expiration'] = expirationInput.value.trim();
      if (collapseInput.value) list['apns-collapse-id'] = collapseInput.value;
      if (apnsIdInput.value.trim()) list['apns-id'] = apnsIdInput.value.trim();
      return list;
    }
    function showDeviceFields() { tokenField.hidden = deviceSelect.value !== ''; }
    function showAuthFields() { jwtField.hidden = !authPaste.checked; keyField.hidden = authPaste.checked || keySelect.options.length < 2; }

    let validateSerial = 0;
    let serverValidates = true;
    async function validate() {
      const serial = ++validateSerial;
      const payload = payloadArea.value;
      let result;
      if (serverValidates && deviceToken()) {
        try {
          result = await context.api('POST', '/api/v1/pushes/validate', { deviceToken: deviceToken(), headers: headers(), payload });
        } catch (error) {
          if (error.status === 404 || error.status === 405) serverValidates = false;
          else result = { valid: false, reason: error.code, message: error.message };
        }
      }
      if (!result) result = localValidation(payload, typeSelect.value);
      if (serial !== validateSerial) return;
      const size = result.payloadBytes !== undefined ? `${result.payloadBytes} of ${result.maxPayloadBytes} bytes` : '';
      payloadArea.setAttribute('aria-invalid', String(!result.valid));
      validation.className = `send-validation ${result.valid ? 'ok' : 'error'}`;
      validation.dataset.valid = String(!!result.valid);
      replace(validation, result.valid ? '✓ Valid' : `✗ ${result.reason || 'Invalid'}${result.status ? ` (${result.status})` : ''}`,
        result.message && !result.valid ? ` — ${result.message}` : '', size ? ` · ${size}` : '');
      refreshCurl();
    }
    const validateSoon = debounce(validate, 250);

    function refreshCurl() {
      const token = deviceToken();
      curlText.textContent = curlCommand({ origin: location.origin, deviceToken: token || '<device token>', headers: headers(),
        payload: payloadArea.value, pastedJWT: authPaste.checked ? jwtArea.value.trim().replace(/^bearer\s+/i, '') : null,
        needsAdmin: !!adminToken(), mintBody: keySelect.value ? keyBody() : null });
    }

    async function loadKeys() {
      try {
        const keys = ((await context.api('GET', '/api/v1/provider-tokens')).keys || []).filter((key) => key.canSign);
        replace(keySelect, keys.map((key) => h('option', { value: `${key.teamId}/${key.keyId}` }, `${key.teamId} / ${key.keyId}`)));
        if (keys.length === 0) { authPaste.checked = true; }
      } catch (error) {
        if (error.status === 404) { authPaste.checked = true; authMint.disabled = true; }
      }
      showAuthFields();
    }

    function keyBody() { const [teamId, keyId] = keySelect.value.split('/'); return { teamId, keyId }; }

    async function providerToken() {
      if (authPaste.checked) {
        const jwt = jwtArea.value.trim().replace(/^bearer\s+/i, '');
        if (!jwt) throw new Error('Paste a provider token (JWT), or let the sandbox mint one.');
        return jwt;
      }
      return (await context.api('POST', '/api/v1/provider-tokens', keySelect.value ? keyBody() : {})).token;
    }

    async function send(event) {
      event.preventDefault();
      const token = deviceToken();
      if (!token) { tokenInput.focus(); replace(answer, errorBox('Choose a device or type its token.')); return; }
      sendButton.disabled = true;
      refreshCurl();
      replace(answer, h('p', { class: 'muted' }, 'Sending…'));
      try {
        const jwt = await providerToken();
        const result = await sendPush(token, { ...headers(), authorization: `bearer ${jwt}` }, payloadArea.value);
        const ok = result.status === 200;
        replace(answer, h('div', { class: `card send-result ${ok ? 'ok' : 'error'}`, dataset: { status: String(result.status) } },
          h('h2', {}, ok ? 'Accepted' : 'Rejected'),
          h('dl', { class: 'send-facts' },
            h('dt', {}, 'Status'), h('dd', { class: 'send-status' }, String(result.status)),
            h('dt', {}, 'apns-id'), h('dd', { class: 'mono send-apns-id' }, result.apnsId || '—'),
            !ok ? [h('dt', {}, 'Reason'), h('dd', { class: 'send-reason' }, result.reason || '—')] : null,
            result.timestamp ? [h('dt', {}, 'Timestamp'), h('dd', {}, String(result.timestamp))] : null),
          ok && result.apnsId ? h('p', {}, h('a', { class: 'send-detail-link',
            href: `#/notifications/${encodeURIComponent(result.apnsId)}?device=${encodeURIComponent(token)}` }, 'Open the notification')) : null));
      } catch (error) {
        replace(answer, errorBox(error));
      } finally {
        sendButton.disabled = false;
      }
    }

    deviceSelect.addEventListener('change', () => { showDeviceFields(); refreshTopics(false); validateSoon(); });
    let previousType = typeSelect.value;
    typeSelect.addEventListener('change', () => {
      const type = typeSelect.value;
      prioritySelect.value = ['background', 'widgets', 'controls', 'fileprovider'].includes(type) ? '5' : '10';
      // A payload still the previous type's sample becomes this type's; an edited one stays.
      let current = null;
      try { current = JSON.stringify(JSON.parse(payloadArea.value)); } catch { current = null; }
      if (current === null || current === JSON.stringify(samplePayload(previousType))) {
        payloadArea.value = JSON.stringify(samplePayload(type), null, 2);
      }
      previousType = type;
      refreshTopics(true);
      validateSoon();
    });
    for (const control of [tokenInput, topicInput, expirationInput, collapseInput, apnsIdInput, payloadArea, jwtArea]) {
      control.addEventListener('input', validateSoon);
    }
    prioritySelect.addEventListener('change', validateSoon);
    jwtArea.addEventListener('input', refreshCurl);
    for (const radio of [authMint, authPaste]) radio.addEventListener('change', () => { showAuthFields(); refreshCurl(); });
    keySelect.addEventListener('change', refreshCurl);
    curlButton.addEventListener('click', async () => {
      refreshCurl();
      toast((await copyText(curlText.textContent)) ? 'curl command copied' : 'Select the command below to copy it', 'success');
    });

    const form = h('form', { class: 'send-form', onsubmit: send, 'aria-labelledby': 'send-title' },
      h('div', { class: 'send-grid' },
        h('div', { class: 'stack' },
          field('Device', deviceSelect), tokenField,
          field('Topic (apns-topic)', topicInput, 'The app’s bundle ID, with the suffix its push type needs.'), topicList,
          h('div', { class: 'send-pair' }, field('Push type (apns-push-type)', typeSelect), field('Priority (apns-priority)', prioritySelect)),
          h('div', { class: 'send-pair' },
            field('Expiration (apns-expiration)', expirationInput, 'Seconds since 1970; 0: deliver only now.'),
            field('Collapse id (apns-collapse-id)', collapseInput)),
          field('apns-id (optional)', apnsIdInput),
          h('fieldset', { class: 'send-auth' }, h('legend', {}, 'Authorization'),
            h('div', { class: 'row' }, authMint, h('label', { for: authMint.id }, 'Minted by the sandbox'),
              authPaste, h('label', { for: authPaste.id }, 'Paste a JWT')),
            keyField, jwtField)),
        h('div', { class: 'stack' },
          field('Payload', payloadArea), validation,
          h('div', { class: 'row' }, sendButton, curlButton),
          answer)),
      h('h2', {}, 'As curl'), curlText);

    main.append(h('h1', { id: 'send-title' }, 'Send a push'),
      h('p', { class: 'muted' }, 'Through the real provider endpoint (POST /3/device/<token>), as your backend would send it.'), form);
    showDeviceFields();
    refreshTopics(!!wantedTopic);
    if (wantedTopic) topicInput.value = wantedTopic;
    await loadKeys();
    validate();
    return {};
  },
};
