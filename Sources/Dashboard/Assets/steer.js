// APNs Sandbox dashboard — Steering (#/steer): fault rules (GET/POST/DELETE /api/v1/faults…), the clock
// (/api/v1/clock and its freeze/advance/set/resume/real), reset (POST /api/v1/reset, all or one scope, after a
// confirm step), and snapshots (GET /api/v1/snapshot as a file, POST /api/v1/snapshot from a chosen file).
import { h, replace, field, toast, errorBox, dateTime } from './ui.js';

const PRESETS = {
  outage: { label: 'Outage — 503 ServiceUnavailable for a while', body: (value) => ({ preset: 'outage', durationSeconds: Number(value) || 60 }), input: 'Seconds', value: '60' },
  throttle: { label: 'Throttle — 429 TooManyRequests beyond a rate', body: (value) => ({ preset: 'throttle', perSecond: Number(value) || 1 }), input: 'Pushes per second', value: '1' },
  flaky: { label: 'Flaky — 500 InternalServerError for a share', body: (value) => ({ preset: 'flaky', percent: Number(value) || 50 }), input: 'Percent', value: '50' },
};

function errorText(error) {
  const status = error && error.status ? ` (HTTP ${error.status}${error.code ? `, ${error.code}` : ''})` : '';
  return `${(error && error.message) || error}${status}`;
}

