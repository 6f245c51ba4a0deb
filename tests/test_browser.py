"""The web app in a real browser, as a person uses it: Debian's chromium driven by Selenium picks
opponents by name, plays whole rounds by tapping and by keyboard at a phone's width (375 px)
and a desktop's, checks that nothing overflows the screen, asks the coach, checks the revealed
result against the engine, runs axe-core (labels, contrast, roles) on every view, and opens
replays; keeps a game through the server killed (SIGKILL) and started again, and shows an
opponent's failure with the two ways on.

Needs /usr/bin/chromium and /usr/bin/chromedriver (scripts/test.sh installs them with
apt-get) and axe-core in .cache/axe-core (scripts/setup-browser.sh installs it with npm).
Without them the test is skipped, unless BLOCK_ENV_REQUIRE_BROWSER=1 (CI) makes that a
failure. BLOCK_ENV_SCREENSHOTS=DIR saves each view there (docs/web.md shows docs/img's).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
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
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from block_env.agents import AGENTS, Agent  # noqa: E402
from block_env.apps.catalogue import catalogue  # noqa: E402
from block_env.apps.replay import replay_round, rules_from_record  # noqa: E402
from block_env.apps.web import ALLOWED_AGENTS, FALLBACK_AGENT, Games, Opponents, create_app, warm_compiled_code  # noqa: E402
from block_env.arena import evaluate  # noqa: E402

AXE = Path(__file__).resolve().parents[1] / ".cache/axe-core/node_modules/axe-core/axe.min.js"
PHONE, DESKTOP = (375, 812), (1280, 900)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(app) -> Iterator[str]:
    """``app`` served by uvicorn on a thread of this process: its address."""
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not srv.started:
        assert time.time() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def server():
    # The coach's search compiles its kernels on their first call after an install (seconds, more
    # beside another test process): done here, not inside the page's timed waits.
    warm_compiled_code(search=True)
    with running(create_app()) as address:
        yield address


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
        f"--window-size={DESKTOP[0]},{DESKTOP[1]}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)))
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def axe_source():
    if not AXE.is_file():
        message = f"axe-core is not installed at {AXE} (bash scripts/setup-browser.sh installs it)"
        if os.environ.get("BLOCK_ENV_REQUIRE_BROWSER") == "1":
            raise RuntimeError(f"BLOCK_ENV_REQUIRE_BROWSER=1 but {message}")
        pytest.skip(message)
    return AXE.read_text()


def sized(driver, size):
    """The page at ``size`` (CSS pixels: the viewport, as a phone or desktop shows it)."""
    driver.set_window_size(*size)
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    driver.set_window_size(2 * size[0] - inner[0], 2 * size[1] - inner[1])  # the window's frame aside
    assert driver.execute_script("return window.innerWidth") == size[0]


def open_app(driver, server):
    driver.get(f"{server}/?fast=1")
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "yes")


def idle(driver):
    WebDriverWait(driver, 60).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-busy") == "no")


def screenshot(driver, name):
    folder = os.environ.get("BLOCK_ENV_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        width = driver.execute_script("return window.innerWidth")
        size = driver.get_window_size()
        driver.set_window_size(
            size["width"], size["height"] + max(0, height - driver.execute_script("return window.innerHeight"))
        )
        driver.save_screenshot(str(Path(folder) / name))
        driver.set_window_size(size["width"], size["height"])
        assert driver.execute_script("return window.innerWidth") == width


def assert_fits(driver):
    """Nothing is wider than the screen: no sideways scrolling, no element past the right edge."""
    width = driver.execute_script("return window.innerWidth")
    assert driver.execute_script("return document.documentElement.scrollWidth") <= width
    wide = driver.execute_script(
        """return [...document.querySelectorAll('body *')].filter((e) => {
             const r = e.getBoundingClientRect();
             return r.width > 0 && (r.right > window.innerWidth + 0.5 || r.left < -0.5);
           }).map((e) => e.id || e.className.baseVal || e.className || e.tagName)"""
    )
    assert wide == [], f"past the screen's edge at {width} px: {wide}"


def assert_accessible(driver, axe_source, view):
    """axe-core finds no WCAG 2 A/AA violation (labels, contrast, roles, names) in the page."""
    driver.execute_script(axe_source)
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})"
        ".then((r) => done(r.violations.map((v) => ({id: v.id, help: v.help,"
        " nodes: v.nodes.map((n) => n.target.join(' '))}))), (e) => done(String(e)));"
    )
    assert result == [], f"accessibility violations on the {view} view: {result}"


def pick(driver, preset, seat, opponents, seed):
    """Fill the new-game form as a person does: rules, seat, each opponent by name, a seed."""
    Select(driver.find_element(By.ID, "preset")).select_by_value(preset)
    WebDriverWait(driver, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#picks select")) == len(opponents))
    Select(driver.find_element(By.ID, "seat")).select_by_value(str(seat))
    WebDriverWait(driver, 30).until(
        lambda d: (
            [e.get_attribute("data-seat") for e in d.find_elements(By.CSS_SELECTOR, "#picks select")]
            == [str(s) for s in range(len(opponents) + 1) if s != seat]
        )
    )
    for select, name in zip(driver.find_elements(By.CSS_SELECTOR, "#picks select"), opponents):
        Select(select).select_by_visible_text(name)
    driver.find_element(By.CSS_SELECTOR, "#advanced summary").click()
    driver.find_element(By.ID, "seed").send_keys(str(seed))


def my_move(driver, keyboard):
    """Play one legal move: the first lit tile (choosing the left end when it fits both), or
    the forced pass; by tapping, or by Tab and Enter."""
    passing = driver.find_element(By.ID, "pass")
    if passing.is_displayed():
        target = passing
    else:
        tiles = [b for b in driver.find_elements(By.CSS_SELECTOR, "#hand button") if b.is_enabled()]
        assert tiles, "it is my move but no tile is lit and no pass is offered"
        target = tiles[0]
    if keyboard:
        driver.execute_script("arguments[0].focus()", target)
        target.send_keys(Keys.ENTER)
    else:
        target.click()
    choice = driver.find_element(By.ID, "ends-choice")
    if choice.is_displayed():
        left = driver.find_element(By.ID, "end-left")
        focused = driver.execute_script("return document.activeElement.id")
        assert focused == "end-left", focused  # the end choice takes the focus
        left.send_keys(Keys.ENTER) if keyboard else left.click()


def play_round(driver, keyboard, shots=None):
    """Move until the round's result shows; each of my moves checks that the page fits."""
    moves = 0
    while not driver.find_element(By.ID, "result").is_displayed():
        assert moves < 60, "the round did not end"
        assert_fits(driver)
        assert driver.find_element(By.ID, "status").text.startswith("Your move")
        if shots and moves == 2:
            shots()
        my_move(driver, keyboard)
        moves += 1
        idle(driver)
    return moves


