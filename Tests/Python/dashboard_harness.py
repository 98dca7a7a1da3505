"""The dashboard's browser tests: Debian's chromium through chromium-driver and selenium, headless.

    from dashboard_harness import Browser, main

    def scenario_something(browser, options):   # options: the command line (base, provider token, …)
        browser.open('#/devices')
        browser.wait_css('[data-view="devices"] h1')

    if __name__ == '__main__':
        main(globals())        # runs every scenario_* (or --scenario NAME), then checks the requests

Every request the page made (Chrome's performance log: Network.requestWillBeSent) is checked against the
sandbox's OpenAPI document: a method and path the document does not describe fails the run, and so does a
console error (a CSP violation, an uncaught exception) or a request whose URL carries the admin token.
Run by Tests/ServerTests/Dashboard*BrowserTests.swift against a real server; prints `ok <scenario>` lines.
"""
import argparse
import json
import re
import sys
import time
import traceback
import urllib.request
from urllib.parse import urlsplit

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = '/usr/bin/chromium'
# How long a scenario waits for the page to show something (seconds of real time). Generous: every wait ends as
# soon as its condition holds, so only a failure takes this long, and a headless chromium on a machine busy with
# the rest of the suite (2 cores) can take seconds for what takes 0.1 s alone — 2–5 s waits raced it.
WAIT = 30
CHROMEDRIVER = '/usr/bin/chromedriver'


class Browser:
    """One headless chromium window on the dashboard at `base` (e.g. http://127.0.0.1:8080)."""

    def __init__(self, base, width=1280, height=900, admin_token=None):
        self.base = base.rstrip('/')
        self.admin_token = admin_token
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ('--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                         f'--window-size={width},{height}', '--no-first-run', '--disable-extensions'):
            options.add_argument(argument)
        options.set_capability('goog:loggingPrefs', {'performance': 'ALL', 'browser': 'ALL'})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_page_load_timeout(20)
        self.requests = []        # (method, url) of every request the page made
        self.console_errors = []

    def close(self):
        self.collect()
        self.driver.quit()

    # ---- navigation and waiting ----

    def open(self, hash_route='#/devices'):
        """Loads the dashboard (a full page load) at the route and waits until the view is drawn."""
        self.driver.get(f'{self.base}/{hash_route}')
        name = hash_route.lstrip('#/').split('/')[0].split('?')[0] or 'devices'
        name = 'notification' if name == 'notifications' else name
        self.wait_css(f'main[data-view="{name}"]')

    def go(self, hash_route):
        """Changes the route without a reload (as clicking a link does)."""
        self.driver.execute_script('location.hash = arguments[0]', hash_route)

    def wait(self, condition, timeout=WAIT, message=''):
        """Waits until `condition(driver)` is truthy; returns its value."""
        try:
            # Live views redraw: an element read a moment ago may be gone; the next poll looks again.
            return WebDriverWait(self.driver, timeout, poll_frequency=0.05,
                                 ignored_exceptions=(StaleElementReferenceException,)).until(condition)
        except TimeoutException:
            raise AssertionError(f'timed out after {timeout} s: {message}') from None

    def wait_css(self, selector, timeout=WAIT):
        return self.wait(lambda d: self.first(selector), timeout, f'no element {selector}')

    def wait_text(self, selector, text, timeout=WAIT):
        """Waits until an element matching `selector` contains `text`; returns that element."""
        def found(_):
            for element in self.all(selector):
                if text in element.text:
                    return element
            return None
        return self.wait(found, timeout, f'no {selector} containing {text!r}')

    def first(self, selector):
        elements = self.driver.find_elements(By.CSS_SELECTOR, selector)
        return elements[0] if elements else None

    def all(self, selector):
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def screenshot(self, path):
        self.driver.save_screenshot(path)

    # ---- what the page did ----

    def collect(self):
        """Moves the performance and console logs into `requests` and `console_errors`."""
        for entry in self.driver.get_log('performance'):
            message = json.loads(entry['message'])['message']
            if message.get('method') == 'Network.requestWillBeSent':
                request = message['params']['request']
                if not request['url'].startswith(('data:', 'blob:')):
                    self.requests.append((request['method'], request['url']))
        for entry in self.driver.get_log('browser'):
            if entry.get('level') == 'SEVERE' and not self._expected_console_error(entry.get('message', '')):
                self.console_errors.append(entry['message'])

    @staticmethod
    def _expected_console_error(message):
        # A request the page makes on purpose that the API refuses (a 401 before signing in, a 4xx a test
        # provokes) is logged by chromium as a failed resource; the page handles those.
        return bool(re.search(r'Failed to load resource: the server responded with a status of 4\d\d', message))


def admin(options, method, path, body=None):
    """An admin REST call from the test itself (not the page), for set-up and checks: the parsed JSON; raises on
    an error answer."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f'{options.base}{path}', data=data, method=method)
    request.add_header('accept', 'application/json')
    if data is not None:
        request.add_header('content-type', 'application/json')
    if options.admin_token:
        request.add_header('authorization', f'Bearer {options.admin_token}')
    with urllib.request.urlopen(request, timeout=10) as answer:
        text = answer.read()
        return json.loads(text) if text else None


def openapi_operations(base):
    """The (method, path regex) pairs of the sandbox's OpenAPI document."""
    with urllib.request.urlopen(f'{base}/api/v1/openapi.json', timeout=10) as answer:
        document = json.load(answer)
    operations = []
    for path, item in document['paths'].items():
        pattern = '^' + re.sub(r'\\\{[^/]+?\\\}', '[^/]+', re.escape(path)) + '$'
        for method in item:
            if method in ('get', 'post', 'put', 'patch', 'delete', 'head', 'options'):
                operations.append((method.upper(), re.compile(pattern)))
    return operations


def undescribed(requests, operations, base):
    """The requests to the sandbox that no operation describes (HEAD counts as its GET)."""
    missing = []
    origin = urlsplit(base)
    for method, url in requests:
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) != (origin.scheme, origin.netloc):
            missing.append(f'{method} {url} (another origin)')
            continue
        wanted = 'GET' if method == 'HEAD' else method
        if not any(m == wanted and pattern.match(parts.path) for m, pattern in operations):
            missing.append(f'{method} {parts.path}')
    return sorted(set(missing))


