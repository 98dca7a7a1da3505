// APNs Sandbox dashboard — Apps & devices (#/manage): create and delete devices, install and uninstall apps,
// rotate a token (POST/PATCH/DELETE /api/v1/devices…); create apps and edit an app's service extension settings
// and strings (GET/POST /api/v1/apps, PATCH /api/v1/apps/{bundleId}) in JSON editors that show the server's error.
import { h, replace, field, toast, errorBox, shortToken } from './ui.js';

const DEVICE_EVENTS = /^(device\.|app\.|sandbox\.reset)/;

function errorText(error) {
  const status = error && error.status ? ` (HTTP ${error.status}${error.code ? `, ${error.code}` : ''})` : '';
  return `${(error && error.message) || error}${status}`;
}

/** Parses a JSON editor's text; throws an Error that says where. */
function parseJSON(text, name) {
  try { return JSON.parse(text); } catch (error) { throw new Error(`${name}: not JSON (${error.message})`); }
}

export default {
  title: 'Apps & devices',
  async mount(main, context) {
    let apps = [];
    let devices = [];
    const problem = h('div', { 'aria-live': 'polite' });
    const deviceList = h('div', { class: 'manage-devices', 'aria-live': 'polite' });
    const appList = h('div', { class: 'manage-apps' });
    const appOptions = h('datalist', { id: 'manage-bundles' });

    // ---- create a device ----
    const newToken = h('input', { name: 'token', class: 'mono', spellcheck: 'false', autocomplete: 'off', placeholder: 'generated when empty' });
    const newEnvironment = h('select', { name: 'environment' }, h('option', { value: 'development' }, 'development'),
      h('option', { value: 'production' }, 'production'));
    const newLocale = h('input', { name: 'locale', value: 'en_US', spellcheck: 'false' });
    const newApps = h('input', { name: 'apps', spellcheck: 'false', list: 'manage-bundles', placeholder: 'com.example.app, …' });
    const newDeviceResult = h('div', { 'aria-live': 'polite' });
    const deviceForm = h('form', { class: 'card stack manage-new-device', 'aria-labelledby': 'manage-new-device-title' },
      h('h3', { id: 'manage-new-device-title' }, 'New device'),
      field('Token (hex)', newToken), h('div', { class: 'manage-pair' }, field('Environment', newEnvironment), field('Locale', newLocale)),
      field('Apps', newApps, 'Bundle IDs, comma separated'),
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'button primary' }, 'Create device')), newDeviceResult);
    deviceForm.addEventListener('submit', async (event) => {
      event.preventDefault();
      const body = { environment: newEnvironment.value, locale: newLocale.value.trim() || 'en_US',
        apps: newApps.value.split(/[\s,]+/).filter(Boolean) };
      if (newToken.value.trim()) body.token = newToken.value.trim();
      try {
        const device = await context.api('POST', '/api/v1/devices', body);
        replace(newDeviceResult, h('p', { class: 'ok', role: 'status' }, `Created ${device.token}`));
        newToken.value = '';
        await loadDevices();
      } catch (error) { replace(newDeviceResult, errorBox(error)); }
    });

    // ---- create an app ----
    const newBundle = h('input', { name: 'bundleId', spellcheck: 'false', placeholder: 'com.example.other', required: true });
    const newTeam = h('input', { name: 'teamId', spellcheck: 'false', placeholder: 'DEMOTEAM01', required: true });
    const newAppResult = h('div', { 'aria-live': 'polite' });
    const appForm = h('form', { class: 'card stack manage-new-app', 'aria-labelledby': 'manage-new-app-title' },
      h('h3', { id: 'manage-new-app-title' }, 'New app'),
      h('div', { class: 'manage-pair' }, field('Bundle ID', newBundle), field('Team ID', newTeam)),
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'button primary' }, 'Create app')), newAppResult);
    appForm.addEventListener('submit', async (event) => {
      event.preventDefault();
      try {
        const app = await context.api('POST', '/api/v1/apps', { bundleId: newBundle.value.trim(), teamId: newTeam.value.trim() });
        replace(newAppResult, h('p', { class: 'ok', role: 'status' }, `Created ${app.bundleId}`));
        newBundle.value = '';
        await loadApps();
      } catch (error) { replace(newAppResult, errorBox(error)); }
    });

    async function patchDevice(device, body, done) {
      try {
        await context.api('PATCH', `/api/v1/devices/${encodeURIComponent(device.token)}`, body);
        toast(done, 'success');
        await loadDevices();
      } catch (error) { toast(errorText(error), 'error'); }
    }

    function drawDevice(device) {
      const installed = (device.apps || []).map((app) => app.bundleId);
      const install = h('input', { name: 'install', list: 'manage-bundles', spellcheck: 'false', placeholder: 'bundle ID' });
      const installForm = h('form', { class: 'row manage-install' }, field('Install an app', install),
        h('button', { type: 'submit', class: 'button' }, 'Install'));
      installForm.addEventListener('submit', (event) => {
        event.preventDefault();
        if (install.value.trim()) patchDevice(device, { installApps: [install.value.trim()] }, `Installed ${install.value.trim()}`);
      });
      return h('article', { class: 'card manage-device', dataset: { token: device.token }, 'aria-label': `Device ${shortToken(device.token)}` },
        h('h3', { class: 'mono', title: device.token }, shortToken(device.token)),
        h('p', { class: 'muted' }, `${device.environment} · ${device.locale} · ${device.online ? 'online' : 'offline'}${device.autoRegistered ? ' · auto-registered' : ''}`),
        h('ul', { class: 'manage-app-list' }, installed.length ? installed.map((bundle) => h('li', {}, h('span', {}, bundle), ' ',
          h('button', { type: 'button', class: 'button quiet', 'aria-label': `Uninstall ${bundle} from ${shortToken(device.token)}`,
            onclick: () => patchDevice(device, { uninstallApps: [bundle] }, `Uninstalled ${bundle}`) }, 'Uninstall')))
          : h('li', { class: 'muted' }, 'No apps')),
        installForm,
        h('div', { class: 'row' },
          h('a', { class: 'button', href: `#/send?device=${encodeURIComponent(device.token)}${installed[0] ? `&topic=${encodeURIComponent(installed[0])}` : ''}` }, 'Send a push'),
          h('button', { type: 'button', class: 'button', onclick: () => patchDevice(device, { rotateToken: true }, 'Token rotated') }, 'Rotate token'),
          h('button', { type: 'button', class: 'button danger', onclick: async () => {
            if (!confirm(`Delete device ${device.token}?`)) return;
            try {
              await context.api('DELETE', `/api/v1/devices/${encodeURIComponent(device.token)}`);
              toast('Device deleted', 'success');
              await loadDevices();
            } catch (error) { toast(errorText(error), 'error'); }
          } }, 'Delete')));
    }

    function drawApp(app) {
      const extension = h('textarea', { rows: '6', spellcheck: 'false', name: 'serviceExtension' });
      extension.value = JSON.stringify(app.serviceExtension ?? null, null, 2);
      const strings = h('textarea', { rows: '6', spellcheck: 'false', name: 'strings' });
      strings.value = JSON.stringify(app.strings || {}, null, 2);
      const result = h('div', { class: 'manage-app-result', 'aria-live': 'polite' });
      const form = h('form', { class: 'stack' },
        field('Service extension (JSON, null for none)', extension, 'e.g. {"executable": "…", "budgetMilliseconds": 30000}'),
        field('Strings (JSON: locale → key → text)', strings),
        h('div', { class: 'row' }, h('button', { type: 'submit', class: 'button primary' }, 'Save')), result);
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        extension.removeAttribute('aria-invalid');
        strings.removeAttribute('aria-invalid');
        let body;
        try {
          body = { serviceExtension: parseJSON(extension.value, 'serviceExtension') };
          try { body.strings = parseJSON(strings.value, 'strings'); } catch (error) { strings.setAttribute('aria-invalid', 'true'); throw error; }
        } catch (error) {
          if (!body) extension.setAttribute('aria-invalid', 'true');
          replace(result, errorBox(error));
          return;
        }
        try {
          const saved = await context.api('PATCH', `/api/v1/apps/${encodeURIComponent(app.bundleId)}`, body);
          replace(result, h('p', { class: 'ok', role: 'status' }, 'Saved.'));
          extension.value = JSON.stringify(saved.serviceExtension ?? null, null, 2);
          strings.value = JSON.stringify(saved.strings || {}, null, 2);
        } catch (error) {
          // The server's message names the field (serviceExtension.… or strings.…): mark that editor.
          const text = `${error.message} ${error.body || ''}`;
          if (/strings/.test(text)) strings.setAttribute('aria-invalid', 'true');
          else extension.setAttribute('aria-invalid', 'true');
          replace(result, errorBox(error));
        }
      });
      return h('details', { class: 'card manage-app', dataset: { bundleId: app.bundleId } },
        h('summary', {}, h('strong', {}, app.bundleId), h('span', { class: 'muted' }, ` · team ${app.teamId}${app.serviceExtension ? ' · service extension' : ''}`)),
        form);
    }

    async function loadDevices() {
      try {
        devices = (await context.api('GET', '/api/v1/devices?limit=500')).devices || [];
        replace(deviceList, deviceForm, devices.map(drawDevice));
      } catch (error) { replace(deviceList, errorBox(error)); }
    }
    async function loadApps() {
      try {
        apps = (await context.api('GET', '/api/v1/apps')).apps || [];
        replace(appOptions, apps.map((app) => h('option', { value: app.bundleId })));
        replace(appList, appForm, apps.map(drawApp));
        if (!newTeam.value && apps[0]) newTeam.value = apps[0].teamId;
      } catch (error) { replace(appList, errorBox(error)); }
    }

    main.append(h('div', { class: 'manage' }, h('h1', {}, 'Apps & devices'), problem, appOptions,
      h('section', { 'aria-labelledby': 'manage-devices-title' }, h('h2', { id: 'manage-devices-title' }, 'Devices'),
        deviceList),
      h('section', { 'aria-labelledby': 'manage-apps-title' }, h('h2', { id: 'manage-apps-title' }, 'Apps'),
        appList)));
    await Promise.all([loadApps(), loadDevices()]);

    let timer = null;
    return {
      onEvent(event) {
        if (!DEVICE_EVENTS.test(event.type)) return;
        clearTimeout(timer);
        timer = setTimeout(() => { if (!main.contains(document.activeElement) || document.activeElement === main) loadDevices(); }, 300);
      },
      unmount() { clearTimeout(timer); },
    };
  },
};
