"""The dashboard under load in a real browser (issue #15): with 10,000 notifications in the store a page load
draws the Devices view and the Inbox within 300 ms, and 1,000 live notifications a second do not freeze the page.

The store is filled through the provider endpoint by a real HTTP/2 client (h2load, nghttp2-client, over h2c).
"First render" of a view is the first frame after the view drew its data: every lock screen's notification
list (Devices) or the Inbox's first page of rows. A script installed before the page's own
(Page.addScriptToEvaluateOnNewDocument) watches the DOM with a MutationObserver, notes `performance.now()`
(milliseconds since navigation start) when the data is in the DOM, and again in a task queued from the next
animation frame callback, i.e. once that frame has been produced; the latter is the figure.
Under load (2 shared cores) each view is loaded three times and the best counts; all three are printed.

    python3 Tests/Python/dashboard_load.py --base http://127.0.0.1:8080 --provider-token JWT [--scenario NAME]
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dashboard_harness import admin, main  # noqa: E402

STORE_SIZE = 10_000
DEVICES = 4
LOADS = 3
BUDGET_MS = 300        # the target: reported (scripts/bench-dashboard measures it on the release build)
GUARD_MS = 1500        # asserted: the suite's debug server on 2 shared cores varies too much for 300 ms
LIVE_RATE = 1000       # pushes a second
LIVE_SECONDS = 5
MAX_FRAME_GAP_MS = 1000

RENDER_PROBE = """
(() => {
  const marks = {};
  window.__apnsRender = marks;
  const drawn = {
    devices: () => {
      const lists = document.querySelectorAll('main[data-view="devices"] .phone-card .phone-notifications');
      return lists.length > 0 && [...lists].every((list) => list.firstElementChild);
    },
    inbox: () => Boolean(document.querySelector('main[data-view="inbox"] tbody tr.inbox-row')),
  };
  const observer = new MutationObserver(() => {
    for (const [view, isDrawn] of Object.entries(drawn)) {
      if (marks[view] || !isDrawn()) continue;
      const mark = marks[view] = { dom: performance.now() };
      requestAnimationFrame(() => setTimeout(() => { mark.frame = performance.now(); }, 0));
      observer.disconnect();
    }
  });
  observer.observe(document, { childList: true, subtree: true });
})();
"""

FRAME_PROBE = """
const probe = window.__apnsFrames = { last: performance.now(), maxGap: 0, frames: 0, longTasks: 0, longTaskMs: 0,
  longestTaskMs: 0, running: true };