def check_result(driver, server):
    """The revealed hands' pips and the award are the engine's: the server's record replayed."""
    game_id = driver.execute_script("return game.id")
    with urllib.request.urlopen(f"{server}/api/games/{game_id}/replay") as response:
        record = json.load(response)
    final, _ = replay_round(rules_from_record(record["rules"]), record["rounds"][-1])
    rows = driver.find_elements(By.CSS_SELECTOR, "#result-hands .revealed")
    assert [int(e.get_attribute("data-pips")) for e in rows] == list(final.result.hand_pips)
    assert [len(e.find_elements(By.TAG_NAME, "svg")) for e in rows] == [h.bit_count() for h in final.hands]
    assert f"{final.result.award} points" in driver.find_element(By.ID, "result-title").text
    how = driver.find_element(By.ID, "result-why").text
    assert how.startswith("Domino" if final.result.end == "domino" else "Blocked")
    assert len(driver.find_elements(By.CSS_SELECTOR, "#line .tile")) == len(final.line())
    return record


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_pick_an_opponent_play_a_round_ask_the_coach(server, browser, axe_source, size):
    device = "phone" if size == PHONE else "desktop"
    sized(browser, size)
    open_app(browser, server)
    # The picker offers every catalogued opponent by name, the default first chosen.
    listed = catalogue("standard")
    select = browser.find_element(By.ID, "opp-1")
    assert [o.get_attribute("value") for o in Select(select).options] == [o["spec"] for o in listed["opponents"]]
    assert Select(select).first_selected_option.get_attribute("value") == listed["default"]
    strength = browser.find_element(By.ID, "opp-1-strength").text
    default = next(o for o in listed["opponents"] if o["spec"] == listed["default"])
    assert default["strength"] in strength and default["measured"][0]["figure"] in strength
    assert not browser.find_element(By.ID, "opponents").is_displayed()  # the raw spec field waits behind "Advanced"
    assert_fits(browser)
    assert_accessible(browser, axe_source, "new game")
    screenshot(browser, f"setup-{device}.png")

    pick(browser, "standard", 0, ["Strategic (medium)"], 11)
    browser.find_element(By.ID, "new-game").click()
    idle(browser)
    assert browser.find_element(By.CSS_SELECTOR, ".seat[data-seat='1'] .who").text == "Strategic"

    def hint_and_shoot():
        browser.find_element(By.ID, "hint").click()
        WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "coach").is_displayed())
        # One row per legal move: each lit tile's one or two ends, or the forced pass.
        legal = []
        for b in browser.find_elements(By.CSS_SELECTOR, "#hand button"):
            if b.is_enabled():
                legal += (b.get_attribute("data-actions") or b.get_attribute("data-action")).split(",")
        rows = browser.find_elements(By.CSS_SELECTOR, "#coach .advice tbody tr")
        assert len(rows) == (len(legal) or 1)
        assert len(browser.find_elements(By.CSS_SELECTOR, "#coach .advice tr.best")) == 1
        assert_fits(browser)
        assert_accessible(browser, axe_source, "table with the coach's hint")
        screenshot(browser, f"play-{device}.png")

    moves = play_round(browser, keyboard=size == DESKTOP, shots=hint_and_shoot)
    assert moves >= 1
    assert_fits(browser)
    check_result(browser, server)
    assert_accessible(browser, axe_source, "round over")
    screenshot(browser, f"result-{device}.png")

    browser.find_element(By.ID, "review").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "coach").is_displayed())
    assert browser.find_element(By.ID, "coach-title").text == "Coach: your round"
    assert_fits(browser)
    assert_accessible(browser, axe_source, "review")
    screenshot(browser, f"review-{device}.png")

    browser.find_element(By.ID, "again").click()  # "New game" brings the form back
    assert browser.find_element(By.ID, "setup").is_displayed()