export default {
  title: 'Steering',
  async mount(main, context) {
    // ---- faults ----
    const faultBody = h('tbody');
    const faultSummary = h('p', { class: 'muted', role: 'status', 'aria-live': 'polite' });
    const presetSelect = h('select', { name: 'preset' }, Object.entries(PRESETS).map(([name, preset]) => h('option', { value: name }, preset.label)));
    const presetValue = h('input', { name: 'presetValue', inputmode: 'decimal', value: PRESETS.outage.value });
    const presetValueField = field(PRESETS.outage.input, presetValue);
    const presetTopic = h('input', { name: 'presetTopic', spellcheck: 'false', placeholder: 'every topic' });
    presetSelect.addEventListener('change', () => {
      const preset = PRESETS[presetSelect.value];
      presetValueField.querySelector('label').textContent = preset.input;
      presetValue.value = preset.value;
    });
    const presetResult = h('div', { 'aria-live': 'polite' });
    const presetForm = h('form', { class: 'card stack steer-preset', 'aria-labelledby': 'steer-preset-title' },
      h('h3', { id: 'steer-preset-title' }, 'Add from a preset'), field('Preset', presetSelect), presetValueField,
      field('Only this topic', presetTopic),
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'button primary' }, 'Add fault')), presetResult);
    presetForm.addEventListener('submit', async (event) => {
      event.preventDefault();
      const body = PRESETS[presetSelect.value].body(presetValue.value);
      if (presetTopic.value.trim()) body.match = { topic: presetTopic.value.trim() };
      await addFault(body, presetResult);
    });
    const ruleArea = h('textarea', { name: 'rule', rows: '7', spellcheck: 'false' });
    ruleArea.value = JSON.stringify({ name: 'Bad token for one device', match: { tokenPrefix: 'dead' },
      action: { reject: { status: 400, reason: 'BadDeviceToken' } }, count: 1 }, null, 2);
    const ruleResult = h('div', { 'aria-live': 'polite' });
    const ruleForm = h('form', { class: 'card stack steer-rule', 'aria-labelledby': 'steer-rule-title' },
      h('h3', { id: 'steer-rule-title' }, 'Add a JSON rule'), field('Rule', ruleArea, 'As POST /api/v1/faults takes it (docs/faults.md)'),
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'button primary' }, 'Add rule')), ruleResult);
    ruleForm.addEventListener('submit', async (event) => {
      event.preventDefault();
      let body;
      try { body = JSON.parse(ruleArea.value); } catch (error) {
        ruleArea.setAttribute('aria-invalid', 'true');
        replace(ruleResult, errorBox(`Not JSON: ${error.message}`));
        return;
      }
      ruleArea.removeAttribute('aria-invalid');
      await addFault(body, ruleResult);
    });

    async function addFault(body, result) {
      try {
        const rule = await context.api('POST', '/api/v1/faults', body);
        replace(result, h('p', { class: 'ok', role: 'status' }, `Added ${rule.id || 'the rule'}.`));
        await loadFaults();
      } catch (error) { replace(result, errorBox(error)); }
    }

    async function loadFaults() {
      try {
        const list = await context.api('GET', '/api/v1/faults');
        const rules = list.rules || [];
        replace(faultBody, rules.length ? rules.map((rule) => h('tr', { dataset: { id: rule.id } },
          h('td', { 'data-label': 'Rule' }, h('strong', {}, rule.name || rule.id), h('div', { class: 'muted mono' }, rule.id)),
          h('td', { 'data-label': 'Match' }, h('code', {}, JSON.stringify(rule.match || {}))),
          h('td', { 'data-label': 'Action' }, h('code', {}, JSON.stringify(rule.action || {})),
            rule.probability < 1 ? h('div', { class: 'muted' }, `${Math.round(rule.probability * 1000) / 10} % of matches`) : null),
          h('td', { 'data-label': 'State' }, h('span', { class: `badge ${rule.state === 'active' ? 'warn' : ''}` }, rule.state)),
          h('td', { 'data-label': 'Matched' }, String(rule.matched)),
          h('td', { 'data-label': 'Applied' }, String(rule.applied)),
          h('td', { 'data-label': 'Remaining' }, rule.remaining === undefined || rule.remaining === null ? '∞' : String(rule.remaining)),
          h('td', {}, h('button', { type: 'button', class: 'button danger', 'aria-label': `Delete fault ${rule.name || rule.id}`,
            onclick: async () => {
              try { await context.api('DELETE', `/api/v1/faults/${encodeURIComponent(rule.id)}`); await loadFaults(); } catch (error) { toast(errorText(error), 'error'); }
            } }, 'Delete'))))
          : h('tr', {}, h('td', { colspan: '8', class: 'muted' }, 'No fault rules: every push is answered normally.')));
        faultSummary.textContent = `${rules.length} rule${rules.length === 1 ? '' : 's'}, ${list.totals ? list.totals.applied : 0} applied in all.`;
      } catch (error) { replace(faultBody, h('tr', {}, h('td', { colspan: '8' }, errorBox(error)))); }
    }
    const deleteAll = h('button', { type: 'button', class: 'button danger', onclick: async () => {
      if (!confirm('Delete every fault rule?')) return;
      try { await context.api('DELETE', '/api/v1/faults'); toast('Fault rules deleted', 'success'); await loadFaults(); } catch (error) { toast(errorText(error), 'error'); }
    } }, 'Delete all');

    // ---- clock ----
    const clockState = h('p', { class: 'steer-clock-state', role: 'status', 'aria-live': 'polite' });
    const clockProblem = h('div', { 'aria-live': 'polite' });
    const advanceSeconds = h('input', { name: 'advanceSeconds', inputmode: 'decimal', value: '60' });
    const setAt = h('input', { type: 'datetime-local', name: 'setAt', step: '1' });
    const clockButtons = [];
    const clockButton = (label, action, body) => {
      const button = h('button', { type: 'button', class: 'button', onclick: () => clockCall(action, body && body()) }, label);
      clockButtons.push(button);
      return button;
    };
    async function clockCall(action, body) {
      try {
        const state = await context.api('POST', `/api/v1/clock/${action}`, body === undefined ? {} : body);
        context.setClock(state);
        drawClock(state);
        replace(clockProblem);
      } catch (error) { replace(clockProblem, errorBox(error)); }
    }
    function drawClock(state) {
      clockState.textContent = `${state.mode === 'real' ? 'Real time' : state.mode === 'frozen' ? 'Frozen' : 'Running'}: ${dateTime(state.nowMilliseconds)}${state.offsetMilliseconds ? ` (offset ${Math.round(state.offsetMilliseconds / 1000)} s)` : ''}`;
      for (const button of clockButtons) button.disabled = !state.virtual;
      advanceSeconds.disabled = !state.virtual;
      setAt.disabled = !state.virtual;
      clockReason.hidden = state.virtual;
    }
    const clockReason = h('p', { class: 'muted steer-clock-reason' },
      'The clock cannot be steered: this sandbox runs with "clock": {"virtual": false} in its configuration. Start it with "virtual": true to freeze, advance or set it.');
    const advanceButton = clockButton('Advance', 'advance', () => ({ seconds: Number(advanceSeconds.value) || 0 }));
    const setButton = clockButton('Set', 'set', () => ({ milliseconds: new Date(setAt.value).getTime() }));

    // ---- reset ----
    const resetScope = h('select', { name: 'resetScope' }, h('option', { value: '' }, 'Everything'),
      h('option', { value: 'deviceToken' }, 'One device'), h('option', { value: 'bundleId' }, 'One app'), h('option', { value: 'teamId' }, 'One team'));
    const resetValue = h('input', { name: 'resetValue', spellcheck: 'false' });
    const resetValueField = field('Which', resetValue);
    resetValueField.hidden = true;
    resetScope.addEventListener('change', () => { resetValueField.hidden = !resetScope.value; });
    const resetConfirm = h('div', { class: 'steer-confirm', hidden: true });
    const resetResult = h('div', { 'aria-live': 'polite' });
    const resetForm = h('form', { class: 'card stack', 'aria-labelledby': 'steer-reset-title' },
      h('h2', { id: 'steer-reset-title' }, 'Reset'), field('Scope', resetScope), resetValueField,
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'button danger' }, 'Reset…')), resetConfirm, resetResult);
    resetForm.addEventListener('submit', (event) => {
      event.preventDefault();
      const what = resetScope.value ? `${resetScope.options[resetScope.selectedIndex].text.toLowerCase()} (${resetValue.value.trim()})` : 'everything: notifications, events, devices and apps back to the configuration, faults, the clock';
      const yes = h('button', { type: 'button', class: 'button danger', onclick: doReset }, 'Yes, reset');
      replace(resetConfirm, h('p', { role: 'alert' }, `Reset ${what}?`),
        h('div', { class: 'row' }, yes, h('button', { type: 'button', class: 'button', onclick: () => { resetConfirm.hidden = true; } }, 'Cancel')));
      resetConfirm.hidden = false;
      yes.focus();
    });
    async function doReset() {
      resetConfirm.hidden = true;
      const body = resetScope.value ? { [resetScope.value]: resetValue.value.trim() } : {};
      try {
        const answer = (await context.api('POST', '/api/v1/reset', body)).reset || {};
        replace(resetResult, h('p', { class: 'ok', role: 'status' },
          `Reset (${answer.scope}): ${answer.notificationsRemoved} notifications, ${answer.eventsRemoved} events, ${answer.devicesRemoved} devices removed; ${answer.devicesRestored} devices restored.`));
        await Promise.all([loadFaults(), loadClock()]);
      } catch (error) { replace(resetResult, errorBox(error)); }
    }

    // ---- snapshot ----
    const withNotifications = h('input', { type: 'checkbox', name: 'snapshotNotifications', checked: true, id: 'steer-snapshot-notifications' });
    const snapshotFile = h('input', { type: 'file', name: 'snapshotFile', accept: 'application/json,.json' });
    const snapshotResult = h('div', { 'aria-live': 'polite' });
    async function download() {
      try {
        const snapshot = await context.api('GET', `/api/v1/snapshot?notifications=${withNotifications.checked}`);
        const url = URL.createObjectURL(new Blob([JSON.stringify(snapshot, null, 2)], { type: 'application/json' }));
        const link = h('a', { href: url, download: `apns-sandbox-snapshot-${new Date(context.now()).toISOString().replace(/[:.]/g, '-')}.json` });
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
        replace(snapshotResult, h('p', { class: 'ok', role: 'status' }, 'Snapshot downloaded.'));
      } catch (error) { replace(snapshotResult, errorBox(error)); }
    }
    async function restore(event) {
      event.preventDefault();
      const file = snapshotFile.files && snapshotFile.files[0];
      if (!file) { replace(snapshotResult, errorBox('Choose a snapshot file first.')); return; }
      if (!confirm(`Restore ${file.name}? The sandbox's state is replaced by it.`)) return;
      try {
        const answer = await context.api('POST', '/api/v1/snapshot', await file.text());
        replace(snapshotResult, h('p', { class: 'ok', role: 'status' }, `Restored: ${JSON.stringify(answer.restored || answer)}`));
        await Promise.all([loadFaults(), loadClock()]);
      } catch (error) { replace(snapshotResult, errorBox(error)); }
    }
    const snapshotForm = h('form', { class: 'card stack', 'aria-labelledby': 'steer-snapshot-title', onsubmit: restore },
      h('h2', { id: 'steer-snapshot-title' }, 'Snapshot'),
      h('div', { class: 'row' }, withNotifications, h('label', { for: withNotifications.id }, 'Include notifications')),
      h('div', { class: 'row' }, h('button', { type: 'button', class: 'button', onclick: download }, 'Download snapshot')),
      field('Restore from a file', snapshotFile),
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'button danger' }, 'Restore')), snapshotResult);

    async function loadClock() {
      try { const state = await context.api('GET', '/api/v1/clock'); context.setClock(state); drawClock(state); } catch (error) { replace(clockProblem, errorBox(error)); }
    }

    main.append(h('div', { class: 'steer' }, h('h1', {}, 'Steering'),
      h('section', { class: 'steer-faults', 'aria-labelledby': 'steer-faults-title' },
        h('div', { class: 'row steer-heading' }, h('h2', { id: 'steer-faults-title' }, 'Faults'), deleteAll), faultSummary,
        h('div', { class: 'table-scroll' }, h('table', { class: 'steer-table' },
          h('thead', {}, h('tr', {}, ['Rule', 'Match', 'Action', 'State', 'Matched', 'Applied', 'Remaining', ''].map((label) => h('th', { scope: 'col' }, label)))),
          faultBody)),
        h('div', { class: 'steer-add' }, presetForm, ruleForm)),
      h('div', { class: 'steer-side' },
        h('section', { class: 'card stack', 'aria-labelledby': 'steer-clock-title' }, h('h2', { id: 'steer-clock-title' }, 'Clock'), clockState, clockReason,
          h('div', { class: 'row' }, clockButton('Freeze', 'freeze'), clockButton('Resume', 'resume'), clockButton('Real time', 'real')),
          h('div', { class: 'row steer-inline' }, field('Advance by (seconds)', advanceSeconds), advanceButton),
          h('div', { class: 'row steer-inline' }, field('Set to', setAt), setButton), clockProblem),
        resetForm, snapshotForm)));
    await Promise.all([loadFaults(), loadClock()]);
    return {
      onEvent(event) {
        if (event.type === 'push.rejected' || event.type.startsWith('fault.') || event.type === 'sandbox.reset') loadFaultsSoon();
        if (event.type === 'clock.changed' && event.data) drawClock({ ...context.clock(), ...event.data, virtual: true });
      },
    };
    function loadFaultsSoon() { clearTimeout(loadFaultsSoon.timer); loadFaultsSoon.timer = setTimeout(loadFaults, 300); }
  },
};