function frame(now) {
  probe.maxGap = Math.max(probe.maxGap, now - probe.last);
  probe.last = now;
  probe.frames += 1;
  if (probe.running) requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
probe.observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    probe.longTasks += 1;
    probe.longTaskMs += entry.duration;
    probe.longestTaskMs = Math.max(probe.longestTaskMs, entry.duration);
  }
});
probe.observer.observe({ type: 'longtask' });
"""


def new_device(options):
    token = uuid.uuid4().hex + uuid.uuid4().hex
    admin(options, 'POST', '/api/v1/devices', {'token': token, 'online': True, 'apps': [options.topic]})
    return token


def h2load(options, tokens, count, payload, extra=()):
    """Pushes `count` alerts round robin to `tokens` with h2load over h2c; returns its summary lines."""
    with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as file:
        json.dump(payload, file)
    try:
        result = subprocess.run([
            'h2load', '-n', str(count), '-c', str(min(4, count)), '-m', '50', '-d', file.name,
            '-H', f'authorization: bearer {options.provider_token}', '-H', f'apns-topic: {options.topic}',
            '-H', 'apns-push-type: alert', '-H', 'content-type: application/json', *extra,
            *[f'{options.base}/3/device/{token}' for token in tokens],
        ], capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(file.name)
    lines = [line for line in result.stdout.splitlines() if line.startswith(('finished in', 'requests:', 'status codes:'))]
    assert result.returncode == 0 and f'{count} 2xx' in result.stdout, f'h2load: {result.stdout}{result.stderr}'
    return lines


def total(options, status):
    return admin(options, 'GET', f'/api/v1/notifications?status={status}&limit=1')['total']


def wait_displayed(options, count, timeout):
    deadline = time.monotonic() + timeout
    while (shown := total(options, 'displayed')) < count:
        assert time.monotonic() < deadline, f'only {shown} of {count} displayed after {timeout} s'
        time.sleep(0.2)


def load_average():
    with open('/proc/loadavg') as file:
        return ' '.join(file.read().split()[:3])


def first_render(browser, route, view):
    """Loads the page at `route` and returns (ms to the first frame with the view's data, ms to its DOM)."""
    browser.driver.get('about:blank')  # a real page load each time, not a hash change
    browser.driver.get(f'{browser.base}/{route}')
    marks = browser.wait(lambda d: d.execute_script(
        'const m = window.__apnsRender && window.__apnsRender[arguments[0]]; return m && m.frame ? m : null', view),
        20, f'the {view} view drawn')
    return marks['frame'], marks['dom']


def fill_store(options):
    """10,000 notifications on four devices (once: the second scenario finds them); returns a token."""
    known = admin(options, 'GET', '/api/v1/devices?limit=1000')['devices']
    if total(options, 'displayed') >= STORE_SIZE:
        return known[0]['token']
    tokens = [new_device(options) for _ in range(DEVICES)]
    payload = {'aps': {'alert': {'title': 'Load test', 'body': 'One of ten thousand notifications in the store.'}}}
    started = time.monotonic()
    summary = h2load(options, tokens, STORE_SIZE, payload)
    wait_displayed(options, STORE_SIZE, 60)
    print(f'# filled {STORE_SIZE} notifications on {DEVICES} devices in {time.monotonic() - started:.1f} s: '
          + ' | '.join(summary), flush=True)
    began = time.monotonic()
    center = admin(options, 'GET', f'/api/v1/devices/{tokens[0]}/notification-center?limit=200')
    print(f'# GET notification-center?limit=200 of one device ({center["total"]} notifications) took '
          f'{(time.monotonic() - began) * 1000:.0f} ms outside the browser', flush=True)
    return tokens[0]


def measure_first_render(browser, options, route, view):
    fill_store(options)
    assert total(options, 'displayed') >= STORE_SIZE
    browser.driver.execute_cdp_cmd('Page.addScriptToEvaluateOnNewDocument', {'source': RENDER_PROBE})
    runs = [first_render(browser, route, view) for _ in range(LOADS)]
    frames = [round(frame) for frame, _ in runs]
    doms = [round(dom) for _, dom in runs]
    print(f'# first render {view} with {STORE_SIZE} in the store: best {min(frames)} ms, loads {frames} ms '
          f'(data in the DOM {doms} ms), load average {load_average()}; '
          f'{"within" if min(frames) < BUDGET_MS else "OVER"} the {BUDGET_MS} ms target', flush=True)
    assert min(frames) < GUARD_MS, f'{view}: first render {frames} ms, guard {GUARD_MS} ms'


def scenario_first_render_devices_with_10k(browser, options):
    measure_first_render(browser, options, '#/devices', 'devices')
    assert len(browser.all('.phone-card')) >= DEVICES and browser.all('.phone-card .bubble')
    # Each lock screen fetched only its newest notifications and says how many it left out.
    for card in browser.all('.phone-card'):
        token = card.get_attribute('data-token')
        center = admin(options, 'GET', f'/api/v1/devices/{token}/notification-center?limit=1')
        drawn = len(card.find_elements('css selector', '.bubble'))
        if center['total'] > drawn:
            note = card.find_element('css selector', '.phone-notifications > p.phone-empty').text
            assert note.startswith(f'{center["total"] - drawn} older not drawn here'), (note, center['total'], drawn)


def scenario_first_render_inbox_with_10k(browser, options):
    measure_first_render(browser, options, '#/inbox', 'inbox')
    assert len(browser.all('tbody tr.inbox-row')) == 50


def scenario_live_1000_a_second(browser, options):
    token = new_device(options)
    browser.open('#/devices')
    browser.wait_css(f'.phone-card[data-token="{token}"] .phone-empty')
    browser.wait(lambda d: browser.first('#connection').get_attribute('data-state') == 'live', 10, 'the stream live')
    browser.driver.execute_script(FRAME_PROBE)
    payload = {'aps': {'alert': {'title': 'Burst', 'body': 'A thousand a second.'}}}
    count = LIVE_RATE * LIVE_SECONDS
    started = time.monotonic()
    # --rps is per client: 4 clients × 250 = 1,000 requests a second.
    summary = h2load(options, [token], count, payload, extra=('--rps', str(LIVE_RATE // 4)))
    burst = time.monotonic() - started
    last = f'Last of the burst {uuid.uuid4().hex[:8]}'
    h2load(options, [token], 1, {'aps': {'alert': {'title': last}}})
    sent = time.monotonic()
    browser.wait(lambda d: d.execute_script(
        'return [...document.querySelectorAll(arguments[0])].some((e) => e.textContent.includes(arguments[1]))',
        f'.phone-card[data-token="{token}"] .bubble', last), 10, 'the last push on the lock screen')
    shown = time.monotonic() - sent
    probe = browser.driver.execute_script(
        'const p = window.__apnsFrames; p.running = false; p.observer.disconnect(); '
        'return {maxGap: p.maxGap, frames: p.frames, longTasks: p.longTasks, longTaskMs: p.longTaskMs, '
        'longestTaskMs: p.longestTaskMs}')
    print(f'# live {count} pushes in {burst:.1f} s ({count / burst:.0f}/s): longest frame gap {probe["maxGap"]:.0f} ms, '
          f'{probe["frames"]} frames, long tasks {probe["longTasks"]} totalling {probe["longTaskMs"]:.0f} ms '
          f'(longest {probe["longestTaskMs"]:.0f} ms), last push shown {shown:.2f} s after its 200, '
          f'load average {load_average()}; ' + ' | '.join(summary), flush=True)
    assert probe['frames'] > 0
    assert probe['maxGap'] < MAX_FRAME_GAP_MS, f'the page froze: a {probe["maxGap"]:.0f} ms gap between frames'
    assert shown < 3, f'the last push took {shown:.1f} s to show'


if __name__ == '__main__':
    main(globals())
