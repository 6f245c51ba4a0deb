#!/usr/bin/env bash
# Debian's chromium and chromedriver for tests/test_browser.py (the web app in a real browser),
# and axe-core (the accessibility checker the test runs in the page) from the npm registry into
# .cache/axe-core. Chromium is installed with apt-get where we are root; elsewhere the browser
# test is skipped (or, with BLOCK_ENV_REQUIRE_BROWSER=1, fails).
set -euo pipefail
cd "$(dirname "$0")/.."
AXE_CORE_VERSION=4.14.1
if [ ! -f .cache/axe-core/node_modules/axe-core/axe.min.js ] && command -v npm > /dev/null; then
    npm install --prefix .cache/axe-core --no-audit --no-fund --silent "axe-core@$AXE_CORE_VERSION"
fi
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q chromium chromium-driver > /dev/null || {
        apt-get update -q > /dev/null && apt-get install -y -q chromium chromium-driver > /dev/null
    }
    echo "browser set-up done: $(/usr/bin/chromium --version)"
else
    echo "chromium and chromium-driver are not installed (and apt-get as root is not available): the browser test will be skipped"
fi
