"""The dashboard's working views in a real browser: Send a push (the form, validation as you type, the answer,
copy as curl run with bash), the Inbox (a notification and a rejected push with its reason, filters, live),
Apps & devices (create a device), Steering (a fault preset that rejects the next push).

    python3 Tests/Python/dashboard_views.py --base http://127.0.0.1:8080 --provider-token JWT [--scenario NAME]
"""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dashboard_harness import WAIT, main  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

DEVICE = 'c0' * 32
OTHER = 'c1' * 32


def call(options, method, path, body=None, headers=None):
    """A request from the test itself (not the page): (status, parsed JSON or text)."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(options.base + path, data=data, method=method, headers=headers or {})
    if body is not None and 'content-type' not in {k.lower() for k in (headers or {})}:
        request.add_header('content-type', 'application/json')
    if options.admin_token and not path.startswith('/3/'):
        request.add_header('authorization', f'Bearer {options.admin_token}')
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as answer:
            status, text = answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def push(options, token, topic=None, payload='{"aps":{"alert":{"title":"From the test","body":"Hello"}}}'):
    """A push through the provider endpoint (HTTP/1.1, as the page's fetch sends it)."""
    return call(options, 'POST', f'/3/device/{token}', payload.encode(), {
        'authorization': f'bearer {options.provider_token}', 'apns-topic': topic or options.topic,
        'content-type': 'application/json'})


def ensure_device(options, token):
    status, _ = call(options, 'GET', f'/api/v1/devices/{token}')
    if status == 404:
        status, answer = call(options, 'POST', '/api/v1/devices', {'token': token, 'apps': [options.topic]})
        assert status == 201, (status, answer)


def wait_text(browser, selector, text, timeout=WAIT):
    """Like browser.wait_text, but a row redrawn under it (the live inbox) is looked up again."""
    def found(_):
        for element in browser.all(selector):
            try:
                if text in element.text:
                    return element
            except StaleElementReferenceException:
                return None
        return None
    return browser.wait(found, timeout, f'no {selector} containing {text!r}')


def open_view(browser, options, route):
    """Loads the dashboard at `route`, signing in first when the sandbox asks for its admin token."""
    if getattr(browser, 'signed_in', False) or not options.admin_token:
        browser.open(route)
        return
    browser.driver.get(f'{browser.base}/{route}')
    browser.wait(lambda d: browser.first('#login[open]'), WAIT, 'the sign-in dialog')
    browser.first('#login-token').send_keys(options.admin_token, Keys.ENTER)
    browser.wait(lambda d: not browser.first('#login[open]'), WAIT, 'the dialog to close')
    browser.signed_in = True
    browser.open(route)


def set_value(browser, selector, text):
    element = browser.wait_css(selector)
    element.clear()
    element.send_keys(text)
    return element


def scenario_manage_creates_a_device(browser, options):
    open_view(browser, options, '#/manage')
    browser.wait_css('.manage-new-device')
    set_value(browser, '.manage-new-device input[name="token"]', OTHER)
    set_value(browser, '.manage-new-device input[name="apps"]', options.topic)
    browser.first('.manage-new-device button[type="submit"]').click()
    browser.wait_css(f'.manage-device[data-token="{OTHER}"]')
    status, device = call(options, 'GET', f'/api/v1/devices/{OTHER}')
    assert status == 200, (status, device)
    assert [app['bundleId'] for app in device['apps']] == [options.topic], device
    # A bad token is refused with the server's message, shown in the form.
    set_value(browser, '.manage-new-device input[name="token"]', 'not-hex')
    browser.first('.manage-new-device button[type="submit"]').click()
    error = browser.wait_css('.manage-new-device .error')
    assert 'token' in error.text.lower(), error.text


def scenario_send_from_the_form(browser, options):
    ensure_device(options, DEVICE)
    open_view(browser, options, f'#/send?device={DEVICE}&topic={options.topic}')
    validation = wait_text(browser, '#send-validation', 'Valid')
    assert 'of 4096 bytes' in validation.text, validation.text
    # Validation as you type: a broken payload is marked invalid with the reason, a fixed one valid again.
    payload = set_value(browser, 'textarea[name="payload"]', '{"aps": {"alert": "Hi"}')
    browser.wait(lambda d: browser.first('#send-validation').get_attribute('data-valid') == 'false', WAIT, 'invalid shown')
    assert 'BadPayload' in browser.first('#send-validation').text, browser.first('#send-validation').text
    assert payload.get_attribute('aria-invalid') == 'true'
    set_value(browser, 'textarea[name="payload"]', '{"aps":{"alert":{"title":"From the form","body":"Sent by selenium"}}}')
    browser.wait(lambda d: browser.first('#send-validation').get_attribute('data-valid') == 'true', WAIT, 'valid again')
    if browser.first('#send-auth-paste').is_selected():  # no minting endpoint in this sandbox: paste the JWT
        set_value(browser, 'textarea[name="jwt"]', options.provider_token)
    browser.first('.send-form button[type="submit"]').click()
    result = browser.wait_css('.send-result')
    assert result.get_attribute('data-status') == '200', result.text
    apns_id = browser.first('.send-apns-id').text
    link = browser.first('.send-detail-link').get_attribute('href')
    assert link.endswith(f'#/notifications/{apns_id}?device={DEVICE}'), link
    status, notification = call(options, 'GET', f'/api/v1/notifications/{apns_id}?device={DEVICE}&wait=5')
    assert status == 200, (status, notification)
    assert notification['displayed']['title'] == 'From the form', notification
    assert notification['topic'] == options.topic and notification['pushType'] == 'alert', notification

    # "Copy as curl": the text on the page, run as printed, is accepted too.
    command = browser.first('#send-curl').text
    assert options.admin_token is None or options.admin_token not in command
    assert ('$APNS_SANDBOX_ADMIN_TOKEN' in command) == bool(options.admin_token) or 'provider-tokens' not in command, command
    environment = dict(os.environ, APNS_SANDBOX_ADMIN_TOKEN=options.admin_token or '')
    ran = subprocess.run(['bash', '-c', command], capture_output=True, text=True, timeout=30, env=environment)
    assert ran.returncode == 0, (command, ran.stdout, ran.stderr)
    assert ran.stdout.startswith('HTTP/2 200'), (command, ran.stdout, ran.stderr)


def scenario_inbox_lists_filters_and_goes_live(browser, options):
    ensure_device(options, DEVICE)
    status, _ = push(options, DEVICE, payload='{"aps":{"alert":{"title":"Inbox accepted","body":"one"}}}')
    assert status == 200, status
    status, answer = push(options, DEVICE, topic='com.example.not-installed')
    assert status == 400 and answer['reason'] == 'DeviceTokenNotForTopic', (status, answer)
    status, answer = call(options, 'POST', f'/3/device/{DEVICE}', b'{"aps":{"alert":"x"}}', {
        'authorization': 'bearer not-a-jwt', 'apns-topic': options.topic, 'content-type': 'application/json'})
    assert status == 403 and answer == {'reason': 'InvalidProviderToken'}, (status, answer)
    open_view(browser, options, '#/inbox')
    wait_text(browser, '.inbox-row.notification', 'Inbox accepted')
    rejected = wait_text(browser, '.inbox-row.rejected', 'DeviceTokenNotForTopic')
    assert 'Rejected 400' in rejected.text, rejected.text
    # A refused token: the reason APNs answers, and beside it why (the sandbox's cause).
    refused = wait_text(browser, '.inbox-row.rejected', 'InvalidProviderToken')
    cause = refused.find_element(By.CSS_SELECTOR, '.inbox-cause')
    assert cause.text == 'not three base64url parts (header.claims.signature)', cause.text
    # The accepted row links to its detail.
    href = browser.wait(lambda d: browser.driver.execute_script(
        "const row = [...document.querySelectorAll('.inbox-row.notification')].find((r) => r.textContent.includes('Inbox accepted'));"
        "return row && row.querySelector('a').href"), WAIT, 'the detail link')
    assert f'?device={DEVICE}' in href and '#/notifications/' in href, href

    # A filter narrows it, and lands in the URL hash (so the view can be linked).
    Select(browser.first('select[name="show"]')).select_by_value('rejected')
    browser.wait(lambda d: not browser.all('.inbox-row.notification'), WAIT, 'notifications filtered out')
    assert browser.all('.inbox-row.rejected')
    assert 'show=rejected' in browser.driver.execute_script('return location.hash')
    open_view(browser, options, '#/inbox?show=notifications')
    wait_text(browser, '.inbox-row.notification', 'Inbox accepted')
    assert not browser.all('.inbox-row.rejected')
    assert Select(browser.first('select[name="show"]')).first_selected_option.get_attribute('value') == 'notifications'

    # The device filter goes to both queries: another device's inbox is empty.
    set_value(browser, 'input[name="device"]', OTHER)
    wait_text(browser, '.inbox-table tbody', 'Nothing matches', timeout=WAIT)
    assert f'device={OTHER}' in browser.driver.execute_script('return location.hash')
    set_value(browser, 'input[name="device"]', DEVICE)
    wait_text(browser, '.inbox-row.notification', 'Inbox accepted')

    # Live: a push while the page is open appears without a reload.
    status, _ = push(options, DEVICE, payload='{"aps":{"alert":{"title":"Inbox live","body":"two"}}}')
    assert status == 200, status
    wait_text(browser, '.inbox-row.notification', 'Inbox live', timeout=WAIT)


def scenario_steer_fault_preset_rejects(browser, options):
    ensure_device(options, DEVICE)
    try:
        steer_fault_preset(browser, options)
    finally:
        call(options, 'DELETE', '/api/v1/faults')


def steer_fault_preset(browser, options):
    open_view(browser, options, '#/steer')
    browser.wait_css('.steer-preset')
    Select(browser.first('select[name="preset"]')).select_by_value('outage')
    set_value(browser, 'input[name="presetValue"]', '120')
    set_value(browser, 'input[name="presetTopic"]', options.topic)
    browser.first('.steer-preset button[type="submit"]').click()
    wait_text(browser, '.steer-table tbody tr', 'active')
    status, answer = push(options, DEVICE)
    assert status == 503 and answer['reason'] == 'ServiceUnavailable', (status, answer)
    # The table follows the stream: the rule's counts move.
    browser.wait(lambda d: any(cell.text == '1' for cell in browser.all('.steer-table td[data-label="Applied"]')), 15,
                 'applied count 1')
    # Delete all (after the confirm step) and the next push is accepted again.
    browser.driver.execute_script('window.confirm = () => true')
    wait_text(browser, '.steer-heading button', 'Delete all').click()
    wait_text(browser, '.steer-table tbody', 'No fault rules')
    status, _ = push(options, DEVICE)
    assert status == 200, status


def scenario_steer_clock(browser, options):
    """A virtual clock is frozen, advanced and set back to real time from the page (the top bar follows);
    a real one cannot be steered: the buttons are disabled and the page says why."""
    _, clock = call(options, 'GET', '/api/v1/clock')
    open_view(browser, options, '#/steer')
    wait_text(browser, '.steer-clock-state', ':')
    button = lambda label: wait_text(browser, '.steer-side button', label)  # noqa: E731
    if not clock['virtual']:
        assert browser.first('.steer-clock-reason').is_displayed()
        assert not button('Freeze').is_enabled() and not button('Advance').is_enabled()
        return
    button('Freeze').click()
    wait_text(browser, '.steer-clock-state', 'Frozen')
    wait_text(browser, '#clock', 'Frozen')
    _, frozen = call(options, 'GET', '/api/v1/clock')
    assert frozen['mode'] == 'frozen', frozen
    set_value(browser, 'input[name="advanceSeconds"]', '90')
    button('Advance').click()
    browser.wait(lambda d: call(options, 'GET', '/api/v1/clock')[1]['nowMilliseconds'] == frozen['nowMilliseconds'] + 90000,
                 5, 'advanced by 90 s')
    button('Real time').click()
    wait_text(browser, '.steer-clock-state', 'Real time')
    assert call(options, 'GET', '/api/v1/clock')[1]['mode'] == 'real'


if __name__ == '__main__':
    main(globals())
