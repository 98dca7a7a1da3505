"""The dashboard's shell in a real browser: it loads, follows the event stream, every view is reachable by
keyboard, the theme toggles and stays, and with a required admin token it asks for one and keeps it out of URLs.

    python3 Tests/Python/dashboard_shell.py --base http://127.0.0.1:8080 [--admin-token T] [--scenario NAME]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dashboard_harness import WAIT, main  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

VIEWS = ['devices', 'inbox', 'send', 'manage', 'steer']


def sign_in_if_asked(browser, options):
    if options.admin_token:
        browser.wait(lambda d: browser.first('#login[open]'), WAIT, 'the sign-in dialog')
        browser.first('#login-token').send_keys(options.admin_token, Keys.ENTER)
        browser.wait(lambda d: not browser.first('#login[open]'), WAIT, 'the dialog to close')


def scenario_loads_and_goes_live(browser, options):
    browser.driver.get(f'{browser.base}/')
    sign_in_if_asked(browser, options)
    browser.wait_css('main[data-view="devices"]')
    browser.wait(lambda d: browser.first('#connection').get_attribute('data-state') == 'live', WAIT, 'the stream live')
    assert browser.first('main#main') and browser.first('nav[aria-label]') and browser.first('header')
    assert browser.driver.title.endswith('APNs Sandbox'), browser.driver.title


def scenario_every_view_by_keyboard(browser, options):
    browser.driver.get(f'{browser.base}/')
    sign_in_if_asked(browser, options)
    browser.wait_css('main[data-view="devices"]')
    body = browser.first('body')
    # The skip link comes first, then the brand, then the sections: Tab reaches each, Enter opens it.
    body.send_keys(Keys.TAB)
    assert browser.driver.switch_to.active_element.get_attribute('class') == 'skip-link'
    for view in VIEWS:
        for _ in range(12):
            active = browser.driver.switch_to.active_element
            if active.get_attribute('data-nav') == view:
                break
            active.send_keys(Keys.TAB)
        else:
            raise AssertionError(f'Tab never reached the {view} link')
        browser.driver.switch_to.active_element.send_keys(Keys.ENTER)
        browser.wait_css(f'main[data-view="{view}"]')
        current = browser.first(f'[data-nav="{view}"]')
        assert current.get_attribute('aria-current') == 'page', view
        assert browser.first('main h1'), f'{view} has no heading'
        # Focus stays visible: the focused link has an outline.
        outline = browser.driver.execute_script(
            'return getComputedStyle(document.activeElement).outlineStyle')
        assert outline not in ('none', ''), f'no visible focus on the {view} link: {outline}'


def scenario_theme_toggles_and_stays(browser, options):
    browser.driver.get(f'{browser.base}/')
    sign_in_if_asked(browser, options)
    browser.wait_css('main[data-view="devices"]')
    html = browser.first('html')
    first = html.get_attribute('data-theme')
    background = browser.driver.execute_script('return getComputedStyle(document.body).backgroundColor')
    browser.first('#theme-toggle').click()
    second = html.get_attribute('data-theme')
    assert {first, second} == {'light', 'dark'}, (first, second)
    assert browser.driver.execute_script('return getComputedStyle(document.body).backgroundColor') != background
    browser.driver.refresh()  # the token stays in the tab's session storage: no new sign-in
    browser.wait_css('main[data-view="devices"]')
    assert browser.first('html').get_attribute('data-theme') == second


def scenario_phone_width(browser, options):
    browser.driver.set_window_size(390, 844)
    browser.driver.get(f'{browser.base}/')
    sign_in_if_asked(browser, options)
    for view in VIEWS:
        browser.go(f'#/{view}')
        browser.wait_css(f'main[data-view="{view}"]')
        width = browser.driver.execute_script('return document.documentElement.scrollWidth')
        viewport = browser.driver.execute_script('return window.innerWidth')
        assert width <= viewport + 1, f'{view} scrolls sideways at phone width: {width} > {viewport}'


def scenario_wrong_token_is_refused(browser, options):
    if not options.admin_token:
        return
    browser.driver.get(f'{browser.base}/')
    browser.wait(lambda d: browser.first('#login[open]'), WAIT, 'the sign-in dialog')
    browser.first('#login-token').send_keys('not-the-token-at-all', Keys.ENTER)
    browser.wait(lambda d: browser.first('#login-error') and browser.first('#login-error').is_displayed(), 10,
                 'the refusal')
    assert browser.first('#login[open]')
    stored = browser.driver.execute_script("return sessionStorage.getItem('apns-sandbox.admin-token')")
    browser.first('#login-token').clear()
    browser.first('#login-token').send_keys(options.admin_token, Keys.ENTER)
    browser.wait(lambda d: browser.first('#connection').get_attribute('data-state') == 'live', WAIT, 'the stream live')
    assert stored == 'not-the-token-at-all'
    assert browser.driver.execute_script('return document.cookie') == ''
    assert options.admin_token not in browser.driver.current_url


if __name__ == '__main__':
    main(globals())
