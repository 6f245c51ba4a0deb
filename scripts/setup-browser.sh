#!/usr/bin/env bash
# Debian's chromium and chromedriver for tests/test_browser.py (the web app in a real browser).
# Installed with apt-get where we are root; elsewhere the browser test is skipped (or, with
# BLOCK_ENV_REQUIRE_BROWSER=1, fails).
set -euo pipefail
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
