"""The web chat page (GET /) driven by a headless Chromium: it streams the reply piece by piece, the text
equals the API's non-streamed reply at temperature 0, it sends the whole conversation, Stop ends a reply,
and a wrong API key shows the server's error. Select or skip these tests with `-k web`.

Chromium and its driver are Debian's (/usr/bin/chromium, /usr/bin/chromedriver: scripts/install-deps.sh);
the driver's path is given to selenium, so Selenium Manager never runs and nothing is downloaded.
A screenshot goes to $TESSEL_SERVER_ARTIFACTS/web_page.png (default: a new temporary directory).
"""
import json
import os
import re
import tempfile
import urllib.error
import urllib.request

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
REPLY_TIMEOUT = 180.0   # seconds for one reply: generous for sanitizer builds on a loaded CI machine
PER_SECOND = re.compile(r"[0-9.]+ t/s")
ASSISTANT = "#messages .msg.assistant"


@pytest.fixture
def browser(monkeypatch):
    """A headless Chromium through Debian's chromedriver; quit after the test."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            pytest.fail(f"{path} is missing: install chromium + chromium-driver (scripts/install-deps.sh) "
                        "or deselect these tests with -k 'not web'")
    monkeypatch.setenv("SE_OFFLINE", "true")   # should Selenium Manager ever run, it must not download
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1000,760"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def post_chat(url, body, key=None):
    """POST /v1/chat/completions; returns (HTTP status, parsed JSON body)."""
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = "Bearer " + key
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(req, timeout=REPLY_TIMEOUT) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def open_page(driver, server, temperature="", max_tokens=""):
    """Loads the page from the server and fills the settings fields."""
    with urllib.request.urlopen(server.url + "/", timeout=30) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/html")
    driver.get(server.url + "/")
    driver.find_element(By.ID, "temperature").send_keys(temperature)
    driver.find_element(By.ID, "max-tokens").send_keys(max_tokens)


def text_of(driver, selector, index):
    """textContent (exact, whitespace kept) of the index-th element matching selector."""
    return driver.execute_script("return document.querySelectorAll(arguments[0])[arguments[1]].textContent",
                                 selector, index)


def wait_reply(driver, count):
    """Waits until the page shows `count` assistant messages, is idle and shows a t/s figure; returns the stats."""
    def done(d):
        replies = d.find_elements(By.CSS_SELECTOR, ASSISTANT)
        stats = d.find_element(By.ID, "stats").text
        idle = d.find_element(By.ID, "send").is_enabled()
        return len(replies) == count and idle and PER_SECOND.search(stats) and stats
    return WebDriverWait(driver, REPLY_TIMEOUT).until(done)


def record_lengths(driver):
    """Records, on every DOM change, the length of the first assistant message (window.replyLengths)."""
    driver.execute_script("""
        window.replyLengths = [];
        new MutationObserver(() => {
          const a = document.querySelector(arguments[0]);
          if (a) window.replyLengths.push(a.textContent.length);
        }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
    """, ASSISTANT)


def save_screenshot(driver, capsys):
    out = os.environ.get("TESSEL_SERVER_ARTIFACTS") or tempfile.mkdtemp(prefix="tessel-web-")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "web_page.png")
    assert driver.save_screenshot(path)
    with capsys.disabled():
        print(f"\nweb page screenshot: {path}")


def test_web_page_streams_the_conversation(start_server, browser, capsys):
    server = start_server("-n", "24")
    open_page(browser, server, temperature="0", max_tokens="24")
    record_lengths(browser)
    prompt = "Write one sentence about the sea."
    browser.find_element(By.ID, "input").send_keys(prompt)
    browser.find_element(By.ID, "send").click()
    stats = wait_reply(browser, 1)
    first = text_of(browser, ASSISTANT, 0)
    assert first.strip() != ""
    assert text_of(browser, "#messages .msg.user", 0) == prompt

    # streamed: the message grew in at least three steps before it was complete
    lengths = browser.execute_script("return window.replyLengths")
    steps = sorted({n for n in lengths if n > 0})
    assert len(steps) >= 3, f"the reply arrived in {len(steps)} piece(s): lengths seen {lengths}"
    assert steps[-1] == len(first)

    status, ref = post_chat(server.url, {"messages": [{"role": "user", "content": prompt}],
                                         "temperature": 0, "max_tokens": 24})
    assert status == 200, ref
    assert first == ref["choices"][0]["message"]["content"]
    usage = ref["usage"]
    assert f"{usage['prompt_tokens']} prompt tokens" in stats
    assert f"{usage['completion_tokens']} generated tokens" in stats

    # a second turn by Enter (Shift+Enter is a newline): the page sends the whole conversation
    follow = "Now one about the sky.\nKeep it short."
    browser.find_element(By.ID, "input").send_keys("Now one about the sky." + Keys.SHIFT + Keys.ENTER + Keys.NULL +
                                                   "Keep it short.")
    browser.find_element(By.ID, "input").send_keys(Keys.ENTER)
    wait_reply(browser, 2)
    assert text_of(browser, "#messages .msg.user", 1) == follow
    status, ref = post_chat(server.url, {"messages": [{"role": "user", "content": prompt},
                                                      {"role": "assistant", "content": first},
                                                      {"role": "user", "content": follow}],
                                         "temperature": 0, "max_tokens": 24})
    assert status == 200, ref
    assert text_of(browser, ASSISTANT, 1) == ref["choices"][0]["message"]["content"]
    save_screenshot(browser, capsys)

    # "New chat" empties the page
    browser.find_element(By.ID, "new-chat").click()
    assert browser.find_elements(By.CSS_SELECTOR, "#messages .msg") == []


def test_web_page_stop_ends_the_reply(start_server, browser):
    server = start_server("-n", "-1")
    open_page(browser, server, temperature="0", max_tokens="400")
    prompt = "Count from 1 to 200, separated by commas."   # about 120 tokens: Stop comes well before the end
    browser.find_element(By.ID, "input").send_keys(prompt)
    browser.find_element(By.ID, "send").click()
    WebDriverWait(browser, REPLY_TIMEOUT).until(lambda d: text_of(d, ASSISTANT, 0) if
                                                d.find_elements(By.CSS_SELECTOR, ASSISTANT) else "")
    browser.find_element(By.ID, "stop").click()
    WebDriverWait(browser, 30).until(lambda d: "stopped" in d.find_element(By.ID, "stats").text)
    assert browser.find_element(By.ID, "send").is_enabled()
    assert not browser.find_element(By.ID, "stop").is_enabled()
    stopped_at = text_of(browser, ASSISTANT, 0)
    # one slot: this answers only once Stop has freed it; the stopped text is a strict prefix of the full reply
    status, ref = post_chat(server.url, {"messages": [{"role": "user", "content": prompt}],
                                         "temperature": 0, "max_tokens": 400})
    assert status == 200, ref
    full = ref["choices"][0]["message"]["content"]
    assert full.startswith(stopped_at) and len(stopped_at) < len(full)
    assert text_of(browser, ASSISTANT, 0) == stopped_at   # nothing arrived after Stop


def test_web_page_shows_the_servers_auth_error(start_server, browser):
    server = start_server("-n", "8", "--api-key", "right-key")
    status, body = post_chat(server.url, {"messages": [{"role": "user", "content": "Hi"}]}, key="wrong-key")
    assert status == 401
    message = body["error"]["message"]
    assert message

    open_page(browser, server, temperature="0")
    browser.find_element(By.ID, "api-key").send_keys("wrong-key")
    browser.find_element(By.ID, "input").send_keys("Hi")
    browser.find_element(By.ID, "send").click()
    error = WebDriverWait(browser, REPLY_TIMEOUT).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#messages .msg.error"))
    assert error[0].text == message
    assert browser.find_elements(By.CSS_SELECTOR, ASSISTANT) == []
    assert browser.find_element(By.ID, "input").get_property("value") == "Hi"   # given back for a retry

    # the right key (kept across reloads) gets a reply
    browser.find_element(By.ID, "api-key").clear()
    browser.find_element(By.ID, "api-key").send_keys("right-key")
    browser.refresh()
    assert browser.find_element(By.ID, "api-key").get_property("value") == "right-key"
    browser.find_element(By.ID, "input").send_keys("Hi")
    browser.find_element(By.ID, "send").click()
    wait_reply(browser, 1)
    assert text_of(browser, ASSISTANT, 0).strip() != ""
