"""The web app in a real browser: Debian's chromium driven by Selenium plays a whole round by
clicking, checks the revealed result against the engine, and opens replays.

Needs /usr/bin/chromium and /usr/bin/chromedriver (scripts/test.sh installs them with
apt-get). Without them the test is skipped, unless BLOCK_ENV_REQUIRE_BROWSER=1 (CI) makes
that a failure. BLOCK_ENV_SCREENSHOTS=DIR saves the play and replay pages there (docs/web.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


def missing() -> str | None:
    """What the browser test lacks (the browser, or the packages that drive and serve it)."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        return "chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
    for module, extra in (("selenium", "test"), ("uvicorn", "web")):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (the [{extra}] extra)"
    return None


# Every requirement is checked before any skip: with BLOCK_ENV_REQUIRE_BROWSER=1 (CI) a missing
# one is an error, never a skip.
if (lack := missing()) is not None:
    if os.environ.get("BLOCK_ENV_REQUIRE_BROWSER") == "1":
        raise RuntimeError(f"BLOCK_ENV_REQUIRE_BROWSER=1 but {lack}")
    pytest.skip(lack, allow_module_level=True)

import uvicorn  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from block_env.apps.replay import replay_round, rules_from_record  # noqa: E402
from block_env.apps.web import create_app  # noqa: E402
from block_env.arena import evaluate  # noqa: E402


@pytest.fixture(scope="module")
def server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not srv.started:
        assert time.time() < deadline, "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)))
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def idle(driver):
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-busy") == "no")


def screenshot(driver, name):
    folder = os.environ.get("BLOCK_ENV_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / name))


def test_play_a_round_by_clicking_then_replay_it(server, browser):
    browser.get(f"{server}/?fast=1")
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "yes")
    Select(browser.find_element(By.ID, "preset")).select_by_value("standard")
    opponents = browser.find_element(By.ID, "opponents")
    opponents.clear()
    opponents.send_keys("strategic")
    browser.find_element(By.ID, "seed").send_keys("11")
    browser.find_element(By.ID, "new-game").click()
    idle(browser)
    clicks = 0
    shot = False
    while not browser.find_element(By.ID, "result").is_displayed():
        assert clicks < 60, "the round did not end"
        movable = [e for e in browser.find_elements(By.CSS_SELECTOR, "#hand [data-action], #pass") if e.is_displayed()]
        assert movable, "it is my move but nothing is clickable"
        if not shot and len(browser.find_elements(By.CSS_SELECTOR, "#line .tile")) >= 4:
            screenshot(browser, "play.png")
            shot = True
        movable[0].click()
        clicks += 1
        idle(browser)
    assert clicks >= 1
    screenshot(browser, "result.png")

    # The revealed hands' pips are the engine's: replay the server's record through the engine.
    game_id = browser.execute_script("return game.id")
    with urllib.request.urlopen(f"{server}/api/games/{game_id}/replay") as response:
        record = json.load(response)
    rules = rules_from_record(record["rules"])
    final, _ = replay_round(rules, record["rounds"][-1])
    shown = [
        int(e.get_attribute("data-pips")) for e in browser.find_elements(By.CSS_SELECTOR, "#result-hands .revealed")
    ]
    assert shown == list(final.result.hand_pips)
    assert str(final.result.award) in browser.find_element(By.ID, "result-title").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#line .tile")) == len(final.line())

    # The same viewer replays the game just played: forward to the end, then back.
    browser.find_element(By.ID, "replay-game").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "viewer").is_displayed())
    moves = len(record["rounds"][-1]["moves"])
    assert browser.find_element(By.ID, "frame-label").text == f"move 0 of {moves}"
    browser.find_element(By.ID, "last").click()
    assert browser.find_element(By.ID, "frame-label").text == f"move {moves} of {moves}"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#replay-line .tile")) == len(final.line())
    browser.find_element(By.ID, "prev").click()
    assert browser.find_element(By.ID, "frame-label").text == f"move {moves - 1} of {moves}"


def test_open_arena_records_in_the_replay_viewer(server, browser, tmp_path):
    report = evaluate(["greedy", "random"], "standard", deals=1, seed=3, record=True)
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps({"config": {}}) + "\n" + json.dumps({"deal": 0, "records": report.records}) + "\n")
    browser.get(f"{server}/?fast=1")
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "yes")
    browser.find_element(By.ID, "tab-replay").click()
    browser.find_element(By.ID, "replay-file").send_keys(str(path))
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "viewer").is_displayed())
    options = Select(browser.find_element(By.ID, "replay-pick")).options
    assert len(options) == len(report.records)
    first = report.records[0]
    names = first["replay"]["agents"]
    for _ in range(3):
        browser.find_element(By.ID, "next").click()
    move_text = browser.find_element(By.ID, "replay-move").text
    seat, action = first["replay"]["rounds"][0]["moves"][2]
    assert move_text.startswith(f"player_{seat} ({names[seat]})")
    hands = browser.find_elements(By.CSS_SELECTOR, "#replay-hands .revealed")
    assert len(hands) == 2 and all(name in h.text for name, h in zip(names, hands))
    screenshot(browser, "replay.png")