def test_a_partnership_match_at_phone_width(server, browser):
    sized(browser, PHONE)
    open_app(browser, server)
    pick(browser, "partnership", 1, ["Greedy (easy)", "Network (strong)", "Random (beginner)"], 4)
    labels = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#picks label")]
    assert labels == ["Opponent, seat 1", "Opponent, seat 3", "Partner, seat 4"]
    Select(browser.find_element(By.ID, "episode")).select_by_value("match")
    browser.find_element(By.ID, "new-game").click()
    idle(browser)
    assert browser.find_element(By.CSS_SELECTOR, ".seat[data-seat='3'] .who").text == "Partner: Random"
    play_round(browser, keyboard=False)
    assert_fits(browser)
    check_result(browser, server)
    assert "first to 100" in browser.find_element(By.ID, "result-scores").text
    browser.find_element(By.ID, "next-round").click()  # the match goes on
    idle(browser)
    assert not browser.find_element(By.ID, "result").is_displayed()
    assert "round 2" in browser.find_element(By.ID, "scoreboard").text


def test_focus_follows_the_page_order(server, browser):
    """Tab walks the form in reading order: the views, the rules, each opponent, then Deal."""
    sized(browser, DESKTOP)
    open_app(browser, server)
    Select(browser.find_element(By.ID, "preset")).select_by_value("standard_3p")
    WebDriverWait(browser, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#picks select")) == 2)
    browser.execute_script("document.getElementById('tab-play').focus()")
    order = []
    for _ in range(8):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        active = browser.switch_to.active_element
        order.append(active.get_attribute("id") or active.tag_name)
    assert order == ["tab-replay", "preset", "episode", "seat", "opp-1", "opp-2", "summary", "new-game"]


def test_open_arena_records_in_the_replay_viewer(server, browser, tmp_path):
    sized(browser, DESKTOP)
    report = evaluate(["greedy", "random"], "standard", deals=1, seed=3, record=True)
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps({"config": {}}) + "\n" + json.dumps({"deal": 0, "records": report.records}) + "\n")
    open_app(browser, server)
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
    moves = len(first["replay"]["rounds"][0]["moves"])
    browser.find_element(By.ID, "last").click()
    assert browser.find_element(By.ID, "frame-label").text == f"move {moves} of {moves}"
    final, _ = replay_round(rules_from_record(first["replay"]["rules"]), first["replay"]["rounds"][0])
    assert len(browser.find_elements(By.CSS_SELECTOR, "#replay-line .tile")) == len(final.line())
    assert_fits(browser)
    screenshot(browser, "replay.png")


# -- a crash of the server, an opponent's failure ---------------------------------------------


def start_serve(data: Path, port: int) -> subprocess.Popen:
    """``block-dominoes serve`` in a process (group) of its own, keeping its games in ``data``."""
    cli = [sys.executable, "-m", "block_env.cli", "serve", "--data", str(data), "--port", str(port)]
    proc = subprocess.Popen(cli, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        assert proc.poll() is None, f"serve exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/options", timeout=5):
                return proc
        except OSError:
            time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("the server never answered")