def main(scenarios):
    parser = argparse.ArgumentParser()
    parser.add_argument('--base', required=True, help='the sandbox, e.g. http://127.0.0.1:8080')
    parser.add_argument('--provider-token', help='a provider token (JWT) the scenarios may push with')
    parser.add_argument('--topic', default='com.example.app')
    parser.add_argument('--admin-token', help='the admin token, when the sandbox requires one')
    parser.add_argument('--scenario', action='append', help='run only these (repeatable)')
    parser.add_argument('--screenshots', help='a directory for a screenshot after each scenario')
    options = parser.parse_args()
    names = options.scenario or sorted(name[len('scenario_'):] for name in scenarios if name.startswith('scenario_'))
    operations = openapi_operations(options.base)
    failures = 0
    for name in names:
        browser = Browser(options.base, admin_token=options.admin_token)
        try:
            started = time.monotonic()
            scenarios[f'scenario_{name}'](browser, options)
            browser.collect()
            problems = [f'not in the OpenAPI document: {r}' for r in undescribed(browser.requests, operations, options.base)]
            problems += [f'console error: {e}' for e in browser.console_errors]
            if options.admin_token:
                problems += [f'admin token in a URL: {u}' for _, u in browser.requests if options.admin_token in u]
            if problems:
                raise AssertionError('; '.join(problems))
            print(f'ok {name} ({time.monotonic() - started:.1f} s, {len(browser.requests)} requests)', flush=True)
        except Exception:
            failures += 1
            print(f'FAIL {name}', flush=True)
            traceback.print_exc()
            if options.screenshots:
                browser.screenshot(f'{options.screenshots}/{name}-failed.png')
        finally:
            if options.screenshots:
                try:
                    browser.screenshot(f'{options.screenshots}/{name}.png')
                except Exception:
                    pass
            browser.close()
    sys.exit(1 if failures else 0)