def table_shown(driver) -> dict[str, list[str]]:
    """What the table shows: the hand, the line's tiles, the open ends, each seat's tile count."""

    def attribute(selector, name):
        return [e.get_attribute(name) for e in driver.find_elements(By.CSS_SELECTOR, selector)]

    return {
        "hand": attribute("#hand button", "data-tile"),
        "line": attribute("#line .tile", "data-tile"),
        "ends": attribute("#line .end", "data-value"),
        "counts": attribute("#seats .count", "data-count"),
    }


def test_a_game_survives_the_server_killed_between_moves(browser, tmp_path):
    port = free_port()
    address = f"http://127.0.0.1:{port}"
    sized(browser, PHONE)
    proc = start_serve(tmp_path, port)
    try:
        open_app(browser, address)
        pick(browser, "standard", 0, ["Strategic (medium)"], 21)
        browser.find_element(By.ID, "new-game").click()
        idle(browser)
        for _ in range(2):
            my_move(browser, keyboard=False)
            idle(browser)
        assert not browser.find_element(By.ID, "result").is_displayed()
        url = browser.current_url
        game_id = browser.execute_script("return game.id")
        assert f"game={game_id}" in url  # the address names the game
        before = table_shown(browser)
        assert len(before["line"]) >= 2 and before["hand"]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # no shutdown of any kind
        proc.wait(timeout=10)
    proc = start_serve(tmp_path, port)
    try:
        browser.get(url)
        WebDriverWait(browser, 30).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "yes"
        )
        idle(browser)
        assert not browser.find_element(By.ID, "error").is_displayed()
        assert browser.execute_script("return game.id") == game_id
        assert table_shown(browser) == before  # the same hand, line, ends and counts
        assert browser.find_element(By.CSS_SELECTOR, ".seat[data-seat='1'] .who").text == "Strategic"
        play_round(browser, keyboard=False)
        check_result(browser, address)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


class Faulty(Agent):
    """Raises on every move: an opponent whose own code is broken."""

    name = "faulty"

    def act(self, obs):
        raise RuntimeError("the opponent's own bug")


def test_an_opponent_that_fails_is_shown_and_replaced(browser, axe_source, monkeypatch):
    monkeypatch.setitem(AGENTS, Faulty.name, Faulty)
    app = create_app(Games(new_games_per_minute=0), opponents=Opponents(allowed=[*ALLOWED_AGENTS, Faulty.name]))
    sized(browser, PHONE)
    with running(app) as address:
        open_app(browser, address)
        browser.find_element(By.CSS_SELECTOR, "#advanced summary").click()
        browser.find_element(By.ID, "opponents").send_keys("faulty")
        browser.find_element(By.ID, "seed").send_keys("2")
        browser.find_element(By.ID, "new-game").click()
        idle(browser)
        if browser.find_element(By.ID, "status").text.startswith("Your move"):  # the person leads
            my_move(browser, keyboard=False)
            idle(browser)
        stalled = browser.find_element(By.ID, "stalled")
        assert stalled.is_displayed()
        assert browser.find_element(By.ID, "stalled-news").get_attribute("role") == "alert"
        why = browser.find_element(By.ID, "stalled-why").text
        assert "faulty at seat 2" in why and "raised an error" in why
        assert "RuntimeError: the opponent's own bug" in browser.find_element(By.ID, "stalled-detail").text
        assert not any(b.is_enabled() for b in browser.find_elements(By.CSS_SELECTOR, "#hand button"))
        assert not browser.find_element(By.ID, "pass").is_displayed()
        fallback = browser.find_element(By.ID, "fallback")
        name = next(o["name"] for o in catalogue("standard")["opponents"] if o["spec"] == FALLBACK_AGENT)
        assert fallback.text == f"Replace with {name}"
        assert_fits(browser)
        assert_accessible(browser, axe_source, "stalled")
        screenshot(browser, "stalled-phone.png")
        before = table_shown(browser)

        browser.find_element(By.ID, "retry").click()  # it fails again: the same message, nothing played
        idle(browser)
        assert browser.find_element(By.ID, "stalled").is_displayed()
        assert browser.execute_script("return game.stalled.seat") == 1 and table_shown(browser) == before

        fallback.click()
        idle(browser)
        assert not browser.find_element(By.ID, "stalled").is_displayed()
        assert browser.find_element(By.CSS_SELECTOR, ".seat[data-seat='1'] .who").text == name
        play_round(browser, keyboard=False)
        check_result(browser, address)
        assert browser.execute_script("return game.agents") == ["you", FALLBACK_AGENT]
